package kproto

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"math/big"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	franzsasl "github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/isrbroker/isrbroker/broker/security/sasl"
)

// saslTestServer is a loopback listener that speaks the server side of Kafka's SASL framing
// (docs/sasl.md §6: ApiVersions, SaslHandshake v1, SaslAuthenticate v1) with broker/security/sasl's
// mechanisms, then answers ApiVersions: enough to test the client's exchange.
type saslTestServer struct {
	t        *testing.T
	ln       net.Listener
	mechs    map[string]sasl.Server
	lifetime int64 // session_lifetime_ms sent on success

	mu         sync.Mutex
	handshakes int
	principals []string
	wg         sync.WaitGroup
}

func newSASLTestServer(t *testing.T, tlsCfg *tls.Config, lifetime int64, mechs ...sasl.Server) *saslTestServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if tlsCfg != nil {
		ln = tls.NewListener(ln, tlsCfg)
	}
	s := &saslTestServer{t: t, ln: ln, mechs: map[string]sasl.Server{}, lifetime: lifetime}
	for _, m := range mechs {
		s.mechs[m.Name()] = m
	}
	s.wg.Add(1)
	go s.accept()
	t.Cleanup(func() { _ = ln.Close(); s.wg.Wait() })
	return s
}

func (s *saslTestServer) addr() string { return s.ln.Addr().String() }

func (s *saslTestServer) accept() {
	defer s.wg.Done()
	for {
		nc, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer nc.Close()
			s.serve(nc)
		}()
	}
}

func (s *saslTestServer) serve(nc net.Conn) {
	var ex sasl.Exchange
	var mech string
	for {
		frame, err := ReadFrame(nc, 1<<20)
		if err != nil {
			return
		}
		h, body, err := ParseHeader(frame, IsFlexible)
		if err != nil {
			return
		}
		req := kmsg.RequestForKey(h.Key)
		req.SetVersion(h.Version)
		if err := req.ReadFrom(body); err != nil {
			return
		}
		var resp kmsg.Response
		closeAfter := false
		switch r := req.(type) {
		case *kmsg.ApiVersionsRequest:
			ar := r.ResponseKind().(*kmsg.ApiVersionsResponse)
			ar.SetVersion(h.Version)
			resp = ar
		case *kmsg.SASLHandshakeRequest:
			hr := r.ResponseKind().(*kmsg.SASLHandshakeResponse)
			hr.SetVersion(h.Version)
			for name := range s.mechs {
				hr.SupportedMechanisms = append(hr.SupportedMechanisms, name)
			}
			srv, ok := s.mechs[r.Mechanism]
			if !ok {
				hr.ErrorCode = kerr.UnsupportedSaslMechanism.Code
				closeAfter = true
			} else {
				ex, mech = srv.Start(), r.Mechanism
				s.mu.Lock()
				s.handshakes++
				s.mu.Unlock()
			}
			resp = hr
		case *kmsg.SASLAuthenticateRequest:
			ar := r.ResponseKind().(*kmsg.SASLAuthenticateResponse)
			ar.SetVersion(h.Version)
			if ex == nil {
				ar.ErrorCode = kerr.IllegalSaslState.Code
				closeAfter = true
			} else {
				challenge, done, err := ex.Step(r.SASLAuthBytes)
				var se *sasl.Error
				switch {
				case errors.As(err, &se):
					ar.ErrorCode = se.Code
					msg := se.ClientMessage(false)
					ar.ErrorMessage = &msg
					closeAfter = true
				case err != nil:
					s.t.Errorf("mechanism %s: %v", mech, err)
					return
				default:
					ar.SASLAuthBytes = challenge
					if done {
						ar.SessionLifetimeMillis = s.lifetime
						s.mu.Lock()
						s.principals = append(s.principals, ex.Result().AuthorizationID)
						s.mu.Unlock()
						ex = nil
					}
				}
			}
			resp = ar
		default:
			return
		}
		if _, err := nc.Write(AppendResponse(nil, h.CorrelationID, resp)); err != nil || closeAfter {
			return
		}
	}
}

func (s *saslTestServer) counts() (int, []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.handshakes, append([]string(nil), s.principals...)
}

// scramStore is a CredentialStore over one user's credentials.
type scramStore map[string]sasl.ScramCredential // mechanism + "/" + user

func (m scramStore) ScramCredential(mechanism, user string) (sasl.ScramCredential, bool, error) {
	c, ok := m[mechanism+"/"+user]
	return c, ok, nil
}

func newScramStore(t *testing.T, m *sasl.ScramMechanism, user, password string) scramStore {
	t.Helper()
	c, err := sasl.NewScramCredential(m, password, 4096, nil)
	if err != nil {
		t.Fatal(err)
	}
	return scramStore{m.Name() + "/" + user: c}
}

// apiVersionsAfterLogin checks that the authenticated connection carries requests.
func apiVersionsAfterLogin(t *testing.T, c *Conn) {
	t.Helper()
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 2
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := c.Request(ctx, req); err != nil {
		t.Fatalf("request after login: %v", err)
	}
}

func TestDialSecuritySASL(t *testing.T) {
	scramUsers := newScramStore(t, sasl.ScramSHA512Mechanism, "broker", "scram-secret")
	srv := newSASLTestServer(t, nil, 0,
		sasl.NewPlain(sasl.StaticPlainUsers{"broker": "plain-secret"}),
		sasl.NewScram(sasl.ScramSHA512Mechanism, scramUsers, nil))
	cases := []struct {
		name string
		mech franzsasl.Mechanism
		ok   bool
	}{
		{"PLAIN", plain.Auth{User: "broker", Pass: "plain-secret"}.AsMechanism(), true},
		{"PLAIN wrong password", plain.Auth{User: "broker", Pass: "nope"}.AsMechanism(), false},
		{"SCRAM-SHA-512", scram.Auth{User: "broker", Pass: "scram-secret"}.AsSha512Mechanism(), true},
		{"SCRAM-SHA-512 wrong password", scram.Auth{User: "broker", Pass: "nope"}.AsSha512Mechanism(), false},
		{"SCRAM-SHA-512 unknown user", scram.Auth{User: "nobody", Pass: "scram-secret"}.AsSha512Mechanism(), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := DialSecurity(context.Background(), srv.addr(), "", "test", 5*time.Second, Security{SASL: tc.mech})
			if tc.ok {
				if err != nil {
					t.Fatalf("dial: %v", err)
				}
				defer c.Close()
				apiVersionsAfterLogin(t, c)
				return
			}
			if err == nil {
				c.Close()
				t.Fatal("dial succeeded with wrong credentials")
			}
			if !errors.Is(err, kerr.SaslAuthenticationFailed) || !strings.Contains(err.Error(), "SASL_AUTHENTICATION_FAILED") {
				t.Fatalf("err = %v, want SASL_AUTHENTICATION_FAILED", err)
			}
			var ae *AuthError
			if !errors.As(err, &ae) || ae.Message == "" {
				t.Fatalf("err = %#v, want an *AuthError with the server's message", err)
			}
		})
	}
	if _, principals := srv.counts(); strings.Join(principals, ",") != "broker,broker" {
		t.Fatalf("principals = %v, want broker twice", principals)
	}
}

func TestDialSecurityUnsupportedMechanism(t *testing.T) {
	srv := newSASLTestServer(t, nil, 0, sasl.NewPlain(sasl.StaticPlainUsers{"broker": "pw"}))
	_, err := DialSecurity(context.Background(), srv.addr(), "", "test", 5*time.Second,
		Security{SASL: scram.Auth{User: "broker", Pass: "pw"}.AsSha256Mechanism()})
	if !errors.Is(err, kerr.UnsupportedSaslMechanism) || !strings.Contains(err.Error(), "PLAIN") {
		t.Fatalf("err = %v, want UNSUPPORTED_SASL_MECHANISM naming the enabled PLAIN", err)
	}
}

// TestDialSecurityReauthenticates: with a session lifetime, a request after the re-auth point
// first runs SaslHandshake + SaslAuthenticate again on the same connection (KIP-368).
func TestDialSecurityReauthenticates(t *testing.T) {
	srv := newSASLTestServer(t, nil, 60_000, sasl.NewPlain(sasl.StaticPlainUsers{"broker": "pw"}))
	c, err := DialSecurity(context.Background(), srv.addr(), "", "test", 5*time.Second,
		Security{SASL: plain.Auth{User: "broker", Pass: "pw"}.AsMechanism()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.mu.Lock()
	at := c.reauthAt
	c.mu.Unlock()
	if d := time.Until(at); d < 30*time.Second || d > 60*time.Second {
		t.Fatalf("re-authentication in %v, want 85%% of the 60 s lifetime", d)
	}
	apiVersionsAfterLogin(t, c)
	if n, _ := srv.counts(); n != 1 {
		t.Fatalf("handshakes = %d before the re-auth point, want 1", n)
	}
	c.mu.Lock()
	c.reauthAt = time.Now().Add(-time.Millisecond)
	c.mu.Unlock()
	apiVersionsAfterLogin(t, c)
	if n, _ := srv.counts(); n != 2 {
		t.Fatalf("handshakes = %d after the re-auth point, want 2", n)
	}
}

// selfSigned returns a server certificate for 127.0.0.1 and localhost, and a pool trusting it.
func selfSigned(t *testing.T) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "broker"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, KeyUsage: x509.KeyUsageDigitalSignature,
		IsCA: true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, pool
}

// TestDialSecuritySASLSSL: TLS first (the host name of the address checked), then SASL inside.
func TestDialSecuritySASLSSL(t *testing.T) {
	cert, pool := selfSigned(t)
	srv := newSASLTestServer(t, &tls.Config{Certificates: []tls.Certificate{cert}}, 0,
		sasl.NewScram(sasl.ScramSHA512Mechanism, newScramStore(t, sasl.ScramSHA512Mechanism, "broker", "pw"), nil))
	mech := scram.Auth{User: "broker", Pass: "pw"}.AsSha512Mechanism()
	c, err := DialSecurity(context.Background(), srv.addr(), "", "test", 5*time.Second,
		Security{TLS: &tls.Config{RootCAs: pool}, SASL: mech})
	if err != nil {
		t.Fatalf("SASL_SSL dial: %v", err)
	}
	apiVersionsAfterLogin(t, c)
	c.Close()

	// Another name than the certificate's: the host name check fails the handshake.
	_, port, _ := net.SplitHostPort(srv.addr())
	other := &tls.Config{RootCAs: pool, ServerName: "elsewhere.example"}
	if _, err := DialSecurity(context.Background(), net.JoinHostPort("127.0.0.1", port), "", "test", 5*time.Second,
		Security{TLS: other, SASL: mech}); err == nil || !strings.Contains(err.Error(), "TLS handshake") {
		t.Fatalf("err = %v, want a TLS handshake failure", err)
	}
	// An untrusted certificate fails too.
	if _, err := DialSecurity(context.Background(), srv.addr(), "", "test", 5*time.Second,
		Security{TLS: &tls.Config{RootCAs: x509.NewCertPool()}}); err == nil {
		t.Fatal("dial with an untrusting pool succeeded")
	}
}
