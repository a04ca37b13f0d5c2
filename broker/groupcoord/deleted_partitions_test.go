package groupcoord

import (
	"testing"

	rm "github.com/isrbroker/isrbroker/replicamanager"
)

// A topic's partitions deleted (UpdateMetadata with leader -2): like Kafka's
// handleDeletedPartitions, their committed offsets leave every group with tombstones, other
// topics' offsets stay, a commit still in flight for them is not installed when its append
// completes, and a group left Empty without offsets is dropped.
func TestHandleDeletedPartitions(t *testing.T) {
	e := newEnv(t)
	id, gen := e.stableSingle("g")
	commit := func(group, member string, gen int32, offs map[tp]offsetAndMetadata) map[tp]int16 {
		var got map[tp]int16
		e.c.CommitOffsets(group, member, nil, gen, offs, func(m map[tp]int16) { got = m })
		return got
	}
	om := func(o int64) offsetAndMetadata {
		return offsetAndMetadata{offset: o, leaderEpoch: -1, expireTimestamp: -1}
	}
	for k, code := range commit("g", id, gen, map[tp]offsetAndMetadata{{"t", 0}: om(10), {"t", 1}: om(11), {"u", 0}: om(12)}) {
		assertCode(t, "commit "+k.topic, code, errNone)
	}
	assertCode(t, "simple commit", commit("s", "", -1, map[tp]offsetAndMetadata{{"t", 2}: om(5)})[tp{"t", 2}], errNone)
	// A commit of t-0 whose append is still under way when the topic is deleted.
	e.reps.mu.Lock()
	e.reps.hold = true
	e.reps.mu.Unlock()
	var late map[tp]int16
	e.c.CommitOffsets("g", id, nil, gen, map[tp]offsetAndMetadata{{"t", 0}: om(13)}, func(m map[tp]int16) { late = m })

	before := len(e.reps.records(t, 0))
	e.c.HandleDeletedPartitions([]rm.TopicPartition{{Topic: "t", Partition: 0}, {Topic: "t", Partition: 1}, {Topic: "t", Partition: 2}})
	e.reps.release()
	if late == nil {
		t.Fatalf("the in-flight commit was not answered")
	}

	code, offs := e.c.FetchOffsets("g", true, nil)
	assertCode(t, "OffsetFetch", code, errNone)
	if len(offs) != 1 || offs[tp{"u", 0}].offset != 12 {
		t.Fatalf("offsets of g after t was deleted: %+v, want only u-0 at 12", offs)
	}
	if e.state("g") != stateStable {
		t.Fatalf("g: state %s, want Stable (it has a member)", e.state("g"))
	}
	if e.c.groupManager.getGroup("s") != nil {
		t.Fatalf("group s, left Empty without offsets, is still cached")
	}
	tombstones := map[offsetKey]bool{}
	for _, r := range e.reps.records(t, 0)[before:] {
		k, err := parseKey(r.key)
		if err != nil {
			t.Fatal(err)
		}
		if ok, isOffset := k.(offsetKey); isOffset && r.value == nil {
			tombstones[ok] = true
		} else if r.value == nil {
			t.Errorf("unexpected group tombstone %v (s only stored offsets)", k)
		}
	}
	for _, want := range []offsetKey{{"g", tp{"t", 0}}, {"g", tp{"t", 1}}, {"s", tp{"t", 2}}} {
		if !tombstones[want] {
			t.Errorf("no tombstone for %+v; tombstones %v", want, tombstones)
		}
	}
}
