package sslprincipal

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"strings"
	"testing"
)

func mustRules(t *testing.T, rules string) *Mapper {
	t.Helper()
	m, err := ParseRules(rules)
	if err != nil {
		t.Fatalf("ParseRules(%q): %v", rules, err)
	}
	return m
}

// The splitting of Kafka 2.4's SslPrincipalMapper, shown through its toString: commas outside a
// rule separate rules, spaces around them go, empty rules are ignored, "\/" stays inside a
// pattern or replacement, a rule without L/U prints without its last "/".
func TestParseRulesSplitting(t *testing.T) {
	for _, c := range []struct{ rules, want string }{
		{"", "[]"},
		{"DEFAULT", "[DEFAULT]"},
		{"RULE://", "[RULE:/]"},
		{"RULE:/x/", "[RULE:/x]"},
		{"RULE:/x/U", "[RULE:/x/U]"},
		{"  RULE:a/b/ ,  DEFAULT  ", "[RULE:a/b, DEFAULT]"},
		{"  RULE:  a /  b  / ,DEFAULT", "[RULE:  a /  b  , DEFAULT]"},
		{",, , RULE:a/b/L,,, DEFAULT, ,", "[RULE:a/b/L, DEFAULT]"},
		{`RULE:x\/y/p\/q/,DEFAULT`, `[RULE:x\/y/p\/q, DEFAULT]`},
		{"RULE:^CN=(.*?),OU=(.*?)$/$1,$2/,DEFAULT", "[RULE:^CN=(.*?),OU=(.*?)$/$1,$2, DEFAULT]"},
	} {
		if got := mustRules(t, c.rules).String(); got != c.want {
			t.Errorf("ParseRules(%q) = %s, want %s", c.rules, got, c.want)
		}
	}
}

func TestParseRulesRejects(t *testing.T) {
	for _, rules := range []string{
		"default",
		"DEFAUL",
		"DEFAULT/L",
		"RULE:^CN=(.*?)$/$1",        // no closing "/"
		"rule:^CN=(.*?)$/$1/",       // keywords are upper case
		"RULE:^CN=(.*?)$/$1/L/U",    // one case flag
		"RULE:^CN=(.*?)$/L",         // no replacement
		"RULE:^CN=(.*?)$/$1/LU",     // one case flag
		"RULE:^CN=(?=x).*$/$1/",     // a Java-only look-ahead: Go cannot compile it
		"RULE:^CN=(a)\\1$/$1/",      // a back-reference in the pattern, likewise
		"DEFAULT, RULE:^(.*)$/$1/X", // an unknown flag
	} {
		_, err := ParseRules(rules)
		if err == nil {
			t.Errorf("ParseRules(%q) accepted", rules)
			continue
		}
		if !strings.HasPrefix(err.Error(), RulesKey+": ") {
			t.Errorf("ParseRules(%q): error %q does not name %s", rules, err, RulesKey)
		}
	}
	_, err := ParseRules("RULE:^CN=(.*?)$/$1/Lx")
	if err == nil || !strings.Contains(err.Error(), "unmatched substring: `x`") {
		t.Errorf("trailing garbage: error %v, want Kafka's unmatched substring message", err)
	}
}

func TestMapperName(t *testing.T) {
	m := mustRules(t, strings.Join([]string{
		"RULE:^CN=(.*?),OU=Services.*$/$1/L",
		"RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L",
		"RULE:^cn=(.*?),ou=(.*?),dc=(.*?),dc=(.*?)$/$1@$2/U",
		"RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/U",
		"DEFAULT",
	}, ", "))
	for _, c := range []struct{ dn, want string }{
		{"CN=Broker1,OU=Services,O=Acme,C=US", "broker1"},
		{"CN=Ann,OU=Ops,O=Acme,L=Paris,ST=IDF,C=FR", "ann@ops"},
		{"cn=bob,ou=dev,dc=acme,dc=com", "BOB@DEV"},
		{"cN=carol,OU=Other,O=Acme", "CAROL"},
		{"OU=NoCommonName,O=Acme,C=US", "OU=NoCommonName,O=Acme,C=US"},
	} {
		got, err := m.Name(c.dn)
		if err != nil || got != c.want {
			t.Errorf("Name(%q) = %q, %v; want %q", c.dn, got, err, c.want)
		}
	}
}

// An escaped comma in the DN (Java writes "\,") can be matched by a rule that itself holds a
// comma: the splitter keeps it inside the rule.
func TestMapperCommaInsideRule(t *testing.T) {
	m := mustRules(t, `RULE:^CN=((\\, *|\w)+)(,.*|$)/$1/,DEFAULT`)
	got, err := m.Name(`CN=Doe\, Jane,OU=Eng,DC=acme,DC=org`)
	if want := `Doe\, Jane`; err != nil || got != want {
		t.Fatalf("Name = %q, %v; want %q", got, err, want)
	}
}

func TestMapperNoMatchingRule(t *testing.T) {
	m := mustRules(t, "RULE:^CN=(.*?),OU=Services$/$1/")
	_, err := m.Name("CN=x,OU=Other")
	var nm *NoMatchingRuleError
	if !errors.As(err, &nm) {
		t.Fatalf("Name: %v, want a NoMatchingRuleError", err)
	}
	if want := "No rules apply to CN=x,OU=Other, rules [RULE:^CN=(.*?),OU=Services$/$1]"; err.Error() != want {
		t.Fatalf("error %q, want %q", err, want)
	}
	if _, err := mustRules(t, "").Name("CN=x"); !errors.As(err, &nm) {
		t.Fatalf("no rules at all: %v, want a NoMatchingRuleError", err)
	}
}

// Java's replacement syntax, and Kafka's escaping of references to groups the pattern lacks.
func TestMapperReplacement(t *testing.T) {
	for _, c := range []struct{ rules, dn, want string }{
		{"RULE:^CN=(\\w+),O=(\\w+)$/$1abc/", "CN=x,O=y", "xabc"},                // "$1abc" is group 1 then text (Go would read group "1abc")
		{"RULE:^CN=(\\w+),O=(\\w+)$/$12/", "CN=x,O=y", "x2"},                    // "$12" with 2 groups: group 1 then "2"
		{"RULE:^CN=(\\w+),O=(\\w+)$/$1@$4/", "CN=x,O=y", "x@$4"},                // a missing group is literal (Kafka)
		{"RULE:^CN=(\\w+),O=(\\w+)$/$0/", "CN=x,O=y", "CN=x,O=y"},               // "$0" is the whole match
		{"RULE:^CN=(\\w+),O=(\\w+)$/\\$1-$2/", "CN=x,O=y", "$1-y"},              // "\$" is a literal dollar
		{"RULE:^CN=(?P<cn>\\w+),O=\\w+$/${cn}!/", "CN=x,O=y", "x!"},             // a named group
		{"RULE:^CN=(\\w+),O=(\\w+)$/$2\\/$1/", "CN=x,O=y", "y/x"},               // an escaped slash
		{"RULE:^CN=([a-z]+)(?:,.*)?$/U-$1/U", "CN=ann,OU=x", "U-ANN"},           // upper-cased after replacement
		{"RULE:^CN=([A-Z]+)(?:,.*)?$/Svc_$1/L", "CN=BROKER,OU=x", "svc_broker"}, // lower-cased after replacement
		// Java's replaceAll also replaces the empty match where a whole-DN match ended (Kafka's
		// mapper on JDK 17 gives these); anchored patterns have none.
		{"RULE:(.*)/[$1]/", "CN=abc", "[CN=abc][]"},
		{"RULE:.*/x/", "CN=abc", "xx"},
		{"RULE:^(.*)$/[$1]/", "CN=abc", "[CN=abc]"},
		{`RULE:\w*\b/x/`, "abc", "xx"},
		{`RULE:\w+|\B/x/`, "abc", "x"}, // \B at the end needs the rune before it: not a match
		{`RULE:\w+|\b/x/`, "abc", "xx"},
		{`RULE:(?m)\w+|^/x/`, "abc", "x"},
		{"RULE:(a*)(b*)/[$1|$2]/", "ab", "[a|b][|]"},
	} {
		got, err := mustRules(t, c.rules).Name(c.dn)
		if err != nil || got != c.want {
			t.Errorf("%s on %q = %q, %v; want %q", c.rules, c.dn, got, err, c.want)
		}
	}
	// Java's replaceAll throws on "$1" when the pattern has no group: the principal build fails.
	if _, err := mustRules(t, "RULE:^CN=x$/$1/").Name("CN=x"); err == nil || !strings.Contains(err.Error(), "No group 1") {
		t.Errorf("reference without groups: %v, want Java's No group 1", err)
	}
}

func TestEscapeLiteralBackReferencesKeepsKafkasOffsets(t *testing.T) {
	// Kafka inserts each backslash at the offset of the original text, so the second of two
	// missing references lands one character early: "$4$5" becomes "\$\4$5".
	got, err := escapeLiteralBackReferences("$4$5", 1)
	if want := `\$\4$5`; err != nil || got != want {
		t.Fatalf("escapeLiteralBackReferences = %q, %v; want %q", got, err, want)
	}
}

func TestPrincipal(t *testing.T) {
	m := mustRules(t, "RULE:^CN=([^,]+),.*$/$1/L,DEFAULT")
	if p, err := Principal(nil, m); err != nil || p != Anonymous {
		t.Fatalf("no connection state: %q, %v", p, err)
	}
	if p, err := Principal(&tls.ConnectionState{}, m); err != nil || p != Anonymous {
		t.Fatalf("no client certificate: %q, %v", p, err)
	}
	raw := subject(t, one(ps(oidC, "US")), one(ps(oidO, "Acme")), one(u8(oidCN, "Client-1")))
	cs := &tls.ConnectionState{PeerCertificates: []*x509.Certificate{{RawSubject: raw}}}
	if p, err := Principal(cs, m); err != nil || p != "User:client-1" {
		t.Fatalf("client certificate: %q, %v; want User:client-1", p, err)
	}
	_, err := Principal(cs, mustRules(t, "RULE:^CN=nobody$/x/"))
	var pe *PrincipalError
	if !errors.As(err, &pe) || pe.DN != "CN=Client-1,O=Acme,C=US" ||
		!strings.HasPrefix(err.Error(), "Failed to map name for 'CN=Client-1,O=Acme,C=US' based on SSL principal mapping rules.") {
		t.Fatalf("unmapped DN: %v", err)
	}
}
