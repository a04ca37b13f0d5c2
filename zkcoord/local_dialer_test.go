package zkcoord

import (
	"net"
	"testing"
	"time"
)

// isrbroker.local.address: the ZooKeeper session's connection leaves from the configured IP.
func TestLocalDialerBindsSourceAddress(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Addr, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			accepted <- nil
			return
		}
		accepted <- c.RemoteAddr()
		c.Close()
	}()
	c, err := localDialer("127.0.0.21")("tcp", ln.Addr().String(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if ip := c.LocalAddr().(*net.TCPAddr).IP.String(); ip != "127.0.0.21" {
		t.Errorf("local address %s, want 127.0.0.21", ip)
	}
	select {
	case a := <-accepted:
		if a == nil || a.(*net.TCPAddr).IP.String() != "127.0.0.21" {
			t.Errorf("server saw the connection from %v, want 127.0.0.21", a)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no connection accepted")
	}
}
