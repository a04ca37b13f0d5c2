package kproto

import (
	"bytes"
	"context"
	"encoding/binary"
	"net"
	"testing"
	"time"
	"unsafe"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// fetchServer answers every request on its connections with a Fetch v11 response whose one
// partition carries records (records[i] for the i-th request, cycling).
func fetchServer(t testing.TB, records ...[]byte) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer nc.Close()
				for i := 0; ; i++ {
					frame, err := ReadFrame(nc, 1<<20)
					if err != nil {
						return
					}
					corr := binary.BigEndian.Uint32(frame[4:8]) // key, version, then correlation id
					resp := kmsg.NewPtrFetchResponse()
					resp.SetVersion(11)
					rt := kmsg.NewFetchResponseTopic()
					rt.Topic = "t"
					rp := kmsg.NewFetchResponseTopicPartition()
					rp.RecordBatches = records[i%len(records)]
					rt.Partitions = append(rt.Partitions, rp)
					resp.Topics = append(resp.Topics, rt)
					body := resp.AppendTo(binary.BigEndian.AppendUint32(nil, corr))
					if _, err := nc.Write(append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)); err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}

func fetchOnce(t testing.TB, c *Conn) []byte {
	t.Helper()
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(11)
	resp, err := c.Request(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	return resp.(*kmsg.FetchResponse).Topics[0].Partitions[0].RecordBatches
}

// With SetReuseBuffer the connection reads every response into the same storage (the
// contract: a response is valid until the next Request); without it each response has its own.
func TestConnReuseBuffer(t *testing.T) {
	a, b := bytes.Repeat([]byte{'a'}, 64<<10), bytes.Repeat([]byte{'b'}, 32<<10)
	addr := fetchServer(t, a, b)
	for _, reuse := range []bool{false, true} {
		c, err := Dial(context.Background(), addr, "", "test", time.Second)
		if err != nil {
			t.Fatal(err)
		}
		c.SetReuseBuffer(reuse)
		first := fetchOnce(t, c)
		if !bytes.Equal(first, a) {
			t.Fatalf("reuse=%v: first response's records differ from the bytes sent", reuse)
		}
		second := fetchOnce(t, c)
		if !bytes.Equal(second, b) {
			t.Fatalf("reuse=%v: second response's records differ from the bytes sent", reuse)
		}
		// Both responses' records sit at the same place in their frames, so shared storage
		// means the same address.
		same := unsafe.SliceData(first) == unsafe.SliceData(second)
		if same != reuse {
			t.Errorf("reuse=%v: responses share storage: %v", reuse, same)
		}
		if reuse && first[0] != 'b' {
			t.Errorf("reuse=true: the first response's bytes were not overwritten by the second (%q)", first[0])
		}
		if !reuse && first[0] != 'a' {
			t.Errorf("reuse=false: the first response's bytes changed (%q)", first[0])
		}
		_ = c.Close()
	}
}

// BenchmarkConnFetch1MiB is a replica fetcher's round trip for a 1 MiB fetch response, with a
// fresh buffer per response (reuse=false, before) and one reused buffer (reuse=true).
func BenchmarkConnFetch1MiB(b *testing.B) {
	addr := fetchServer(b, bytes.Repeat([]byte{'r'}, 1<<20))
	for _, reuse := range []bool{false, true} {
		name := "fresh"
		if reuse {
			name = "reuse"
		}
		b.Run(name, func(b *testing.B) {
			c, err := Dial(context.Background(), addr, "", "bench", time.Second)
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			c.SetReuseBuffer(reuse)
			b.SetBytes(1 << 20)
			b.ReportAllocs()
			for b.Loop() {
				fetchOnce(b, c)
			}
		})
	}
}

// Responses of every size come back whole and in order through the connection's read buffer:
// smaller than it, larger (read straight into the frame), empty, and one that ends exactly at
// its edge.
func TestConnReadsResponsesOfEverySize(t *testing.T) {
	sizes := []int{10, 20 << 10, 3 << 20, 0, connReadBuffer - 64, 1, 70 << 10}
	var records [][]byte
	for i, n := range sizes {
		records = append(records, bytes.Repeat([]byte{byte('a' + i)}, n))
	}
	c, err := Dial(context.Background(), fetchServer(t, records...), "", "test", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for round := range 2 {
		for i, want := range records {
			if got := fetchOnce(t, c); !bytes.Equal(got, want) {
				t.Fatalf("round %d, response %d: %d bytes, want %d bytes of %q", round, i, len(got), len(want), string(rune('a'+i)))
			}
		}
	}
}
