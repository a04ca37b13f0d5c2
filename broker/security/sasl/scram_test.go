package sasl

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	ksasl "github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// mapStore is a CredentialStore over a map: mechanism + "/" + user → credential.
type mapStore map[string]ScramCredential

func (m mapStore) ScramCredential(mech, user string) (ScramCredential, bool, error) {
	if user == "broken" {
		return ScramCredential{}, false, errors.New("zookeeper unavailable")
	}
	c, ok := m[mech+"/"+user]
	return c, ok, nil
}

type tokenStore map[string]DelegationToken

func (m tokenStore) DelegationToken(mech, id string) (DelegationToken, bool, error) {
	t, ok := m[mech+"/"+id]
	return t, ok, nil
}

func mustCred(t testing.TB, m *ScramMechanism, pw string, iterations int) ScramCredential {
	t.Helper()
	c, err := NewScramCredential(m, pw, iterations, nil)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func scramStore(t testing.TB) mapStore {
	s := mapStore{}
	for _, m := range []*ScramMechanism{ScramSHA256Mechanism, ScramSHA512Mechanism} {
		s[m.name+"/alice"] = mustCred(t, m, "alice-secret", 4096)
		s[m.name+"/a,b=c"] = mustCred(t, m, "odd-secret", 4096)
		weak := mustCred(t, m, "weak", 4096)
		weak.Iterations = 4095
		s[m.name+"/weak"] = weak
	}
	return s
}

func scramAuth(user, pass string) scram.Auth { return scram.Auth{User: user, Pass: pass} }

func clientMech(m *ScramMechanism, a scram.Auth) ksasl.Mechanism {
	if m == ScramSHA512Mechanism {
		return a.AsSha512Mechanism()
	}
	return a.AsSha256Mechanism()
}

func TestScramWithFranzGoClient(t *testing.T) {
	store := scramStore(t)
	tokens := tokenStore{}
	expiry := time.UnixMilli(1_900_000_000_000)
	for _, m := range []*ScramMechanism{ScramSHA256Mechanism, ScramSHA512Mechanism} {
		tokens[m.name+"/token-1"] = DelegationToken{Owner: "alice", Credential: mustCred(t, m, "hmac-1", 4096), Expiry: expiry}
		srv := NewScram(m, store, tokens)
		t.Run(m.name, func(t *testing.T) {
			for _, c := range []struct {
				name string
				auth scram.Auth
				want string // "" for success: the principal is the user (alice for the token)
				vis  bool
			}{
				{"ok", scram.Auth{User: "alice", Pass: "alice-secret"}, "", false},
				{"authzid equal", scram.Auth{Zid: "alice", User: "alice", Pass: "alice-secret"}, "", false},
				{"escaped name", scram.Auth{User: "a,b=c", Pass: "odd-secret"}, "", false},
				{"wrong password", scram.Auth{User: "alice", Pass: "alice-secreT"}, genericText + m.name, false},
				{"wrong user", scram.Auth{User: "mallory", Pass: "alice-secret"}, genericText + m.name, false},
				{"other authzid", scram.Auth{Zid: "admin", User: "alice", Pass: "alice-secret"},
					"Authentication failed: Client requested an authorization id that is different from username", true},
				{"iterations below 4096", scram.Auth{User: "weak", Pass: "weak"}, genericText + m.name, false},
				{"store error", scram.Auth{User: "broken", Pass: "x"}, genericText + m.name, false},
				{"token", scram.Auth{User: "token-1", Pass: "hmac-1", IsToken: true}, "", false},
				{"unknown token", scram.Auth{User: "token-2", Pass: "hmac-1", IsToken: true}, genericText + m.name, false},
				{"token as user", scram.Auth{User: "token-1", Pass: "hmac-1"}, genericText + m.name, false},
			} {
				t.Run(c.name, func(t *testing.T) {
					r, err := exchange(t, srv, clientMech(m, c.auth))
					if c.want != "" {
						if se := wantSaslError(t, err, kerr.SaslAuthenticationFailed, c.want); se.Visible != c.vis {
							t.Errorf("visible = %v, want %v (%v)", se.Visible, c.vis, se)
						}
						return
					}
					want := Result{AuthorizationID: c.auth.User}
					if c.auth.IsToken {
						want = Result{AuthorizationID: "alice", CredentialExpiry: expiry, TokenAuthenticated: true}
					}
					if err != nil || r != want {
						t.Fatalf("result %+v, %v; want %+v", r, err, want)
					}
				})
			}
		})
	}
	_, err := exchange(t, NewScram(ScramSHA256Mechanism, store, nil), scram.Auth{User: "token-1", Pass: "hmac-1", IsToken: true}.AsSha256Mechanism())
	se := wantSaslError(t, err, kerr.SaslAuthenticationFailed, genericText)
	if !strings.Contains(se.Message, "Token Authentication failed: Invalid tokenId : token-1") {
		t.Errorf("no token store: %v", se)
	}
}

// scramClient is a hand-made client for the messages franz-go would not send.
type scramClient struct {
	m        *ScramMechanism
	user, pw string
	cnonce   string
	gs2      string // "" means "n,,"

	first        string // client-first-message
	serverFirst  string
	salt         []byte
	iterations   int
	serverNonce  string
	finalWoProof string
}

func (c *scramClient) clientFirst() []byte {
	if c.gs2 == "" {
		c.gs2 = "n,,"
	}
	c.first = c.gs2 + "n=" + c.user + ",r=" + c.cnonce
	return []byte(c.first)
}

// readServerFirst parses the server-first message.
func (c *scramClient) readServerFirst(t *testing.T, sf []byte) {
	t.Helper()
	c.serverFirst = string(sf)
	parts := strings.Split(c.serverFirst, ",")
	if len(parts) != 3 || !strings.HasPrefix(parts[0], "r="+c.cnonce) {
		t.Fatalf("server-first %q", sf)
	}
	c.serverNonce = parts[0][2:]
	c.salt, _ = base64.StdEncoding.DecodeString(parts[1][2:])
	if parts[2] != "i=4096" {
		t.Fatalf("server-first iterations %q", parts[2])
	}
	c.iterations = 4096
}

// final builds a client-final message with the given channel binding and nonce, its proof
// computed over the message as sent.
func (c *scramClient) final(cb, nonce string) []byte {
	c.finalWoProof = "c=" + base64.StdEncoding.EncodeToString([]byte(cb)) + ",r=" + nonce
	authMessage := strings.TrimPrefix(c.first, c.gs2) + "," + c.serverFirst + "," + c.finalWoProof
	sp, _ := c.m.saltedPassword(c.pw, c.salt, c.iterations)
	clientKey := c.m.hmac(sp, "Client Key")
	sig := c.m.hmac(c.m.h(clientKey), authMessage)
	for i := range sig {
		sig[i] ^= clientKey[i]
	}
	return []byte(c.finalWoProof + ",p=" + base64.StdEncoding.EncodeToString(sig))
}

func startScram(t *testing.T, srv Server, c *scramClient) Exchange {
	t.Helper()
	x := srv.Start()
	sf, done, err := x.Step(c.clientFirst())
	if err != nil || done {
		t.Fatalf("client-first: %v %v", done, err)
	}
	c.readServerFirst(t, sf)
	return x
}

func TestScramFinalMessageChecks(t *testing.T) {
	srv := NewScram(ScramSHA256Mechanism, scramStore(t), nil)
	newClient := func() *scramClient {
		return &scramClient{m: ScramSHA256Mechanism, user: "alice", pw: "alice-secret", cnonce: "fyko+d2lbbFgONRv9qkxdawL"}
	}
	cases := []struct {
		name  string
		final func(c *scramClient) []byte
		ok    bool
	}{
		{"correct", func(c *scramClient) []byte { return c.final("n,,", c.serverNonce) }, true},
		// librdkafka <= 2.6.0 repeats the client nonce (docs/sasl.md §3): accepted.
		{"librdkafka repeated client nonce", func(c *scramClient) []byte { return c.final("n,,", c.cnonce+c.serverNonce) }, true},
		{"server nonce changed", func(c *scramClient) []byte { return c.final("n,,", c.serverNonce+"x") }, false},
		{"client nonce only", func(c *scramClient) []byte { return c.final("n,,", c.cnonce) }, false},
		{"other client nonce", func(c *scramClient) []byte { return c.final("n,,", "x"+c.serverNonce[1:]) }, false},
		{"channel binding y", func(c *scramClient) []byte { return c.final("y,,", c.serverNonce) }, false},
		{"channel binding p", func(c *scramClient) []byte { return c.final("p=tls-unique,,", c.serverNonce) }, false},
		{"tampered proof", func(c *scramClient) []byte {
			f := c.final("n,,", c.serverNonce)
			p := strings.LastIndex(string(f), ",p=")
			proof, _ := base64.StdEncoding.DecodeString(string(f[p+3:]))
			proof[0] ^= 1
			return []byte(string(f[:p+3]) + base64.StdEncoding.EncodeToString(proof))
		}, false},
		{"short proof", func(c *scramClient) []byte { return []byte(c.finalWoProofOf("n,,") + ",p=AAAA") }, false},
		{"no proof", func(c *scramClient) []byte { return []byte(c.finalWoProofOf("n,,")) }, false},
		{"proof with line break", func(c *scramClient) []byte {
			f := c.final("n,,", c.serverNonce)
			return []byte(string(f[:len(f)-4]) + "\n" + string(f[len(f)-4:]))
		}, false},
		{"garbage", func(*scramClient) []byte { return []byte("\xff\x00garbage") }, false},
		{"empty", func(*scramClient) []byte { return nil }, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cl := newClient()
			x := startScram(t, srv, cl)
			sfinal, done, err := x.Step(c.final(cl))
			if !c.ok {
				wantSaslError(t, err, kerr.SaslAuthenticationFailed, genericText+"SCRAM-SHA-256")
				if x.Result() != (Result{}) {
					t.Errorf("a failed exchange has the result %+v", x.Result())
				}
				_, _, err = x.Step(c.final(cl))
				wantSaslError(t, err, kerr.IllegalSaslState, "state FAILED")
				return
			}
			if err != nil || !done || x.Result().AuthorizationID != "alice" || !strings.HasPrefix(string(sfinal), "v=") {
				t.Fatalf("final: %q %v %v %+v", sfinal, done, err, x.Result())
			}
		})
	}
}

func (c *scramClient) finalWoProofOf(cb string) string {
	return "c=" + base64.StdEncoding.EncodeToString([]byte(cb)) + ",r=" + c.serverNonce
}

// TestScramChannelBindingWithAuthzid: with an authzid in the gs2 header, c= may repeat that header
// (RFC 5802) or be "n,," (the Java client's constant); another header is refused.
func TestScramChannelBindingWithAuthzid(t *testing.T) {
	srv := NewScram(ScramSHA256Mechanism, scramStore(t), nil)
	for cb, ok := range map[string]bool{"n,a=alice,": true, "n,,": true, "n,a=bob,": false, "n,a=alice": false} {
		cl := &scramClient{m: ScramSHA256Mechanism, user: "alice", pw: "alice-secret", cnonce: "abc", gs2: "n,a=alice,"}
		x := startScram(t, srv, cl)
		_, done, err := x.Step(cl.final(cb, cl.serverNonce))
		if ok != (err == nil && done) {
			t.Errorf("c=%q: %v %v, want ok=%v", cb, done, err, ok)
		}
	}
}

// TestScramReplay: a recorded client-final, replayed into the finished exchange or into a new
// exchange that began with the same client-first, is refused.
func TestScramReplay(t *testing.T) {
	srv := NewScram(ScramSHA256Mechanism, scramStore(t), nil)
	cl := &scramClient{m: ScramSHA256Mechanism, user: "alice", pw: "alice-secret", cnonce: "abc"}
	x := startScram(t, srv, cl)
	recorded := cl.final("n,,", cl.serverNonce)
	if _, done, err := x.Step(recorded); err != nil || !done {
		t.Fatalf("first use: %v %v", done, err)
	}
	_, _, err := x.Step(recorded)
	wantSaslError(t, err, kerr.IllegalSaslState, "Unexpected challenge in Sasl server state COMPLETE")

	y := srv.Start()
	if _, _, err := y.Step([]byte(cl.first)); err != nil {
		t.Fatal(err)
	}
	_, _, err = y.Step(recorded)
	se := wantSaslError(t, err, kerr.SaslAuthenticationFailed, genericText)
	if !strings.Contains(se.Message, "nonce") {
		t.Errorf("replay refused for %q, want the nonce", se.Message)
	}
	// A client-final as the first message is not a client-first.
	_, _, err = srv.Start().Step(recorded)
	wantSaslError(t, err, kerr.SaslAuthenticationFailed, genericText)
}

// TestScramTruncated: every prefix of a valid client-first and client-final fails (or, for a
// client-first cut inside the nonce, is a shorter valid one), never panics.
func TestScramTruncated(t *testing.T) {
	srv := NewScram(ScramSHA512Mechanism, scramStore(t), nil)
	cl := &scramClient{m: ScramSHA512Mechanism, user: "alice", pw: "alice-secret", cnonce: "nonce123"}
	first := string(cl.clientFirst())
	for i := range len(first) {
		_, _, err := srv.Start().Step([]byte(first[:i]))
		if err == nil && !strings.HasPrefix(first[:i], "n,,n=alice,r=") {
			t.Errorf("client-first prefix %q accepted", first[:i])
		}
	}
	for i := 0; ; i++ {
		y := srv.Start()
		sf, _, err := y.Step([]byte(first))
		if err != nil {
			t.Fatal(err)
		}
		cl.readServerFirst(t, sf)
		final := string(cl.final("n,,", cl.serverNonce))
		if i >= len(final) {
			break
		}
		if _, _, err := y.Step([]byte(final[:i])); err == nil {
			t.Errorf("client-final prefix %q accepted", final[:i])
		}
	}
}

func TestScramClientFirstGrammar(t *testing.T) {
	srv := NewScram(ScramSHA256Mechanism, scramStore(t), nil)
	for _, c := range []struct {
		in string
		ok bool
	}{
		{"n,,n=alice,r=abc", true},
		{"n,a=alice,n=alice,r=abc", true},
		{"n,,m=ext,n=alice,r=abc", true},                   // reserved m= is ignored, as Kafka does
		{"n,,n=alice,r=abc,foo=bar,tokenauth=false", true}, // unknown extensions are ignored
		{"y,,n=alice,r=abc", false},
		{"p=tls-unique,,n=alice,r=abc", false},
		{"n,n=alice,r=abc", false},
		{"n,,n=alice,r=", false},
		{"n,,n=alice,r=a b", false},
		{"n,,n=,r=abc", false},
		{"n,,n=al=ice,r=abc", false},
		{"n,,n=alicé,r=abc", false}, // Kafka's saslname is ASCII
		{"n,,n=alice,r=abc,1x=y", false},
		{"n,,n=alice,r=abc,x", false},
		{"n,,n=alice,r=abc,x=", false},
		{"n,,n=alice,r=abc,", false},
		{"n,,r=abc,n=alice", false},
		{"n,a=al,ice,n=alice,r=abc", false},
	} {
		sf, _, err := srv.Start().Step([]byte(c.in))
		if c.ok != (err == nil) {
			t.Errorf("%q: %q, %v; want ok=%v", c.in, sf, err, c.ok)
		}
		if err == nil && !strings.HasPrefix(string(sf), "r=abc") {
			t.Errorf("%q: server-first %q", c.in, sf)
		}
	}
}

// TestScramRFC7677Vector checks the proof and server signature of RFC 7677's SCRAM-SHA-256 example
// (user "user", password "pencil"), with the exchange put in the state after its server-first.
func TestScramRFC7677Vector(t *testing.T) {
	salt, _ := base64.StdEncoding.DecodeString("W22ZaJ0SNY7soEsUEjb6gQ==")
	cred, err := ScramSHA256Mechanism.credentialWithSalt("pencil", salt, 4096)
	if err != nil {
		t.Fatal(err)
	}
	first, err := parseClientFirst("n,,n=user,r=rOprNGfwEbeRWgbNEkqO")
	if err != nil {
		t.Fatal(err)
	}
	x := &scramExchange{srv: &scramServer{mech: ScramSHA256Mechanism}, state: "RECEIVE_CLIENT_FINAL_MESSAGE", first: first, cred: cred,
		nonce:       "rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0",
		serverFirst: "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"}
	x.pending = Result{AuthorizationID: "user"}
	sfinal, done, err := x.Step([]byte("c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="))
	if err != nil || !done || string(sfinal) != "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=" || x.Result().AuthorizationID != "user" {
		t.Fatalf("RFC 7677 vector: %q %v %v", sfinal, done, err)
	}
}
