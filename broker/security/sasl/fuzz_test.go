package sasl

import (
	"errors"
	"testing"
	"time"

	"github.com/isrbroker/isrbroker/broker/security/jaas"
)

// checkStep runs Step and checks its contract whatever the input: an error is an *Error and then
// nothing is done; done means a non-nil challenge.
func checkStep(t *testing.T, x Exchange, token []byte) (challenge []byte, done bool, err error) {
	t.Helper()
	challenge, done, err = x.Step(token)
	if err != nil {
		var se *Error
		if !errors.As(err, &se) || done || challenge != nil {
			t.Fatalf("Step(%q) = %q, %v, %v (%T)", token, challenge, done, err, err)
		}
	} else if challenge == nil {
		t.Fatalf("Step(%q) succeeded with a nil challenge", token)
	}
	return challenge, done, err
}

func FuzzPlainStep(f *testing.F) {
	for _, s := range []string{"\x00alice\x00alice-secret", "alice\x00alice\x00alice-secret", "\x00\x00", "", "a\x00b\x00c\x00d"} {
		f.Add([]byte(s), []byte(s))
	}
	srv := NewPlain(StaticPlainUsers{"alice": "alice-secret"})
	f.Fuzz(func(t *testing.T, first, second []byte) {
		x := srv.Start()
		if _, done, err := checkStep(t, x, first); err == nil && (!done || x.Result().AuthorizationID == "") {
			t.Fatalf("PLAIN step ok but not done with a principal: %q", first)
		}
		if _, _, err := checkStep(t, x, second); err == nil {
			t.Fatal("a second PLAIN step succeeded")
		}
	})
}

// FuzzScramStep feeds an arbitrary client-first message, and an arbitrary client-final message
// after a valid client-first.
func FuzzScramStep(f *testing.F) {
	for _, s := range [][2]string{
		{"n,,n=alice,r=abc", "c=biws,r=abcXYZ,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="},
		{"n,a=alice,m=x,n=alice,r=abc,tokenauth=true", "c=biws,r=abc,x=y,p="},
		{"n,,n=a=2Cb,r=!", "c=,r=,p=AAAA"},
		{"y,,n=alice,r=abc", "garbage"},
		{"", ""},
	} {
		f.Add([]byte(s[0]), []byte(s[1]))
	}
	store := mapStore{"SCRAM-SHA-256/alice": mustCred(f, ScramSHA256Mechanism, "alice-secret", 4096)}
	tokens := tokenStore{"SCRAM-SHA-256/alice": {Owner: "bob", Credential: store["SCRAM-SHA-256/alice"]}}
	srv := NewScram(ScramSHA256Mechanism, store, tokens)
	f.Fuzz(func(t *testing.T, first, final []byte) {
		if _, done, _ := checkStep(t, srv.Start(), first); done {
			t.Fatal("SCRAM done after one message")
		}
		x := srv.Start()
		if _, _, err := checkStep(t, x, []byte("n,,n=alice,r=abc")); err != nil {
			t.Fatal(err)
		}
		// A proof for a random server nonce cannot be guessed: the final must fail.
		if _, _, err := checkStep(t, x, final); err == nil {
			t.Fatalf("client-final %q accepted", final)
		}
	})
}

func FuzzOAuthBearerStep(f *testing.F) {
	tok, _ := UnsecuredJWS(map[string]any{"sub": "alice", "exp": 1_800_000_000, "scope": []string{"a"}})
	for _, s := range []string{
		"n,,\x01auth=Bearer " + tok + "\x01\x01",
		"n,a=alice,\x01auth=Bearer " + tok + "\x01k=v\x01\x01",
		"n,,\x01auth=Bearer a.b.\x01\x01", "\x01", "", "n,,\x01\x01",
	} {
		f.Add([]byte(s), []byte{1})
	}
	opts := jaas.DefaultUnsecuredValidatorOptions()
	opts.RequiredScope = []string{"a"}
	srv := NewOAuthBearer(opts, func() time.Time { return time.Unix(1_700_000_000, 0) })
	f.Fuzz(func(t *testing.T, first, second []byte) {
		x := srv.Start()
		_, done, err := checkStep(t, x, first)
		if done && x.Result().AuthorizationID == "" {
			t.Fatal("done without a principal")
		}
		if err == nil && !done {
			checkStep(t, x, second)
		}
	})
}
