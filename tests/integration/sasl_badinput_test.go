package integration

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// wireConn is a raw connection to a listener: frames written by hand, answers read as bytes.
type wireConn struct {
	t  *testing.T
	nc net.Conn
}

func dialPlain(t *testing.T, addr string) *wireConn {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = nc.Close() })
	return &wireConn{t: t, nc: nc}
}

// dialTLS completes a TLS handshake with the listener at addr, trusting cfg's roots.
func dialTLS(t *testing.T, addr string, cfg *tls.Config) *wireConn {
	t.Helper()
	nc, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = nc.Close() })
	return &wireConn{t: t, nc: nc}
}

func (w *wireConn) send(b []byte) {
	w.t.Helper()
	_ = w.nc.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if _, err := w.nc.Write(b); err != nil {
		w.t.Fatalf("write: %v", err)
	}
}

// readToEOF reads until the peer closes; a connection still open after 15 s fails the test.
func (w *wireConn) readToEOF() []byte {
	w.t.Helper()
	_ = w.nc.SetReadDeadline(time.Now().Add(15 * time.Second))
	data, err := io.ReadAll(w.nc)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		w.t.Fatalf("the broker kept the connection open (read %x)", data)
	}
	return data
}

// recvResponse reads one size-prefixed response and returns its body after the correlation id.
func (w *wireConn) recvResponse(corr int32) []byte {
	w.t.Helper()
	_ = w.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	var size [4]byte
	if _, err := io.ReadFull(w.nc, size[:]); err != nil {
		w.t.Fatalf("read response size: %v", err)
	}
	buf := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(w.nc, buf); err != nil || len(buf) < 4 {
		w.t.Fatalf("read response: %v", err)
	}
	if got := int32(binary.BigEndian.Uint32(buf)); got != corr {
		w.t.Fatalf("correlation id %d, want %d", got, corr)
	}
	return buf[4:]
}

// wireRequest frames req (request header v1, client id "wire") with correlation id corr.
func wireRequest(req kmsg.Request, corr int32) []byte {
	b := binary.BigEndian.AppendUint16(nil, uint16(req.Key()))
	b = binary.BigEndian.AppendUint16(b, uint16(req.GetVersion()))
	b = binary.BigEndian.AppendUint32(b, uint32(corr))
	b = append(b, 0, 4, 'w', 'i', 'r', 'e')
	b = req.AppendTo(b)
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(b))), b...)
}

func apiVersionsFrame(corr int32) []byte {
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 0
	return wireRequest(req, corr)
}

// TestSASLSSLBadInput: what the broker unit tests (broker/sasl_test.go) do not reach, on a real
// SASL_SSL listener: bytes that are not TLS, garbage and an oversized frame inside TLS before
// the SASL handshake and during it, a SCRAM exchange cut short and one whose final message lacks
// its proof, a TLS ClientHello on the PLAINTEXT listener. Each connection gets Kafka's answer or
// is closed; every broker then still serves a SCRAM client over SASL_SSL.
func TestSASLSSLBadInput(t *testing.T) {
	c, l := startSASLSSL(t, map[string]string{"alice": "alice-pw"}, nil)
	addr := l.Seeds()[0]
	roots := l.TLS.ClientTLS(t)
	handshake := func(w *wireConn, mech string, corr int32) *kmsg.SASLHandshakeResponse {
		req := kmsg.NewPtrSASLHandshakeRequest()
		req.Version, req.Mechanism = 1, mech
		w.send(wireRequest(req, corr))
		resp := kmsg.NewPtrSASLHandshakeResponse()
		resp.Version = 1
		if err := resp.ReadFrom(w.recvResponse(corr)); err != nil {
			t.Fatal(err)
		}
		return resp
	}
	authenticate := func(w *wireConn, token []byte, corr int32) *kmsg.SASLAuthenticateResponse {
		req := kmsg.NewPtrSASLAuthenticateRequest()
		req.Version, req.SASLAuthBytes = 1, token
		w.send(wireRequest(req, corr))
		resp := kmsg.NewPtrSASLAuthenticateResponse()
		resp.Version = 1
		if err := resp.ReadFrom(w.recvResponse(corr)); err != nil {
			t.Fatal(err)
		}
		return resp
	}
	oversized := binary.BigEndian.AppendUint32(nil, 524288+1)

	t.Run("not TLS", func(t *testing.T) {
		w := dialPlain(t, addr)
		w.send([]byte("\x00\x00\x00\x0bgarbage....GET / HTTP/1.0\r\n\r\n"))
		w.readToEOF()
	})
	t.Run("garbage frame inside TLS", func(t *testing.T) {
		w := dialTLS(t, addr, roots)
		w.send([]byte{0, 0, 0, 7, 0xde, 0xad, 0xbe, 0xef, 1, 2, 3})
		w.readToEOF()
	})
	t.Run("oversized frame inside TLS before the handshake", func(t *testing.T) {
		w := dialTLS(t, addr, roots)
		w.send(append(oversized, 0, 17, 0, 1))
		w.readToEOF()
	})
	t.Run("oversized frame during the handshake", func(t *testing.T) {
		w := dialTLS(t, addr, roots)
		if resp := handshake(w, "SCRAM-SHA-256", 1); resp.ErrorCode != 0 {
			t.Fatalf("handshake: %+v", resp)
		}
		w.send(append(oversized, 0, 36, 0, 1))
		w.readToEOF()
	})
	t.Run("unknown mechanism", func(t *testing.T) {
		w := dialTLS(t, addr, roots)
		resp := handshake(w, "GSSAPI", 1)
		if resp.ErrorCode != kerr.UnsupportedSaslMechanism.Code || strings.Join(resp.SupportedMechanisms, ",") != "SCRAM-SHA-256,SCRAM-SHA-512,PLAIN" {
			t.Fatalf("handshake: %+v", resp)
		}
		w.readToEOF()
	})
	t.Run("SCRAM exchange cut short", func(t *testing.T) {
		w := dialTLS(t, addr, roots)
		handshake(w, "SCRAM-SHA-256", 1)
		resp := authenticate(w, []byte("n,,n=alice,r=clientnonce"), 2)
		if resp.ErrorCode != 0 || !bytes.HasPrefix(resp.SASLAuthBytes, []byte("r=clientnonce")) {
			t.Fatalf("server-first: %+v %q", resp, resp.SASLAuthBytes)
		}
		_ = w.nc.Close()
	})
	t.Run("SCRAM final without a proof", func(t *testing.T) {
		w := dialTLS(t, addr, roots)
		handshake(w, "SCRAM-SHA-256", 1)
		first := authenticate(w, []byte("n,,n=alice,r=clientnonce"), 2)
		nonce, _, _ := strings.Cut(strings.TrimPrefix(string(first.SASLAuthBytes), "r="), ",")
		resp := authenticate(w, []byte("c=biws,r="+nonce), 3)
		if resp.ErrorCode != kerr.SaslAuthenticationFailed.Code {
			t.Fatalf("final without a proof: %+v", resp)
		}
		w.readToEOF()
	})
	t.Run("TLS on the PLAINTEXT listener", func(t *testing.T) {
		nc, err := net.DialTimeout("tcp", c.Broker(1).Addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		tc := tls.Client(nc, &tls.Config{ServerName: "localhost", RootCAs: roots.RootCAs})
		_ = tc.SetDeadline(time.Now().Add(15 * time.Second))
		err = tc.Handshake()
		var ne net.Error
		if err == nil || errors.As(err, &ne) && ne.Timeout() {
			t.Fatalf("TLS handshake on the PLAINTEXT listener: %v, want the connection closed", err)
		}
	})

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, id := range c.IDs() {
		if !c.Broker(id).Running() {
			t.Fatalf("broker %d exited", id)
		}
		cl, err := kgo.NewClient(kgo.SeedBrokers(fmt.Sprintf("127.0.0.1:%d", l.Ports[id])), kgo.DialTLSConfig(roots),
			kgo.SASL(scram.Auth{User: "alice", Pass: "alice-pw"}.AsSha256Mechanism()))
		if err != nil {
			t.Fatal(err)
		}
		err = cl.Ping(ctx)
		cl.Close()
		if err != nil {
			t.Fatalf("broker %d after the bad input: %v", id, err)
		}
	}
}
