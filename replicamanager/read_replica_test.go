package replicamanager

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/isrbroker/isrbroker/broker/config/configdef"
)

func rack(s string) *string { return &s }

// Kafka 2.4's RackAwareReplicaSelector with ReplicaView.comparator() (docs/kafka-facts.md §15).
func TestSelectRackAware(t *testing.T) {
	leader := replicaView{id: 1, reachable: true, rack: rack("r1"), leo: 10}
	f := func(id int32, r *string, leo int64, since time.Duration) replicaView {
		return replicaView{id: id, reachable: r != nil, rack: r, leo: leo, sinceCaughtUp: since}
	}
	for _, tc := range []struct {
		name       string
		clientRack string
		leader     replicaView
		followers  []replicaView
		want       int32
	}{
		{"no client rack: the leader", "", leader, []replicaView{f(2, rack("r2"), 10, 0)}, 1},
		{"leader in the client's rack", "r1", leader, []replicaView{f(2, rack("r1"), 10, 0)}, 1},
		{"one follower in the rack", "r2", leader, []replicaView{f(2, rack("r2"), 4, time.Hour), f(3, rack("r3"), 10, 0)}, 2},
		{"no replica in the rack: the leader", "r9", leader, []replicaView{f(2, rack("r2"), 10, 0)}, 1},
		{"a broker without rack is in no rack", "r2", leader, []replicaView{f(2, nil, 10, 0)}, 1},
		{"larger LEO first", "r2", leader, []replicaView{f(2, rack("r2"), 9, 0), f(3, rack("r2"), 10, time.Hour)}, 3},
		{"then shorter time since caught up", "r2", leader, []replicaView{f(2, rack("r2"), 10, time.Second), f(3, rack("r2"), 10, time.Minute)}, 2},
		{"then the larger broker id", "r2", leader, []replicaView{f(3, rack("r2"), 10, 0), f(2, rack("r2"), 10, 0), f(4, rack("r2"), 10, 0)}, 4},
		{"a leader without rack", "r2", replicaView{id: 1, reachable: true, leo: 10}, []replicaView{f(2, rack("r2"), 10, 0)}, 2},
	} {
		if got := selectRackAware(tc.clientRack, tc.leader, tc.followers); got.id != tc.want {
			t.Errorf("%s: chose %d, want %d", tc.name, got.id, tc.want)
		}
	}
}

// batchAt is makeBatch with its base offset set (outside the CRC'd range), as a leader's log
// holds it.
func batchAt(base int64, n int) []byte {
	b := makeBatch(n, "v")
	binary.BigEndian.PutUint64(b[0:], uint64(base))
	return b
}

var racks = map[int32]string{1: "r1", 2: "r2", 3: "r3"}

func rackEndpoints(listener string, id int32) (*string, bool) {
	r, ok := racks[id]
	if !ok || listener != "PLAINTEXT" {
		return nil, false
	}
	return &r, true
}

func rackAwareEnv(t *testing.T, brokerID int32) *env {
	e := newEnvWith(t, brokerID, 1, func(c *Config) { c.ReplicaSelector = configdef.RackAwareReplicaSelector })
	e.rm.SetReplicaEndpoint(rackEndpoints)
	return e
}

func (e *env) clientFetch(t *testing.T, client *ClientMetadata, offset int64, epoch int32, maxWait time.Duration) chan FetchPartitionResult {
	t.Helper()
	ch := make(chan FetchPartitionResult, 1)
	e.rm.Requests().FetchMessages(FetchParams{ReplicaID: -1, MaxWait: maxWait, MaxBytes: 1 << 20, Client: client,
		Partitions: []FetchPartition{{TopicPartition: tp0(), FetchOffset: offset, PartitionMaxBytes: 1 << 20, CurrentLeaderEpoch: epoch, LogStartOffset: -1}}},
		func(r []FetchPartitionResult) { ch <- r[0] })
	return ch
}

// On the leader, a consumer's fetch with client metadata goes to the replica the selector
// chooses among those holding the fetch offset (findPreferredReadReplica): no records, the
// leader's HW, log start and LSO, and the replica; answered at once even with max_wait.
func TestPreferredReadReplica(t *testing.T) {
	e := rackAwareEnv(t, 1)
	e.leaderAndIsr(t, 1, 1, []int32{1, 2, 3}, []int32{1, 2})
	if r := waitResult(t, e.produce(t, 1, 5, time.Second), time.Second); r.ErrorCode != 0 {
		t.Fatalf("produce: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	e.followerFetch(t, 2, 5) // caught up: LEO 5, the HW moves to 5
	e.followerFetch(t, 3, 0) // LEO 0
	client := func(rack string) *ClientMetadata { return &ClientMetadata{RackID: rack, Listener: "PLAINTEXT"} }
	for _, tc := range []struct {
		name      string
		client    *ClientMetadata
		offset    int64
		preferred int32 // -1: read here
	}{
		{"rack r2: the caught-up follower", client("r2"), 0, 2},
		{"rack r3: the follower holds offset 0", client("r3"), 0, 3},
		{"rack r3: the follower's LEO is below the fetch offset", client("r3"), 3, -1},
		{"rack r1: the leader's rack", client("r1"), 0, -1},
		{"no rack", client(""), 0, -1},
		{"unknown rack", client("r9"), 0, -1},
		{"a listener the follower has no endpoint on", &ClientMetadata{RackID: "r2", Listener: "OTHER"}, 0, -1},
		{"no client metadata (before v11)", nil, 0, -1},
	} {
		r := waitResult(t, e.clientFetch(t, tc.client, tc.offset, 1, 10*time.Second), 2*time.Second)
		if r.ErrorCode != 0 || r.HighWatermark != 5 || r.LastStableOffset != 5 || r.LogStartOffset != 0 {
			t.Errorf("%s: error %v HW %d LSO %d log start %d, want none 5 5 0", tc.name, kerr.ErrorForCode(r.ErrorCode), r.HighWatermark, r.LastStableOffset, r.LogStartOffset)
		}
		switch {
		case tc.preferred >= 0 && (!r.HasPreferredReadReplica || r.PreferredReadReplica != tc.preferred || len(r.Records) > 0 || r.Files.Len > 0):
			t.Errorf("%s: preferred %v/%d with %d bytes, want %d and no records", tc.name, r.HasPreferredReadReplica, r.PreferredReadReplica, len(r.Records), tc.preferred)
		case tc.preferred < 0 && (r.HasPreferredReadReplica || len(r.Records) == 0):
			t.Errorf("%s: preferred %v/%d with %d bytes, want records from the leader", tc.name, r.HasPreferredReadReplica, r.PreferredReadReplica, len(r.Records))
		}
	}

	// Without replica.selector.class the leader serves every consumer.
	plain := newEnv(t, 1, 1)
	plain.rm.SetReplicaEndpoint(rackEndpoints)
	plain.leaderAndIsr(t, 1, 1, []int32{1, 2, 3}, []int32{1, 2})
	waitResult(t, plain.produce(t, 1, 5, time.Second), time.Second)
	plain.followerFetch(t, 2, 5)
	if r := waitResult(t, plain.clientFetch(t, client("r2"), 0, -1, 0), time.Second); r.HasPreferredReadReplica || len(r.Records) == 0 {
		t.Errorf("no selector: preferred %v/%d with %d bytes, want records from the leader", r.HasPreferredReadReplica, r.PreferredReadReplica, len(r.Records))
	}
}

// A follower serves a consumer's fetch with client metadata (KIP-392) up to its own HW; a fetch
// parked at the HW completes when the follower's HW moves. Without client metadata, and for
// replica fetches, it stays NOT_LEADER_FOR_PARTITION.
func TestFollowerReadBoundedByHW(t *testing.T) {
	e := rackAwareEnv(t, 2)
	e.leaderAndIsr(t, 1, 1, []int32{1, 2, 3}, []int32{1, 2, 3})
	first, second := batchAt(0, 3), batchAt(3, 2)
	if _, err := e.rm.followers.ProcessPartitionData(tp0(), 0, append(append([]byte{}, first...), second...), 3, 0); err != nil {
		t.Fatal(err)
	}
	client := &ClientMetadata{RackID: "r2", Listener: "PLAINTEXT"}
	r := waitResult(t, e.clientFetch(t, client, 0, 1, 0), time.Second)
	if r.ErrorCode != 0 || r.HighWatermark != 3 || r.LogStartOffset != 0 || len(r.Records) != len(first) || r.HasPreferredReadReplica {
		t.Fatalf("follower read: error %v HW %d log start %d %d bytes preferred %v, want the first batch (%d bytes) below HW 3",
			kerr.ErrorForCode(r.ErrorCode), r.HighWatermark, r.LogStartOffset, len(r.Records), r.HasPreferredReadReplica, len(first))
	}
	if r := waitResult(t, e.clientFetch(t, nil, 0, 1, 0), time.Second); r.ErrorCode != kerr.NotLeaderForPartition.Code {
		t.Errorf("without client metadata: %v, want NOT_LEADER_FOR_PARTITION", kerr.ErrorForCode(r.ErrorCode))
	}
	if r := e.followerFetch(t, 3, 0); r.ErrorCode != kerr.NotLeaderForPartition.Code {
		t.Errorf("replica fetch on a follower: %v, want NOT_LEADER_FOR_PARTITION", kerr.ErrorForCode(r.ErrorCode))
	}
	if r := waitResult(t, e.clientFetch(t, client, 0, 0, 0), time.Second); r.ErrorCode != kerr.FencedLeaderEpoch.Code {
		t.Errorf("stale current_leader_epoch: %v, want FENCED_LEADER_EPOCH", kerr.ErrorForCode(r.ErrorCode))
	}
	// Kafka 2.4 keeps ListOffsets (but for the debugging replica id) and OffsetsForLeaderEpoch
	// leader-only, consumers' too (docs/kafka-facts.md §15).
	if r := e.rm.Requests().ListOffsets(-1, 0, []ListOffsetsPartition{{TopicPartition: tp0(), Timestamp: -1, CurrentLeaderEpoch: 1}}); r[0].ErrorCode != kerr.NotLeaderForPartition.Code {
		t.Errorf("ListOffsets on a follower: %v, want NOT_LEADER_FOR_PARTITION", kerr.ErrorForCode(r[0].ErrorCode))
	}
	if r := e.rm.Requests().LastOffsetForLeaderEpoch(-1, []EpochEndOffsetRequest{{TopicPartition: tp0(), CurrentLeaderEpoch: 1, LeaderEpoch: 1}}); r[0].ErrorCode != kerr.NotLeaderForPartition.Code {
		t.Errorf("OffsetsForLeaderEpoch on a follower: %v, want NOT_LEADER_FOR_PARTITION", kerr.ErrorForCode(r[0].ErrorCode))
	}

	parked := e.clientFetch(t, client, 3, 1, time.Minute)
	select {
	case r := <-parked:
		t.Fatalf("fetch at the follower's HW answered at once: %+v", r)
	default:
	}
	if _, err := e.rm.followers.ProcessPartitionData(tp0(), 5, nil, 5, 0); err != nil {
		t.Fatal(err)
	}
	r = waitResult(t, parked, 5*time.Second)
	if r.ErrorCode != 0 || r.HighWatermark != 5 || len(r.Records) != len(second) {
		t.Fatalf("after the HW moved: error %v HW %d %d bytes, want the second batch (%d bytes)", kerr.ErrorForCode(r.ErrorCode), r.HighWatermark, len(r.Records), len(second))
	}
}
