package sasl

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/isrbroker/isrbroker/broker/security/jaas"
)

func plainUsers(t *testing.T) PlainAuthenticator {
	t.Helper()
	e, err := jaas.ParseConfigProperty(`org.apache.kafka.common.security.plain.PlainLoginModule required
		username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";`)
	if err != nil {
		t.Fatal(err)
	}
	return StaticPlainUsers(jaas.PlainUsers([]jaas.Entry{e}))
}

func TestPlainWithFranzGoClient(t *testing.T) {
	srv := NewPlain(plainUsers(t))
	const invalid = "Authentication failed: Invalid username or password"
	for _, c := range []struct {
		name          string
		zid, user, pw string
		want          string // "" for success
	}{
		{"ok", "", "alice", "alice-secret", ""},
		{"authzid equal to user", "alice", "alice", "alice-secret", ""},
		{"wrong password", "", "alice", "admin-secret", invalid},
		{"wrong user", "", "mallory", "alice-secret", invalid},
		{"password prefix", "", "alice", "alice-secre", invalid},
		{"case matters", "", "Alice", "alice-secret", invalid},
		{"other authzid", "admin", "alice", "alice-secret", "Authentication failed: Client requested an authorization id that is different from username"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, err := exchange(t, srv, plain.Auth{Zid: c.zid, User: c.user, Pass: c.pw}.AsMechanism())
			if c.want == "" {
				if err != nil || r.AuthorizationID != c.user || !r.CredentialExpiry.IsZero() {
					t.Fatalf("result %+v, %v", r, err)
				}
				return
			}
			se := wantSaslError(t, err, kerr.SaslAuthenticationFailed, c.want)
			if !se.Visible || se.ClientMessage(false) != c.want {
				t.Errorf("client message %q, want exactly %q", se.ClientMessage(false), c.want)
			}
		})
	}
}

func TestPlainRawMessages(t *testing.T) {
	srv := NewPlain(plainUsers(t))
	for _, c := range []struct{ in, want string }{
		{"", "Invalid SASL/PLAIN response: expected 3 tokens, got 1"},
		{"alice\x00alice-secret", "Invalid SASL/PLAIN response: expected 3 tokens, got 2"},
		{"\x00alice\x00alice-secret\x00", "Invalid SASL/PLAIN response: expected 3 tokens, got 4"},
		{"\x00alice\x00alice-secret\x00x\x00y", "Invalid SASL/PLAIN response: expected 3 tokens, got 4"},
		{"\x00\x00alice-secret", "Authentication failed: username not specified"},
		{"\x00alice\x00", "Authentication failed: password not specified"},
	} {
		_, _, err := srv.Start().Step([]byte(c.in))
		wantSaslError(t, err, kerr.SaslAuthenticationFailed, c.want)
	}
	x := srv.Start()
	ch, done, err := x.Step([]byte("\x00alice\x00alice-secret"))
	if err != nil || !done || ch == nil || len(ch) != 0 {
		t.Fatalf("success = %q (nil %v), %v, %v; want an empty non-nil challenge (the v0 zero-length frame)", ch, ch == nil, done, err)
	}
	_, _, err = x.Step([]byte("\x00alice\x00alice-secret"))
	wantSaslError(t, err, kerr.IllegalSaslState, "Unexpected challenge in Sasl server state COMPLETE")
	f := srv.Start()
	_, _, _ = f.Step([]byte("\x00alice\x00wrong"))
	_, _, err = f.Step([]byte("\x00alice\x00alice-secret"))
	wantSaslError(t, err, kerr.IllegalSaslState, "state FAILED")
}

type failingUsers struct{}

func (failingUsers) Authenticate(string, string) (bool, error) {
	return false, errors.New("backend down")
}

func TestPlainAuthenticatorError(t *testing.T) {
	_, _, err := NewPlain(failingUsers{}).Start().Step([]byte("\x00alice\x00pw"))
	se := wantSaslError(t, err, kerr.SaslAuthenticationFailed, "Authentication failed: credentials for user could not be verified")
	if !errors.Is(se, se.Err) || se.Err.Error() != "backend down" {
		t.Errorf("cause %v", se.Err)
	}
}
