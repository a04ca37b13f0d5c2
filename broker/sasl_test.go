package broker

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/isrbroker/isrbroker/broker/security/sasl"
)

// memCredentials is an in-memory sasl.CredentialStore (main wires the ZooKeeper-backed one).
type memCredentials struct {
	mu    sync.Mutex
	creds map[string]sasl.ScramCredential // mechanism + "/" + user
}

func (m *memCredentials) add(t testing.TB, mech *sasl.ScramMechanism, user, password string) {
	t.Helper()
	c, err := sasl.NewScramCredential(mech, password, 4096, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.creds == nil {
		m.creds = map[string]sasl.ScramCredential{}
	}
	m.creds[mech.Name()+"/"+user] = c
}

func (m *memCredentials) ScramCredential(mechanism, user string) (sasl.ScramCredential, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.creds[mechanism+"/"+user]
	return c, ok, nil
}

// saslSecurity is a SASL_PLAINTEXT listener with PLAIN (users alice/alice-pw, bob/bob-pw) and
// both SCRAM mechanisms over creds; maxReauth is connections.max.reauth.ms.
func saslSecurity(t testing.TB, creds *memCredentials, maxReauth time.Duration) *ListenerSecurity {
	t.Helper()
	users := sasl.StaticPlainUsers{"alice": "alice-pw", "bob": "bob-pw"}
	sec := &ListenerSecurity{Protocol: ProtocolSASLPlaintext}
	for _, name := range []string{sasl.PLAIN, sasl.ScramSHA256, sasl.ScramSHA512} {
		srv, err := sasl.New(name, sasl.Config{Plain: users, Credentials: creds})
		if err != nil {
			t.Fatal(err)
		}
		sec.Mechanisms = append(sec.Mechanisms, SASLMechanism{Server: srv, MaxReauth: maxReauth})
	}
	return sec
}

// startSecureServer runs the test server with one listener of that name and security.
func startSecureServer(t testing.TB, name string, sec *ListenerSecurity, mod func(*Config)) *testEnv {
	t.Helper()
	return startServer(t, func(c *Config) {
		c.Listeners = []Listener{{Name: name, Host: "127.0.0.1", Port: 0, Security: sec}}
		if mod != nil {
			mod(c)
		}
	})
}

// createTopicOn is createTopic with the broker's endpoint on the listener name.
func (e *testEnv) createTopicOn(listener, topic string, n int32) {
	e.admin.mu.Lock()
	e.admin.topics[topic] = n
	e.admin.mu.Unlock()
	for p := int32(0); p < n; p++ {
		e.reps.addPartition(topic, p, true)
	}
	req := updateMetadataReq(e.srv, map[string]int32{topic: n}, 1)
	req.LiveBrokers[0].Endpoints[0].ListenerName = listener
	e.srv.Metadata().Update(req)
}

// principals are the principals of the server's open connections.
func (e *testEnv) principals() []string {
	e.srv.mu.Lock()
	defer e.srv.mu.Unlock()
	var out []string
	for c := range e.srv.conns {
		out = append(out, *c.principal.Load())
	}
	return out
}

func hasPrincipal(e *testEnv, p string) bool {
	for _, q := range e.principals() {
		if q == p {
			return true
		}
	}
	return false
}

// produceConsume produces and consumes three records of topic through cl.
func produceConsume(t *testing.T, cl *kgo.Client, topic string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for i := 0; i < 3; i++ {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte{byte('a' + i)}}).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
	}
	cl.AddConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}})
	var got []*kgo.Record
	for len(got) < 3 && ctx.Err() == nil {
		f := cl.PollFetches(ctx)
		got = append(got, f.Records()...)
	}
	if len(got) != 3 || string(got[2].Value) != "c" {
		t.Fatalf("consumed %d records", len(got))
	}
}

func TestSASLClients(t *testing.T) {
	creds := &memCredentials{}
	creds.add(t, sasl.ScramSHA256Mechanism, "carol", "carol-pw")
	creds.add(t, sasl.ScramSHA512Mechanism, "dave", "dave-pw")
	e := startSecureServer(t, "SASL_PLAINTEXT", saslSecurity(t, creds, 0), nil)
	for _, c := range []struct {
		name, principal string
		mech            kgo.Opt
	}{
		{"PLAIN", "User:alice", kgo.SASL(plain.Auth{User: "alice", Pass: "alice-pw"}.AsMechanism())},
		{"SCRAM-SHA-256", "User:carol", kgo.SASL(scram.Auth{User: "carol", Pass: "carol-pw"}.AsSha256Mechanism())},
		{"SCRAM-SHA-512", "User:dave", kgo.SASL(scram.Auth{User: "dave", Pass: "dave-pw"}.AsSha512Mechanism())},
	} {
		t.Run(c.name, func(t *testing.T) {
			topic := "t-" + strings.ToLower(c.name)
			e.createTopicOn("SASL_PLAINTEXT", topic, 1)
			cl, err := kgo.NewClient(kgo.SeedBrokers(e.addr), c.mech)
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			produceConsume(t, cl, topic)
			if !hasPrincipal(e, c.principal) {
				t.Fatalf("principals %v, want %s", e.principals(), c.principal)
			}
		})
	}
}

func TestSASLWrongPassword(t *testing.T) {
	creds := &memCredentials{}
	creds.add(t, sasl.ScramSHA256Mechanism, "carol", "carol-pw")
	e := startSecureServer(t, "SASL_PLAINTEXT", saslSecurity(t, creds, 0), nil)
	for _, c := range []struct {
		name, msg string
		mech      kgo.Opt
	}{
		{"PLAIN", "Authentication failed: Invalid username or password", kgo.SASL(plain.Auth{User: "alice", Pass: "wrong"}.AsMechanism())},
		{"SCRAM", "Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-256",
			kgo.SASL(scram.Auth{User: "carol", Pass: "wrong"}.AsSha256Mechanism())},
	} {
		t.Run(c.name, func(t *testing.T) {
			cl, err := kgo.NewClient(kgo.SeedBrokers(e.addr), c.mech, kgo.RequestRetries(0))
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			err = cl.Ping(ctx)
			if !errors.Is(err, kerr.SaslAuthenticationFailed) || !strings.Contains(err.Error(), c.msg) {
				t.Fatalf("ping: %v, want SASL_AUTHENTICATION_FAILED with %q", err, c.msg)
			}
		})
	}
}

// rawHandshake sends a SaslHandshake and reads its answer.
func rawHandshake(t *testing.T, r *rawConn, version int16, mechanism string) *kmsg.SASLHandshakeResponse {
	t.Helper()
	req := kmsg.NewPtrSASLHandshakeRequest()
	req.Version, req.Mechanism = version, mechanism
	r.send(req, 1)
	_, body := r.recv(false)
	resp := req.ResponseKind().(*kmsg.SASLHandshakeResponse)
	resp.Version = version
	if err := resp.ReadFrom(body); err != nil {
		t.Fatal(err)
	}
	return resp
}

func rawAuthenticate(t *testing.T, r *rawConn, version int16, token []byte) *kmsg.SASLAuthenticateResponse {
	t.Helper()
	req := kmsg.NewPtrSASLAuthenticateRequest()
	req.Version, req.SASLAuthBytes = version, token
	r.send(req, 2)
	_, body := r.recv(false)
	resp := req.ResponseKind().(*kmsg.SASLAuthenticateResponse)
	resp.Version = version
	if err := resp.ReadFrom(body); err != nil {
		t.Fatal(err)
	}
	return resp
}

func plainToken(user, pw string) []byte { return []byte("\x00" + user + "\x00" + pw) }

func apiVersions(t *testing.T, r *rawConn) *kmsg.ApiVersionsResponse {
	t.Helper()
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 2
	r.send(req, 3)
	_, body := r.recv(false)
	resp := req.ResponseKind().(*kmsg.ApiVersionsResponse)
	resp.Version = 2
	if err := resp.ReadFrom(body); err != nil {
		t.Fatal(err)
	}
	return resp
}

func TestSASLStateMachine(t *testing.T) {
	e := startSecureServer(t, "SASL_PLAINTEXT", saslSecurity(t, &memCredentials{}, 0), nil)
	metadata := kmsg.NewPtrMetadataRequest()
	metadata.Version = 1

	t.Run("plaintext client gets nothing", func(t *testing.T) {
		r := dialRaw(t, e.addr)
		r.send(metadata, 1)
		r.expectClosed()
	})
	t.Run("request after ApiVersions before the handshake", func(t *testing.T) {
		r := dialRaw(t, e.addr)
		if resp := apiVersions(t, r); resp.ErrorCode != 0 || len(resp.ApiKeys) == 0 {
			t.Fatalf("ApiVersions: %+v", resp)
		}
		r.send(metadata, 2)
		r.expectClosed()
	})
	t.Run("unsupported mechanism", func(t *testing.T) {
		r := dialRaw(t, e.addr)
		resp := rawHandshake(t, r, 1, "GSSAPI")
		if resp.ErrorCode != kerr.UnsupportedSaslMechanism.Code || strings.Join(resp.SupportedMechanisms, ",") != "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512" {
			t.Fatalf("handshake: %+v", resp)
		}
		r.expectClosed()
	})
	t.Run("v1 PLAIN then requests", func(t *testing.T) {
		r := dialRaw(t, e.addr)
		apiVersions(t, r)
		if resp := rawHandshake(t, r, 1, "PLAIN"); resp.ErrorCode != 0 {
			t.Fatalf("handshake: %+v", resp)
		}
		resp := rawAuthenticate(t, r, 1, plainToken("bob", "bob-pw"))
		if resp.ErrorCode != 0 || resp.SessionLifetimeMillis != 0 {
			t.Fatalf("authenticate: %+v", resp)
		}
		r.send(metadata, 4)
		r.recv(false)
		if !hasPrincipal(e, "User:bob") {
			t.Fatalf("principals %v", e.principals())
		}
		// After authentication both SASL requests are ILLEGAL_SASL_STATE, the connection stays.
		if resp := rawHandshake(t, r, 1, "PLAIN"); resp.ErrorCode != kerr.IllegalSaslState.Code {
			t.Fatalf("second handshake: %+v", resp)
		}
		if resp := rawAuthenticate(t, r, 1, nil); resp.ErrorCode != kerr.IllegalSaslState.Code {
			t.Fatalf("late authenticate: %+v", resp)
		}
	})
	t.Run("v0 PLAIN raw frames", func(t *testing.T) {
		r := dialRaw(t, e.addr)
		if resp := rawHandshake(t, r, 0, "PLAIN"); resp.ErrorCode != 0 {
			t.Fatalf("handshake: %+v", resp)
		}
		r.write(frameOf(plainToken("alice", "alice-pw")))
		var size [4]byte
		_ = r.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := r.nc.Read(size[:]); err != nil || binary.BigEndian.Uint32(size[:]) != 0 {
			t.Fatalf("PLAIN success: %v %x, want a zero-length frame", err, size)
		}
		r.send(metadata, 5)
		if corr, _ := r.recv(false); corr != 5 {
			t.Fatalf("metadata corr %d", corr)
		}
	})
	t.Run("v0 wrong password closes without an answer", func(t *testing.T) {
		r := dialRaw(t, e.addr)
		rawHandshake(t, r, 0, "PLAIN")
		r.write(frameOf(plainToken("alice", "nope")))
		r.expectClosed()
	})
	t.Run("ApiVersions during SaslAuthenticate", func(t *testing.T) {
		r := dialRaw(t, e.addr)
		rawHandshake(t, r, 1, "PLAIN")
		resp := apiVersions(t, r)
		if resp.ErrorCode != kerr.IllegalSaslState.Code {
			t.Fatalf("ApiVersions: %+v", resp)
		}
		r.expectClosed()
	})
}

func TestSASLPlaintextListenerAnswersIllegalState(t *testing.T) {
	e := startServer(t, nil)
	r := dialRaw(t, e.addr)
	if resp := rawHandshake(t, r, 1, "PLAIN"); resp.ErrorCode != kerr.IllegalSaslState.Code {
		t.Fatalf("handshake on PLAINTEXT: %+v", resp)
	}
}

func TestSASLFailedAuthenticationDelay(t *testing.T) {
	const delay = 300 * time.Millisecond
	e := startSecureServer(t, "SASL_PLAINTEXT", saslSecurity(t, &memCredentials{}, 0), func(c *Config) { c.FailedAuthenticationDelay = delay })
	r := dialRaw(t, e.addr)
	rawHandshake(t, r, 1, "PLAIN")
	resp := rawAuthenticate(t, r, 1, plainToken("alice", "bad"))
	answered := time.Now()
	if resp.ErrorCode != kerr.SaslAuthenticationFailed.Code || resp.ErrorMessage == nil ||
		*resp.ErrorMessage != "Authentication failed: Invalid username or password" {
		t.Fatalf("authenticate: %+v", resp)
	}
	r.expectClosed()
	if d := time.Since(answered); d < delay-20*time.Millisecond {
		t.Fatalf("closed %v after the failure, want connection.failed.authentication.delay.ms %v", d, delay)
	}
}

func TestSASLBadFramesCloseOnlyThatConnection(t *testing.T) {
	e := startSecureServer(t, "SASL_PLAINTEXT", saslSecurity(t, &memCredentials{}, 0), nil)
	e.createTopicOn("SASL_PLAINTEXT", "t", 1)
	// The baseline: the server's accept loop and idle reaper run (one answered connection).
	first := dialRaw(t, e.addr)
	apiVersions(t, first)
	_ = first.nc.Close()
	checkFor(t, 10*time.Second, "the first connection to end", func() bool {
		e.srv.mu.Lock()
		defer e.srv.mu.Unlock()
		return len(e.srv.conns) == 0
	})
	base := runtime.NumGoroutine()
	oversized := binary.BigEndian.AppendUint32(nil, maxAuthFrame+1)
	cases := map[string]func(t *testing.T, r *rawConn){
		"garbage first frame":   func(t *testing.T, r *rawConn) { r.write(frameOf([]byte{0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4, 5, 6, 7})) },
		"short first frame":     func(t *testing.T, r *rawConn) { r.write(frameOf([]byte{0, 17})) },
		"oversized first frame": func(t *testing.T, r *rawConn) { r.write(append(oversized, 0, 17, 0, 1)) },
		"negative size":         func(t *testing.T, r *rawConn) { r.write([]byte{0xff, 0xff, 0xff, 0xfe}) },
		"bad handshake body":    func(t *testing.T, r *rawConn) { r.write(frameOf(requestFrame(17, 1, 1, []byte{0x7f, 0xff, 'x'}))) },
		"handshake v2":          func(t *testing.T, r *rawConn) { r.write(frameOf(requestFrame(17, 2, 1, []byte{0, 0}))) },
		"bad authenticate body": func(t *testing.T, r *rawConn) {
			rawHandshake(t, r, 1, "PLAIN")
			r.write(frameOf(requestFrame(36, 1, 2, []byte{0x7f, 0xff, 0xff, 0xff, 1})))
		},
		"oversized token": func(t *testing.T, r *rawConn) {
			rawHandshake(t, r, 0, "PLAIN")
			r.write(append(oversized, 0, 0, 0))
		},
	}
	for name, send := range cases {
		t.Run(name, func(t *testing.T) {
			r := dialRaw(t, e.addr)
			send(t, r)
			r.expectClosed()
		})
	}
	// The broker still serves, and every connection's goroutines are gone.
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.addr), kgo.SASL(plain.Auth{User: "alice", Pass: "alice-pw"}.AsMechanism()))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "t", Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	cl.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		e.srv.mu.Lock()
		n := len(e.srv.conns)
		e.srv.mu.Unlock()
		if n == 0 && runtime.NumGoroutine() <= base {
			break
		}
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d connections and %d goroutines (%d before) remain:\n%s", n, runtime.NumGoroutine(), base, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// FuzzSASLConnection feeds raw bytes to a SASL listener's connection: whatever arrives before,
// during or after the authentication, the connection ends cleanly and nothing panics.
func FuzzSASLConnection(f *testing.F) {
	frame := func(b []byte) []byte { return frameOf(b) }
	handshake := func(v int16, mech string) []byte {
		req := kmsg.NewPtrSASLHandshakeRequest()
		req.Version, req.Mechanism = v, mech
		return frame(requestFrame(17, v, 1, req.AppendTo(nil)))
	}
	authenticate := func(token []byte) []byte {
		req := kmsg.NewPtrSASLAuthenticateRequest()
		req.Version, req.SASLAuthBytes = 1, token
		return frame(requestFrame(36, 1, 2, req.AppendTo(nil)))
	}
	metadata := frame(requestFrame(3, 1, 3, kmsg.NewPtrMetadataRequest().AppendTo(nil)))
	cat := func(parts ...[]byte) []byte {
		var out []byte
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	f.Add(cat(handshake(0, "PLAIN"), frame(plainToken("alice", "alice-pw")), metadata))
	f.Add(cat(handshake(1, "PLAIN"), authenticate(plainToken("alice", "alice-pw")), metadata, handshake(1, "PLAIN")))
	f.Add(cat(handshake(1, "SCRAM-SHA-256"), authenticate([]byte("n,,n=carol,r=abc")), authenticate([]byte("c=biws,r=abc,p=AAAA"))))
	f.Add(cat(handshake(1, "PLAIN"), authenticate(plainToken("alice", "bad"))))
	f.Add(cat(handshake(1, "NOPE"), metadata))
	f.Add(metadata)
	s := fuzzServer(f)
	sec := saslSecurity(f, &memCredentials{}, time.Minute)
	f.Fuzz(func(t *testing.T, data []byte) {
		sc, cc := net.Pipe()
		c := newConn(s, sc, "SASL_PLAINTEXT")
		c.setSecurity(sec)
		served := make(chan struct{})
		go func() { defer close(served); c.serve() }()
		drained := make(chan struct{})
		go func() { defer close(drained); _, _ = io.Copy(io.Discard, cc) }()
		_, _ = cc.Write(data)
		_ = cc.Close()
		<-served
		<-drained
	})
}
