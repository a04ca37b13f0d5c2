package sasl

import (
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/sasl/oauth"

	"github.com/isrbroker/isrbroker/broker/security/jaas"
)

var oauthNow = time.Unix(1_700_000_000, 0)

func jws(t *testing.T, claims map[string]any) string {
	t.Helper()
	s, err := UnsecuredJWS(claims)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func rawJWS(header, claims, sig string) string {
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(header)) + "." + enc([]byte(claims)) + "." + sig
}

// urlJWS encodes claims whose base64url text has '-' or '_' (the token grammar admits no '+' or '/').
func urlJWS(t *testing.T, claims string) string {
	t.Helper()
	s := rawJWS(`{"alg":"none"}`, claims, "")
	if !strings.ContainsAny(s, "-_") {
		t.Fatalf("claims %s encode without - or _", claims)
	}
	return s
}

func oauthServerWith(t *testing.T, jaasText string) Server {
	t.Helper()
	e, err := jaas.ParseConfigProperty(jaasText)
	if err != nil {
		t.Fatal(err)
	}
	opts, err := e.UnsecuredValidator()
	if err != nil {
		t.Fatal(err)
	}
	return NewOAuthBearer(opts, func() time.Time { return oauthNow })
}

func TestOAuthBearerWithFranzGoClient(t *testing.T) {
	now := float64(oauthNow.Unix())
	def := oauthServerWith(t, `org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;`)
	skew := oauthServerWith(t, `org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required unsecuredValidatorAllowableClockSkewMs="2000";`)
	scoped := oauthServerWith(t, `org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required
		unsecuredValidatorRequiredScope="read write" unsecuredValidatorScopeClaimName="scp" unsecuredValidatorPrincipalClaimName="user";`)
	oneScope := oauthServerWith(t, `org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required unsecuredValidatorRequiredScope="read";`)
	const invalid = `{"status":"invalid_token"}`
	for _, c := range []struct {
		name  string
		srv   Server
		zid   string
		token string
		want  string // "" for success as alice, "true" for success as true, else the error
	}{
		{"ok", def, "", jws(t, map[string]any{"sub": "alice", "iat": now, "exp": now + 3600}), ""},
		{"ok without iat, with extensions", def, "", jws(t, map[string]any{"sub": "alice", "exp": now + 1}), ""},
		{"authzid equal", def, "alice", jws(t, map[string]any{"sub": "alice", "exp": now + 60}), ""},
		{"other authzid", def, "bob", jws(t, map[string]any{"sub": "alice", "exp": now + 60}),
			"Authentication failed: Client requested an authorization id (bob) that is different from the token's principal name (alice)"},
		{"expired", def, "", jws(t, map[string]any{"sub": "alice", "exp": now}), invalid},
		{"expired within skew", skew, "", jws(t, map[string]any{"sub": "alice", "exp": now - 1}), ""},
		{"expired beyond skew", skew, "", jws(t, map[string]any{"sub": "alice", "exp": now - 2}), invalid},
		{"issued in the future", def, "", jws(t, map[string]any{"sub": "alice", "iat": now + 1, "exp": now + 60}), invalid},
		{"issued in the future within skew", skew, "", jws(t, map[string]any{"sub": "alice", "iat": now + 2, "exp": now + 60}), ""},
		{"exp not after iat", skew, "", jws(t, map[string]any{"sub": "alice", "iat": now + 1, "exp": now + 1}), invalid},
		{"no exp", def, "", jws(t, map[string]any{"sub": "alice"}), invalid},
		{"exp not a number", def, "", jws(t, map[string]any{"sub": "alice", "exp": "soon"}), invalid},
		{"no sub", def, "", jws(t, map[string]any{"exp": now + 60}), invalid},
		{"sub not a string", def, "", jws(t, map[string]any{"sub": 7, "exp": now + 60}), invalid},
		{"blank sub", def, "", jws(t, map[string]any{"sub": " ", "exp": now + 60}), invalid},
		{"alg HS256", def, "", rawJWS(`{"alg":"HS256"}`, `{"sub":"alice","exp":1800000000}`, ""), invalid},
		{"no alg", def, "", rawJWS(`{}`, `{"sub":"alice","exp":1800000000}`, ""), invalid},
		{"signature", def, "", rawJWS(`{"alg":"none"}`, `{"sub":"alice","exp":1800000000}`, "c2ln"), invalid},
		{"claims not JSON", def, "", rawJWS(`{"alg":"none"}`, `sub=alice`, ""), invalid},
		{"claims an array", def, "", rawJWS(`{"alg":"none"}`, `[1]`, ""), invalid},
		{"two parts", def, "", "eyJhbGciOiJub25lIn0.eyJzdWIiOiJhIn0", invalid},
		{"double dot", def, "", "eyJhbGciOiJub25lIn0..", invalid},
		{"scope list and principal claim", scoped, "", jws(t, map[string]any{"user": "alice", "exp": now + 60, "scp": []string{"write", " admin", "read "}}), ""},
		// Kafka takes a string scope claim as one item: it does not split it at spaces.
		{"scope string is one item", scoped, "", jws(t, map[string]any{"user": "alice", "exp": now + 60, "scp": "read write"}),
			`{"status":"insufficient_scope", "scope":"[read, write]"}`},
		{"scope string single", oneScope, "", jws(t, map[string]any{"sub": "alice", "exp": now + 60, "scope": " read "}), ""},
		{"scope number", oneScope, "", jws(t, map[string]any{"sub": "alice", "exp": now + 60, "scope": 1}), invalid},
		{"scope list with a number item", oneScope, "", jws(t, map[string]any{"sub": "alice", "exp": now + 60, "scope": []any{2, "read"}}), ""},
		{"sub true is the text true", def, "", jws(t, map[string]any{"sub": true, "exp": now + 60}), "true"},
		{"base64url alphabet", def, "", urlJWS(t, `{"sub":"alice","exp":1800000000,"x":"???>>>"}`), ""},
		{"scope missing one", scoped, "", jws(t, map[string]any{"user": "alice", "exp": now + 60, "scp": "read"}),
			`{"status":"insufficient_scope", "scope":"[read, write]"}`},
		{"no scope", scoped, "", jws(t, map[string]any{"user": "alice", "exp": now + 60}), `"insufficient_scope"`},
		{"scope list items not strings", scoped, "", jws(t, map[string]any{"user": "alice", "exp": now + 60, "scp": []any{"read", 1}}), `"insufficient_scope"`},
		{"default principal claim unused", scoped, "", jws(t, map[string]any{"sub": "alice", "exp": now + 60, "scp": "read write"}), invalid},
	} {
		t.Run(c.name, func(t *testing.T) {
			mech := oauth.Auth{Zid: c.zid, Token: c.token, Extensions: map[string]string{"traceId": "abc-1"}}.AsMechanism()
			r, err := exchange(t, c.srv, mech)
			if c.want == "" || c.want == "true" {
				if c.want == "" {
					c.want = "alice"
				}
				if err != nil || r.AuthorizationID != c.want || r.CredentialExpiry.IsZero() {
					t.Fatalf("result %+v, %v", r, err)
				}
				return
			}
			if se := wantSaslError(t, err, kerr.SaslAuthenticationFailed, c.want); !se.Visible {
				t.Errorf("error %v is not client-visible", se)
			}
		})
	}
	r, err := exchange(t, def, oauth.Auth{Token: jws(t, map[string]any{"sub": "alice", "exp": 1_700_000_123.4567})}.AsMechanism())
	if err != nil || !r.CredentialExpiry.Equal(time.UnixMilli(1_700_000_123_457)) {
		t.Errorf("credential expiry %v, %v; want exp in ms, rounded", r.CredentialExpiry, err)
	}
}

func TestOAuthBearerInitialResponseGrammar(t *testing.T) {
	srv := NewOAuthBearer(jaas.UnsecuredValidatorOptions{}, func() time.Time { return oauthNow })
	tok := jws(t, map[string]any{"sub": "alice", "exp": float64(oauthNow.Unix() + 60)})
	for _, c := range []struct {
		in string
		ok bool
	}{
		{"n,,\x01auth=Bearer " + tok + "\x01\x01", true},
		{"n,,\x01auth=bearer   " + tok + "\x01\x01", true},
		{"n,a=alice,\x01auth=Bearer " + tok + "\x01x=y z\x01\x01", true},
		{"n,,\x01k=v\x01auth=Bearer " + tok + "\x01\x01", true},
		{"n,,\x01auth=Basic " + tok + "\x01\x01", false},
		{"n,,\x01auth=Bearer" + tok + "\x01\x01", false},
		{"n,,\x01auth=Bearer " + tok + "!\x01\x01", false},
		{"n,,\x01auth=Bearer " + tok + "\x01", false},
		{"n,,\x01auth=Bearer " + tok + "\x01\x01\x01", false},
		{"n,,auth=Bearer " + tok + "\x01\x01", false},
		{"n,,\x01\x01", false},
		{"n,,\x01\x01\x01", false},
		{"n,,\x011k=v\x01auth=Bearer " + tok + "\x01\x01", false},
		{"n,,\x01k=\x01auth=Bearer " + tok + "\x01\x01", false},
		{"y,,\x01auth=Bearer " + tok + "\x01\x01", false},
		{"n,a=al=ice,\x01auth=Bearer " + tok + "\x01\x01", false},
		{"n", false},
		{"", false},
		{"\x01", false},
	} {
		ch, done, err := srv.Start().Step([]byte(c.in))
		if c.ok != (err == nil && done) {
			t.Errorf("%q: %q %v %v; want ok=%v", c.in, ch, done, err, c.ok)
		}
		if err != nil {
			wantSaslError(t, err, kerr.SaslAuthenticationFailed, genericText+"OAUTHBEARER")
		}
	}
	ir, err := ParseOAuthBearerInitialResponse([]byte("n,a=alice,\x01auth=Bearer " + tok + "\x01traceId=x=1\x01\x01"))
	if err != nil || ir.AuthorizationID != "alice" || ir.Token != tok || len(ir.Extensions) != 1 || ir.Extensions["traceId"] != "x=1" {
		t.Errorf("parsed %+v, %v", ir, err)
	}
}

// TestOAuthBearerRetryAfterErrorChallenge: after the error challenge, a new initial response is
// parsed again (Kafka resets its error); a second \x01 after a failure is ILLEGAL_SASL_STATE.
func TestOAuthBearerRetryAfterErrorChallenge(t *testing.T) {
	srv := NewOAuthBearer(jaas.UnsecuredValidatorOptions{}, func() time.Time { return oauthNow })
	x := srv.Start()
	bad := "n,,\x01auth=Bearer " + jws(t, map[string]any{"sub": "alice", "exp": 1}) + "\x01\x01"
	good := "n,,\x01auth=Bearer " + jws(t, map[string]any{"sub": "alice", "exp": float64(oauthNow.Unix() + 9)}) + "\x01\x01"
	if ch, done, err := x.Step([]byte(bad)); err != nil || done || string(ch) != `{"status":"invalid_token"}` {
		t.Fatalf("bad token: %q %v %v", ch, done, err)
	}
	if ch, done, err := x.Step([]byte(good)); err != nil || !done || len(ch) != 0 || x.Result().AuthorizationID != "alice" {
		t.Fatalf("retry: %q %v %v", ch, done, err)
	}
	_, _, err := x.Step([]byte{1})
	wantSaslError(t, err, kerr.IllegalSaslState, "COMPLETE")
	// \x01 with no error challenge before it is a malformed initial response.
	_, _, err = srv.Start().Step([]byte{1})
	wantSaslError(t, err, kerr.SaslAuthenticationFailed, genericText)
}
