package txncoord

import (
	"errors"
	"math"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

func TestInitProducerID(t *testing.T) {
	e := newEnv(t)
	r := e.init("a", 60000)
	if r.ErrorCode != errNone || r.ProducerID != 1000 || r.ProducerEpoch != 0 {
		t.Fatalf("first init: %+v", r)
	}
	rec := e.reps.lastValue(t, 0, "a")
	if rec == nil || rec.state != Empty || rec.producerID != 1000 || rec.producerEpoch != 0 || rec.timeoutMs != 60000 || rec.start != -1 {
		t.Fatalf("record %+v", rec)
	}
	if r := e.init("a", 30000); r.ErrorCode != errNone || r.ProducerID != 1000 || r.ProducerEpoch != 1 {
		t.Fatalf("second init: %+v", r)
	}
	if s := e.mustState("a", Empty, false); s.timeoutMs != 30000 {
		t.Fatalf("timeout %d", s.timeoutMs)
	}
	for _, acks := range e.reps.acks {
		if acks != -1 {
			t.Fatalf("append with acks %d", acks)
		}
	}
	// Errors before any state.
	for _, c := range []struct {
		name    string
		id      string
		timeout int32
		want    int16
	}{
		{"empty id", "", 1000, errInvalidRequest},
		{"zero timeout", "b", 0, errInvalidTransactionTimeout},
		{"above transaction.max.timeout.ms", "b", 900001, errInvalidTransactionTimeout},
	} {
		if r := e.init(c.id, c.timeout); r.ErrorCode != c.want || r.ProducerID != -1 || r.ProducerEpoch != -1 {
			t.Fatalf("%s: %+v, want error %d", c.name, r, c.want)
		}
	}
	if r := e.init("b", 900000); r.ErrorCode != errNone {
		t.Fatalf("timeout at the max: %+v", r)
	}
	// A null transactional id: a new producer id, epoch 0, nothing written.
	n := len(e.reps.records(t, 0))
	var got result[InitResult]
	e.c.InitProducerID(nil, 0, got.set)
	if !got.got || got.v.ErrorCode != errNone || got.v.ProducerEpoch != 0 || got.v.ProducerID != 1002 || len(e.reps.records(t, 0)) != n {
		t.Fatalf("null id: %+v", got)
	}
	e.pids.err = errors.New("zookeeper down")
	if r := e.init("c", 1000); r.ErrorCode != errCoordinatorNotAvailable {
		t.Fatalf("allocator failure: %+v", r)
	}
}

func TestInitProducerIDEpochExhaustion(t *testing.T) {
	e := newEnv(t)
	e.init("a", 1000)
	m, _, _ := e.c.state.getState("a", nil)
	m.inLock(func() { m.producerEpoch = math.MaxInt16 - 2 })
	if r := e.init("a", 1000); r.ProducerID != 1000 || r.ProducerEpoch != math.MaxInt16-1 {
		t.Fatalf("last epoch: %+v", r)
	}
	if r := e.init("a", 1000); r.ErrorCode != errNone || r.ProducerID != 1001 || r.ProducerEpoch != 0 {
		t.Fatalf("after exhaustion: %+v", r)
	}
}

// An InitProducerId during an Ongoing transaction fences it: epoch+1, the transaction aborted
// at that epoch, CONCURRENT_TRANSACTIONS; the retry bumps again. The old producer is fenced.
func TestInitProducerIDFencesOngoing(t *testing.T) {
	e := newEnv(t)
	r := e.init("a", 60000)
	assertCode(t, "add", e.add("a", r.ProducerID, r.ProducerEpoch, tp0, tp1), errNone)
	if r2 := e.init("a", 60000); r2.ErrorCode != errConcurrentTransactions {
		t.Fatalf("fencing init: %+v", r2)
	}
	sent := e.markers.sends()
	if len(sent) != 1 || sent[0].Commit || sent[0].ProducerEpoch != 1 || sent[0].CoordinatorEpoch != 1 || len(sent[0].Partitions) != 2 {
		t.Fatalf("markers %+v", sent)
	}
	var states []TxnState
	for _, kv := range e.reps.records(t, 0) {
		v, _ := parseValue(kv.value)
		states = append(states, v.state)
		if v.state == PrepareAbort && v.producerEpoch != 1 {
			t.Fatalf("PrepareAbort at epoch %d", v.producerEpoch)
		}
	}
	if want := []TxnState{Empty, Ongoing, PrepareAbort, CompleteAbort}; !equalStates(states, want) {
		t.Fatalf("log states %v, want %v", states, want)
	}
	e.mustState("a", CompleteAbort, false)
	if r3 := e.init("a", 60000); r3.ErrorCode != errNone || r3.ProducerEpoch != 2 || r3.ProducerID != r.ProducerID {
		t.Fatalf("retried init: %+v", r3)
	}
	assertCode(t, "zombie add", e.add("a", r.ProducerID, r.ProducerEpoch, tp0), errInvalidProducerEpoch)
	assertCode(t, "zombie end", e.end("a", r.ProducerID, r.ProducerEpoch, true), errInvalidProducerEpoch)
}

func equalStates(a, b []TxnState) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestAddPartitionsErrors(t *testing.T) {
	e := newEnv(t)
	r := e.init("a", 60000)
	pid, ep := r.ProducerID, r.ProducerEpoch
	assertCode(t, "empty id", e.add("", pid, ep, tp0), errInvalidRequest)
	assertCode(t, "unknown id", e.add("nope", pid, ep, tp0), errInvalidProducerIDMapping)
	assertCode(t, "other producer id", e.add("a", pid+1, ep, tp0), errInvalidProducerIDMapping)
	assertCode(t, "other epoch", e.add("a", pid, ep+1, tp0), errInvalidProducerEpoch)
	assertCode(t, "add", e.add("a", pid, ep, tp0), errNone)
	s := e.mustState("a", Ongoing, false)
	if s.start != e.clock.Now().UnixMilli() {
		t.Fatalf("start %d", s.start)
	}
	n := len(e.reps.records(t, 0))
	assertCode(t, "already present", e.add("a", pid, ep, tp0), errNone)
	if len(e.reps.records(t, 0)) != n {
		t.Fatal("an add of present partitions wrote a record")
	}
	// A pending transition: CONCURRENT_TRANSACTIONS.
	e.reps.setHold()
	var first result[int16]
	e.c.AddPartitions("a", pid, ep, []topicPartition{tp1}, first.set)
	assertCode(t, "while pending", e.add("a", pid, ep, tp1), errConcurrentTransactions)
	e.reps.release()
	if !first.got || first.v != errNone {
		t.Fatalf("held add: %+v", first)
	}
	// PrepareCommit without a pending state (as after a failed completion).
	m, _, _ := e.c.state.getState("a", nil)
	m.inLock(func() { m.state = PrepareCommit })
	assertCode(t, "in PrepareCommit", e.add("a", pid, ep, tp0), errConcurrentTransactions)
}

func TestAppendErrorMapping(t *testing.T) {
	for _, c := range []struct {
		log, want int16
	}{
		{kerr.NotEnoughReplicas.Code, errCoordinatorNotAvailable},
		{kerr.NotEnoughReplicasAfterAppend.Code, errCoordinatorNotAvailable},
		{kerr.RequestTimedOut.Code, errCoordinatorNotAvailable},
		{kerr.UnknownTopicOrPartition.Code, errCoordinatorNotAvailable},
		{kerr.NotLeaderForPartition.Code, errNotCoordinator},
		{kerr.KafkaStorageError.Code, errNotCoordinator},
		{kerr.MessageTooLarge.Code, errUnknownServer},
		{kerr.RecordListTooLarge.Code, errUnknownServer},
		{kerr.InvalidProducerEpoch.Code, kerr.InvalidProducerEpoch.Code},
	} {
		e := newEnv(t)
		r := e.init("a", 60000)
		e.reps.setFail(c.log)
		assertCode(t, kerr.ErrorForCode(c.log).Error(), e.add("a", r.ProducerID, r.ProducerEpoch, tp0), c.want)
		// The pending state was cleared: the retry goes through.
		e.reps.setFail(0)
		e.mustState("a", Empty, false)
		assertCode(t, "retry", e.add("a", r.ProducerID, r.ProducerEpoch, tp0), errNone)
	}
}

func TestEndTxn(t *testing.T) {
	e := newEnv(t)
	r := e.init("a", 60000)
	pid, ep := r.ProducerID, r.ProducerEpoch
	assertCode(t, "empty id", e.end("", pid, ep, true), errInvalidRequest)
	assertCode(t, "unknown id", e.end("nope", pid, ep, true), errInvalidProducerIDMapping)
	assertCode(t, "other producer id", e.end("a", pid+1, ep, true), errInvalidProducerIDMapping)
	assertCode(t, "Empty", e.end("a", pid, ep, true), errInvalidTxnState)
	e.add("a", pid, ep, tp0, tp1)
	assertCode(t, "older epoch", e.end("a", pid, ep-1, true), errInvalidProducerEpoch)
	assertCode(t, "commit", e.end("a", pid, ep, true), errNone)
	s := e.mustState("a", CompleteCommit, false)
	if len(s.partitions) != 0 {
		t.Fatalf("partitions after commit %v", s.partitions)
	}
	rec := e.reps.lastValue(t, 0, "a")
	if rec.state != CompleteCommit || rec.partitions == nil || len(rec.partitions) != 0 {
		t.Fatalf("complete record %+v", rec)
	}
	sent := e.markers.sends()
	if len(sent) != 1 || !sent[0].Commit || sent[0].ProducerID != pid || sent[0].TransactionalID != "a" {
		t.Fatalf("markers %+v", sent)
	}
	assertCode(t, "retried commit", e.end("a", pid, ep, true), errNone)
	assertCode(t, "abort after commit", e.end("a", pid, ep, false), errInvalidTxnState)
	// A larger epoch is accepted by 2.4's check (KAFKA-9600 is later), then refused by state.
	assertCode(t, "larger epoch", e.end("a", pid, ep+5, false), errInvalidTxnState)
	// Abort, then the Prepare states without a pending transition.
	e.add("a", pid, ep, tp0)
	assertCode(t, "abort", e.end("a", pid, ep, false), errNone)
	assertCode(t, "retried abort", e.end("a", pid, ep, false), errNone)
	assertCode(t, "commit after abort", e.end("a", pid, ep, true), errInvalidTxnState)
	m, _, _ := e.c.state.getState("a", nil)
	m.inLock(func() { m.state = PrepareAbort })
	assertCode(t, "PrepareAbort, abort", e.end("a", pid, ep, false), errConcurrentTransactions)
	assertCode(t, "PrepareAbort, commit", e.end("a", pid, ep, true), errInvalidTxnState)
	m.inLock(func() { m.state = PrepareCommit })
	assertCode(t, "PrepareCommit, commit", e.end("a", pid, ep, true), errConcurrentTransactions)
	assertCode(t, "PrepareCommit, abort", e.end("a", pid, ep, false), errInvalidTxnState)
}

// While the markers of a commit are being written every request gets CONCURRENT_TRANSACTIONS.
func TestConcurrentTransactionsWhileCompleting(t *testing.T) {
	e := newEnv(t)
	r := e.init("a", 60000)
	e.add("a", r.ProducerID, r.ProducerEpoch, tp0)
	e.markers.fail(rmtp(tp0), kerr.NotLeaderForPartition.Code)
	assertCode(t, "commit", e.end("a", r.ProducerID, r.ProducerEpoch, true), errNone)
	if s := e.mustState("a", PrepareCommit, true); s.pending != CompleteCommit {
		t.Fatalf("pending %s", s.pending)
	}
	if r2 := e.init("a", 60000); r2.ErrorCode != errConcurrentTransactions {
		t.Fatalf("init while completing: %+v", r2)
	}
	assertCode(t, "add while completing", e.add("a", r.ProducerID, r.ProducerEpoch, tp1), errConcurrentTransactions)
	assertCode(t, "commit again", e.end("a", r.ProducerID, r.ProducerEpoch, true), errConcurrentTransactions)
	assertCode(t, "abort", e.end("a", r.ProducerID, r.ProducerEpoch, false), errConcurrentTransactions)
	e.clock.Advance(e.c.cfg.MarkerRetryBackoff)
	e.mustState("a", CompleteCommit, false)
	if r3 := e.init("a", 60000); r3.ErrorCode != errNone || r3.ProducerEpoch != 1 {
		t.Fatalf("init after completion: %+v", r3)
	}
}

func TestLoadInProgressAndNotCoordinator(t *testing.T) {
	e := newEnvOver(t, newFakeReplicas())
	id := "a"
	assertCode(t, "not led", e.init(id, 1000).ErrorCode, errNotCoordinator)
	e.c.OnElection(0, 3) // the loader is not running yet
	assertCode(t, "loading: init", e.init(id, 1000).ErrorCode, errCoordinatorLoadInProgress)
	assertCode(t, "loading: add", e.add(id, 1, 0, tp0), errCoordinatorLoadInProgress)
	assertCode(t, "loading: end", e.end(id, 1, 0, true), errCoordinatorLoadInProgress)
	e.c.Start()
	e.waitLoaded(0, 3)
	assertCode(t, "loaded", e.init(id, 1000).ErrorCode, errNone)
	e.c.OnResignation(0, 4)
	assertCode(t, "resigned: init", e.init(id, 1000).ErrorCode, errNotCoordinator)
	assertCode(t, "resigned: add", e.add(id, 1000, 0, tp0), errNotCoordinator)
	assertCode(t, "resigned: end", e.end(id, 1000, 0, true), errNotCoordinator)
}

// An append that completes after the partition moved to another coordinator epoch is not
// applied: NOT_COORDINATOR.
func TestAppendAfterEpochChange(t *testing.T) {
	e := newEnv(t)
	r := e.init("a", 60000)
	e.reps.setHold()
	var got result[int16]
	e.c.AddPartitions("a", r.ProducerID, r.ProducerEpoch, []topicPartition{tp0}, got.set)
	e.c.OnResignation(0, 2)
	e.elect(0, 3)
	e.reps.release()
	if !got.got || got.v != errNotCoordinator {
		t.Fatalf("answer %+v", got)
	}
}

// EndTxn whose Prepare record completes after the partition moved to another coordinator
// epoch: NOT_COORDINATOR, and no markers at the old epoch. The new leader's load found the
// PrepareCommit record in the log and completes the transaction at its epoch.
func TestEndTxnAfterEpochChange(t *testing.T) {
	e := newEnv(t)
	r := e.init("a", 60000)
	e.add("a", r.ProducerID, r.ProducerEpoch, tp0)
	e.reps.setHold()
	var got result[int16]
	e.c.EndTxn("a", r.ProducerID, r.ProducerEpoch, true, got.set)
	if got.got {
		t.Fatalf("answered before the append completed: %+v", got)
	}
	e.c.OnResignation(0, 2)
	e.elect(0, 3)
	e.reps.release()
	if !got.got || got.v != errNotCoordinator || got.seen != 1 {
		t.Fatalf("answer %+v", got)
	}
	sent := e.markers.sends()
	if len(sent) != 1 || sent[0].CoordinatorEpoch != 3 || !sent[0].Commit {
		t.Fatalf("marker sends %+v", sent)
	}
	e.mustState("a", CompleteCommit, false)
}
