// Package sasl is the server side of the SASL mechanisms a Kafka 2.4 broker offers: PLAIN,
// SCRAM-SHA-256, SCRAM-SHA-512 and OAUTHBEARER with Kafka's unsecured-JWS validator; GSSAPI is
// refused (docs/sasl.md §2–§5). A Server is one enabled mechanism of a listener; Start begins one
// exchange (an authentication or a re-authentication of one connection) and Step feeds it each
// client token. The SaslHandshake/SaslAuthenticate framing (docs/sasl.md §6) is the broker's part.
//
// The package imports nothing of the repository but broker/security/jaas: it is a named shared leaf
// of docs/design.md ("Layering"). Bad input gets an *Error, never a panic.
package sasl

import (
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/isrbroker/isrbroker/broker/security/jaas"
)

// Kafka's mechanism names (case-sensitive, as in sasl.enabled.mechanisms).
const (
	PLAIN        = "PLAIN"
	ScramSHA256  = "SCRAM-SHA-256"
	ScramSHA512  = "SCRAM-SHA-512"
	OAuthBearer  = "OAUTHBEARER"
	GSSAPI       = "GSSAPI"
	maxTokenSize = 524288 // Kafka's max SASL auth frame (docs/sasl.md §6); longer tokens fail
)

// Server is one SASL mechanism on the server side.
type Server interface {
	// Name is the mechanism's name.
	Name() string
	// Start begins one exchange.
	Start() Exchange
}

// Exchange is one authentication exchange; it is not safe for concurrent use (one connection's
// reader drives it).
type Exchange interface {
	// Step evaluates one client token. A non-nil challenge is sent to the client (an empty one too:
	// PLAIN's success is an empty challenge, a zero-length frame on SaslHandshake v0); done reports
	// that the client is authenticated; err is an *Error, after which the exchange is failed and
	// every later Step is ILLEGAL_SASL_STATE.
	Step(token []byte) (challenge []byte, done bool, err error)
	// Result is the outcome; valid once Step reported done.
	Result() Result
}

// Result is what a completed exchange established.
type Result struct {
	// AuthorizationID is the principal's name: the broker's principal is User:<AuthorizationID>.
	AuthorizationID string
	// CredentialExpiry is when the credential expires (an OAUTHBEARER token's exp, a delegation
	// token's expiry); zero when it does not. It bounds the session lifetime (SessionLifetime).
	CredentialExpiry time.Time
	// TokenAuthenticated reports a SCRAM delegation-token login (tokenauth=true).
	TokenAuthenticated bool
}

// SessionLifetime is the session_lifetime_ms of SaslAuthenticate v1 (KIP-368, docs/sasl.md §6):
// zero (none) when connections.max.reauth.ms (maxReauth) is not positive; else maxReauth, bounded
// by the credential's remaining life at authEnd, never below zero.
func SessionLifetime(maxReauth time.Duration, r Result, authEnd time.Time) time.Duration {
	if maxReauth <= 0 {
		return 0
	}
	life := maxReauth
	if !r.CredentialExpiry.IsZero() {
		if left := r.CredentialExpiry.Sub(authEnd); left < life {
			life = left
		}
	}
	return max(life, 0)
}

// Error is a failed exchange step as Kafka reports it: the error code (SASL_AUTHENTICATION_FAILED,
// or ILLEGAL_SASL_STATE for a token after the end) and the text for the client.
type Error struct {
	Code      int16  // the Kafka error code
	Mechanism string // the mechanism's name
	// Message is the mechanism's text. When Visible (Kafka's SaslAuthenticationException) it is sent
	// to the client as it is; otherwise (Kafka's SaslException) it is only logged and the client gets
	// the generic text of ClientMessage.
	Message string
	Visible bool
	Err     error // an underlying cause, logged only
}

func (e *Error) Error() string {
	s := fmt.Sprintf("%s: %s", e.Mechanism, e.Message)
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *Error) Unwrap() error { return e.Err }

// Is matches the kerr error of the same code, so errors.Is(err, kerr.SaslAuthenticationFailed) holds.
func (e *Error) Is(target error) bool {
	var ke *kerr.Error
	return errors.As(target, &ke) && ke.Code == e.Code
}

// ClientMessage is the error_message of the SaslAuthenticate response (Kafka's
// SaslServerAuthenticator): the mechanism's text if it is visible, else the generic text naming
// the mechanism; reauth says whether the exchange was a re-authentication.
func (e *Error) ClientMessage(reauth bool) string {
	if e.Visible || e.Code != kerr.SaslAuthenticationFailed.Code {
		return e.Message
	}
	during := "authentication"
	if reauth {
		during = "re-authentication"
	}
	return fmt.Sprintf("Authentication failed during %s due to invalid credentials with SASL mechanism %s", during, e.Mechanism)
}

// visible is a failure whose text the client sees (Kafka's SaslAuthenticationException).
func visible(mech, msg string) *Error {
	return &Error{Code: kerr.SaslAuthenticationFailed.Code, Mechanism: mech, Message: msg, Visible: true}
}

// generic is a failure the client sees only as the generic text (Kafka's SaslException).
func generic(mech, msg string, cause error) *Error {
	return &Error{Code: kerr.SaslAuthenticationFailed.Code, Mechanism: mech, Message: msg, Err: cause}
}

// illegalState is a token after the exchange completed or failed.
func illegalState(mech, state string) *Error {
	return &Error{Code: kerr.IllegalSaslState.Code, Mechanism: mech, Visible: true,
		Message: "Unexpected challenge in Sasl server state " + state}
}

// tooLong rejects a token over Kafka's auth frame limit before any parsing.
func tooLong(mech string, token []byte) *Error {
	if len(token) <= maxTokenSize {
		return nil
	}
	return generic(mech, fmt.Sprintf("SASL token of %d bytes exceeds the maximum %d", len(token), maxTokenSize), nil)
}

// Config holds what the mechanisms need; New takes the parts its mechanism uses.
type Config struct {
	// Plain checks PLAIN users (StaticPlainUsers from jaas.PlainUsers of the listener's entries).
	Plain PlainAuthenticator
	// Credentials looks up SCRAM credentials (/config/users in ZooKeeper, later).
	Credentials CredentialStore
	// Tokens looks up delegation tokens for SCRAM tokenauth; nil: no token is ever found.
	Tokens TokenStore
	// OAuthBearer are the unsecured validator's options (jaas.Entry.UnsecuredValidator).
	OAuthBearer jaas.UnsecuredValidatorOptions
	// Now is the clock of the OAUTHBEARER validator; nil means time.Now.
	Now func() time.Time
}

// ErrUnsupportedMechanism is returned by New for a name isrbroker does not implement.
var ErrUnsupportedMechanism = errors.New("unsupported SASL mechanism")

// ErrGSSAPIUnsupported is returned for GSSAPI: it needs a Kerberos KDC (docs/sasl.md §5).
var ErrGSSAPIUnsupported = errors.New("SASL mechanism GSSAPI needs a Kerberos KDC, a keytab and sasl.kerberos.service.name; " +
	"isrbroker does not support it: set sasl.enabled.mechanisms to PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER " +
	"(GSSAPI is Kafka's default)")

// NewGSSAPI refuses GSSAPI, for start-up to stop with a clear message.
func NewGSSAPI() (Server, error) { return nil, ErrGSSAPIUnsupported }

// New returns the server of a mechanism named as in sasl.enabled.mechanisms, or an error naming
// what is missing (an unknown name, GSSAPI, a mechanism without its store).
func New(mechanism string, cfg Config) (Server, error) {
	switch mechanism {
	case PLAIN:
		if cfg.Plain == nil {
			return nil, errors.New("SASL mechanism PLAIN needs the users of the listener's PlainLoginModule (user_<name> options)")
		}
		return NewPlain(cfg.Plain), nil
	case ScramSHA256, ScramSHA512:
		if cfg.Credentials == nil {
			return nil, fmt.Errorf("SASL mechanism %s needs a SCRAM credential store", mechanism)
		}
		m, _ := ScramMechanismByName(mechanism)
		return NewScram(m, cfg.Credentials, cfg.Tokens), nil
	case OAuthBearer:
		return NewOAuthBearer(cfg.OAuthBearer, cfg.Now), nil
	case GSSAPI:
		return NewGSSAPI()
	default:
		return nil, fmt.Errorf("%w %q: isrbroker supports PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 and OAUTHBEARER", ErrUnsupportedMechanism, mechanism)
	}
}
