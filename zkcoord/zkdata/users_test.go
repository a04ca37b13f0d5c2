package zkdata

import "testing"

func TestSanitizeUser(t *testing.T) {
	for _, tc := range []struct{ user, want string }{
		{"alice", "alice"},
		{"a.b-c_d", "a.b-c_d"},
		{"CN=x,O=y", "CN%3Dx%2CO%3Dy"},
		{"two words", "two%20words"},
		{"star*", "star%2A"},
		{"plus+", "plus%2B"},
		{"é", "%C3%A9"},
		{"a/b", "a%2Fb"},
	} {
		if got := SanitizeUser(tc.user); got != tc.want {
			t.Errorf("SanitizeUser(%q) = %q, want %q", tc.user, got, tc.want)
		}
		back, err := DesanitizeUser(tc.want)
		if err != nil || back != tc.user {
			t.Errorf("DesanitizeUser(%q) = %q, %v; want %q", tc.want, back, err, tc.user)
		}
	}
	if got, _ := DesanitizeUser("a+b"); got != "a b" {
		t.Errorf(`DesanitizeUser("a+b") = %q, want "a b"`, got)
	}
	for _, bad := range []string{"%", "%4", "%zz"} {
		if _, err := DesanitizeUser(bad); err == nil {
			t.Errorf("DesanitizeUser(%q) accepted", bad)
		}
	}
	if p := UserConfigPath("CN=x"); p != "/config/users/CN%3Dx" {
		t.Errorf("UserConfigPath = %q", p)
	}
	if e := UserEntity("alice"); e != "users/alice" {
		t.Errorf("UserEntity = %q", e)
	}
}
