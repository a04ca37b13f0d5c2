package sasl

import (
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"io"
	"strings"
	"time"
)

// CredentialStore looks up a user's SCRAM credential for a mechanism (the broker's cache of
// /config/users, docs/sasl.md §3). found false: no such user or no credential for the mechanism.
type CredentialStore interface {
	ScramCredential(mechanism, username string) (cred ScramCredential, found bool, err error)
}

// DelegationToken is a delegation token's SCRAM side (KIP-48): its owner and expiry.
type DelegationToken struct {
	Owner      string
	Credential ScramCredential
	Expiry     time.Time
}

// TokenStore looks up delegation tokens by token id for SCRAM's tokenauth extension.
type TokenStore interface {
	DelegationToken(mechanism, tokenID string) (tok DelegationToken, found bool, err error)
}

// NewScram returns the server of a SCRAM mechanism (RFC 5802/7677 as Kafka's ScramSaslServer,
// docs/sasl.md §3). creds and tokens may be nil (no users, no delegation tokens).
//
// The server side is written here rather than taken from github.com/xdg-go/scram: that library is
// not among this project's modules, its server compares the final nonce for strict equality (which
// old librdkafka fails, docs/sasl.md §3) and knows nothing of Kafka's tokenauth extension.
func NewScram(m *ScramMechanism, creds CredentialStore, tokens TokenStore) Server {
	return &scramServer{mech: m, creds: creds, tokens: tokens}
}

type scramServer struct {
	mech   *ScramMechanism
	creds  CredentialStore
	tokens TokenStore
	rand   io.Reader // nil: crypto/rand (tests set it)
}

func (s *scramServer) Name() string { return s.mech.name }

func (s *scramServer) Start() Exchange {
	return &scramExchange{srv: s, state: "RECEIVE_CLIENT_FIRST_MESSAGE"}
}

type scramExchange struct {
	srv         *scramServer
	state       string // Kafka's state names, for ILLEGAL_SASL_STATE's text
	first       clientFirst
	serverFirst string
	nonce       string // the server-first nonce: client nonce + server nonce
	cred        ScramCredential
	pending     Result // what completion will establish
	result      Result
}

func (x *scramExchange) Result() Result { return x.result }

func (x *scramExchange) Step(token []byte) ([]byte, bool, error) {
	var (
		challenge []byte
		done      bool
		err       *Error
	)
	switch x.state {
	case "RECEIVE_CLIENT_FIRST_MESSAGE":
		challenge, err = x.clientFirst(token)
		if err == nil {
			x.state = "RECEIVE_CLIENT_FINAL_MESSAGE"
		}
	case "RECEIVE_CLIENT_FINAL_MESSAGE":
		challenge, err = x.clientFinal(token)
		if err == nil {
			x.state, done = "COMPLETE", true
		}
	default:
		return nil, false, illegalState(x.srv.mech.name, x.state)
	}
	if err != nil {
		x.state, x.cred = "FAILED", ScramCredential{}
		return nil, false, err
	}
	if done {
		x.cred, x.result = ScramCredential{}, x.pending
	}
	return challenge, done, nil
}

// clientFirst answers the client-first message with the server-first message.
func (x *scramExchange) clientFirst(token []byte) ([]byte, *Error) {
	mech := x.srv.mech
	if e := tooLong(mech.name, token); e != nil {
		return nil, e
	}
	cf, perr := parseClientFirst(string(token))
	if perr != nil {
		return nil, generic(mech.name, "Invalid SCRAM client first message format", perr)
	}
	x.first = cf
	if cf.tokenAuth() {
		var tok DelegationToken
		found, err := false, error(nil)
		if x.srv.tokens != nil {
			tok, found, err = x.srv.tokens.DelegationToken(mech.name, cf.username)
		}
		if err != nil {
			return nil, generic(mech.name, "Authentication failed: Credentials could not be obtained", err)
		}
		if !found || tok.Owner == "" {
			return nil, generic(mech.name, "Token Authentication failed: Invalid tokenId : "+cf.username, nil)
		}
		x.cred = tok.Credential
		x.pending = Result{AuthorizationID: tok.Owner, CredentialExpiry: tok.Expiry, TokenAuthenticated: true}
	} else {
		var cred ScramCredential
		found, err := false, error(nil)
		if x.srv.creds != nil {
			cred, found, err = x.srv.creds.ScramCredential(mech.name, cf.username)
		}
		if err != nil {
			return nil, generic(mech.name, "Authentication failed: Credentials could not be obtained", err)
		}
		if !found {
			return nil, generic(mech.name, "Authentication failed: Invalid user credentials", nil)
		}
		x.cred = cred
		x.pending = Result{AuthorizationID: cf.username}
	}
	if cf.authzid != "" && cf.authzid != cf.username {
		return nil, visible(mech.name, "Authentication failed: Client requested an authorization id that is different from username")
	}
	if x.cred.Iterations < mech.minIterations {
		return nil, generic(mech.name, fmt.Sprintf("Iterations %d is less than the minimum %d for %s", x.cred.Iterations, mech.minIterations, mech.name), nil)
	}
	if len(x.cred.StoredKey) != mech.newHash().Size() {
		return nil, generic(mech.name, "Authentication failed: Credentials could not be obtained",
			fmt.Errorf("stored_key has %d bytes, want %d", len(x.cred.StoredKey), mech.newHash().Size()))
	}
	snonce, err := randomBase36(x.srv.rand)
	if err != nil {
		return nil, generic(mech.name, "Authentication failed: Credentials could not be obtained", err)
	}
	x.nonce = cf.nonce + snonce
	x.serverFirst = fmt.Sprintf("r=%s,s=%s,i=%d", x.nonce, base64.StdEncoding.EncodeToString(x.cred.Salt), x.cred.Iterations)
	return []byte(x.serverFirst), nil
}

// clientFinal checks the client-final message and answers the server-final message.
func (x *scramExchange) clientFinal(token []byte) ([]byte, *Error) {
	mech := x.srv.mech
	if e := tooLong(mech.name, token); e != nil {
		return nil, e
	}
	cf, perr := parseClientFinal(string(token))
	if perr != nil {
		return nil, generic(mech.name, "Invalid SCRAM client final message format", perr)
	}
	// The nonce: prefix and suffix, never strict equality (docs/sasl.md §3: librdkafka <= 2.6.0
	// sends the client nonce twice). A final message of another exchange fails here.
	if !strings.HasPrefix(cf.nonce, x.first.nonce) || !strings.HasSuffix(cf.nonce, x.nonce) {
		return nil, generic(mech.name, "Invalid client nonce in the final client message.", nil)
	}
	if cb := string(cf.channelBinding); cb != "n,," && cb != x.first.gs2Header {
		return nil, generic(mech.name, "Invalid channel binding in the final client message.", nil)
	}
	authMessage := x.first.bare + "," + x.serverFirst + "," + cf.withoutProof
	size := mech.newHash().Size()
	if len(cf.proof) != size {
		return nil, generic(mech.name, "Invalid client credentials", fmt.Errorf("proof has %d bytes, want %d", len(cf.proof), size))
	}
	clientSignature := mech.hmac(x.cred.StoredKey, authMessage)
	clientKey := make([]byte, size)
	for i := range clientKey {
		clientKey[i] = cf.proof[i] ^ clientSignature[i]
	}
	if subtle.ConstantTimeCompare(mech.h(clientKey), x.cred.StoredKey) != 1 {
		return nil, generic(mech.name, "Invalid client credentials", nil)
	}
	return []byte("v=" + base64.StdEncoding.EncodeToString(mech.hmac(x.cred.ServerKey, authMessage))), nil
}
