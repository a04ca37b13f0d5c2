package sasl

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/isrbroker/isrbroker/broker/security/jaas"
)

// NewOAuthBearer returns the OAUTHBEARER server (RFC 7628) with Kafka's unsecured-JWS validator
// (OAuthBearerUnsecuredValidatorCallbackHandler, docs/sasl.md §4). now nil means time.Now. Empty
// claim names take the defaults (sub, scope).
func NewOAuthBearer(opts jaas.UnsecuredValidatorOptions, now func() time.Time) Server {
	def := jaas.DefaultUnsecuredValidatorOptions()
	if opts.PrincipalClaimName == "" {
		opts.PrincipalClaimName = def.PrincipalClaimName
	}
	if opts.ScopeClaimName == "" {
		opts.ScopeClaimName = def.ScopeClaimName
	}
	if now == nil {
		now = time.Now
	}
	return oauthServer{opts, now}
}

type oauthServer struct {
	opts jaas.UnsecuredValidatorOptions
	now  func() time.Time
}

func (oauthServer) Name() string { return OAuthBearer }

func (s oauthServer) Start() Exchange { return &oauthExchange{srv: s} }

type oauthExchange struct {
	srv          oauthServer
	state        string // "" while running, then COMPLETE or FAILED
	errorMessage string // the JSON error sent as a challenge, until the client's \x01
	result       Result
}

func (x *oauthExchange) Result() Result { return x.result }

func (x *oauthExchange) Step(token []byte) ([]byte, bool, error) {
	if x.state != "" {
		return nil, false, illegalState(OAuthBearer, x.state)
	}
	challenge, done, err := x.step(token)
	switch {
	case err != nil:
		x.state = "FAILED"
		return nil, false, err
	case done:
		x.state = "COMPLETE"
	}
	return challenge, done, nil
}

func (x *oauthExchange) step(token []byte) ([]byte, bool, *Error) {
	if len(token) == 1 && token[0] == 0x01 && x.errorMessage != "" {
		// The client's acknowledgement of our error challenge: fail with that text.
		return nil, false, visible(OAuthBearer, x.errorMessage)
	}
	x.errorMessage = ""
	if e := tooLong(OAuthBearer, token); e != nil {
		return nil, false, e
	}
	ir, err := ParseOAuthBearerInitialResponse(token)
	if err != nil {
		return nil, false, generic(OAuthBearer, "Invalid OAUTHBEARER client first message", err)
	}
	jws, verr := x.srv.validate(ir.Token)
	if verr != nil {
		x.errorMessage = verr.json()
		return []byte(x.errorMessage), false, nil
	}
	if ir.AuthorizationID != "" && ir.AuthorizationID != jws.principal {
		return nil, false, visible(OAuthBearer, fmt.Sprintf(
			"Authentication failed: Client requested an authorization id (%s) that is different from the token's principal name (%s)",
			ir.AuthorizationID, jws.principal))
	}
	x.result = Result{AuthorizationID: jws.principal, CredentialExpiry: jws.expiry}
	return []byte{}, true, nil
}

// OAuthBearerInitialResponse is a parsed client initial response:
// n,[a=<authzid>],\x01auth=Bearer <token>\x01[<key>=<value>\x01]*\x01.
type OAuthBearerInitialResponse struct {
	AuthorizationID string
	Token           string
	Extensions      map[string]string
}

// ParseOAuthBearerInitialResponse parses the initial response with the grammar of Kafka's
// OAuthBearerClientInitialResponse (docs/sasl.md §4).
func ParseOAuthBearerInitialResponse(b []byte) (OAuthBearerInitialResponse, error) {
	var r OAuthBearerInitialResponse
	s, ok := strings.CutPrefix(string(b), "n,")
	if !ok {
		return r, errors.New("gs2 header must start with n,")
	}
	if strings.HasPrefix(s, "a=") {
		i := strings.IndexByte(s, ',')
		if i < 0 {
			return r, errors.New("gs2 header not terminated by ','")
		}
		if _, err := unescapeSaslName(s[2:i], "authzid"); err != nil {
			return r, err
		}
		r.AuthorizationID, s = s[2:i], s[i+1:] // Kafka compares the authzid as sent
	} else if s, ok = strings.CutPrefix(s, ","); !ok {
		return r, errors.New("gs2 header not terminated by ','")
	}
	if len(s) < 2 || s[0] != 0x01 || s[len(s)-1] != 0x01 {
		return r, errors.New("key/value pairs must be enclosed in \\x01")
	}
	pairs := s[1 : len(s)-1] // each pair ends with \x01
	if pairs != "" && !strings.HasSuffix(pairs, "\x01") {
		return r, errors.New("the last key/value pair is not terminated by \\x01")
	}
	kv := map[string]string{}
	for _, item := range strings.Split(strings.TrimSuffix(pairs, "\x01"), "\x01") {
		if item == "" && pairs == "" {
			break
		}
		k, v, ok := strings.Cut(item, "=")
		if !ok || !isAlpha(k) || !isOAuthValue(v) {
			return r, fmt.Errorf("malformed key/value pair %.32q", item)
		}
		kv[k] = v
	}
	auth, ok := kv["auth"]
	if !ok {
		return r, errors.New("'auth' not specified")
	}
	delete(kv, "auth")
	scheme, tok, ok := strings.Cut(auth, " ")
	tok = strings.TrimLeft(tok, " ")
	if !ok || !isWord(scheme) || !isTokenValue(tok) {
		return r, errors.New("invalid 'auth' format")
	}
	if !strings.EqualFold(scheme, "bearer") {
		return r, fmt.Errorf("invalid scheme %.16q", scheme)
	}
	r.Token, r.Extensions = tok, kv
	return r, nil
}

// isOAuthValue: [\x21-\x7E \t\r\n]+.
func isOAuthValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; !(c >= 0x21 && c <= 0x7E || c == ' ' || c == '\t' || c == '\r' || c == '\n') {
			return false
		}
	}
	return v != ""
}

// isWord: Java's \w+, [A-Za-z0-9_]+.
func isWord(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return s != ""
}

// isTokenValue: [-_.a-zA-Z0-9]+.
func isTokenValue(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			return false
		}
	}
	return s != ""
}
