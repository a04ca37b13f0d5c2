package logstore

import (
	"bytes"
	"math"
	"testing"
)

// A follower of a cleaned compacted log receives batches with gaps between them: the leader's
// cleaner removed whole batches, so a fetch at X is answered from the next kept batch at Y > X.
// Kafka's follower append refuses only a first offset below the LEO
// (UnexpectedAppendOffsetException); above it the LEO moves to the batch's last offset + 1
// (docs/kafka-facts.md §4, "Compaction gaps").

// readFrom reads from offset to the LEO.
func readFrom(t *testing.T, l *Log, offset int64) []byte {
	t.Helper()
	got, err := l.Read(offset, 1<<20, l.LogEndOffset(), true)
	if err != nil {
		t.Fatalf("read at %d: %v", offset, err)
	}
	return got
}

func TestAppendAsFollowerAcrossCompactionGap(t *testing.T) {
	cfg := testConfig()
	cfg.IndexIntervalBytes = 1 // an offset index entry for every batch after the first
	clock := newFakeClock()
	l := newTestLog(t, cfg, clock)
	b0 := testBatch{records: 2, base: 0, epoch: 1, valueSize: 30}.build()  // 0..1
	b1 := testBatch{records: 2, base: 5, epoch: 1, valueSize: 30}.build()  // 5..6, after a gap 2..4
	b2 := testBatch{records: 3, base: 10, epoch: 2, valueSize: 30}.build() // 10..12, after a gap 7..9
	b3 := testBatch{records: 1, base: 16, epoch: 2, valueSize: 30}.build() // 16, after a gap 13..15
	if _, err := l.AppendAsFollower(b0); err != nil {
		t.Fatal(err)
	}
	info, err := l.AppendAsFollower(b1)
	if err != nil {
		t.Fatalf("follower append at 5 with LEO 2: %v", err)
	}
	if info.FirstOffset != 5 || info.LastOffset != 6 || l.LogEndOffset() != 7 {
		t.Fatalf("append %+v, LEO %d; want 5..6, LEO 7", info, l.LogEndOffset())
	}
	// two batches in one append, the second after a gap
	if _, err := l.AppendAsFollower(append(append([]byte(nil), b2...), b3...)); err != nil {
		t.Fatalf("follower append at 10 with LEO 7: %v", err)
	}
	if l.LogEndOffset() != 17 {
		t.Fatalf("LEO %d, want 17", l.LogEndOffset())
	}
	if got := l.LeaderEpochCache().EpochEntries(); len(got) != 2 || got[1] != (EpochEntry{Epoch: 2, StartOffset: 10}) {
		t.Fatalf("epochs %+v, want epoch 2 from 10", got)
	}
	check := func(l *Log, what string) {
		t.Helper()
		for off, want := range map[int64][]byte{
			0: bytes.Join([][]byte{b0, b1, b2, b3}, nil), 1: bytes.Join([][]byte{b0, b1, b2, b3}, nil),
			2: bytes.Join([][]byte{b1, b2, b3}, nil), 4: bytes.Join([][]byte{b1, b2, b3}, nil),
			6: bytes.Join([][]byte{b1, b2, b3}, nil), 7: bytes.Join([][]byte{b2, b3}, nil),
			9: bytes.Join([][]byte{b2, b3}, nil), 12: bytes.Join([][]byte{b2, b3}, nil), 13: b3, 15: b3, 16: b3,
		} {
			if got := readFrom(t, l, off); !bytes.Equal(got, want) {
				t.Fatalf("%s: read at %d: %d bytes, want %d (the next kept batch on)", what, off, len(got), len(want))
			}
		}
	}
	check(l, "after the appends")

	// first offsets below the LEO are still refused, and change nothing
	for _, base := range []int64{0, 14, 16} {
		_, err := l.AppendAsFollower(testBatch{records: 1, base: base, epoch: 2}.build())
		if !isErr(err, ErrUnexpectedOffset) {
			t.Fatalf("follower append at %d with LEO 17: %v, want ErrUnexpectedOffset", base, err)
		}
	}
	if l.LogEndOffset() != 17 {
		t.Fatalf("LEO %d after refused appends, want 17", l.LogEndOffset())
	}

	// the index built by the appends matches the one recovery rebuilds from the segment
	l.mu.RLock()
	appended := append([]offsetEntry(nil), l.segs.active().ix.idx...)
	l.mu.RUnlock()
	if len(appended) == 0 {
		t.Fatal("no offset index entries: the test does not exercise the index")
	}
	crashLog(l)
	r := reopenLog(t, l, cfg, clock)
	if r.LogEndOffset() != 17 {
		t.Fatalf("recovered LEO %d, want 17", r.LogEndOffset())
	}
	r.mu.RLock()
	recovered := append([]offsetEntry(nil), r.segs.active().ix.idx...)
	r.mu.RUnlock()
	if len(recovered) != len(appended) {
		t.Fatalf("recovered index %v, appended %v", recovered, appended)
	}
	for i := range recovered {
		if recovered[i] != appended[i] {
			t.Fatalf("recovered index %v, appended %v", recovered, appended)
		}
	}
	check(r, "after recovery")
	if _, err := r.AppendAsFollower(testBatch{records: 1, base: 20, epoch: 2}.build()); err != nil || r.LogEndOffset() != 21 {
		t.Fatalf("append after recovery: %v, LEO %d", err, r.LogEndOffset())
	}
}

// A gap wider than a segment's 32-bit relative offsets: the follower rolls a new segment at the
// batch's base offset, as Kafka rolls when offset - baseOffset does not fit an Int.
func TestAppendAsFollowerGapBeyondRelativeOffsetRange(t *testing.T) {
	const far = int64(math.MaxInt32) + 100
	cfg := testConfig()
	clock := newFakeClock()
	l := newTestLog(t, cfg, clock)
	b0 := testBatch{records: 1, base: 0, epoch: 1}.build()
	bFar := testBatch{records: 2, base: far, epoch: 1}.build()
	if _, err := l.AppendAsFollower(b0); err != nil {
		t.Fatal(err)
	}
	if _, err := l.AppendAsFollower(bFar); err != nil {
		t.Fatalf("follower append at %d with LEO 1: %v", far, err)
	}
	if l.LogEndOffset() != far+2 || l.status().segments != 2 {
		t.Fatalf("LEO %d, %d segments; want %d, 2", l.LogEndOffset(), l.status().segments, far+2)
	}
	l.mu.RLock()
	base := l.segs.active().base
	l.mu.RUnlock()
	if base != far {
		t.Fatalf("active segment base %d, want %d", base, far)
	}
	if got := readFrom(t, l, 1); !bytes.Equal(got, bFar) {
		t.Fatalf("read at 1: %d bytes, want the batch at %d", len(got), far)
	}
	crashLog(l)
	r := reopenLog(t, l, cfg, clock)
	if r.LogEndOffset() != far+2 {
		t.Fatalf("recovered LEO %d, want %d", r.LogEndOffset(), far+2)
	}
	if got := readFrom(t, r, 0); !bytes.Equal(got, append(append([]byte(nil), b0...), bFar...)) {
		t.Fatalf("read at 0 after recovery: %d bytes", len(got))
	}
}

// The same gap inside one fetched record set (a leader's read may span segments), and as the
// very first batch of an empty follower log: every batch lands in a segment whose relative
// offsets fit.
func TestAppendAsFollowerWideGapWithinOneAppend(t *testing.T) {
	const far = int64(math.MaxInt32) + 100
	cfg := testConfig()
	clock := newFakeClock()

	l := newTestLog(t, cfg, clock)
	b0 := testBatch{records: 1, base: 0, epoch: 1}.build()
	bFar := testBatch{records: 2, base: far, epoch: 1}.build()
	bFar2 := testBatch{records: 1, base: 2 * far, epoch: 1}.build()
	data := bytes.Join([][]byte{b0, bFar, bFar2}, nil)
	info, err := l.AppendAsFollower(data)
	if err != nil {
		t.Fatalf("follower append of batches at 0, %d, %d: %v", far, 2*far, err)
	}
	if info.FirstOffset != 0 || info.LastOffset != 2*far || l.LogEndOffset() != 2*far+1 {
		t.Fatalf("append %+v, LEO %d", info, l.LogEndOffset())
	}
	if got := readFrom(t, l, 0); !bytes.Equal(got, data) {
		t.Fatalf("read at 0: %d bytes, want %d", len(got), len(data))
	}

	e := newTestLog(t, cfg, clock)
	if _, err := e.AppendAsFollower(bFar); err != nil {
		t.Fatalf("first follower append at %d into an empty log: %v", far, err)
	}
	if e.LogEndOffset() != far+2 {
		t.Fatalf("LEO %d, want %d", e.LogEndOffset(), far+2)
	}
	if got := readFrom(t, e, 0); !bytes.Equal(got, bFar) {
		t.Fatalf("read at 0: %d bytes, want the batch at %d", len(got), far)
	}
	crashLog(e)
	r := reopenLog(t, e, cfg, clock)
	if r.LogEndOffset() != far+2 || r.LogStartOffset() != 0 {
		t.Fatalf("recovered log start %d, LEO %d; want 0, %d", r.LogStartOffset(), r.LogEndOffset(), far+2)
	}
	if got := readFrom(t, r, 0); !bytes.Equal(got, bFar) {
		t.Fatalf("read at 0 after recovery: %d bytes", len(got))
	}
}
