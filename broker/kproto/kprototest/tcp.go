// Package kprototest holds helpers for tests of code that speaks the Kafka protocol over
// sockets: the non-blocking write paths (kproto.FrameWrite, the broker's response stream)
// behave differently on a real TCP socket than on net.Pipe, so their tests need one.
package kprototest

import (
	"net"
	"testing"
)

// TCPPair returns both ends of a fresh loopback TCP connection; both are closed when the test
// ends.
func TCPPair(t testing.TB) (client, server *net.TCPConn) {
	t.Helper()
	ln, err := net.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	type accepted struct {
		c   *net.TCPConn
		err error
	}
	ch := make(chan accepted, 1)
	go func() {
		c, err := ln.AcceptTCP()
		ch <- accepted{c, err}
	}()
	client, err = net.DialTCP("tcp", nil, ln.Addr().(*net.TCPAddr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	a := <-ch
	if a.err != nil {
		t.Fatal(a.err)
	}
	t.Cleanup(func() { a.c.Close() })
	return client, a.c
}
