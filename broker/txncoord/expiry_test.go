package txncoord

import (
	"testing"
	"time"
)

// The periodic check aborts an Ongoing transaction past its timeout with epoch+1, fencing its
// producer; a transaction within its timeout is left alone.
func TestTimedOutTransactionAborted(t *testing.T) {
	e := newEnv(t)
	interval := e.c.cfg.AbortTimedOutInterval
	if interval != time.Minute {
		t.Fatalf("transaction.abort.timed.out.transaction.cleanup.interval.ms default %v, want Kafka 2.4.1's 60 s", interval)
	}
	short := e.init("short", 10000)
	long := e.init("long", 900000)
	e.add("short", short.ProducerID, short.ProducerEpoch, tp0)
	e.add("long", long.ProducerID, long.ProducerEpoch, tp1)
	e.clock.Advance(interval - time.Millisecond)
	e.mustState("short", Ongoing, false)
	e.clock.Advance(time.Millisecond)
	s := e.mustState("short", CompleteAbort, false)
	if s.producerEpoch != short.ProducerEpoch+1 {
		t.Fatalf("epoch after the timeout abort %d", s.producerEpoch)
	}
	e.mustState("long", Ongoing, false)
	sent := e.markers.sends()
	if len(sent) != 1 || sent[0].Commit || sent[0].ProducerEpoch != short.ProducerEpoch+1 || sent[0].Partitions[0] != rmtp(tp0) {
		t.Fatalf("markers %+v", sent)
	}
	// The timed-out producer is fenced.
	assertCode(t, "end", e.end("short", short.ProducerID, short.ProducerEpoch, true), errInvalidProducerEpoch)
	assertCode(t, "add", e.add("short", short.ProducerID, short.ProducerEpoch, tp0), errInvalidProducerEpoch)
	// The check runs again every interval.
	e.clock.Advance(900 * time.Second)
	e.mustState("long", CompleteAbort, false)
}

// A transaction with a pending transition is not aborted by the check.
func TestTimedOutTransactionWithPendingSkipped(t *testing.T) {
	e := newEnv(t)
	r := e.init("a", 1000)
	e.add("a", r.ProducerID, r.ProducerEpoch, tp0)
	e.reps.setHold()
	var got result[int16]
	e.c.EndTxn("a", r.ProducerID, r.ProducerEpoch, true, got.set)
	e.clock.Advance(e.c.cfg.AbortTimedOutInterval)
	e.reps.release()
	if !got.got || got.v != errNone {
		t.Fatalf("commit %+v", got)
	}
	if s := e.mustState("a", CompleteCommit, false); s.producerEpoch != r.ProducerEpoch {
		t.Fatalf("epoch %d", s.producerEpoch)
	}
}

// Idle transactional ids in Empty or Complete* are tombstoned and dropped after
// transactional.id.expiration.ms; an Ongoing one is kept.
func TestTransactionalIDExpiration(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.AbortTimedOutInterval = 30 * 24 * time.Hour })
	if e.c.cfg.TransactionalIDExpiration != 7*24*time.Hour || e.c.cfg.RemoveExpiredInterval != time.Hour {
		t.Fatalf("defaults %v %v", e.c.cfg.TransactionalIDExpiration, e.c.cfg.RemoveExpiredInterval)
	}
	idle := e.init("idle", 60000)
	done := e.init("done", 60000)
	busy := e.init("busy", 900000)
	e.add("done", done.ProducerID, done.ProducerEpoch, tp0)
	e.end("done", done.ProducerID, done.ProducerEpoch, true)
	e.add("busy", busy.ProducerID, busy.ProducerEpoch, tp1)
	e.clock.Advance(7*24*time.Hour - time.Hour)
	if _, ok := e.snapshot("idle"); !ok {
		t.Fatal("expired early")
	}
	e.clock.Advance(time.Hour)
	for _, id := range []string{"idle", "done"} {
		if _, ok := e.snapshot(id); ok {
			t.Fatalf("%s not expired", id)
		}
		if rec := e.reps.lastValue(t, 0, id); rec != nil {
			t.Fatalf("%s: no tombstone, last %+v", id, rec)
		}
	}
	e.mustState("busy", Ongoing, false)
	assertCode(t, "expired id", e.add("idle", idle.ProducerID, idle.ProducerEpoch, tp0), errInvalidProducerIDMapping)
	// A new InitProducerId starts over with a new producer id.
	if r := e.init("idle", 60000); r.ErrorCode != errNone || r.ProducerID == idle.ProducerID || r.ProducerEpoch != 0 {
		t.Fatalf("init after expiry %+v", r)
	}
}

// A failed tombstone append keeps the id and clears its pending Dead.
func TestTransactionalIDExpirationAppendFails(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.AbortTimedOutInterval = 30 * 24 * time.Hour })
	e.init("idle", 60000)
	e.reps.setFail(5) // LEADER_NOT_AVAILABLE
	e.clock.Advance(7*24*time.Hour + time.Hour)
	e.mustState("idle", Empty, false)
	e.reps.setFail(0)
	if r := e.init("idle", 60000); r.ErrorCode != errNone || r.ProducerEpoch != 1 {
		t.Fatalf("init %+v", r)
	}
}
