package txncoord

import (
	"encoding/binary"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	rm "github.com/isrbroker/isrbroker/replicamanager"
)

var statePartition0 = rm.TopicPartition{Topic: TransactionStateTopic, Partition: 0}

func (f *fakeReplicas) write(t *testing.T, records ...kv) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	f.appendLocked(statePartition0, encodeBatch(1, records))
}

func rec(t *testing.T, id string, r txnRecord) kv {
	t.Helper()
	if r.partitions == nil {
		r.partitions = map[topicPartition]struct{}{}
	}
	v, err := valueBytes(r)
	if err != nil {
		t.Fatal(err)
	}
	return kv{key: keyBytes(id), value: v}
}

// Loading rebuilds the partition's transactions from the log: the last record per id wins, a
// tombstone deletes, undecodable records and control batches are skipped, and transactions
// found in a Prepare state get their markers again and complete.
func TestLoadFromLog(t *testing.T) {
	reps := newFakeReplicas()
	parts := map[topicPartition]struct{}{tp0: {}, tp1: {}}
	reps.write(t,
		rec(t, "a", txnRecord{producerID: 1, producerEpoch: 0, timeoutMs: 60000, state: Empty, lastUpdate: 10, start: -1}),
		rec(t, "b", txnRecord{producerID: 2, producerEpoch: 3, timeoutMs: 60000, state: Empty, lastUpdate: 10, start: -1}))
	reps.write(t, rec(t, "a", txnRecord{producerID: 1, producerEpoch: 0, timeoutMs: 60000, state: Ongoing, partitions: parts, lastUpdate: 20, start: 20}),
		kv{key: keyBytes("b")}, // tombstone
		kv{key: []byte{0, 9, 0, 1, 'x'}, value: []byte{0}},
		rec(t, "c", txnRecord{producerID: 3, producerEpoch: 7, timeoutMs: 60000, state: PrepareCommit, partitions: map[topicPartition]struct{}{tp0: {}}, lastUpdate: 30, start: 25}),
		rec(t, "d", txnRecord{producerID: 4, producerEpoch: 1, timeoutMs: 60000, state: PrepareAbort, partitions: map[topicPartition]struct{}{tp1: {}}, lastUpdate: 30, start: 25}))
	// A control batch (a marker someone wrote) is skipped.
	ctl := encodeBatch(1, []kv{{key: []byte{0, 0, 0, 1}, value: []byte{0, 0, 0, 0, 0, 5}}})
	binary.BigEndian.PutUint16(ctl[21:], attrControl)
	reps.mu.Lock()
	reps.appendLocked(statePartition0, ctl)
	reps.mu.Unlock()

	e := newEnvOver(t, reps, func(c *Config) { c.LoadBufferSize = 64 }) // several reads
	e.c.Start()
	e.elect(0, 5)
	a := e.mustState("a", Ongoing, false)
	if a.producerID != 1 || a.timeoutMs != 60000 || len(a.partitions) != 2 || a.start != 20 || a.lastUpdate != 20 {
		t.Fatalf("a: %+v", a)
	}
	if _, ok := e.snapshot("b"); ok {
		t.Fatal("tombstoned b loaded")
	}
	e.mustState("c", CompleteCommit, false)
	e.mustState("d", CompleteAbort, false)
	byID := map[string]Marker{}
	for _, m := range e.markers.sends() {
		byID[m.TransactionalID] = m
	}
	if m := byID["c"]; !m.Commit || m.ProducerEpoch != 7 || m.CoordinatorEpoch != 5 || len(m.Partitions) != 1 || m.Partitions[0] != rmtp(tp0) {
		t.Fatalf("c's markers %+v", m)
	}
	if m := byID["d"]; m.Commit || m.CoordinatorEpoch != 5 || m.Partitions[0] != rmtp(tp1) {
		t.Fatalf("d's markers %+v", m)
	}
	// The loaded producer goes on.
	assertCode(t, "add after load", e.add("a", 1, 0, tp0), errNone)
	assertCode(t, "commit after load", e.end("a", 1, 0, true), errNone)
	e.mustState("a", CompleteCommit, false)
}

// What one coordinator wrote, the next leader loads.
func TestLoadRoundTrip(t *testing.T) {
	e := newEnv(t)
	r := e.init("a", 45000)
	e.add("a", r.ProducerID, r.ProducerEpoch, tp0, tp1)
	want := e.mustState("a", Ongoing, false)
	e2 := newEnvOver(t, e.reps)
	e2.c.Start()
	e2.elect(0, 2)
	got := e2.mustState("a", Ongoing, false)
	if got.producerID != want.producerID || got.producerEpoch != want.producerEpoch || got.timeoutMs != 45000 ||
		got.start != want.start || got.lastUpdate != want.lastUpdate || len(got.partitions) != 2 {
		t.Fatalf("loaded %+v, want %+v", got, want)
	}
	if r2 := e2.init("a", 45000); r2.ErrorCode != errConcurrentTransactions {
		t.Fatalf("init on the new leader fences: %+v", r2)
	}
}

// A load whose leadership ended (or moved to a newer epoch) before it ran is discarded.
func TestStaleLoadDiscarded(t *testing.T) {
	reps := newFakeReplicas()
	reps.write(t, rec(t, "a", txnRecord{producerID: 1, producerEpoch: 0, timeoutMs: 60000, state: Empty, lastUpdate: 10, start: -1}))
	e := newEnvOver(t, reps)
	e.c.OnElection(0, 1)
	e.c.OnResignation(0, 2)
	e.c.OnElection(0, 3)
	e.c.OnElection(0, 4)
	e.c.Start()
	e.waitLoaded(0, 4)
	if s := e.mustState("a", Empty, false); s.producerID != 1 {
		t.Fatalf("a %+v", s)
	}
	// Resigned before the loader ran: nothing is installed.
	e3 := newEnvOver(t, reps)
	e3.c.OnElection(0, 1)
	e3.c.OnResignation(0, 1)
	e3.c.Start()
	done := make(chan struct{})
	e3.c.state.scheduler.schedule(func() { close(done) })
	<-done
	assertCode(t, "after a discarded load", e3.init("a", 1000).ErrorCode, errNotCoordinator)
}

// A StopReplica (no epoch) drops the partition and any load of it.
func TestResignationWithoutEpoch(t *testing.T) {
	e := newEnv(t)
	e.init("a", 1000)
	e.c.OnResignation(0, -1)
	assertCode(t, "after StopReplica", e.init("a", 1000).ErrorCode, errNotCoordinator)
	e.elect(0, 7)
	if r := e.init("a", 1000); r.ErrorCode != errNone || r.ProducerEpoch != 1 {
		t.Fatalf("reloaded %+v", r)
	}
}

var _ = kerr.UnknownServerError
