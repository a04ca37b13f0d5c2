package integration

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/isrbroker/isrbroker/tests/cluster"
)

// Issue 28 items 6 and 7 against a real broker process: huge CreateTopics are refused with
// INVALID_PARTITIONS at once and the broker's memory does not jump; with
// max.connections.per.ip=50 the 51st connection from an address is closed; internal topics
// are listed by Metadata with is_internal=true and by `topics --list` (unless
// --exclude-internal), and producing to them stays refused.
func TestBrokerLimitsAndInternalTopics(t *testing.T) {
	c := cluster.Start(t, cluster.Options{Brokers: 1, Overrides: map[string]string{
		"max.connections.per.ip":           "50",
		"offsets.topic.num.partitions":     "1",
		"offsets.topic.replication.factor": "1",
	}})
	adm := c.Admin()
	cl := c.Client()
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// CreateTopics num_partitions 2^31-1: INVALID_PARTITIONS naming the limit, fast, RSS flat.
	rss0 := vmRSS(t, c.Broker(1).Pid())
	for _, validateOnly := range []bool{true, false} {
		req := kmsg.NewPtrCreateTopicsRequest()
		req.TimeoutMillis, req.ValidateOnly = 10000, validateOnly
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "huge", 1<<31-1, 1
		req.Topics = append(req.Topics, rt)
		start := time.Now()
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		got := resp.Topics[0]
		if got.ErrorCode != kerr.InvalidPartitions.Code || got.ErrorMessage == nil || !strings.Contains(*got.ErrorMessage, "10000") {
			t.Fatalf("validate_only=%v: code %d message %v, want INVALID_PARTITIONS naming the limit", validateOnly, got.ErrorCode, got.ErrorMessage)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Fatalf("validate_only=%v: answered after %v", validateOnly, d)
		}
	}
	if rss1 := vmRSS(t, c.Broker(1).Pid()); rss1 > rss0+64<<20 {
		t.Fatalf("broker RSS grew from %d to %d bytes on refused CreateTopics", rss0, rss1)
	}

	// max.connections.per.ip=50: from an address of its own (the broker's and the admin
	// client's connections come from 127.0.0.1).
	const src = "127.0.0.77"
	var conns []net.Conn
	for i := 0; i < 50; i++ {
		nc := dialFrom(t, src, c.Broker(1).Addr)
		if err := apiVersions(nc); err != nil {
			t.Fatalf("connection %d of 50: %v", i+1, err)
		}
		conns = append(conns, nc)
	}
	over := dialFrom(t, src, c.Broker(1).Addr)
	if err := apiVersions(over); err == nil {
		t.Fatal("the 51st connection from one address was served with max.connections.per.ip=50")
	}
	for i, nc := range conns {
		if err := apiVersions(nc); err != nil {
			t.Fatalf("connection %d closed after the 51st: %v", i+1, err)
		}
	}
	_ = conns[0].Close()
	cluster.WaitFor(t, 10*time.Second, func() (bool, string) {
		nc := dialFrom(t, src, c.Broker(1).Addr)
		err := apiVersions(nc)
		return err == nil, "a slot freed by closing a connection: " + errString(err)
	})
	if !strings.Contains(c.Broker(1).Output(), "address already has the configured maximum of 50 connections") {
		t.Error("the broker did not log the rejected connection")
	}

	// __consumer_offsets, created by a FindCoordinator, is listed with is_internal=true.
	cluster.WaitFor(t, 30*time.Second, func() (bool, string) {
		resp, err := cluster.FindCoordinator(ctx, c.Broker(1).Addr, "g")
		if err != nil {
			return false, err.Error()
		}
		return resp.ErrorCode == 0, "FindCoordinator: " + strconv.Itoa(int(resp.ErrorCode))
	})
	c.WaitMetadataLeaders("__consumer_offsets", 1, 30*time.Second)
	c.CreateTopic("plain", 1, 1)
	md, err := adm.Metadata(ctx) // all topics
	if err != nil {
		t.Fatal(err)
	}
	if td, ok := md.Topics["__consumer_offsets"]; !ok || !td.IsInternal {
		t.Fatalf("all-topics Metadata: __consumer_offsets listed %v internal %v, want listed with is_internal=true", ok, td.IsInternal)
	}
	if md.Topics["plain"].IsInternal {
		t.Fatal("topic plain reported internal")
	}
	if l, err := adm.ListTopics(ctx); err != nil || l.Has("__consumer_offsets") || !l.Has("plain") {
		t.Fatalf("kadm ListTopics (skips internal topics by the flag): %v %v", l.Names(), err)
	}
	bsArg := "--bootstrap-server=" + strings.Join(c.BootstrapAddrs(), ",")
	if out := adminOK(t, "topics", bsArg, "--list"); !strings.Contains(out, "__consumer_offsets\n") || !strings.Contains(out, "plain\n") {
		t.Fatalf("topics --list: %q, want __consumer_offsets and plain", out)
	}
	if out := adminOK(t, "topics", bsArg, "--list", "--exclude-internal"); strings.Contains(out, "__consumer_offsets") || !strings.Contains(out, "plain\n") {
		t.Fatalf("topics --list --exclude-internal: %q, want plain only", out)
	}
	if _, err := c.Broker(1).ProduceOnce(ctx, "__consumer_offsets", 0, 1, 5*time.Second, []byte("x")); !errors.Is(err, kerr.InvalidTopicException) {
		t.Fatalf("produce to __consumer_offsets: %v, want INVALID_TOPIC_EXCEPTION", err)
	}
}

// connections.max.idle.ms: a real broker closes a connection idle for that long.
func TestBrokerClosesIdleConnections(t *testing.T) {
	const idle = 2 * time.Second
	c := cluster.Start(t, cluster.Options{Brokers: 1, Overrides: map[string]string{"connections.max.idle.ms": strconv.Itoa(int(idle / time.Millisecond))}})
	nc := dialFrom(t, "127.0.0.78", c.Broker(1).Addr)
	if err := apiVersions(nc); err != nil {
		t.Fatal(err)
	}
	last := time.Now()
	_ = nc.SetReadDeadline(time.Now().Add(30 * time.Second))
	var b [1]byte
	_, err := nc.Read(b[:])
	if err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("idle connection not closed: %v", err)
	}
	if d := time.Since(last); d < idle*9/10 {
		t.Fatalf("closed after %v, before connections.max.idle.ms %v", d, idle)
	}
}

func dialFrom(t *testing.T, src, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: 5 * time.Second}
	nc, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = nc.Close() })
	return nc
}

// apiVersions sends an ApiVersions v0 on nc and reads its answer.
func apiVersions(nc net.Conn) error {
	req := kmsg.NewPtrApiVersionsRequest()
	if _, err := nc.Write(kmsg.NewRequestFormatter(kmsg.FormatterClientID("limits")).AppendRequest(nil, req, 1)); err != nil {
		return err
	}
	_ = nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	defer func() { _ = nc.SetReadDeadline(time.Time{}) }()
	var size [4]byte
	if _, err := io.ReadFull(nc, size[:]); err != nil {
		return err
	}
	body := make([]byte, binary.BigEndian.Uint32(size[:]))
	_, err := io.ReadFull(nc, body)
	return err
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// vmRSS is the resident set size of process pid in bytes.
func vmRSS(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	t.Fatal("no VmRSS")
	return 0
}
