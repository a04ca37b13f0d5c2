package fetcher

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/isrbroker/isrbroker/broker/kproto"
)

// serveMemLeader serves m over the Kafka protocol on a loopback listener: the fetcher's
// RemoteLeader then talks to it through broker/kproto exactly as to a broker. dropFirst closes
// the first connection after its first request, to exercise redialling.
func serveMemLeader(t *testing.T, m *memLeader, dropFirst bool) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var conns sync.Map
	var n atomic.Int32
	t.Cleanup(func() {
		_ = ln.Close()
		conns.Range(func(k, _ any) bool { _ = k.(net.Conn).Close(); return true })
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			conns.Store(nc, nil)
			drop := dropFirst && n.Add(1) == 1
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer nc.Close()
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				for {
					frame, err := kproto.ReadFrame(nc, 1<<20)
					if err != nil {
						return
					}
					if drop {
						return
					}
					h, body, err := kproto.ParseHeader(frame, kproto.IsFlexible)
					if err != nil {
						return
					}
					req := kmsg.RequestForKey(h.Key)
					if req == nil {
						return
					}
					req.SetVersion(h.Version)
					if err := req.ReadFrom(body); err != nil {
						return
					}
					var resp kmsg.Response
					switch r := req.(type) {
					case *kmsg.FetchRequest:
						if r.ReplicaID != 2 || r.Version != fetchVersion {
							t.Errorf("fetch replica id %d version %d", r.ReplicaID, r.Version)
						}
						if resp, err = m.fetch(ctx, r); err != nil {
							return
						}
					case *kmsg.OffsetForLeaderEpochRequest:
						if r.ReplicaID != 2 || r.Version != offsetForLeaderEpochVersion {
							t.Errorf("OffsetForLeaderEpoch replica id %d version %d", r.ReplicaID, r.Version)
						}
						resp = m.offsetForLeaderEpoch(r)
					case *kmsg.ListOffsetsRequest:
						if r.ReplicaID != 2 || r.Version != listOffsetsVersion {
							t.Errorf("ListOffsets replica id %d version %d", r.ReplicaID, r.Version)
						}
						resp = m.listOffsets(r)
					default:
						return
					}
					if _, err := nc.Write(kproto.AppendResponse(nil, h.CorrelationID, resp)); err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}

// End to end over the wire with the default RemoteLeader: epoch truncation, fetching, an
// out-of-range reset, and a redial after the leader drops the connection.
func TestRemoteLeader_ReplicatesOverWire(t *testing.T) {
	m := newMemLeader()
	addr := serveMemLeader(t, m, true)
	local := newFakeLocal()
	mgr := NewManager(Config{BrokerID: 2, FetchWaitMax: 50e6, FetchBackoff: 20e6, SocketTimeout: 5e9, Log: testLogger()}, local)
	t.Cleanup(mgr.Close)

	a, b := tp("t", 0), tp("u", 3)
	ll := &memLog{}
	for _, v := range values("m", 0, 20) {
		ll.appendLeader(0, v)
	}
	ll.hw = 20
	ll.deleteBefore(10)
	m.lead(a, 1, ll)
	m.lead(b, 0, &memLog{})
	m.produce(b, "x", "y")
	fl := local.log(a)
	fl.appendLeader(0, "m0") // far behind the leader's log start: S20 over the wire
	local.log(b)
	leader := BrokerEndPoint{ID: 1, Addr: addr}
	mgr.AddFetcherForPartitions(map[TopicPartition]InitialFetchState{
		a: {Leader: leader, CurrentLeaderEpoch: 1, InitOffset: 0},
		b: {Leader: leader, CurrentLeaderEpoch: 0, InitOffset: 0},
	})
	for _, x := range []TopicPartition{a, b} {
		x := x
		eventually(t, "replication over the wire", func() bool {
			got, _, _, _ := local.snapshot(x)
			want := m.entries(x)
			if len(got) != len(want) {
				return false
			}
			for i := range got {
				if got[i] != want[i] {
					return false
				}
			}
			return true
		})
	}
	m.produce(b, "z")
	eventually(t, "long-poll fetch delivers new data", func() bool {
		_, _, leo, _ := local.snapshot(b)
		return leo == 3
	})
}
