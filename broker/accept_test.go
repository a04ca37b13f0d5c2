package broker

import (
	"net"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/sirupsen/logrus/hooks/test"
)

// failingListener fails every Accept with EMFILE, recording when each was called, until
// closed.
type failingListener struct {
	mu     sync.Mutex
	calls  []time.Time
	closed chan struct{}
	once   sync.Once
}

func (l *failingListener) Accept() (net.Conn, error) {
	select {
	case <-l.closed:
		return nil, net.ErrClosed
	default:
	}
	l.mu.Lock()
	l.calls = append(l.calls, time.Now())
	l.mu.Unlock()
	return nil, &net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept4", syscall.EMFILE)}
}

func (l *failingListener) Close() error {
	l.once.Do(func() { close(l.closed) })
	return nil
}

func (l *failingListener) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)} }

func (l *failingListener) callTimes() []time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]time.Time(nil), l.calls...)
}

// Issue 28 item 2: an accept loop failing with EMFILE backs off as Go's net/http does
// (5 ms, doubling up to 1 s) instead of spinning, logs the failure rate-limited, and stops
// at once on Close even while backing off.
func TestAcceptBacksOffOnEMFILE(t *testing.T) {
	log, hook := test.NewNullLogger()
	srv := New(Config{BrokerID: 1, Listeners: []Listener{{Name: "PLAINTEXT", Host: "127.0.0.1"}}, Log: log}, Deps{Replicas: newFakeReplicas()})
	ln := &failingListener{closed: make(chan struct{})}
	srv.lns = []boundListener{{name: "PLAINTEXT", ln: ln}}
	served := make(chan struct{})
	go func() { _ = srv.Serve(); close(served) }()

	const n = 7 // six waits: 5, 10, 20, 40, 80, 160 ms
	checkFor(t, 10*time.Second, "7 accept attempts", func() bool { return len(ln.callTimes()) >= n })
	calls := ln.callTimes()
	want := 5 * time.Millisecond
	for i := 1; i < n; i++ {
		if gap := calls[i].Sub(calls[i-1]); gap < want*9/10 {
			t.Fatalf("accept attempt %d came %v after the previous, want a back-off of %v", i, gap, want)
		}
		want *= 2
	}
	warnings := 0
	for _, e := range hook.AllEntries() {
		if e.Level <= logrus.WarnLevel {
			warnings++
		}
	}
	if warnings != 1 {
		t.Fatalf("%d warnings for %d failed accepts, want 1 (rate-limited)", warnings, len(calls))
	}
	start := time.Now()
	_ = srv.Close()
	select {
	case <-served:
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not return after Close")
	}
	if d := time.Since(start); d > 500*time.Millisecond {
		t.Fatalf("Close took %v while the accept loop backed off", d)
	}
}

func TestAcceptBackoffSequence(t *testing.T) {
	var b acceptBackoff
	want := []time.Duration{5, 10, 20, 40, 80, 160, 320, 640, 1000, 1000}
	for i, w := range want {
		if d := b.next(); d != w*time.Millisecond {
			t.Fatalf("wait %d: %v, want %v", i, d, w*time.Millisecond)
		}
	}
	b.reset()
	if d := b.next(); d != 5*time.Millisecond {
		t.Fatalf("after a successful accept: %v, want 5ms", d)
	}
}
