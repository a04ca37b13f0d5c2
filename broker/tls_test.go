package broker

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/isrbroker/isrbroker/broker/security/sslprincipal"
	"github.com/isrbroker/isrbroker/broker/security/tlsconf"
)

// testPKI is a CA, a broker certificate (SANs localhost, 127.0.0.1) and a client certificate,
// made with openssl in a t.TempDir() (as broker/security/tlsconf's fixtures).
type testPKI struct {
	t   *testing.T
	dir string
}

func newTestPKI(t *testing.T) *testPKI {
	t.Helper()
	if _, err := exec.LookPath("openssl"); err != nil {
		t.Skip("openssl not installed")
	}
	p := &testPKI{t: t, dir: t.TempDir()}
	p.openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
		"-keyout", p.path("ca.key"), "-out", p.path("ca.pem"), "-days", "2", "-subj", "/CN=Test CA",
		"-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign")
	p.leaf("broker", "/CN=broker1", "serverAuth")
	p.leaf("client", "/C=US/O=Acme/CN=Alice", "clientAuth")
	return p
}

func (p *testPKI) path(n string) string { return filepath.Join(p.dir, n) }

func (p *testPKI) openssl(args ...string) {
	p.t.Helper()
	if out, err := exec.Command("openssl", args...).CombinedOutput(); err != nil {
		p.t.Fatalf("openssl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

func (p *testPKI) leaf(name, subj, usage string) {
	ext := p.path(name + ".ext")
	if err := os.WriteFile(ext, []byte("subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage="+usage+"\n"), 0o600); err != nil {
		p.t.Fatal(err)
	}
	p.openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
		"-keyout", p.path(name+".key"), "-out", p.path(name+".csr"), "-subj", subj)
	p.openssl("x509", "-req", "-in", p.path(name+".csr"), "-CA", p.path("ca.pem"), "-CAkey", p.path("ca.key"),
		"-set_serial", "7", "-days", "2", "-extfile", ext, "-out", p.path(name+".pem"))
	key, _ := os.ReadFile(p.path(name + ".key"))
	cert, _ := os.ReadFile(p.path(name + ".pem"))
	if err := os.WriteFile(p.path(name+"-combined.pem"), append(key, cert...), 0o600); err != nil {
		p.t.Fatal(err)
	}
}

// listenerTLS is the broker's keystore and trust store as PEM files; clientAuth is ssl.client.auth.
func (p *testPKI) listenerTLS(clientAuth string, interBroker bool) *tlsconf.Reloadable {
	p.t.Helper()
	r, err := tlsconf.NewReloadable(map[string]string{
		"ssl.keystore.type": "PEM", "ssl.keystore.location": p.path("broker-combined.pem"),
		"ssl.truststore.type": "PEM", "ssl.truststore.location": p.path("ca.pem"),
		"ssl.client.auth": clientAuth,
	}, interBroker)
	if err != nil {
		p.t.Fatal(err)
	}
	return r
}

func (p *testPKI) clientTLS(withCert bool) *tls.Config {
	pool := x509.NewCertPool()
	ca, _ := os.ReadFile(p.path("ca.pem"))
	pool.AppendCertsFromPEM(ca)
	c := &tls.Config{RootCAs: pool, ServerName: "localhost"}
	if withCert {
		kp, err := tls.LoadX509KeyPair(p.path("client.pem"), p.path("client.key"))
		if err != nil {
			p.t.Fatal(err)
		}
		c.Certificates = []tls.Certificate{kp}
	}
	return c
}

func TestSSLListener(t *testing.T) {
	pki := newTestPKI(t)
	rules, err := sslprincipal.ParseRules("RULE:^CN=([^,]+),.*$/$1/L,DEFAULT")
	if err != nil {
		t.Fatal(err)
	}
	sec := &ListenerSecurity{Protocol: ProtocolSSL, TLS: pki.listenerTLS("required", false), SSLPrincipals: rules}
	e := startSecureServer(t, "SSL", sec, nil)
	e.createTopicOn("SSL", "tls", 1)
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.addr), kgo.DialTLSConfig(pki.clientTLS(true)))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	produceConsume(t, cl, "tls")
	if !hasPrincipal(e, "User:alice") {
		t.Fatalf("principals %v, want User:alice (the mapped certificate DN)", e.principals())
	}

	// ssl.client.auth=required: a client without a certificate fails the handshake; a
	// PLAINTEXT client gets no Kafka answer.
	nc, err := tls.Dial("tcp", e.addr, pki.clientTLS(false))
	if err == nil {
		_ = nc.SetDeadline(time.Now().Add(5 * time.Second))
		_, err = nc.Read(make([]byte, 1)) // TLS 1.3 reports the refused certificate on the first read
		_ = nc.Close()
	}
	if err == nil {
		t.Fatal("handshake without a client certificate succeeded")
	}
	r := dialRaw(t, e.addr)
	req := kmsg.NewPtrApiVersionsRequest()
	r.send(req, 1)
	_ = r.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	b := make([]byte, 64)
	if n, _ := r.nc.Read(b); n >= 4 && b[0] == 0 && b[1] == 0 {
		t.Fatalf("a PLAINTEXT client got what looks like a Kafka answer: %x", b[:n])
	}
}

func TestSASLSSLListener(t *testing.T) {
	pki := newTestPKI(t)
	sec := saslSecurity(t, &memCredentials{}, 0)
	sec.Protocol = ProtocolSASLSSL
	sec.TLS = pki.listenerTLS("none", false)
	e := startSecureServer(t, "SASL_SSL", sec, nil)
	e.createTopicOn("SASL_SSL", "sasl-ssl", 1)
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.addr), kgo.DialTLSConfig(pki.clientTLS(true)),
		kgo.SASL(plain.Auth{User: "bob", Pass: "bob-pw"}.AsMechanism()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	produceConsume(t, cl, "sasl-ssl")
	if !hasPrincipal(e, "User:bob") {
		t.Fatalf("principals %v, want the SASL principal User:bob", e.principals())
	}
}

// KIP-368: with connections.max.reauth.ms the client re-authenticates on its connection and
// keeps producing; a connection that does not re-authenticate is closed at its next request.
func TestSASLReauthentication(t *testing.T) {
	e := startSecureServer(t, "SASL_PLAINTEXT", saslSecurity(t, &memCredentials{}, 2500*time.Millisecond), nil)
	e.createTopicOn("SASL_PLAINTEXT", "reauth", 1)
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.addr), kgo.SASL(plain.Auth{User: "alice", Pass: "alice-pw"}.AsMechanism()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	checkFor(t, 15*time.Second, "a re-authentication", func() bool {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "reauth", Value: []byte("v")}).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
		return e.srv.reauthentications.Load() > 0
	})

	// A raw client told session_lifetime_ms that never re-authenticates.
	r := dialRaw(t, e.addr)
	rawHandshake(t, r, 1, "PLAIN")
	resp := rawAuthenticate(t, r, 1, plainToken("alice", "alice-pw"))
	if resp.ErrorCode != 0 || resp.SessionLifetimeMillis != 2500 {
		t.Fatalf("authenticate: %+v", resp)
	}
	authenticated := time.Now()
	for {
		req := kmsg.NewPtrApiVersionsRequest()
		req.Version = 2
		r.send(req, 9)
		_ = r.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
		var size [4]byte
		if _, err := r.nc.Read(size[:]); err != nil {
			break // closed
		}
		r.recvRest(size)
		if time.Since(authenticated) > 10*time.Second {
			t.Fatal("the expired session was not closed")
		}
		time.Sleep(100 * time.Millisecond) // pacing the probe requests, not synchronisation
	}
	if d := time.Since(authenticated); d < 2500*time.Millisecond {
		t.Fatalf("closed %v after authentication, before the session lifetime", d)
	}
}

// recvRest reads the rest of a frame whose size was read.
func (r *rawConn) recvRest(size [4]byte) {
	r.t.Helper()
	n := int(size[0])<<24 | int(size[1])<<16 | int(size[2])<<8 | int(size[3])
	buf := make([]byte, n)
	if _, err := io.ReadFull(r.nc, buf); err != nil {
		r.t.Fatal(err)
	}
}

// A re-authentication must keep the principal (and the mechanism).
func TestSASLReauthenticationKeepsPrincipal(t *testing.T) {
	e := startSecureServer(t, "SASL_PLAINTEXT", saslSecurity(t, &memCredentials{}, time.Minute), nil)
	r := dialRaw(t, e.addr)
	rawHandshake(t, r, 1, "PLAIN")
	if resp := rawAuthenticate(t, r, 1, plainToken("alice", "alice-pw")); resp.ErrorCode != 0 {
		t.Fatalf("authenticate: %+v", resp)
	}
	if resp := rawHandshake(t, r, 1, "PLAIN"); resp.ErrorCode != 0 {
		t.Fatalf("re-authentication handshake: %+v", resp)
	}
	resp := rawAuthenticate(t, r, 1, plainToken("bob", "bob-pw"))
	if resp.ErrorCode == 0 || resp.ErrorMessage == nil || !strings.Contains(*resp.ErrorMessage, "Cannot change principals") {
		t.Fatalf("re-authentication as another user: %+v", resp)
	}
	r.expectClosed()
}

// A client that authenticated with SaslAuthenticate v0 was never told a lifetime: it cannot
// re-authenticate, its SaslHandshake is ILLEGAL_SASL_STATE (Kafka's
// connectedClientSupportsReauthentication).
func TestSASLReauthenticationNeedsAuthenticateV1(t *testing.T) {
	e := startSecureServer(t, "SASL_PLAINTEXT", saslSecurity(t, &memCredentials{}, time.Minute), nil)
	r := dialRaw(t, e.addr)
	rawHandshake(t, r, 1, "PLAIN")
	if resp := rawAuthenticate(t, r, 0, plainToken("alice", "alice-pw")); resp.ErrorCode != 0 {
		t.Fatalf("authenticate v0: %+v", resp)
	}
	if resp := rawHandshake(t, r, 1, "PLAIN"); resp.ErrorCode != kerr.IllegalSaslState.Code {
		t.Fatalf("handshake after SaslAuthenticate v0: %+v", resp)
	}
}
