package kproto

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	franzsasl "github.com/twmb/franz-go/pkg/sasl"
)

// Security is how the broker secures its own outgoing connections to the inter-broker listener
// (the fetchers, the controller's channel to each broker, the controlled-shutdown client): the
// zero value is PLAINTEXT. TLS wraps the TCP connection (SSL, SASL_SSL); SASL authenticates on
// it before the first request (SASL_PLAINTEXT, SASL_SSL) as Kafka 2.4's clients do: ApiVersions,
// SaslHandshake v1, then the mechanism's tokens in SaslAuthenticate v1 requests (KIP-152,
// docs/sasl.md §6).
type Security struct {
	// TLS is the client configuration; nil: no TLS. When its ServerName is empty and it verifies
	// the peer, the dialled address's host is checked (tls.Dial's rule).
	TLS *tls.Config
	// TLSFor, when set, gives the configuration for a host and takes precedence over TLS
	// (tlsconf's ClientConfig, which follows a live keystore update).
	TLSFor func(host string) *tls.Config
	// SASL is the client side of the mechanism (franz-go's pkg/sasl/plain or pkg/sasl/scram);
	// nil: no SASL.
	SASL franzsasl.Mechanism
}

// Versions of the requests of the SASL exchange: ApiVersions v2 (not flexible, answered by
// every Kafka ≥ 1.0 and isrbroker), SaslHandshake v1 and SaslAuthenticate v1 (the session
// lifetime of KIP-368).
const (
	saslAPIVersionsVersion  = 2
	saslHandshakeVersion    = 1
	saslAuthenticateVersion = 1
)

// reauthFraction is the part of the session lifetime after which a connection re-authenticates
// before its next request (KIP-368: Kafka's clients pick 85–95 %; a server closes a connection
// whose session expired at the next request).
const reauthFraction = 0.85

func (s Security) tlsConfig(addr string) *tls.Config {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	if s.TLSFor != nil {
		return s.TLSFor(host)
	}
	if s.TLS == nil {
		return nil
	}
	cfg := s.TLS
	if cfg.ServerName == "" && !cfg.InsecureSkipVerify {
		cfg = cfg.Clone()
		cfg.ServerName = host
	}
	return cfg
}

// DialSecurity is Dial with the connection secured as sec says: the TLS handshake, then the SASL
// exchange, both within ctx and timeout. A failed login is an error wrapping the server's code
// (errors.Is(err, kerr.SaslAuthenticationFailed)) with its message.
func DialSecurity(ctx context.Context, addr, localAddr, clientID string, timeout time.Duration, sec Security) (*Conn, error) {
	nc, err := dialTCP(ctx, addr, localAddr, timeout)
	if err != nil {
		return nil, err
	}
	if cfg := sec.tlsConfig(addr); cfg != nil {
		tc := tls.Client(nc, cfg)
		hctx := ctx
		if timeout > 0 {
			var cancel context.CancelFunc
			hctx, cancel = context.WithTimeout(ctx, timeout)
			defer cancel()
		}
		if err := tc.HandshakeContext(hctx); err != nil {
			_ = nc.Close()
			return nil, fmt.Errorf("kproto: TLS handshake with %s: %w", addr, err)
		}
		nc = tc
	}
	c := newConn(nc, clientID)
	if sec.SASL != nil {
		c.sasl = sec.SASL
		c.host = addr
		if err := c.authenticate(ctx, timeout, true); err != nil {
			_ = c.Close()
			return nil, err
		}
	}
	return c, nil
}

// authenticate runs the SASL exchange on c (first: ApiVersions before the handshake, as on a
// new connection; a re-authentication starts at SaslHandshake, KIP-368).
func (c *Conn) authenticate(ctx context.Context, timeout time.Duration, first bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.authenticateLocked(ctx, timeout, first)
}

func (c *Conn) authenticateLocked(ctx context.Context, timeout time.Duration, first bool) error {
	var dl time.Time
	if timeout > 0 {
		dl = time.Now().Add(timeout)
	}
	mech := c.sasl.Name()
	if first {
		req := kmsg.NewPtrApiVersionsRequest()
		req.Version = saslAPIVersionsVersion
		r, err := c.requestLocked(ctx, req, dl)
		if err != nil {
			return fmt.Errorf("kproto: ApiVersions before SASL %s with %s: %w", mech, c.host, err)
		}
		if err := kerr.ErrorForCode(r.(*kmsg.ApiVersionsResponse).ErrorCode); err != nil {
			return fmt.Errorf("kproto: ApiVersions before SASL %s with %s: %w", mech, c.host, err)
		}
	}
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Version = saslHandshakeVersion
	hs.Mechanism = mech
	r, err := c.requestLocked(ctx, hs, dl)
	if err != nil {
		return fmt.Errorf("kproto: SaslHandshake with %s: %w", c.host, err)
	}
	if hr := r.(*kmsg.SASLHandshakeResponse); hr.ErrorCode != 0 {
		return fmt.Errorf("kproto: SaslHandshake %s with %s (enabled: %v): %w", mech, c.host, hr.SupportedMechanisms, kerr.ErrorForCode(hr.ErrorCode))
	}
	session, write, err := c.sasl.Authenticate(ctx, c.host)
	if err != nil {
		return fmt.Errorf("kproto: SASL %s with %s: %w", mech, c.host, err)
	}
	start := time.Now()
	var lifetime time.Duration
	// Every SaslAuthenticate is answered (KIP-152): write until the mechanism is done and has
	// nothing left to send, as franz-go's own client does.
	for done := false; !done || len(write) > 0; {
		req := kmsg.NewPtrSASLAuthenticateRequest()
		req.Version = saslAuthenticateVersion
		req.SASLAuthBytes = write
		r, err := c.requestLocked(ctx, req, dl)
		if err != nil {
			return fmt.Errorf("kproto: SaslAuthenticate %s with %s: %w", mech, c.host, err)
		}
		ar := r.(*kmsg.SASLAuthenticateResponse)
		if ar.ErrorCode != 0 {
			msg := ""
			if ar.ErrorMessage != nil {
				msg = *ar.ErrorMessage
			}
			return &AuthError{Mechanism: mech, Addr: c.host, Message: msg, Err: kerr.ErrorForCode(ar.ErrorCode)}
		}
		lifetime = time.Duration(ar.SessionLifetimeMillis) * time.Millisecond
		write = nil
		if !done {
			if done, write, err = session.Challenge(ar.SASLAuthBytes); err != nil {
				return fmt.Errorf("kproto: SASL %s with %s: %w", mech, c.host, err)
			}
		}
	}
	c.reauthAt = time.Time{}
	if lifetime > 0 {
		c.reauthAt = start.Add(time.Duration(float64(lifetime) * reauthFraction))
		c.reauthTimeout = timeout
	}
	return nil
}

// AuthError is a SASL login the server refused: Err is the code's kerr error
// (SASL_AUTHENTICATION_FAILED, ILLEGAL_SASL_STATE, …), Message the server's error_message.
type AuthError struct {
	Mechanism, Addr, Message string
	Err                      error
}

func (e *AuthError) Error() string {
	return fmt.Sprintf("kproto: SASL %s authentication with %s failed: %v: %s", e.Mechanism, e.Addr, e.Err, e.Message)
}

func (e *AuthError) Unwrap() error { return e.Err }

// errReauth wraps a failed re-authentication, after which the connection is closed.
var errReauth = errors.New("kproto: SASL re-authentication failed")

// maybeReauthLocked re-authenticates when the session's lifetime is nearly used up, before the
// next request (the server would close the connection on a request after expiry).
func (c *Conn) maybeReauthLocked(ctx context.Context) error {
	if c.sasl == nil || c.reauthAt.IsZero() || time.Now().Before(c.reauthAt) {
		return nil
	}
	if err := c.authenticateLocked(ctx, c.reauthTimeout, false); err != nil {
		c.closeLocked()
		return fmt.Errorf("%w: %w", errReauth, err)
	}
	return nil
}
