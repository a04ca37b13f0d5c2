package broker

import (
	"errors"
	"os"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// apiVersionsOK reports whether c answers an ApiVersions within d (false: closed, or no
// answer in time).
func apiVersionsOK(t *testing.T, c *rawConn, d time.Duration) bool {
	t.Helper()
	c.send(kmsg.NewPtrApiVersionsRequest(), 1)
	_ = c.nc.SetReadDeadline(time.Now().Add(d))
	var b [4]byte
	_, err := c.nc.Read(b[:])
	_ = c.nc.SetReadDeadline(time.Time{})
	if err == nil {
		// Drain the rest of the answer.
		_ = c.nc.SetReadDeadline(time.Now().Add(time.Second))
		buf := make([]byte, 64<<10)
		_, _ = c.nc.Read(buf)
		_ = c.nc.SetReadDeadline(time.Time{})
	}
	return err == nil
}

// expectRejected asserts the broker closes c without answering its ApiVersions (EOF, or a
// reset as the request was unread).
func expectRejected(t *testing.T, c *rawConn) {
	t.Helper()
	c.send(kmsg.NewPtrApiVersionsRequest(), 1)
	_ = c.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	var b [4]byte
	n, err := c.nc.Read(b[:])
	if n > 0 || err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("connection over the limit: read %d bytes, %v; want it closed", n, err)
	}
}

// Issue 28 item 6: max.connections.per.ip (Kafka 2.4's ConnectionQuotas): the connection
// over the limit is accepted and closed at once; the others work, closing one frees a slot,
// and max.connections.per.ip.overrides raises the limit of one address.
func TestMaxConnectionsPerIP(t *testing.T) {
	e := startServer(t, func(c *Config) {
		c.Connections = &ConnectionLimits{MaxConnections: 1 << 30, MaxConnectionsPerIP: 3, IdleTimeout: time.Minute}
	})
	var conns []*rawConn
	for i := 0; i < 3; i++ {
		c := dialRaw(t, e.addr)
		if !apiVersionsOK(t, c, 10*time.Second) {
			t.Fatalf("connection %d of 3 not served", i+1)
		}
		conns = append(conns, c)
	}
	over := dialRaw(t, e.addr)
	expectRejected(t, over)
	for i, c := range conns {
		if !apiVersionsOK(t, c, 10*time.Second) {
			t.Fatalf("connection %d closed by the 4th", i+1)
		}
	}
	_ = conns[0].nc.Close()
	checkFor(t, 10*time.Second, "a slot freed by closing a connection", func() bool {
		return apiVersionsOK(t, dialRaw(t, e.addr), 10*time.Second)
	})

	e2 := startServer(t, func(c *Config) {
		c.Connections = &ConnectionLimits{MaxConnections: 1 << 30, MaxConnectionsPerIP: 0, PerIPOverrides: map[string]int{"127.0.0.1": 2}, IdleTimeout: time.Minute}
	})
	for i := 0; i < 2; i++ {
		if !apiVersionsOK(t, dialRaw(t, e2.addr), 10*time.Second) {
			t.Fatalf("override 127.0.0.1:2: connection %d not served", i+1)
		}
	}
	over = dialRaw(t, e2.addr)
	expectRejected(t, over)
}

// max.connections: once the broker holds that many connections it stops accepting (the
// next ones wait in the listen backlog) until one closes (Kafka 2.4's waitForConnectionSlot).
func TestMaxConnectionsBlocksAccept(t *testing.T) {
	e := startServer(t, func(c *Config) {
		c.Connections = &ConnectionLimits{MaxConnections: 2, MaxConnectionsPerIP: 1 << 30, IdleTimeout: time.Minute}
	})
	a, b := dialRaw(t, e.addr), dialRaw(t, e.addr)
	if !apiVersionsOK(t, a, 10*time.Second) || !apiVersionsOK(t, b, 10*time.Second) {
		t.Fatal("the first two connections are not served")
	}
	third := dialRaw(t, e.addr) // the kernel completes the handshake; the broker does not accept it
	if apiVersionsOK(t, third, 300*time.Millisecond) {
		t.Fatal("a third connection was served with max.connections=2")
	}
	_ = a.nc.Close()
	_ = third.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	var buf [4]byte
	if _, err := third.nc.Read(buf[:]); err != nil {
		t.Fatalf("the waiting connection was not served once a slot freed: %v", err)
	}
}

// connections.max.idle.ms: a connection with nothing sent or received for that long is
// closed; one with a request being served (a fetch waiting) or in use is not.
func TestIdleConnectionsClosed(t *testing.T) {
	const idle = 300 * time.Millisecond
	e := startServer(t, func(c *Config) {
		c.Connections = &ConnectionLimits{MaxConnections: 1 << 30, MaxConnectionsPerIP: 1 << 30, IdleTimeout: idle}
	})
	e.createTopic("t", 1)
	quiet := dialRaw(t, e.addr)
	if !apiVersionsOK(t, quiet, 10*time.Second) {
		t.Fatal("not served")
	}
	last := time.Now()

	// A fetch parked for longer than the idle timeout is answered, not cut.
	fc := dial(t, e.addr)
	fr := kmsg.NewPtrFetchRequest()
	fr.Version, fr.ReplicaID, fr.MaxWaitMillis, fr.MinBytes, fr.MaxBytes = 11, -1, int32(3*idle/time.Millisecond), 1, 1<<20
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = "t"
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.Partition, fp.PartitionMaxBytes = 0, 1<<20
	ft.Partitions = append(ft.Partitions, fp)
	fr.Topics = append(fr.Topics, ft)
	roundTrip[*kmsg.FetchResponse](t, fc, fr)

	_ = quiet.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	var b [1]byte
	_, err := quiet.nc.Read(b[:])
	if err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("idle connection not closed: %v", err)
	}
	if d := time.Since(last); d < idle*9/10 {
		t.Fatalf("closed after %v of idleness, before connections.max.idle.ms %v", d, idle)
	}
}
