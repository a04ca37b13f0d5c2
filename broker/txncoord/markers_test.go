package txncoord

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	rm "github.com/isrbroker/isrbroker/replicamanager"
)

// A partition whose marker fails with a retriable error is sent again after the backoff, the
// others are not; the transaction completes once every marker is written.
func TestMarkersRetried(t *testing.T) {
	e := newEnv(t)
	r := e.init("a", 60000)
	e.add("a", r.ProducerID, r.ProducerEpoch, tp0, tp1)
	e.markers.fail(rmtp(tp1), kerr.NotLeaderForPartition.Code, kerr.NetworkException.Code)
	assertCode(t, "commit", e.end("a", r.ProducerID, r.ProducerEpoch, true), errNone)
	e.mustState("a", PrepareCommit, true)
	e.clock.Advance(e.c.cfg.MarkerRetryBackoff - time.Millisecond)
	if n := len(e.markers.sends()); n != 1 {
		t.Fatalf("%d sends before the backoff", n)
	}
	e.clock.Advance(time.Millisecond)
	e.mustState("a", PrepareCommit, true)
	e.clock.Advance(e.c.cfg.MarkerRetryBackoff)
	e.mustState("a", CompleteCommit, false)
	sent := e.markers.sends()
	if len(sent) != 3 {
		t.Fatalf("%d sends, want 3", len(sent))
	}
	if len(sent[0].Partitions) != 2 || len(sent[1].Partitions) != 1 || sent[1].Partitions[0] != rmtp(tp1) || sent[2].Partitions[0] != rmtp(tp1) {
		t.Fatalf("sends %+v", sent)
	}
	for _, m := range sent {
		if !m.Commit || m.CoordinatorEpoch != 1 || m.ProducerID != r.ProducerID || m.ProducerEpoch != r.ProducerEpoch {
			t.Fatalf("marker %+v", m)
		}
	}
}

func TestMarkerOutcomes(t *testing.T) {
	for _, c := range []struct {
		name     string
		code     int16
		complete bool
	}{
		{"unsupported for message format: done", kerr.UnsupportedForMessageFormat.Code, true},
		{"unsupported version: done", kerr.UnsupportedVersion.Code, true},
		{"fenced epoch: stop", kerr.InvalidProducerEpoch.Code, false},
		{"coordinator fenced: stop", kerr.TransactionCoordinatorFenced.Code, false},
		{"corrupt message: stop", kerr.CorruptMessage.Code, false},
		{"storage error: stop (unexpected in Kafka 2.4)", kerr.KafkaStorageError.Code, false},
	} {
		e := newEnv(t)
		r := e.init("a", 60000)
		e.add("a", r.ProducerID, r.ProducerEpoch, tp0)
		e.markers.fail(rmtp(tp0), c.code)
		assertCode(t, c.name, e.end("a", r.ProducerID, r.ProducerEpoch, false), errNone)
		e.clock.Advance(time.Second)
		if c.complete {
			e.mustState("a", CompleteAbort, false)
		} else {
			e.mustState("a", PrepareAbort, true)
			if n := len(e.markers.sends()); n != 1 {
				t.Fatalf("%s: %d sends", c.name, n)
			}
		}
	}
}

// A partition the metadata no longer knows (deleted) is skipped.
func TestMarkerOfDeletedPartitionSkipped(t *testing.T) {
	e := newEnv(t)
	r := e.init("a", 60000)
	e.add("a", r.ProducerID, r.ProducerEpoch, tp0, tp1)
	e.meta.forget("t", 1)
	e.markers.fail(rmtp(tp0), kerr.NotLeaderForPartition.Code)
	assertCode(t, "commit", e.end("a", r.ProducerID, r.ProducerEpoch, true), errNone)
	e.clock.Advance(e.c.cfg.MarkerRetryBackoff)
	e.mustState("a", CompleteCommit, false)
	for _, m := range e.markers.sends() {
		for _, p := range m.Partitions {
			if p == rmtp(tp1) {
				t.Fatalf("marker sent to the deleted partition: %+v", m)
			}
		}
	}
}

// The Complete record is retried while the log is unavailable (COORDINATOR_NOT_AVAILABLE keeps
// the pending state).
func TestCompleteAppendRetried(t *testing.T) {
	e := newEnv(t)
	r := e.init("a", 60000)
	e.add("a", r.ProducerID, r.ProducerEpoch, tp0)
	var got result[int16]
	e.c.EndTxn("a", r.ProducerID, r.ProducerEpoch, true, func(code int16) {
		got.set(code)
		e.reps.setFail(kerr.NotEnoughReplicas.Code) // the Complete append will fail
	})
	if !got.got || got.v != errNone {
		t.Fatalf("commit: %+v", got)
	}
	e.mustState("a", PrepareCommit, true)
	e.clock.Advance(e.c.cfg.MarkerRetryBackoff)
	e.mustState("a", PrepareCommit, true)
	e.reps.setFail(0)
	e.clock.Advance(e.c.cfg.MarkerRetryBackoff)
	e.mustState("a", CompleteCommit, false)
}

// An unload stops the marker work: nothing is sent again and nothing is completed.
func TestMarkersStopOnResignation(t *testing.T) {
	e := newEnv(t)
	r := e.init("a", 60000)
	e.add("a", r.ProducerID, r.ProducerEpoch, tp0)
	e.markers.fail(rmtp(tp0), kerr.NotLeaderForPartition.Code)
	e.end("a", r.ProducerID, r.ProducerEpoch, true)
	e.c.OnResignation(0, 2)
	e.clock.Advance(time.Second)
	if n := len(e.markers.sends()); n != 1 {
		t.Fatalf("%d sends after the resignation", n)
	}
	if rec := e.reps.lastValue(t, 0, "a"); rec.state != PrepareCommit {
		t.Fatalf("last record %s", rec.state)
	}
}

var _ = rm.TopicPartition{}
