package kproto

import (
	"context"
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
