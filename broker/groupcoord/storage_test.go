package groupcoord

import (
	"encoding/binary"
	"hash/crc32"
	"testing"
	"time"

	"github.com/rcrowley/go-metrics"
	"github.com/twmb/franz-go/pkg/kmsg"

	rm "github.com/isrbroker/isrbroker/replicamanager"
)

// What the coordinator writes decodes with kmsg's record types as Kafka 2.4 reads it: a magic-2
// batch with a valid CRC-32C, offset commit key v1 / value v3 (v1 with an expire timestamp),
// group metadata key v2 / value v3, and null values for tombstones.
func TestRecordFormatRoundTrip(t *testing.T) {
	g := newGroup("grp", time.UnixMilli(1234))
	pt := "consumer"
	g.protocolType = &pt
	proto := "cooperative-sticky"
	g.protocol = &proto
	g.generation = 7
	g.add(&member{id: "m1", instanceID: str("i1"), clientID: "c1", clientHost: "/10.0.0.1", rebalanceTimeout: 60 * time.Second,
		sessionTimeout: 10 * time.Second, protocolType: pt, protocols: []protocol{{name: proto, metadata: []byte("sub")}}}, nil)

	batch := encodeBatch(99, []kv{
		{key: offsetCommitKey("grp", tp{"t", 3}), value: offsetCommitValue(offsetAndMetadata{offset: 42, leaderEpoch: 5, metadata: "md", commitTimestamp: 99, expireTimestamp: -1})},
		{key: offsetCommitKey("grp", tp{"t", 4}), value: offsetCommitValue(offsetAndMetadata{offset: 1, leaderEpoch: -1, commitTimestamp: 99, expireTimestamp: 500})},
		{key: groupMetadataKey("grp"), value: groupMetadataValue(g, map[string][]byte{"m1": []byte("asg")})},
		{key: offsetCommitKey("grp", tp{"t", 5})}, // tombstone
	})

	var b kmsg.RecordBatch
	if err := b.ReadFrom(batch); err != nil {
		t.Fatal(err)
	}
	if b.Magic != 2 || b.Attributes != 0 || b.NumRecords != 4 || b.LastOffsetDelta != 3 || b.PartitionLeaderEpoch != -1 || b.ProducerID != -1 {
		t.Fatalf("batch header %+v", b)
	}
	if int(b.Length)+12 != len(batch) {
		t.Fatalf("batch length %d, %d bytes", b.Length, len(batch))
	}
	if crc := crc32.Checksum(batch[21:], crc32.MakeTable(crc32.Castagnoli)); crc != uint32(b.CRC) {
		t.Fatalf("CRC-32C %x, batch says %x", crc, uint32(b.CRC))
	}
	batches, skipped, err := decodeBatches(batch)
	if err != nil || len(skipped) != 0 || len(batches) != 1 || len(batches[0].records) != 4 {
		t.Fatalf("decode: %v %v %+v", err, skipped, batches)
	}
	recs := batches[0].records

	var k kmsg.OffsetCommitKey
	if err := k.ReadFrom(recs[0].key); err != nil || k.Version != 1 || k.Group != "grp" || k.Topic != "t" || k.Partition != 3 {
		t.Fatalf("offset key %+v %v", k, err)
	}
	var v kmsg.OffsetCommitValue
	if err := v.ReadFrom(recs[0].value); err != nil || v.Version != 3 || v.Offset != 42 || v.LeaderEpoch != 5 || v.Metadata != "md" || v.CommitTimestamp != 99 {
		t.Fatalf("offset value %+v %v", v, err)
	}
	if err := v.ReadFrom(recs[1].value); err != nil || v.Version != 1 || v.ExpireTimestamp != 500 {
		t.Fatalf("offset value v1 %+v %v", v, err)
	}
	var gk kmsg.GroupMetadataKey
	if err := gk.ReadFrom(recs[2].key); err != nil || gk.Version != 2 || gk.Group != "grp" {
		t.Fatalf("group key %+v %v", gk, err)
	}
	var gv kmsg.GroupMetadataValue
	if err := gv.ReadFrom(recs[2].value); err != nil {
		t.Fatal(err)
	}
	if gv.Version != 3 || gv.ProtocolType != "consumer" || gv.Generation != 7 || *gv.Protocol != proto || *gv.Leader != "m1" ||
		gv.CurrentStateTimestamp != 1234 || len(gv.Members) != 1 {
		t.Fatalf("group value %+v", gv)
	}
	m := gv.Members[0]
	if m.MemberID != "m1" || *m.InstanceID != "i1" || m.ClientID != "c1" || m.ClientHost != "/10.0.0.1" || m.RebalanceTimeoutMillis != 60000 ||
		m.SessionTimeoutMillis != 10000 || string(m.Subscription) != "sub" || string(m.Assignment) != "asg" {
		t.Fatalf("group member %+v", m)
	}
	if recs[3].value != nil {
		t.Fatalf("tombstone has a value")
	}
	// Our own parsers agree.
	om, err := parseOffsetValue(recs[1].value)
	if err != nil || om.expireTimestamp != 500 || om.leaderEpoch != -1 {
		t.Fatalf("parseOffsetValue %+v %v", om, err)
	}
}

// putBatch appends raw records to the fake log of offsets partition 0 as the coordinator would.
func putBatch(f *fakeReplicas, ts int64, records ...kv) {
	f.AppendRecords(0, -1, map[rm.TopicPartition][]byte{{Topic: OffsetsTopic, Partition: 0}: encodeBatch(ts, records)}, func(map[rm.TopicPartition]rm.ProduceResult) {})
}

// Loading: the last value per key wins, tombstones delete offsets and groups, groups with only
// offsets load Empty, groups with members load Stable.
func TestLoadPartition(t *testing.T) {
	f := newFakeReplicas()
	om := func(o int64) []byte {
		return offsetCommitValue(offsetAndMetadata{offset: o, leaderEpoch: -1, commitTimestamp: 10, expireTimestamp: -1})
	}
	g := newGroup("stable", time.UnixMilli(10))
	pt, proto := "consumer", "range"
	g.protocolType, g.protocol, g.generation = &pt, &proto, 3
	sub := (&kmsg.ConsumerMemberMetadata{Topics: []string{"t"}}).AppendTo(nil)
	g.add(&member{id: "m1", clientID: "c", sessionTimeout: 10 * time.Second, rebalanceTimeout: 10 * time.Second, protocolType: pt,
		protocols: []protocol{{name: proto, metadata: sub}}}, nil)
	gone := newGroup("gone", time.UnixMilli(10))
	gone.protocolType, gone.generation = &pt, 2

	putBatch(f, 10,
		kv{offsetCommitKey("simple", tp{"t", 0}), om(5)},
		kv{offsetCommitKey("simple", tp{"t", 1}), om(9)},
		kv{groupMetadataKey("gone"), groupMetadataValue(gone, nil)},
		kv{offsetCommitKey("gone", tp{"t", 0}), om(1)},
	)
	putBatch(f, 11,
		kv{offsetCommitKey("simple", tp{"t", 0}), om(7)}, // overwrite
		kv{offsetCommitKey("simple", tp{"t", 1}), nil},   // tombstone
		kv{groupMetadataKey("stable"), groupMetadataValue(g, map[string][]byte{"m1": []byte("a")})},
		kv{offsetCommitKey("stable", tp{"t", 2}), om(100)},
		kv{offsetCommitKey("gone", tp{"t", 0}), nil},
		kv{groupMetadataKey("gone"), nil},
	)

	e := &env{t: t, clock: newFakeClock(), reps: f, meta: &fakeMeta{partitions: map[string]int32{OffsetsTopic: 1}, alive: 1}}
	e.c = New(Config{OffsetsTopicNumPartitions: 1, OffsetsLoadBufferSize: 100, Clock: e.clock}, f, e.meta, nil)
	e.c.Start()
	t.Cleanup(e.c.Close)
	e.elect(0)

	code, offs := e.c.FetchOffsets("simple", true, nil)
	if code != errNone || len(offs) != 1 || offs[tp{"t", 0}].offset != 7 {
		t.Fatalf("simple: %d %+v", code, offs)
	}
	if e.state("simple") != stateEmpty {
		t.Fatalf("simple: state %s, want Empty", e.state("simple"))
	}
	if e.c.groupManager.getGroup("gone") != nil {
		t.Fatalf("a group whose metadata and offsets were tombstoned was loaded")
	}
	if e.state("stable") != stateStable || len(e.members("stable")) != 1 {
		t.Fatalf("stable: state %s members %v", e.state("stable"), e.members("stable"))
	}
	_, offs = e.c.FetchOffsets("stable", false, []tp{{"t", 2}, {"t", 9}})
	if offs[tp{"t", 2}].offset != 100 || offs[tp{"t", 9}].offset != -1 {
		t.Fatalf("stable offsets %+v", offs)
	}
	// The loaded member's session runs from the load: it expires without heartbeats.
	assertCode(t, "loaded member heartbeat", e.c.Heartbeat("stable", "m1", nil, 3), errNone)
	res, ok := e.sync("stable", 3, "m1", nil, nil).get()
	if !ok || string(res.assignment) != "a" {
		t.Fatalf("loaded assignment %+v", res)
	}
}

// OffsetCommit of a "simple consumer" (generation -1, no group) is stored, and visible to
// OffsetFetch only once the append completed (the ISR has it).
func TestSimpleConsumerCommitVisibleAfterAppend(t *testing.T) {
	e := newEnv(t)
	e.reps.mu.Lock()
	e.reps.hold = true
	e.reps.mu.Unlock()
	var got map[tp]int16
	e.c.CommitOffsets("simple", "", nil, -1, map[tp]offsetAndMetadata{{"t", 0}: {offset: 11, leaderEpoch: -1, expireTimestamp: -1, metadata: "x"}},
		func(m map[tp]int16) { got = m })
	if got != nil {
		t.Fatalf("commit answered before the append completed")
	}
	if _, offs := e.c.FetchOffsets("simple", false, []tp{{"t", 0}}); offs[tp{"t", 0}].offset != -1 {
		t.Fatalf("offset visible before the append completed: %+v", offs)
	}
	e.reps.release()
	if got[tp{"t", 0}] != errNone {
		t.Fatalf("commit result %v", got)
	}
	if _, offs := e.c.FetchOffsets("simple", false, []tp{{"t", 0}}); offs[tp{"t", 0}].offset != 11 || offs[tp{"t", 0}].metadata != "x" {
		t.Fatalf("offset after the append: %+v", offs)
	}
	// An append failure is mapped as storeOffsets does and changes nothing.
	e.reps.failCode = 6 // NOT_LEADER_FOR_PARTITION
	e.c.CommitOffsets("simple", "", nil, -1, map[tp]offsetAndMetadata{{"t", 0}: {offset: 12, leaderEpoch: -1, expireTimestamp: -1}},
		func(m map[tp]int16) { got = m })
	assertCode(t, "commit on a lost leadership", got[tp{"t", 0}], errNotCoordinator)
	if _, offs := e.c.FetchOffsets("simple", false, []tp{{"t", 0}}); offs[tp{"t", 0}].offset != 11 {
		t.Fatalf("failed commit changed the offset: %+v", offs)
	}
	// Metadata above offset.metadata.max.bytes.
	e.reps.failCode = 0
	big := make([]byte, 5000)
	e.c.CommitOffsets("simple", "", nil, -1, map[tp]offsetAndMetadata{{"t", 1}: {offset: 1, leaderEpoch: -1, expireTimestamp: -1, metadata: string(big)}},
		func(m map[tp]int16) { got = m })
	assertCode(t, "metadata too large", got[tp{"t", 1}], errOffsetMetadataTooLarge)
}

// KIP-211 expiry: offsets of an Empty group expire offsets.retention.minutes after it became
// Empty; the tombstones are written, and the group, left without offsets, becomes Dead and is
// dropped with its metadata tombstone.
func TestOffsetExpiry(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.OffsetsRetention = time.Hour; c.OffsetsRetentionCheckInterval = 100 * time.Hour })
	id, gen := e.stableSingle("g")
	var got map[tp]int16
	e.c.CommitOffsets("g", id, nil, gen, map[tp]offsetAndMetadata{{"t", 0}: {offset: 3, leaderEpoch: -1, expireTimestamp: -1, commitTimestamp: millis(e.clock.Now())}},
		func(m map[tp]int16) { got = m })
	assertCode(t, "commit", got[tp{"t", 0}], errNone)
	// The only member leaves: the rebalance completes at once (no member left to wait for)
	// and the group is Empty from now on.
	code, codes := e.c.LeaveGroup("g", []leavingMember{{memberID: id}})
	if code != errNone || codes[0] != errNone {
		t.Fatalf("leave: %d %v", code, codes)
	}
	if e.state("g") != stateEmpty {
		t.Fatalf("state %s, want Empty", e.state("g"))
	}
	e.clock.Advance(time.Hour - time.Millisecond)
	if n := e.c.groupManager.expireOffsets(); n != 0 {
		t.Fatalf("expired %d offsets before the retention passed", n)
	}
	e.clock.Advance(time.Millisecond)
	before := len(e.reps.records(t, 0))
	if n := e.c.groupManager.expireOffsets(); n != 1 {
		t.Fatalf("expired %d offsets, want 1", n)
	}
	if e.c.groupManager.getGroup("g") != nil {
		t.Fatalf("empty group without offsets not removed")
	}
	recs := e.reps.records(t, 0)[before:]
	if len(recs) != 2 || recs[0].value != nil || recs[1].value != nil {
		t.Fatalf("tombstones %+v", recs)
	}
	if k, _ := parseKey(recs[0].key); k != (offsetKey{"g", tp{"t", 0}}) {
		t.Fatalf("first tombstone key %+v", k)
	}
	if k, _ := parseKey(recs[1].key); k != "g" {
		t.Fatalf("second tombstone key %+v", k)
	}
}

// OffsetDelete (KIP-496): a consumer group with members refuses partitions of topics it
// subscribes to (GROUP_SUBSCRIBED_TO_TOPIC) and deletes the others; DeleteGroups deletes an
// Empty group with its offsets.
func TestOffsetDeleteAndDeleteGroups(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.GroupInitialRebalanceDelay = 0 })
	sub := (&kmsg.ConsumerMemberMetadata{Topics: []string{"t"}}).AppendTo(nil)
	j := e.join("g", "", nil, 3, string(sub))
	e.clock.Advance(0)
	r := e.mustJoined(j)
	e.sync("g", r.generation, r.memberID, nil, nil)
	var got map[tp]int16
	e.c.CommitOffsets("g", r.memberID, nil, r.generation, map[tp]offsetAndMetadata{
		{"t", 0}: {offset: 1, leaderEpoch: -1, expireTimestamp: -1}, {"u", 0}: {offset: 2, leaderEpoch: -1, expireTimestamp: -1},
	}, func(m map[tp]int16) { got = m })
	if got[tp{"t", 0}] != errNone || got[tp{"u", 0}] != errNone {
		t.Fatalf("commit %v", got)
	}
	top, codes := e.c.DeleteOffsets("g", []tp{{"t", 0}, {"u", 0}})
	if top != errNone || codes[tp{"t", 0}] != errGroupSubscribedToTopic || codes[tp{"u", 0}] != errNone {
		t.Fatalf("offset delete: %d %v", top, codes)
	}
	if _, offs := e.c.FetchOffsets("g", true, nil); len(offs) != 1 || offs[tp{"t", 0}].offset != 1 {
		t.Fatalf("offsets after delete %+v", offs)
	}
	top, _ = e.c.DeleteOffsets("missing", []tp{{"t", 0}})
	assertCode(t, "offset delete of an unknown group", top, errGroupIDNotFound)

	// Leave, the group goes Empty, and DeleteGroups removes it and its offsets.
	e.c.LeaveGroup("g", []leavingMember{{memberID: r.memberID}})
	e.clock.Advance(0)
	if e.state("g") != stateEmpty {
		t.Fatalf("state %s", e.state("g"))
	}
	if c := e.c.DeleteGroups([]string{"g"}); c["g"] != errNone {
		t.Fatalf("delete groups %v", c)
	}
	if e.c.groupManager.getGroup("g") != nil {
		t.Fatalf("deleted group still cached")
	}
	if _, offs := e.c.FetchOffsets("g", true, nil); len(offs) != 0 {
		t.Fatalf("offsets of a deleted group %+v", offs)
	}
	if c := e.c.DeleteGroups([]string{"g"}); c["g"] != errGroupIDNotFound {
		t.Fatalf("second delete %v", c)
	}
}

// Protocol selection is Kafka's selectProtocol: among the protocols every member supports, the
// one most members list first (eager and cooperative assignors alike); a protocol nobody else
// supports is INCONSISTENT_GROUP_PROTOCOL.
func TestSelectProtocol(t *testing.T) {
	cases := []struct {
		name    string
		members [][]string
		want    string
	}{
		{"single", [][]string{{"range"}}, "range"},
		{"common first choice", [][]string{{"cooperative-sticky", "range"}, {"cooperative-sticky", "range"}}, "cooperative-sticky"},
		{"only range is common", [][]string{{"cooperative-sticky", "range"}, {"range"}}, "range"},
		{"majority vote", [][]string{{"a", "b"}, {"b", "a"}, {"b", "a"}}, "b"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := newGroup("g", time.Unix(0, 0))
			for i, names := range tc.members {
				var ps []protocol
				for _, n := range names {
					ps = append(ps, protocol{name: n})
				}
				g.add(&member{id: string(rune('a' + i)), protocolType: "consumer", protocols: ps}, nil)
			}
			if got := g.selectProtocol(); got != tc.want {
				t.Fatalf("selected %q, want %q", got, tc.want)
			}
		})
	}
	g := newGroup("g", time.Unix(0, 0))
	g.add(&member{id: "a", protocolType: "consumer", protocols: []protocol{{name: "range"}}}, nil)
	g.state = stateStable
	if g.supportsProtocols("consumer", []protocol{{name: "roundrobin"}}) || !g.supportsProtocols("consumer", []protocol{{name: "x"}, {name: "range"}}) ||
		g.supportsProtocols("connect", []protocol{{name: "range"}}) {
		t.Fatalf("supportsProtocols")
	}
}

// The state machine only takes Kafka's transitions (GroupMetadata.validPreviousStates).
func TestValidTransitions(t *testing.T) {
	all := []groupState{stateEmpty, statePreparingRebalance, stateCompletingRebalance, stateStable, stateDead}
	allowed := map[[2]groupState]bool{
		{stateEmpty, statePreparingRebalance}: true, {stateEmpty, stateDead}: true,
		{statePreparingRebalance, stateCompletingRebalance}: true, {statePreparingRebalance, stateEmpty}: true, {statePreparingRebalance, stateDead}: true,
		{stateCompletingRebalance, stateStable}: true, {stateCompletingRebalance, statePreparingRebalance}: true, {stateCompletingRebalance, stateDead}: true,
		{stateStable, statePreparingRebalance}: true, {stateStable, stateDead}: true,
		{stateDead, stateDead}: true,
	}
	for _, from := range all {
		for _, to := range all {
			if got := canTransition(from, to); got != allowed[[2]groupState{from, to}] {
				t.Errorf("%s → %s: allowed=%v", from, to, got)
			}
		}
	}
}

var _ = binary.BigEndian

// The GroupMetadataManager gauges and the OffsetCommits meter follow the groups.
func TestMetrics(t *testing.T) {
	reg := metrics.NewRegistry()
	e := newEnv(t, func(c *Config) { c.Registry = reg })
	id, gen := e.stableSingle("g")
	e.c.CommitOffsets("s", "", nil, -1, map[tp]offsetAndMetadata{{"t", 0}: {offset: 1, leaderEpoch: -1, expireTimestamp: -1}}, func(map[tp]int16) {})
	e.c.CommitOffsets("g", id, nil, gen, map[tp]offsetAndMetadata{{"t", 1}: {offset: 1, leaderEpoch: -1, expireTimestamp: -1}, {"t", 2}: {offset: 1, leaderEpoch: -1, expireTimestamp: -1}}, func(map[tp]int16) {})
	gauge := func(name string) int64 { return reg.Get(name).(metrics.Gauge).Value() }
	want := map[string]int64{MetricNumGroups: 2, MetricNumGroupsStable: 1, MetricNumGroupsEmpty: 1, MetricNumOffsets: 3, MetricNumGroupsDead: 0}
	for name, v := range want {
		if got := gauge(name); got != v {
			t.Errorf("%s = %d, want %d", name, got, v)
		}
	}
	if got := reg.Get(MetricOffsetCommits).(metrics.Meter).Count(); got != 3 {
		t.Errorf("%s count %d, want 3", MetricOffsetCommits, got)
	}
}
