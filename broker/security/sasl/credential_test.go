package sasl

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

func TestScramCredentialFormatRoundTrip(t *testing.T) {
	for _, m := range []*ScramMechanism{ScramSHA256Mechanism, ScramSHA512Mechanism} {
		c := mustCred(t, m, "pw", 8192)
		s := c.Format()
		if !strings.HasPrefix(s, "salt=") || !strings.Contains(s, ",stored_key=") || !strings.Contains(s, ",server_key=") ||
			!strings.HasSuffix(s, ",iterations=8192") {
			t.Fatalf("Format = %q", s)
		}
		got, err := ParseScramCredential(s)
		if err != nil || !bytes.Equal(got.Salt, c.Salt) || !bytes.Equal(got.StoredKey, c.StoredKey) ||
			!bytes.Equal(got.ServerKey, c.ServerKey) || got.Iterations != 8192 {
			t.Fatalf("ParseScramCredential(%q) = %+v, %v", s, got, err)
		}
		if len(c.StoredKey) != m.newHash().Size() || len(c.ServerKey) != m.newHash().Size() {
			t.Errorf("key sizes %d %d", len(c.StoredKey), len(c.ServerKey))
		}
		for _, ch := range string(c.Salt) { // Kafka's salt: the UTF-8 of a base-36 string
			if !(ch >= '0' && ch <= '9' || ch >= 'a' && ch <= 'z') {
				t.Fatalf("salt %q is not base 36", c.Salt)
			}
		}
		// The credential authenticates its password through a real client.
		r, err := exchange(t, NewScram(m, mapStore{m.name + "/u": got}, nil), clientMech(m, scramAuth("u", "pw")))
		if err != nil || r.AuthorizationID != "u" {
			t.Fatalf("exchange with the parsed credential: %+v, %v", r, err)
		}
	}
	if a, b := mustCred(t, ScramSHA256Mechanism, "pw", 4096), mustCred(t, ScramSHA256Mechanism, "pw", 4096); bytes.Equal(a.Salt, b.Salt) {
		t.Error("two credentials got the same salt")
	}
}

// A credential with a Kafka-style salt (the UTF-8 of a base-36 string) formats with Kafka's keys
// in Kafka's order and, parsed back, authenticates its password.
func TestScramCredentialKnownSalt(t *testing.T) {
	c, err := ScramSHA256Mechanism.credentialWithSalt("alice-secret", []byte("1d2cw6hlbsaolfwpmwzu2ux4oe"), 4096)
	if err != nil {
		t.Fatal(err)
	}
	text := c.Format()
	if !strings.HasPrefix(text, "salt=MWQyY3c2aGxic2FvbGZ3cG13enUydXg0b2U=,stored_key=") {
		t.Fatalf("Format = %q", text)
	}
	back, err := ParseScramCredential(text)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := exchange(t, NewScram(ScramSHA256Mechanism, mapStore{"SCRAM-SHA-256/alice": back}, nil),
		scramAuth("alice", "alice-secret").AsSha256Mechanism()); err != nil {
		t.Fatal(err)
	}
}

func TestParseScramCredentialErrors(t *testing.T) {
	good := mustCred(t, ScramSHA256Mechanism, "pw", 4096).Format()
	for _, c := range []struct{ in, want string }{
		{"", "item 1 is not key=value"},
		{strings.Replace(good, ",iterations=4096", "", 1), "key iterations missing"},
		{good + ",extra=1", "5 keys"},
		{good + ",salt=AAAA", "key salt given twice"},
		{strings.Replace(good, "iterations=4096", "iterations=x", 1), `iterations "x" is not a positive integer`},
		{strings.Replace(good, "iterations=4096", "iterations=0", 1), "not a positive integer"},
		{strings.Replace(good, "salt=", "salt=*", 1), "salt is not base64"},
		{strings.Replace(good, ",server_key=", ",=x,server_key=", 1), "is not key=value"},
	} {
		_, err := ParseScramCredential(c.in)
		if !errors.Is(err, ErrInvalidCredential) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseScramCredential(%q) = %v, want %q", c.in, err, c.want)
		}
	}
}

func TestParseScramConfigValue(t *testing.T) {
	for _, c := range []struct {
		in      string
		iter    int
		pw, err string
	}{
		{"[iterations=8192,password=pw]", 8192, "pw", ""},
		{"password=pw", 4096, "pw", ""},
		{"[password=p,w=d]", 4096, "p,w=d", ""},
		{"iterations=4095,password=pw", 0, "", "Iterations 4095 is less than the minimum 4096 required for SCRAM-SHA-256"},
		{"iterations=,password=pw", 0, "", `iterations "" is not a number`},
		{"iterations=9,pass=pw", 0, "", "want [iterations=<n>,]password=<password>"},
		{"pw", 0, "", "want [iterations=<n>,]password=<password>"},
	} {
		iter, pw, err := ParseScramConfigValue(ScramSHA256Mechanism, c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: %v, want %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil || iter != c.iter || pw != c.pw {
			t.Errorf("%q = %d %q %v", c.in, iter, pw, err)
		}
	}
	if _, err := NewScramCredential(ScramSHA512Mechanism, "pw", 1000, nil); err == nil {
		t.Error("NewScramCredential accepted 1000 iterations")
	}
	if _, err := NewScramCredential(ScramSHA512Mechanism, "pw", 4096, bytes.NewReader(nil)); err == nil {
		t.Error("NewScramCredential without randomness succeeded")
	}
}
