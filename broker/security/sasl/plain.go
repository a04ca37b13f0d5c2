package sasl

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
)

// PlainAuthenticator checks a PLAIN user's password (Kafka's PlainServerCallbackHandler). An error
// means the check could not be made.
type PlainAuthenticator interface {
	Authenticate(username, password string) (bool, error)
}

// StaticPlainUsers are the user_<name>="<password>" options of a listener's PlainLoginModule
// (jaas.PlainUsers): name → password.
type StaticPlainUsers map[string]string

// Authenticate compares the password in constant time (docs/sasl.md §2; Kafka 2.4 used
// Arrays.equals). Both sides are hashed first so that the time does not depend on the lengths
// either; an unknown user costs the same compare.
func (u StaticPlainUsers) Authenticate(username, password string) (bool, error) {
	want, ok := u[username]
	w := sha256.Sum256([]byte(want))
	g := sha256.Sum256([]byte(password))
	eq := subtle.ConstantTimeCompare(w[:], g[:]) == 1
	return ok && eq, nil
}

// NewPlain returns the PLAIN server (RFC 4616 as Kafka's PlainSaslServer, docs/sasl.md §2).
func NewPlain(users PlainAuthenticator) Server { return plainServer{users} }

type plainServer struct{ users PlainAuthenticator }

func (plainServer) Name() string { return PLAIN }

func (s plainServer) Start() Exchange { return &plainExchange{users: s.users} }

type plainExchange struct {
	users  PlainAuthenticator
	state  string // "" until a step ends: COMPLETE or FAILED
	result Result
}

func (x *plainExchange) Result() Result { return x.result }

func (x *plainExchange) Step(token []byte) ([]byte, bool, error) {
	if x.state != "" {
		return nil, false, illegalState(PLAIN, x.state)
	}
	user, err := x.evaluate(token)
	if err != nil {
		x.state = "FAILED"
		return nil, false, err
	}
	x.state = "COMPLETE"
	x.result = Result{AuthorizationID: user}
	return []byte{}, true, nil
}

// evaluate checks `[authzid] NUL authcid NUL passwd`: split at most four times at NUL, exactly
// three tokens, as Kafka's extractTokens.
func (x *plainExchange) evaluate(token []byte) (string, *Error) {
	if e := tooLong(PLAIN, token); e != nil {
		return "", e
	}
	parts := bytes.SplitN(token, []byte{0}, 4)
	if len(parts) != 3 {
		return "", visible(PLAIN, fmt.Sprintf("Invalid SASL/PLAIN response: expected 3 tokens, got %d", len(parts)))
	}
	authzid, user, password := string(parts[0]), string(parts[1]), string(parts[2])
	if user == "" {
		return "", visible(PLAIN, "Authentication failed: username not specified")
	}
	if password == "" {
		return "", visible(PLAIN, "Authentication failed: password not specified")
	}
	ok, err := x.users.Authenticate(user, password)
	if err != nil {
		e := visible(PLAIN, "Authentication failed: credentials for user could not be verified")
		e.Err = err
		return "", e
	}
	if !ok {
		return "", visible(PLAIN, "Authentication failed: Invalid username or password")
	}
	if authzid != "" && authzid != user {
		return "", visible(PLAIN, "Authentication failed: Client requested an authorization id that is different from username")
	}
	return user, nil
}
