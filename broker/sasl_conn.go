package broker

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/isrbroker/isrbroker/broker/kproto"
	"github.com/isrbroker/isrbroker/broker/security/sasl"
)

// SASL on the connection (docs/security.md, "SASL on the connection"): Kafka 2.4's
// SaslServerAuthenticator state machine, run by the connection's reader before any other
// request is served, and KIP-368 re-authentication on an authenticated connection.

// saslState is where a connection of a SASL listener is in the authentication.
type saslState uint8

const (
	saslHandshakeOrVersions saslState = iota // the first request: ApiVersions or SaslHandshake
	saslHandshakeOnly                        // after ApiVersions (or a re-authentication's start): SaslHandshake
	saslAuthenticate                         // the mechanism's tokens: raw frames (v0) or SaslAuthenticate (v1)
	saslComplete                             // authenticated: requests are served
)

// maxAuthFrame is the largest frame a connection may send before it is authenticated (Kafka's
// SaslServerAuthenticator.MAX_RECEIVE_SIZE); a larger one closes the connection.
const maxAuthFrame = 524288

// minReauthInterval is the shortest time between two re-authentications' starts; a SaslHandshake
// sooner is served as on a connection that cannot re-authenticate (ILLEGAL_SASL_STATE), as Kafka's
// KafkaChannel.maybeBeginServerReauthentication does.
const minReauthInterval = time.Second

// Errors that end a connection's authentication. errAuthentication and errIllegalSASL close it
// after connection.failed.authentication.delay.ms (Kafka delays the close of every
// AuthenticationException); the others at once.
var (
	errAuthentication = errors.New("broker: SASL authentication failed")
	errIllegalSASL    = fmt.Errorf("%w: unexpected request during SASL authentication", errAuthentication)
	errSessionExpired = errors.New("broker: SASL session expired (connections.max.reauth.ms); the client did not re-authenticate")
	errSecondVersions = errors.New("broker: a second ApiVersions request during SASL authentication")
)

// saslConn is one connection's authentication state; only the reader goroutine uses it.
type saslConn struct {
	c     *conn
	sec   *ListenerSecurity
	state saslState
	v1    bool // SaslHandshake v1: the tokens come in SaslAuthenticate requests
	mech  *SASLMechanism
	exch  sasl.Exchange

	// reauthOK: the client authenticated with SaslAuthenticate v1, so it knows its session's
	// lifetime and may re-authenticate (Kafka's connectedClientSupportsReauthentication).
	reauthOK bool

	principal string    // User:<name> once authenticated
	expiry    time.Time // the session's end (zero: none, connections.max.reauth.ms is 0)
	reauth    bool      // the exchange in progress is a re-authentication
	// reauthMismatch is the failure a re-authentication with another mechanism gets at its
	// first token (Kafka's REAUTH_BAD_MECHANISM).
	reauthMismatch  string
	lastReauthStart time.Time
}

// frameKey reads a request frame's api key (-1 when the frame is too short).
func frameKey(frame []byte) int16 {
	if len(frame) < 2 {
		return -1
	}
	return int16(binary.BigEndian.Uint16(frame))
}

// maxFrame is the largest request frame the reader accepts now.
func (c *conn) maxFrame() int32 {
	if a := c.sasl; a != nil && a.state != saslComplete {
		return min(maxAuthFrame, c.s.cfg.SocketRequestMaxBytes)
	}
	return c.s.cfg.SocketRequestMaxBytes
}

// gate runs before a frame of a SASL connection is served as a request. It reports whether
// the frame was consumed by the authentication; an error closes the connection.
func (a *saslConn) gate(frame []byte, start time.Time) (bool, error) {
	if a.state == saslComplete {
		now := time.Now()
		if frameKey(frame) == int16(kmsg.SASLHandshake) && a.beginReauth(now) {
			return true, a.serveFrame(frame, start)
		}
		if !a.expiry.IsZero() && now.After(a.expiry) && frameKey(frame) != int16(kmsg.SASLHandshake) {
			return true, errSessionExpired
		}
		return false, nil
	}
	return true, a.serveFrame(frame, start)
}

// beginReauth starts a KIP-368 re-authentication if the session has a lifetime (the client was
// told its lifetime in SaslAuthenticate v1) and the last one began at least a second ago.
func (a *saslConn) beginReauth(now time.Time) bool {
	if a.expiry.IsZero() || !a.reauthOK {
		return false
	}
	if !a.lastReauthStart.IsZero() && now.Sub(a.lastReauthStart) < minReauthInterval {
		return false
	}
	a.lastReauthStart = now
	a.state, a.reauth, a.reauthMismatch = saslHandshakeOnly, true, ""
	return true
}

// serveFrame serves one frame of an unauthenticated (or re-authenticating) connection.
func (a *saslConn) serveFrame(frame []byte, start time.Time) error {
	c := a.c
	if a.state == saslAuthenticate && !a.v1 {
		return a.rawToken(frame)
	}
	if len(frame) < 8 {
		return kproto.ErrShortHeader
	}
	key := int16(binary.BigEndian.Uint16(frame[0:]))
	version := int16(binary.BigEndian.Uint16(frame[2:]))
	corr := int32(binary.BigEndian.Uint32(frame[4:]))
	switch {
	case a.state == saslAuthenticate && key == int16(kmsg.SASLAuthenticate):
	case a.state == saslAuthenticate:
		// Kafka answers the request with its error response (ILLEGAL_SASL_STATE), then closes;
		// here ApiVersions gets it, any other request only the close.
		err := fmt.Errorf("%w: %s while authenticating with SaslAuthenticate", errIllegalSASL, kmsg.NameForKey(key))
		if key == int16(kmsg.ApiVersions) {
			resp := kmsg.NewPtrApiVersionsResponse()
			resp.Version = min(version, apiVersionsMax)
			resp.ErrorCode = kerr.IllegalSaslState.Code
			return a.fail(corr, start, key, resp, err)
		}
		return a.closeAfterFailure(nil, err)
	case key == int16(kmsg.ApiVersions) && a.state == saslHandshakeOrVersions:
		if version > apiVersionsMax {
			// UNSUPPORTED_VERSION (KIP-511); the state stays, the client retries.
			return c.enqueue(corr, c.s.reqMetrics.timing(start, key, nil), func(sl *slot) {
				sl.complete(reply{resp: unsupportedApiVersionsResponse()})
			})
		}
	case key == int16(kmsg.ApiVersions):
		return errSecondVersions
	case key == int16(kmsg.SASLHandshake):
	default:
		return a.closeAfterFailure(nil, fmt.Errorf("%w: %s before the SASL handshake", errIllegalSASL, kmsg.NameForKey(key)))
	}
	h, hdr, req, err := c.decodeFrame(frame, key, version)
	if err != nil {
		return err
	}
	c.lastClientID = hdr.ClientID
	switch r := req.(type) {
	case *kmsg.ApiVersionsRequest:
		a.state = saslHandshakeOnly
		return c.enqueue(corr, c.s.reqMetrics.timing(start, key, req), func(sl *slot) {
			h.fn(c.s, &request{c: c, hdr: hdr, slot: sl}, req)
		})
	case *kmsg.SASLHandshakeRequest:
		return a.handshake(corr, start, r)
	case *kmsg.SASLAuthenticateRequest:
		return a.authenticate(corr, start, r)
	}
	return fmt.Errorf("%w: %s", errIllegalSASL, kmsg.NameForKey(key))
}

// handshake picks the mechanism (KIP-43); v1 announces SaslAuthenticate framing (KIP-152).
func (a *saslConn) handshake(corr int32, start time.Time, req *kmsg.SASLHandshakeRequest) error {
	c := a.c
	resp := req.ResponseKind().(*kmsg.SASLHandshakeResponse)
	resp.SupportedMechanisms = a.sec.mechanismNames()
	m := a.sec.mechanism(req.Mechanism)
	if m == nil {
		resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
		return a.fail(corr, start, req.Key(), resp,
			fmt.Errorf("%w: client mechanism %q is not enabled on listener %s (%v)", errAuthentication, req.Mechanism, c.listener, resp.SupportedMechanisms))
	}
	if a.reauth && a.mech != nil && m.Server.Name() != a.mech.Server.Name() {
		a.reauthMismatch = fmt.Sprintf("SASL mechanism '%s' requested by client is not supported for re-authentication of mechanism '%s'",
			m.Server.Name(), a.mech.Server.Name())
	} else {
		a.mech = m
	}
	a.exch = m.Server.Start()
	a.v1 = req.Version >= 1
	a.state = saslAuthenticate
	return a.respond(corr, start, req.Key(), resp)
}

// authenticate feeds one SaslAuthenticate token to the mechanism.
func (a *saslConn) authenticate(corr int32, start time.Time, req *kmsg.SASLAuthenticateRequest) error {
	resp := req.ResponseKind().(*kmsg.SASLAuthenticateResponse)
	fail := func(code int16, msg string, cause error) error {
		resp.ErrorCode, resp.ErrorMessage = code, &msg
		return a.fail(corr, start, req.Key(), resp, fmt.Errorf("%w: %v", errAuthentication, cause))
	}
	if a.reauthMismatch != "" {
		return fail(kerr.SaslAuthenticationFailed.Code, a.reauthMismatch, errors.New(a.reauthMismatch))
	}
	challenge, done, err := a.exch.Step(req.SASLAuthBytes)
	if err != nil {
		code, msg := saslFailure(err, a)
		return fail(code, msg, err)
	}
	resp.SASLAuthBytes = challenge
	if done {
		lifetime, err := a.complete()
		if err != nil {
			return fail(kerr.SaslAuthenticationFailed.Code, err.Error(), err)
		}
		resp.SessionLifetimeMillis = lifetime.Milliseconds()
		a.reauthOK = req.Version >= 1
	}
	return a.respond(corr, start, req.Key(), resp)
}

// rawToken is one token of a SaslHandshake v0 exchange: a bare frame each way. A failure
// closes the connection without an answer (Kafka's v0 behaviour).
func (a *saslConn) rawToken(token []byte) error {
	c := a.c
	challenge, done, err := a.exch.Step(token)
	if err != nil {
		return a.closeAfterFailure(nil, fmt.Errorf("%w: %v", errAuthentication, err))
	}
	if done {
		if _, err := a.complete(); err != nil {
			return a.closeAfterFailure(nil, fmt.Errorf("%w: %v", errAuthentication, err))
		}
	}
	if challenge == nil {
		return nil
	}
	// PLAIN's success is an empty challenge: a zero-length frame, which kafka-python waits for.
	return c.enqueue(0, requestTiming{start: time.Now()}, func(sl *slot) {
		sl.complete(reply{raw: challenge, isRaw: true})
	})
}

// saslFailure is the error code and client text of a failed step (docs/sasl.md §6).
func saslFailure(err error, a *saslConn) (int16, string) {
	var se *sasl.Error
	if errors.As(err, &se) {
		return se.Code, se.ClientMessage(a.reauth)
	}
	during := "authentication"
	if a.reauth {
		during = "re-authentication"
	}
	return kerr.SaslAuthenticationFailed.Code, fmt.Sprintf("Authentication failed during %s due to invalid credentials with SASL mechanism %s", during, a.mech.Server.Name())
}

// complete makes the exchange's principal the connection's and returns the
// session lifetime (KIP-368). A re-authentication must keep the principal.
func (a *saslConn) complete() (time.Duration, error) {
	c := a.c
	res := a.exch.Result()
	principal := "User:" + res.AuthorizationID
	if a.reauth && principal != a.principal {
		return 0, fmt.Errorf("Cannot change principals during re-authentication from %s to %s", a.principal, principal)
	}
	now := time.Now()
	lifetime := sasl.SessionLifetime(a.mech.MaxReauth, res, now)
	a.expiry = time.Time{}
	if a.mech.MaxReauth > 0 {
		a.expiry = now.Add(lifetime)
	}
	if a.reauth {
		c.s.reauthentications.Add(1)
	} else {
		a.principal = principal
		c.principal.Store(&principal)
	}
	a.state, a.reauth, a.exch = saslComplete, false, nil
	return lifetime, nil
}

// respond answers the request corr at once with resp.
func (a *saslConn) respond(corr int32, start time.Time, key int16, resp kmsg.Response) error {
	c := a.c
	return c.enqueue(corr, c.s.reqMetrics.timing(start, key, nil), func(sl *slot) {
		sl.complete(reply{resp: resp})
	})
}

// fail answers corr with resp, then closes the connection after
// connection.failed.authentication.delay.ms, reading nothing more.
func (a *saslConn) fail(corr int32, start time.Time, key int16, resp kmsg.Response, cause error) error {
	c := a.c
	sent := make(chan struct{})
	if err := c.enqueue(corr, c.s.reqMetrics.timing(start, key, nil), func(sl *slot) {
		sl.complete(reply{resp: resp, sent: sent})
	}); err != nil {
		return err
	}
	return a.closeAfterFailure(sent, cause)
}

// closeAfterFailure waits for the failure's answer (sent, nil when there is none) to be
// written and then for connection.failed.authentication.delay.ms, and returns cause, which
// closes the connection. Kafka delays the close so that a client retrying bad credentials in a
// loop does not spin the broker.
func (a *saslConn) closeAfterFailure(sent <-chan struct{}, cause error) error {
	c := a.c
	if sent != nil {
		select {
		case <-sent:
		case <-c.done:
			return cause
		}
	}
	if d := c.s.cfg.FailedAuthenticationDelay; d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-c.done:
		}
	}
	return cause
}
