package kproto

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"net"
	"os"
	"testing"
	"time"

	"github.com/isrbroker/isrbroker/broker/kproto/kprototest"
)

// A SocketReader reads as net.Conn does: what arrived, waiting for it when nothing has; the
// read deadline; io.EOF once the peer closed and everything was read; net.ErrClosed after a
// local close.
func TestSocketReaderReadsAsNetConn(t *testing.T) {
	client, server := kprototest.TCPPair(t)
	r := NewSocketReader(server)
	if typ := fmt.Sprintf("%T", r); directSockets && typ != "*kproto.SocketReader" {
		t.Fatalf("NewSocketReader(*net.TCPConn) = %s, want *kproto.SocketReader", typ)
	}
	// Nothing there yet: the read waits for the writer.
	go func() {
		time.Sleep(20 * time.Millisecond)
		client.Write([]byte("hello"))
	}()
	b := make([]byte, 64)
	if n, err := r.Read(b); err != nil || string(b[:n]) != "hello" {
		t.Fatalf("Read: %q, %v", b[:n], err)
	}
	server.SetReadDeadline(time.Now().Add(10 * time.Millisecond))
	if _, err := r.Read(b); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("Read past the deadline: %v, want os.ErrDeadlineExceeded", err)
	}
	server.SetReadDeadline(time.Time{})
	if n, err := r.Read(b[:0]); n != 0 || err != nil {
		t.Fatalf("empty Read: %d, %v", n, err)
	}
	client.Write([]byte("bye"))
	client.Close()
	got, err := io.ReadAll(r)
	if err != nil || string(got) != "bye" {
		t.Fatalf("ReadAll to the end: %q, %v", got, err)
	}
	if _, err := r.Read(b); err != io.EOF {
		t.Fatalf("Read after the end: %v, want io.EOF", err)
	}
	server.Close()
	if _, err := r.Read(b); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Read after Close: %v, want net.ErrClosed", err)
	}
}

// socketWriter writes every byte even when the peer reads slowly (the socket buffer fills and
// the write waits for room), writes again after that with no allocation (on Linux), and fails
// once the connection is closed.
func TestSocketWriterWritesEverything(t *testing.T) {
	client, server := kprototest.TCPPair(t)
	want := make([]byte, 8<<20)
	rand.New(rand.NewSource(1)).Read(want)
	w := newSocketWriter(client)
	done := make(chan error, 1)
	go func() { done <- w.write(want) }()
	var got bytes.Buffer
	buf := make([]byte, 4096)
	server.SetReadDeadline(time.Now().Add(30 * time.Second)) // a writer that gives up fails here, not at the test timeout
	for got.Len() < len(want) {
		n, err := server.Read(buf)
		if err != nil {
			t.Fatalf("after %d of %d bytes: %v", got.Len(), len(want), err)
		}
		got.Write(buf[:n])
		if got.Len()%(1<<20) < 4096 {
			time.Sleep(time.Millisecond) // a slow reader
		}
	}
	if err := <-done; err != nil {
		t.Fatalf("write: %v", err)
	}
	if !bytes.Equal(got.Bytes(), want) {
		t.Fatal("the bytes read differ from the bytes written")
	}
	small := []byte("fetch")
	allocs := testing.AllocsPerRun(100, func() {
		if err := w.write(small); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(server, buf[:len(small)]); err != nil || !bytes.Equal(buf[:len(small)], small) {
			t.Fatalf("read back %q: %v", buf[:len(small)], err)
		}
	})
	if directSockets && !raceEnabled && allocs > 0 {
		t.Errorf("%v allocations per write, want 0", allocs)
	}
	client.Close()
	if err := w.write([]byte("x")); err == nil {
		t.Fatal("a write on a closed connection succeeded")
	}
}

// BenchmarkSocketReaderRead: one byte written and read back per iteration on loopback; the
// SocketReader itself allocates nothing per Read.
func BenchmarkSocketReaderRead(b *testing.B) {
	client, server := kprototest.TCPPair(b)
	r := NewSocketReader(server)
	buf := make([]byte, 16)
	msg := []byte("x")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := client.Write(msg); err != nil {
			b.Fatal(err)
		}
		if _, err := r.Read(buf); err != nil {
			b.Fatal(err)
		}
	}
}
