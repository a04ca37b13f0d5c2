package replicamanager

import (
	"slices"
	"testing"
	"time"
)

// holdNextIsrWrite makes the fake ZooKeeper block the next ISR write until the returned release
// is called.
func (e *env) holdNextIsrWrite() (entered chan struct{}, release func()) {
	h := &heldWrite{entered: make(chan struct{}), release: make(chan struct{})}
	e.coord.mu.Lock()
	e.coord.hold = h
	e.coord.mu.Unlock()
	return h.entered, func() { close(h.release) }
}

// stuckFollowerLeader leads t-0 with ISR {1,2}, two records appended, and follower 2 lagging for
// longer than replica.lag.time.max.ms, so the next shrink step removes it. The follower fetched
// the first record, so the HW is 1.
func stuckFollowerLeader(t *testing.T, e *env) {
	t.Helper()
	e.leaderAndIsr(t, 1, 0, []int32{1, 2}, []int32{1, 2})
	waitResult(t, e.produce(t, 1, 1, time.Second), time.Second)
	e.followerFetch(t, 2, 1)
	waitResult(t, e.produce(t, 1, 1, time.Second), time.Second)
	e.clock.Advance(11 * time.Second)
}

// shrinkWithHeldIsrWrite sets up stuckFollowerLeader and runs the ISR-shrink step in the
// background until its ZooKeeper write is held; done receives once the step returns after release.
func shrinkWithHeldIsrWrite(t *testing.T, e *env) (done chan bool, release func()) {
	t.Helper()
	stuckFollowerLeader(t, e)
	entered, release := e.holdNextIsrWrite()
	done = make(chan bool, 1)
	go func() { e.rm.tasks.maybeShrinkIsr(); done <- true }()
	waitResult(t, entered, 5*time.Second)
	return done, release
}

// Fault row 9 finding: a leader whose ISR write to ZooKeeper hangs (ZooKeeper unreachable, the
// client retrying up to a session timeout) must keep serving produce and fetch on the partition;
// the write happens outside the partition lock, and the ISR changes only once ZooKeeper has it.
func TestK3_SlowIsrWriteDoesNotBlockProduceOrFetch(t *testing.T) {
	e := newEnv(t, 1, 1)
	shrunk, release := shrinkWithHeldIsrWrite(t, e)

	// While ZooKeeper does not answer: acks=1 produce and a consumer fetch complete, and the
	// local ISR is still the one ZooKeeper holds.
	produced := make(chan ProduceResult, 1)
	go func() { produced <- <-e.produce(t, 1, 1, time.Second) }() // a lock held across the write would block the caller
	r := waitResult(t, produced, 2*time.Second)
	if r.ErrorCode != 0 {
		t.Fatalf("produce during a hanging ISR write: error %d", r.ErrorCode)
	}
	fetched := make(chan FetchPartitionResult, 1)
	go func() { fetched <- <-e.consumerFetch(0) }()
	fr := waitResult(t, fetched, 2*time.Second)
	if fr.ErrorCode != 0 || len(fr.Records) == 0 {
		t.Fatalf("fetch during a hanging ISR write: error %d, %d bytes", fr.ErrorCode, len(fr.Records))
	}
	if v := e.rm.getPartition(tp0()).view(); !slices.Equal(v.isr, []int32{1, 2}) {
		t.Fatalf("local ISR %v changed before ZooKeeper had it", v.isr)
	}
	// A second shrink step does not start a second write for the same partition.
	e.rm.tasks.maybeShrinkIsr()

	release()
	waitResult(t, shrunk, 5*time.Second)
	if v := e.rm.getPartition(tp0()).view(); !slices.Equal(v.isr, []int32{1}) {
		t.Fatalf("local ISR %v after the write, want [1]", v.isr)
	}
	if isr := e.coord.isrOf(tp0()); !slices.Equal(isr, []int32{1}) {
		t.Fatalf("ISR in ZooKeeper %v, want [1]", isr)
	}
	e.coord.mu.Lock()
	writes := e.coord.writes
	e.coord.mu.Unlock()
	if writes != 1 {
		t.Fatalf("%d ISR writes, want 1 (one write in flight per partition)", writes)
	}
}

// A LeaderAndIsr that arrives while the answer to the leader's own ISR write is late wins: the
// write reached ZooKeeper, the controller then wrote a newer state (re-electing this broker at a
// new epoch with ISR {1,2}) and sent it; the late success must not overwrite that state.
func TestK3_LeaderAndIsrDuringIsrWriteWins(t *testing.T) {
	e := newEnv(t, 1, 1)
	done, release := shrinkWithHeldIsrWrite(t, e)

	e.coord.mu.Lock()
	e.coord.version[tp0()]++ // the controller's write
	e.coord.isr[tp0()] = []int32{1, 2}
	e.coord.mu.Unlock()
	e.leaderAndIsr(t, 1, 1, []int32{1, 2}, []int32{1, 2})
	release()
	waitResult(t, done, 5*time.Second)
	v := e.rm.getPartition(tp0()).view()
	if !slices.Equal(v.isr, []int32{1, 2}) || v.leaderEpoch != 1 {
		t.Fatalf("after a superseded ISR write: ISR %v epoch %d, want [1 2] at epoch 1", v.isr, v.leaderEpoch)
	}
	// The leader keeps the controller's zkVersion, so its next ISR write is not refused.
	e.clock.Advance(11 * time.Second)
	e.rm.tasks.maybeShrinkIsr()
	if isr := e.coord.isrOf(tp0()); !slices.Equal(isr, []int32{1}) {
		t.Fatalf("next shrink after the LeaderAndIsr: ISR in ZooKeeper %v, want [1]", isr)
	}
}

// consumerFetch sends a consumer fetch (replica id -1) at offset without waiting for data.
func (e *env) consumerFetch(offset int64) chan FetchPartitionResult {
	ch := make(chan FetchPartitionResult, 1)
	e.rm.Requests().FetchMessages(FetchParams{ReplicaID: -1, MaxBytes: 1 << 20, Partitions: []FetchPartition{{TopicPartition: tp0(), FetchOffset: offset, PartitionMaxBytes: 1 << 20, CurrentLeaderEpoch: -1, LogStartOffset: -1}}}, func(r []FetchPartitionResult) { ch <- r[0] })
	return ch
}
