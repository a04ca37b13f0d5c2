package broker

import (
	"testing"

	"github.com/rcrowley/go-metrics"
	"github.com/twmb/franz-go/pkg/kmsg"

	rm "github.com/isrbroker/isrbroker/replicamanager"
)

// KIP-392 on the wire: a consumer's Fetch v11 hands its rack_id and listener to the replica
// manager as client metadata (not v10, not a follower's fetch); a partition the replica manager
// redirects is answered with preferred_read_replica and no records; a follower's consumer reads
// count in its per-topic BytesOutPerSec and TotalFetchRequestsPerSec.
func TestFetchV11RackID(t *testing.T) {
	e := startServer(t, nil)
	e.createTopic("t", 1)
	e.reps.addPartition("follower", 0, false)
	c := dial(t, e.addr)
	roundTrip[*kmsg.ProduceResponse](t, c, produceReq(9, 1, "t", 0, makeBatch(3, []byte("abc"))))
	fetch := func(version int16, replicaID int32, rack, topic string) kmsg.FetchResponseTopicPartition {
		t.Helper()
		req := kmsg.NewPtrFetchRequest()
		req.Version, req.ReplicaID, req.MaxBytes, req.Rack = version, replicaID, 1<<20, rack
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.PartitionMaxBytes = 1 << 20
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp := roundTrip[*kmsg.FetchResponse](t, c, req)
		return resp.Topics[0].Partitions[0]
	}
	lastClient := func() *rm.ClientMetadata {
		e.reps.mu.Lock()
		defer e.reps.mu.Unlock()
		return e.reps.lastClient
	}

	if p := fetch(11, -1, "r2", "t"); p.PreferredReadReplica != -1 || len(p.RecordBatches) == 0 {
		t.Fatalf("v11 read here: preferred %d, %d bytes", p.PreferredReadReplica, len(p.RecordBatches))
	}
	if cm := lastClient(); cm == nil || cm.RackID != "r2" || cm.Listener != "PLAINTEXT" {
		t.Fatalf("v11 client metadata %+v, want rack r2 on PLAINTEXT", cm)
	}
	fetch(10, -1, "", "t")
	if cm := lastClient(); cm != nil {
		t.Fatalf("v10 client metadata %+v, want none (leader only)", cm)
	}
	fetch(11, 2, "r2", "t")
	if cm := lastClient(); cm != nil {
		t.Fatalf("follower fetch client metadata %+v, want none", cm)
	}

	e.reps.mu.Lock()
	part := e.reps.parts[tp("t", 0)]
	part.redirect, part.preferred = true, 2
	e.reps.mu.Unlock()
	p := fetch(11, -1, "r2", "t")
	if p.ErrorCode != 0 || p.PreferredReadReplica != 2 || len(p.RecordBatches) != 0 || p.HighWatermark != 3 || p.LastStableOffset != 3 || p.LogStartOffset != 0 {
		t.Fatalf("redirected: %+v, want preferred_read_replica 2, no records, HW/LSO 3, log start 0", p)
	}

	// The follower's partition: a v11 consumer reads it, and the reads are this broker's.
	e.reps.mu.Lock()
	fp := e.reps.parts[tp("follower", 0)]
	fp.batches, fp.bases, fp.next = [][]byte{makeBatch(2, []byte("xyz"))}, []int64{0}, 2 // as replicated
	e.reps.mu.Unlock()
	count := func(name string) int64 {
		m, _ := e.srv.cfg.Registry.Get(rm.BrokerTopicMetricName(name, "follower")).(metrics.Meter)
		if m == nil {
			return 0
		}
		return m.Count()
	}
	bytesBefore, fetchesBefore := count("BytesOutPerSec"), count("TotalFetchRequestsPerSec")
	if p := fetch(11, -1, "r2", "follower"); p.ErrorCode != 0 || len(p.RecordBatches) == 0 {
		t.Fatalf("v11 fetch on a follower: %+v, want its records", p)
	}
	if got := count("BytesOutPerSec") - bytesBefore; got == 0 {
		t.Error("a follower's consumer read is not counted in its topic's BytesOutPerSec")
	}
	if got := count("TotalFetchRequestsPerSec") - fetchesBefore; got != 1 {
		t.Errorf("TotalFetchRequestsPerSec moved by %d, want 1", got)
	}
}

// The metadata cache is the replica selector's source of racks: alive brokers with an endpoint
// on the client's listener, their rack as registered (nil without one).
func TestMetadataCacheReplicaEndpoint(t *testing.T) {
	e := startServer(t, nil)
	req := updateMetadataReq(e.srv, map[string]int32{"t": 1}, 1)
	req.LiveBrokers[0].Rack = kmsg.StringPtr("r1")
	lb := kmsg.NewUpdateMetadataRequestLiveBroker()
	lb.ID = 2
	ep := kmsg.NewUpdateMetadataRequestLiveBrokerEndpoint()
	ep.Host, ep.Port, ep.ListenerName = "127.0.0.1", 1, "PLAINTEXT"
	lb.Endpoints = append(lb.Endpoints, ep)
	req.LiveBrokers = append(req.LiveBrokers, lb)
	e.srv.Metadata().Update(req)
	md := e.srv.Metadata()
	if r, ok := md.ReplicaEndpoint("PLAINTEXT", 1); !ok || r == nil || *r != "r1" {
		t.Errorf("broker 1: %v %v, want r1", r, ok)
	}
	if r, ok := md.ReplicaEndpoint("PLAINTEXT", 2); !ok || r != nil {
		t.Errorf("broker 2 without rack: %v %v, want nil true", r, ok)
	}
	if _, ok := md.ReplicaEndpoint("OTHER", 1); ok {
		t.Error("broker 1 on a listener it has no endpoint on: ok")
	}
	if _, ok := md.ReplicaEndpoint("PLAINTEXT", 3); ok {
		t.Error("broker 3 is not alive: ok")
	}
}
