package kproto

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// A request that fails (the peer hangs up) while its context is being cancelled: the
// cancellation callback must not touch the connection field the failure clears (a data race
// and a nil dereference that crashed the controller's sender on shutdown). Run with -race.
func TestRequestFailingWhileContextCancelled(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var served sync.WaitGroup
	served.Add(1)
	go func() {
		defer served.Done()
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			// Read the request's size prefix, then hang up without answering.
			var size [4]byte
			_, _ = io.ReadFull(nc, size[:])
			_ = nc.Close()
		}
	}()
	for i := 0; i < 200; i++ {
		c, err := Dial(context.Background(), ln.Addr().String(), "", "test", time.Second)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		req := kmsg.NewPtrApiVersionsRequest()
		done := make(chan error, 1)
		go func() { _, err := c.Request(ctx, req); done <- err }()
		cancel()
		select {
		case err := <-done:
			if err == nil {
				t.Fatal("request answered by a peer that hangs up")
			}
		case <-time.After(5 * time.Second):
			t.Fatal("request neither failed nor returned within 5 s")
		}
		_ = c.Close()
	}
	_ = ln.Close()
	served.Wait()
}

// A request's deadline holds whatever the requests before it set: a request on a peer that
// stops answering fails between its own deadline and deadlineSlack after it, also when an
// earlier request had set a later deadline; and requests issued within the slack of each other
// leave the socket's deadline where it was (no timer re-armed per request).
func TestRequestDeadlines(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	const answered = 5
	go func() {
		nc, err := ln.Accept()
		if err != nil {
			return
		}
		defer nc.Close()
		for i := 0; ; i++ {
			frame, err := ReadFrame(nc, 1<<20)
			if err != nil {
				return
			}
			if i >= answered {
				continue // silent from now on
			}
			resp := kmsg.NewPtrApiVersionsResponse()
			body := resp.AppendTo(append([]byte(nil), frame[4:8]...)) // correlation id
			if _, err := nc.Write(append([]byte{0, 0, 0, byte(len(body))}, body...)); err != nil {
				return
			}
		}
	}()
	c, err := Dial(context.Background(), ln.Addr().String(), "", "test", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	req := kmsg.NewPtrApiVersionsRequest()
	if _, err := c.RequestWithin(context.Background(), req, time.Hour); err != nil {
		t.Fatal(err)
	}
	first := c.deadline
	for range answered - 2 {
		if _, err := c.RequestWithin(context.Background(), req, time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	if !c.deadline.Equal(first) {
		t.Fatalf("the socket's deadline moved from %v to %v between requests within the slack", first, c.deadline)
	}
	if _, err := c.RequestWithin(context.Background(), req, 3*time.Hour); err != nil {
		t.Fatal(err)
	}
	if c.deadline.Equal(first) {
		t.Fatal("a later deadline beyond the slack did not move the socket's")
	}
	// Unanswered, with a deadline far earlier than the socket's: fails in time.
	start := time.Now()
	done := make(chan error, 1)
	go func() {
		_, err := c.RequestWithin(context.Background(), req, 200*time.Millisecond)
		done <- err
	}()
	select {
	case err = <-done:
	case <-time.After(200*time.Millisecond + deadlineSlack + 5*time.Second):
		c.Close()
		t.Fatal("an unanswered request with a 200 ms deadline kept waiting (the socket kept the earlier, later deadline)")
	}
	took := time.Since(start)
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("unanswered request: %v, want a timeout", err)
	}
	if took < 200*time.Millisecond || took > 200*time.Millisecond+deadlineSlack+2*time.Second {
		t.Fatalf("unanswered request failed after %v, want between 200ms and 200ms + %v", took, deadlineSlack)
	}
}
