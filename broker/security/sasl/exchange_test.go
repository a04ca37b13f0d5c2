package sasl

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	ksasl "github.com/twmb/franz-go/pkg/sasl"

	"github.com/isrbroker/isrbroker/broker/security/jaas"
)

// exchange drives srv with a real client mechanism (franz-go's), as franz-go's broker connection
// does: the client's first message, then each server challenge to the client's session. It returns
// the server's result or the first error (a server *Error, or a client error wrapped).
func exchange(t *testing.T, srv Server, client ksasl.Mechanism) (Result, error) {
	t.Helper()
	sess, msg, err := client.Authenticate(context.Background(), "broker:9092")
	if err != nil {
		t.Fatalf("client Authenticate: %v", err)
	}
	ex := srv.Start()
	for range 10 {
		challenge, done, err := ex.Step(msg)
		if err != nil {
			return Result{}, err
		}
		if challenge == nil {
			t.Fatalf("%s: nil challenge from a successful step", srv.Name())
		}
		cdone, next, cerr := sess.Challenge(challenge)
		if cerr != nil {
			return Result{}, fmt.Errorf("client: %w", cerr)
		}
		if done {
			if !cdone {
				t.Fatalf("%s: the server is done but the client is not", srv.Name())
			}
			return ex.Result(), nil
		}
		if cdone {
			t.Fatalf("%s: the client is done before the server", srv.Name())
		}
		msg = next
	}
	t.Fatalf("%s: exchange did not end", srv.Name())
	return Result{}, nil
}

// wantSaslError checks err is an *Error of the code whose ClientMessage contains want.
func wantSaslError(t *testing.T, err error, code *kerr.Error, want string) *Error {
	t.Helper()
	var se *Error
	if !errors.As(err, &se) {
		t.Fatalf("error %v (%T) is not a *sasl.Error", err, err)
	}
	if !errors.Is(err, code) {
		t.Errorf("error %v has code %d, want %s", err, se.Code, code.Message)
	}
	if !strings.Contains(se.ClientMessage(false), want) {
		t.Errorf("client message %q, want it to contain %q", se.ClientMessage(false), want)
	}
	return se
}

const genericText = "Authentication failed during authentication due to invalid credentials with SASL mechanism "

func TestNewNamesWhatIsMissing(t *testing.T) {
	for _, c := range []struct {
		mech string
		cfg  Config
		want error
		text string
	}{
		{"GSSAPI", Config{}, ErrGSSAPIUnsupported, "Kerberos KDC"},
		{"plain", Config{}, ErrUnsupportedMechanism, `"plain"`},
		{"SCRAM-SHA-1", Config{}, ErrUnsupportedMechanism, "SCRAM-SHA-256"},
		{"PLAIN", Config{}, nil, "user_<name>"},
		{"SCRAM-SHA-512", Config{}, nil, "credential store"},
	} {
		s, err := New(c.mech, c.cfg)
		if err == nil || s != nil || (c.want != nil && !errors.Is(err, c.want)) || !strings.Contains(err.Error(), c.text) {
			t.Errorf("New(%q) = %v, %v; want %v naming %q", c.mech, s, err, c.want, c.text)
		}
	}
	for _, m := range []string{PLAIN, ScramSHA256, ScramSHA512, OAuthBearer} {
		s, err := New(m, Config{Plain: StaticPlainUsers{}, Credentials: mapStore{}})
		if err != nil || s.Name() != m {
			t.Errorf("New(%s) = %v, %v", m, s, err)
		}
	}
}

func TestSessionLifetime(t *testing.T) {
	end := time.Unix(1000, 0)
	for _, c := range []struct {
		maxReauth time.Duration
		expiry    time.Time
		want      time.Duration
	}{
		{0, time.Time{}, 0},
		{0, end.Add(time.Hour), 0}, // connections.max.reauth.ms=0: no lifetime even for a token
		{-1, time.Time{}, 0},
		{time.Minute, time.Time{}, time.Minute},
		{time.Hour, end.Add(time.Minute), time.Minute},
		{time.Minute, end.Add(time.Hour), time.Minute},
		{time.Minute, end.Add(-time.Second), 0},
	} {
		if got := SessionLifetime(c.maxReauth, Result{CredentialExpiry: c.expiry}, end); got != c.want {
			t.Errorf("SessionLifetime(%v, %v) = %v, want %v", c.maxReauth, c.expiry, got, c.want)
		}
	}
}

func TestErrorClientMessage(t *testing.T) {
	g := generic(ScramSHA256, "Invalid client credentials", errors.New("detail"))
	if got := g.ClientMessage(false); got != genericText+"SCRAM-SHA-256" {
		t.Errorf("generic = %q", got)
	}
	if got := g.ClientMessage(true); !strings.Contains(got, "during re-authentication due to") {
		t.Errorf("generic re-auth = %q", got)
	}
	if !strings.Contains(g.Error(), "Invalid client credentials: detail") || !errors.Is(g, kerr.SaslAuthenticationFailed) ||
		errors.Is(g, kerr.IllegalSaslState) {
		t.Errorf("Error() = %q", g.Error())
	}
	if v := visible(PLAIN, "Authentication failed: Invalid username or password"); v.ClientMessage(true) != v.Message {
		t.Errorf("visible = %q", v.ClientMessage(true))
	}
}

func TestTokenOverFrameLimit(t *testing.T) {
	big := make([]byte, maxTokenSize+1)
	for _, s := range []Server{NewPlain(StaticPlainUsers{}), NewScram(ScramSHA256Mechanism, mapStore{}, nil), NewOAuthBearer(jaas.DefaultUnsecuredValidatorOptions(), nil)} {
		_, _, err := s.Start().Step(big)
		wantSaslError(t, err, kerr.SaslAuthenticationFailed, genericText)
	}
}
