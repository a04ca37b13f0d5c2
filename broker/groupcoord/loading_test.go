package groupcoord

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	rm "github.com/isrbroker/isrbroker/replicamanager"
)

// A quick leadership flip of an offsets partition while the load scheduler is busy: the unload
// of the partition this broker lost is queued, another leader moves the group on (a rebalance
// to generation 2 and a commit of 20), and the partition comes back before the unload runs.
// As in Kafka's GroupMetadataManager the queued unload still drops the partition's groups and
// the load rebuilds them from the log: OffsetFetch answers the other leader's 20, and the group
// is at its generation, not the cached 10 and generation 1 from before the flip.
func TestQuickLeadershipFlipReloadsFromLog(t *testing.T) {
	e := newEnv(t)
	id, gen := e.stableSingle("g")
	if gen != 1 {
		t.Fatalf("first generation %d", gen)
	}
	var got map[tp]int16
	e.c.CommitOffsets("g", id, nil, gen, map[tp]offsetAndMetadata{{"t", 0}: {offset: 10, leaderEpoch: -1, expireTimestamp: -1}},
		func(m map[tp]int16) { got = m })
	assertCode(t, "commit of 10", got[tp{"t", 0}], errNone)

	// The scheduler is busy (a load of another partition, say) until release is closed.
	release := make(chan struct{})
	busy := make(chan struct{})
	e.c.groupManager.scheduler.schedule(func() { close(busy); <-release })
	<-busy
	defer func() {
		select {
		case <-release:
		default:
			close(release)
		}
	}()

	p0 := rm.TopicPartition{Topic: OffsetsTopic, Partition: 0}
	e.c.OnLeadershipChange(nil, []rm.TopicPartition{p0}) // the unload is queued
	assertCode(t, "OffsetFetch after the resignation", func() int16 { c, _ := e.c.FetchOffsets("g", true, nil); return c }(), errNotCoordinator)

	// The other leader's appends, replicated into this broker's log: generation 2 with a new
	// member, and its commit of 20.
	other := newGroup("g", e.clock.Now())
	pt, proto := "consumer", "range"
	other.protocolType, other.protocol, other.generation = &pt, &proto, 2
	sub := (&kmsg.ConsumerMemberMetadata{Topics: []string{"t"}}).AppendTo(nil)
	other.add(&member{id: "m2", clientID: "c", clientHost: "/127.0.0.1", sessionTimeout: testSession, rebalanceTimeout: testRebalance,
		protocolType: pt, protocols: []protocol{{name: proto, metadata: sub}}}, nil)
	putBatch(e.reps, millis(e.clock.Now()), kv{groupMetadataKey("g"), groupMetadataValue(other, map[string][]byte{"m2": []byte("a2")})})
	putBatch(e.reps, millis(e.clock.Now()), kv{offsetCommitKey("g", tp{"t", 0}),
		offsetCommitValue(offsetAndMetadata{offset: 20, leaderEpoch: -1, commitTimestamp: millis(e.clock.Now()), expireTimestamp: -1})})

	e.c.OnLeadershipChange([]rm.TopicPartition{p0}, nil) // leadership back before the unload ran
	assertCode(t, "OffsetFetch while loading", func() int16 { c, _ := e.c.FetchOffsets("g", true, nil); return c }(), errCoordinatorLoadInProgress)
	close(release)
	e.waitLoaded(0)

	code, offs := e.c.FetchOffsets("g", false, []tp{{"t", 0}})
	assertCode(t, "OffsetFetch after the flip", code, errNone)
	if o := offs[tp{"t", 0}].offset; o != 20 {
		t.Fatalf("OffsetFetch after the flip: offset %d, want the other leader's 20 (the cache from before the flip was kept)", o)
	}
	g := e.c.groupManager.getGroup("g")
	if g == nil {
		t.Fatalf("group not loaded")
	}
	var gotGen int32
	var members []string
	g.inLock(func() { gotGen, members = g.generation, g.sortedMemberIDs() })
	if gotGen != 2 || len(members) != 1 || members[0] != "m2" {
		t.Fatalf("group after the flip: generation %d members %v, want the other leader's generation 2 with m2", gotGen, members)
	}
	assertCode(t, "heartbeat of the other leader's member", e.c.Heartbeat("g", "m2", nil, 2), errNone)
	assertCode(t, "heartbeat of the member from before the flip", e.c.Heartbeat("g", id, nil, 1), errUnknownMemberID)
}

// The unload of a partition that is loading again is not lost either when the load is still
// queued behind it: the queue runs unload then load, and no group survives from before.
func TestUnloadBeforeLoadDropsCachedGroups(t *testing.T) {
	e := newEnv(t)
	e.c.CommitOffsets("s", "", nil, -1, map[tp]offsetAndMetadata{{"t", 1}: {offset: 5, leaderEpoch: -1, expireTimestamp: -1}}, func(map[tp]int16) {})
	release := make(chan struct{})
	busy := make(chan struct{})
	e.c.groupManager.scheduler.schedule(func() { close(busy); <-release })
	<-busy
	p0 := rm.TopicPartition{Topic: OffsetsTopic, Partition: 0}
	e.c.OnLeadershipChange(nil, []rm.TopicPartition{p0})
	// The other leader deletes the group's offset (a tombstone).
	putBatch(e.reps, millis(e.clock.Now()), kv{offsetCommitKey("s", tp{"t", 1}), nil})
	e.c.OnLeadershipChange([]rm.TopicPartition{p0}, nil)
	close(release)
	e.waitLoaded(0)
	if _, offs := e.c.FetchOffsets("s", false, []tp{{"t", 1}}); offs[tp{"t", 1}].offset != -1 {
		t.Fatalf("offset deleted on the other leader still served: %+v", offs[tp{"t", 1}])
	}
	if e.c.groupManager.getGroup("s") != nil {
		t.Fatalf("group without offsets or metadata in the log still cached")
	}
}
