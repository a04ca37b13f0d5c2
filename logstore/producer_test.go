package logstore

import (
	"encoding/binary"
	"testing"
)

// idemBatch builds an idempotent batch of n records (producer pid, epoch 0, base sequence
// seq) stamped with base offset and leader epoch as a follower would receive it.
func idemBatch(pid int64, seq int32, n int, base int64, leaderEpoch int32) []byte {
	b := testBatch{records: n, base: base, epoch: leaderEpoch, baseTs: 1000}.build()
	binary.BigEndian.PutUint64(b[offProducerID:], uint64(pid))
	binary.BigEndian.PutUint16(b[offProducerEpoch:], 0)
	binary.BigEndian.PutUint32(b[offBaseSequence:], uint32(seq))
	fixCRC(b)
	return b
}

func mustFollow(t *testing.T, l *Log, b []byte) {
	t.Helper()
	if _, err := l.AppendAsFollower(b); err != nil {
		t.Fatalf("follower append: %v", err)
	}
}

func reopen(t *testing.T, l *Log, cfg Config) *Log {
	t.Helper()
	dir := l.Dir()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	lg, _ := testLogger()
	l2, err := openLog(loadParams{tp: l.TopicPartition(), dir: dir, cfg: cfg, logStart: -1, hw: -1, clean: true, log: lg, now: newFakeClock().Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l2.Close() })
	return l2
}

// A follower that becomes leader recognises a retried batch it replicated (docs/kafka-facts.md §10).
func TestFollowerAppendThenLeaderDedup(t *testing.T) {
	l := newTestLog(t, testConfig(), nil)
	mustFollow(t, l, idemBatch(7, 0, 3, 0, 4))
	mustFollow(t, l, testBatch{records: 2, base: 3, epoch: 4}.build()) // another, non-idempotent producer
	mustFollow(t, l, idemBatch(7, 3, 2, 5, 4))
	// leadership moves here (epoch 5); the producer retries both batches
	for _, c := range []struct {
		seq         int32
		n           int
		first, last int64
	}{{3, 2, 5, 6}, {0, 3, 0, 2}} {
		info := mustAppend(t, l, idemBatch(7, c.seq, c.n, 0, 0), 5)
		if info.FirstOffset != c.first || info.LastOffset != c.last || info.NumRecords != c.n {
			t.Fatalf("retry of seq %d: %+v, want offsets %d..%d", c.seq, info, c.first, c.last)
		}
	}
	if l.LogEndOffset() != 7 {
		t.Fatalf("LEO %d after retries, want 7", l.LogEndOffset())
	}
	if info := mustAppend(t, l, idemBatch(7, 5, 1, 0, 0), 5); info.FirstOffset != 7 {
		t.Fatalf("next batch at %d, want 7", info.FirstOffset)
	}
}

// The producer state is rebuilt from the log tail on load, also across segments.
func TestProducerStateRebuiltOnRestart(t *testing.T) {
	cfg := testConfig()
	cfg.SegmentBytes = 300 // a few batches per segment
	l := newTestLog(t, cfg, nil)
	var seq int32
	for i := 0; i < 12; i++ {
		mustAppend(t, l, idemBatch(9, seq, 2, 0, 0), 1)
		seq += 2
		mustAppend(t, l, testBatch{records: 1}.build(), 1)
	}
	if len(l.segs) < 3 {
		t.Fatalf("want several segments, got %d", len(l.segs))
	}
	leo := l.LogEndOffset()
	l = reopen(t, l, cfg)
	// the last five batches of producer 9 are cached again; each sits at 3*i
	for i := 7; i < 12; i++ {
		info := mustAppend(t, l, idemBatch(9, int32(2*i), 2, 0, 0), 1)
		if info.FirstOffset != int64(3*i) || info.LastOffset != int64(3*i+1) {
			t.Fatalf("retry of batch %d after restart: %+v, want base %d", i, info, 3*i)
		}
	}
	if l.LogEndOffset() != leo {
		t.Fatalf("LEO %d after retries, want %d", l.LogEndOffset(), leo)
	}
	// only 5 batches are cached: an older one is appended again (lenient)
	if info := mustAppend(t, l, idemBatch(9, 12, 2, 0, 0), 1); info.FirstOffset != leo {
		t.Fatalf("old retry at %d, want appended at %d", info.FirstOffset, leo)
	}
}

// TruncateTo forgets only the batches above the truncation point.
func TestTruncateKeepsEarlierProducerState(t *testing.T) {
	l := newTestLog(t, testConfig(), nil)
	mustFollow(t, l, idemBatch(7, 0, 3, 0, 1))  // 0..2
	mustFollow(t, l, idemBatch(8, 0, 1, 3, 1))  // 3
	mustFollow(t, l, idemBatch(7, 3, 2, 4, 1))  // 4..5
	mustFollow(t, l, idemBatch(7, 5, 1, 6, 1))  // 6
	mustFollow(t, l, idemBatch(11, 0, 1, 7, 1)) // 7
	if err := l.TruncateTo(6); err != nil {
		t.Fatal(err)
	}
	if l.LogEndOffset() != 6 {
		t.Fatalf("LEO %d, want 6", l.LogEndOffset())
	}
	for _, c := range []struct {
		pid   int64
		seq   int32
		n     int
		first int64
	}{{7, 3, 2, 4}, {7, 0, 3, 0}, {8, 0, 1, 3}, {7, 5, 1, 6}, {11, 0, 1, 7}} {
		info := mustAppend(t, l, idemBatch(c.pid, c.seq, c.n, 0, 0), 2)
		if info.FirstOffset != c.first {
			t.Fatalf("pid %d seq %d at %d, want %d", c.pid, c.seq, info.FirstOffset, c.first)
		}
	}
	if l.LogEndOffset() != 8 {
		t.Fatalf("LEO %d, want 8", l.LogEndOffset())
	}
}
