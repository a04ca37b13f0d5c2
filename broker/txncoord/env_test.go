package txncoord

import (
	"testing"
	"time"

	rm "github.com/isrbroker/isrbroker/replicamanager"
)

type env struct {
	t       *testing.T
	c       *Coordinator
	clock   *fakeClock
	reps    *fakeReplicas
	pids    *fakePIDs
	markers *fakeMarkers
	meta    *fakeMeta
}

func newMeta() *fakeMeta {
	return &fakeMeta{known: map[topicPartition]bool{{"t", 0}: true, {"t", 1}: true, {"u", 0}: true, {"__consumer_offsets", 0}: true}}
}

// newEnv starts a coordinator over one __transaction_state partition (every id maps to 0),
// leader at coordinator epoch 1.
func newEnv(t *testing.T, mod ...func(*Config)) *env {
	t.Helper()
	e := newEnvOver(t, newFakeReplicas(), mod...)
	e.c.Start()
	e.elect(0, 1)
	return e
}

// newEnvOver builds (not starts) a coordinator over reps.
func newEnvOver(t *testing.T, reps *fakeReplicas, mod ...func(*Config)) *env {
	e := &env{t: t, clock: newFakeClock(), reps: reps, pids: &fakePIDs{next: 1000}, markers: newFakeMarkers(), meta: newMeta()}
	cfg := Config{BrokerID: 1, NumPartitions: 1, Clock: e.clock}
	for _, m := range mod {
		m(&cfg)
	}
	e.c = New(cfg, e.reps, e.pids, e.markers, e.meta, groupsInZero{})
	t.Cleanup(e.c.Close)
	return e
}

func (e *env) elect(p, epoch int32) {
	e.t.Helper()
	e.c.OnElection(p, epoch)
	e.waitLoaded(p, epoch)
}

func (e *env) waitLoaded(p, epoch int32) {
	e.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		sm := e.c.state
		sm.mu.RLock()
		c := sm.cache[p]
		_, loading := sm.loading[p]
		sm.mu.RUnlock()
		if c != nil && c.coordinatorEpoch == epoch && !loading {
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("partition %d not loaded at epoch %d", p, epoch)
		}
		time.Sleep(time.Millisecond) // polling the loader goroutine with a deadline
	}
}

// result is an answer that may come later.
type result[T any] struct {
	got  bool
	v    T
	seen int
}

func (r *result[T]) set(v T) {
	r.seen++
	r.got, r.v = true, v
}

func (e *env) mustGet(what string, got bool) {
	e.t.Helper()
	if !got {
		e.t.Fatalf("%s: no answer", what)
	}
}

func (e *env) init(id string, timeoutMs int32) InitResult {
	e.t.Helper()
	var r result[InitResult]
	e.c.InitProducerID(&id, timeoutMs, r.set)
	e.mustGet("InitProducerId", r.got)
	return r.v
}

func (e *env) add(id string, pid int64, epoch int16, parts ...topicPartition) int16 {
	e.t.Helper()
	var r result[int16]
	e.c.AddPartitions(id, pid, epoch, parts, r.set)
	e.mustGet("AddPartitions", r.got)
	return r.v
}

func (e *env) end(id string, pid int64, epoch int16, commit bool) int16 {
	e.t.Helper()
	var r result[int16]
	e.c.EndTxn(id, pid, epoch, commit, r.set)
	e.mustGet("EndTxn", r.got)
	return r.v
}

// txnView is a copy of a cached txnMetadata.
type txnView struct {
	id            string
	producerID    int64
	producerEpoch int16
	timeoutMs     int32
	state         TxnState
	pending       TxnState
	hasPending    bool
	partitions    map[topicPartition]struct{}
	start         int64
	lastUpdate    int64
}

// snapshot returns a copy of id's cached state.
func (e *env) snapshot(id string) (txnView, bool) {
	m, _, code := e.c.state.getState(id, nil)
	if code != errNone || m == nil {
		return txnView{}, false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return txnView{id: m.id, producerID: m.producerID, producerEpoch: m.producerEpoch, timeoutMs: m.timeoutMs,
		state: m.state, pending: m.pending, hasPending: m.hasPending, partitions: copyParts(m.partitions), start: m.start, lastUpdate: m.lastUpdate}, true
}

func (e *env) mustState(id string, want TxnState, wantPending bool) txnView {
	e.t.Helper()
	s, ok := e.snapshot(id)
	if !ok {
		e.t.Fatalf("%s: not cached", id)
	}
	if s.state != want || s.hasPending != wantPending {
		e.t.Fatalf("%s: state %s pending %v (%s), want %s pending %v", id, s.state, s.hasPending, s.pending, want, wantPending)
	}
	return s
}

func assertCode(t *testing.T, what string, got, want int16) {
	t.Helper()
	if got != want {
		t.Fatalf("%s: error code %d, want %d", what, got, want)
	}
}

var tp0, tp1 = topicPartition{"t", 0}, topicPartition{"t", 1}

func rmtp(p topicPartition) rm.TopicPartition {
	return rm.TopicPartition{Topic: p.topic, Partition: p.partition}
}
