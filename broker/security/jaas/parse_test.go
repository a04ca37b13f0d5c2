package jaas

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseConfigProperty(t *testing.T) {
	for _, c := range []struct {
		name, in string
		want     Entry
	}{
		{"plain users", `org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";`,
			Entry{PlainLoginModule, Required, map[string]string{"username": "admin", "password": "admin-secret", "user_admin": "admin-secret", "user_alice": "alice-secret"}}},
		{"unquoted words and flag case", "org.apache.kafka.common.security.scram.ScramLoginModule REQUIRED username=admin password=admin-secret ;",
			Entry{ScramLoginModule, Required, map[string]string{"username": "admin", "password": "admin-secret"}}},
		{"no options, newlines, comments", "/* c */ org.Foo // line\n optional\n;",
			Entry{"org.Foo", Optional, map[string]string{}}},
		{"escapes and single quotes", `m.M sufficient a="x\"y\\z" b='it"s' c="tab\there" d="\101\7" e="a;b=c d";`,
			Entry{"m.M", Sufficient, map[string]string{"a": `x"y\z`, "b": `it"s`, "c": "tab\there", "d": "A\a", "e": "a;b=c d"}}},
		{"last duplicate wins", `m.M requisite k="1" k="2";`, Entry{"m.M", Requisite, map[string]string{"k": "2"}}},
		{"quoted key and module", `"m.M" required "the key"="v";`, Entry{"m.M", Required, map[string]string{"the key": "v"}}},
		{"non-ascii word", "m.M required user_jürgen=pässwort;", Entry{"m.M", Required, map[string]string{"user_jürgen": "pässwort"}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := ParseConfigProperty(c.in)
			if err != nil {
				t.Fatalf("ParseConfigProperty: %v", err)
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Fatalf("got %+v\nwant %+v", got, c.want)
			}
		})
	}
}

func TestParseErrorsNameWhatIsWrong(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"", "login module not specified"},
		{"  // only a comment", "login module not specified"},
		{"m.M", "control flag not specified for m.M"},
		{"m.M mandatory;", `invalid login module control flag "mandatory" for m.M`},
		{`m.M required k="v"`, "entry for m.M not terminated by semi-colon"},
		{`m.M required k;`, "value not specified for key 'k'"},
		{`m.M required k=;`, "value not specified for key 'k'"},
		{`m.M required iterations=4096;`, "unquoted number 4096"},
		{`m.M required password=p@ss;`, `option name expected in the entry for m.M, found "@"`},
		{`m.M required k="open`, "not closed with \" before the line ends"},
		{"m.M required k=\"line\nbreak\";", "not closed"},
		{`m.M required; n.N required;`, "contains 2 login modules, should be 1"},
		{`= required;`, "login module class expected"},
		{"/* open", "comment opened with /* at line 1 is not closed"},
		{`m.M required k="v"; 42`, "login module class expected, found the unquoted number 42"},
	} {
		_, err := ParseConfigProperty(c.in)
		if err == nil || !strings.Contains(err.Error(), c.want) || !errors.Is(err, ErrSyntax) {
			t.Errorf("ParseConfigProperty(%q) = %v, want an ErrSyntax naming %q", c.in, err, c.want)
		}
	}
	_, err := ParseConfigProperty(`m.M required password="hunter2" x;`)
	if err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("error %v must not quote a password", err)
	}
}

const jaasFile = `
// The broker's JAAS file
KafkaServer {
   org.apache.kafka.common.security.plain.PlainLoginModule required
   username="admin"
   password="admin-secret"
   user_admin="admin-secret"
   user_alice="alice-secret";
   org.apache.kafka.common.security.scram.ScramLoginModule required;
};
sasl_ssl.KafkaServer {
   org.apache.kafka.common.security.plain.PlainLoginModule required user_bob="bob-secret";
};
Client {
   org.apache.zookeeper.server.auth.DigestLoginModule required username="zk" password="zk-secret";
};
Empty { };
`

func TestParseFileAndServerEntries(t *testing.T) {
	f, err := ParseFile(jaasFile)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Sections) != 4 || len(f.Sections["KafkaServer"]) != 2 || len(f.Sections["Empty"]) != 0 {
		t.Fatalf("sections %+v", f.Sections)
	}
	props := map[string]string{
		"listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config": `org.apache.kafka.common.security.scram.ScramLoginModule required;`,
	}
	lookup := func(k string) (string, bool) { v, ok := props[k]; return v, ok }
	for _, c := range []struct{ listener, mech, source string }{
		{"SASL_PLAINTEXT", "SCRAM-SHA-256", "listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config"},
		{"SASL_PLAINTEXT", "PLAIN", "JAAS file section KafkaServer"},
		{"SASL_SSL", "PLAIN", "JAAS file section sasl_ssl.KafkaServer"},
	} {
		es, src, err := ServerEntries(c.listener, c.mech, lookup, &f)
		if err != nil || src != c.source || len(es) == 0 {
			t.Errorf("ServerEntries(%s, %s) = %v, %q, %v; want source %q", c.listener, c.mech, es, src, err, c.source)
		}
	}
	es, _, _ := ServerEntries("SASL_PLAINTEXT", "PLAIN", lookup, &f)
	if got := PlainUsers(es); !reflect.DeepEqual(got, map[string]string{"admin": "admin-secret", "alice": "alice-secret"}) {
		t.Errorf("PlainUsers = %v", got)
	}
	if v, ok := ConfigEntryOption(es, "user_alice", PlainLoginModule); !ok || v != "alice-secret" {
		t.Errorf("ConfigEntryOption = %q, %v", v, ok)
	}
	if _, ok := ConfigEntryOption(es, "user_alice", ScramLoginModule); ok {
		t.Error("ConfigEntryOption found a PLAIN user under the SCRAM module")
	}
	if _, _, err := ServerEntries("SASL_SSL", "PLAIN", nil, nil); !errors.Is(err, ErrNoServerConfig) ||
		!strings.Contains(err.Error(), "listener.name.sasl_ssl.plain.sasl.jaas.config") {
		t.Errorf("no config: %v", err)
	}
	bad := map[string]string{"listener.name.l.plain.sasl.jaas.config": "x"}
	if _, _, err := ServerEntries("L", "PLAIN", func(k string) (string, bool) { v, ok := bad[k]; return v, ok }, nil); err == nil ||
		!strings.Contains(err.Error(), "listener.name.l.plain.sasl.jaas.config") {
		t.Errorf("bad property: %v", err)
	}
}

func TestParseFileErrors(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"KafkaServer { m.M required; };\nKafkaServer { m.M required; };", "multiple entries for section KafkaServer"},
		{"KafkaServer m.M required; };", "'{' expected after section name KafkaServer"},
		{"KafkaServer { m.M required; }", "';' expected after the '}' of section KafkaServer"},
		{"KafkaServer { m.M required;", "section KafkaServer is not closed"},
		{"KafkaServer { m.M required k=\"v\" };", "section KafkaServer: invalid JAAS configuration: JAAS config entry for m.M not terminated"},
		{"{ };", "section name expected"},
	} {
		_, err := ParseFile(c.in)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseFile(%q) = %v, want %q", c.in, err, c.want)
		}
	}
}

func TestModuleOptions(t *testing.T) {
	e, err := ParseConfigProperty(`org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required
		unsecuredLoginStringClaim_sub="admin" unsecuredLoginListClaim_scope=",read,,write" unsecuredLoginNumberClaim_n="1.5"
		unsecuredLoginExtension_traceId="abc" unsecuredLoginLifetimeSeconds="60"
		unsecuredValidatorRequiredScope="read  write" unsecuredValidatorAllowableClockSkewMs="250";`)
	if err != nil {
		t.Fatal(err)
	}
	v, err := e.UnsecuredValidator()
	want := UnsecuredValidatorOptions{"sub", "scope", []string{"read", "write"}, 250 * time.Millisecond}
	if err != nil || !reflect.DeepEqual(v, want) {
		t.Errorf("UnsecuredValidator = %+v, %v", v, err)
	}
	l, err := e.UnsecuredLogin()
	if err != nil || l.StringClaims["sub"] != "admin" || !reflect.DeepEqual(l.ListClaims["scope"], []string{"read", "write"}) ||
		l.NumberClaims["n"] != 1.5 || l.Extensions["traceId"] != "abc" || l.Lifetime != time.Minute {
		t.Errorf("UnsecuredLogin = %+v, %v", l, err)
	}
	for opt, want := range map[string]string{
		`unsecuredValidatorAllowableClockSkewMs="-1"`: "unsecuredValidatorAllowableClockSkewMs must be a non-negative integer",
		`unsecuredValidatorAllowableClockSkewMs="x"`:  "unsecuredValidatorAllowableClockSkewMs must be a non-negative integer",
		`unsecuredValidatorRequiredScope="a\tb"`:      `invalid scope value "a\tb"`,
		`unsecuredValidatorRequiredScope='a "b"'`:     `invalid scope value "\"b\""`,
	} {
		e, _ := ParseConfigProperty("m.M required " + opt + ";")
		if _, err := e.UnsecuredValidator(); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v", opt, err)
		}
	}
	for opt, want := range map[string]string{
		``: "unsecuredLoginStringClaim_sub (the principal) must be set",
		`unsecuredLoginPrincipalClaimName="user"`: "unsecuredLoginStringClaim_user",
		`unsecuredLoginNumberClaim_n="x"`:         "unsecuredLoginNumberClaim_n must be a number",
		`unsecuredLoginStringClaim_exp="1"`:       "the exp claim is set automatically",
		`unsecuredLoginNumberClaim_iat="1"`:       "the iat claim is set automatically",
		`unsecuredLoginLifetimeSeconds="0"`:       "must be a positive integer",
	} {
		e, _ := ParseConfigProperty("m.M required " + opt + ";")
		if _, err := e.UnsecuredLogin(); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v", opt, err)
		}
	}
	l, err = parseAndLogin(t, `m.M required unsecuredLoginStringClaim_sub="a" unsecuredLoginListClaim_e="" unsecuredLoginListClaim_f="," unsecuredLoginListClaim_g="éxéy";`)
	if err != nil || len(l.ListClaims["e"]) != 0 || len(l.ListClaims["f"]) != 0 || !reflect.DeepEqual(l.ListClaims["g"], []string{"x", "y"}) {
		t.Errorf("list claims %v, %v", l.ListClaims, err)
	}
	if d := DefaultUnsecuredValidatorOptions(); d.PrincipalClaimName != "sub" || d.ScopeClaimName != "scope" {
		t.Errorf("defaults %+v", d)
	}
	s, _ := ParseConfigProperty(`org.apache.kafka.common.security.scram.ScramLoginModule required username="u" tokenauth="TRUE";`)
	if !s.TokenAuth() {
		t.Error("tokenauth=TRUE not seen")
	}
	if _, _, err := s.Credentials(); err == nil || !strings.Contains(err.Error(), "password not set") {
		t.Errorf("Credentials: %v", err)
	}
	s.Options["password"] = "p"
	if u, p, err := s.Credentials(); err != nil || u != "u" || p != "p" {
		t.Errorf("Credentials = %q %q %v", u, p, err)
	}
	if _, ok := FindModule([]Entry{s}, ScramLoginModule); !ok {
		t.Error("FindModule")
	}
}

// FuzzParse: whatever the text, the parsers return entries or an error, never panic, and a
// parsed property re-parses from its own options.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		jaasFile,
		`org.apache.kafka.common.security.plain.PlainLoginModule required user_a="b";`,
		`m.M required a="\"\\\101\z" b='x';`,
		"/* */ m.M // x\n required;", "m.M required k=-1;", "\"", "{", "a{b}c;", "m.M required k=\"\\",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		_, _ = ParseFile(s)
		es, err := ParseEntries(s)
		if err != nil {
			return
		}
		for _, e := range es {
			if e.LoginModule == "" && e.Flag == "" {
				t.Fatalf("empty entry from %q", s)
			}
		}
	})
}

func parseAndLogin(t *testing.T, text string) (UnsecuredLoginOptions, error) {
	t.Helper()
	e, err := ParseConfigProperty(text)
	if err != nil {
		t.Fatal(err)
	}
	return e.UnsecuredLogin()
}
