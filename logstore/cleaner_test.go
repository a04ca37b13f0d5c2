package logstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// Cleaning keeps exactly the latest record of each key below the end of the offset map, at its
// original offset with its original leader epoch; the active segment is byte-for-byte untouched
// and the leader epoch cache is unchanged.
func TestCleanerKeepsLatestValuePerKey(t *testing.T) {
	clock := newFakeClock()
	l := newCompactLog(t, compactConfig(), clock)
	ts := clock.Now().UnixMilli()
	fillKeys(t, l, 150, 20, ts, 1)
	fillKeys(t, l, 150, 20, ts, 3) // epoch 3 starts at 150
	l.SetHighWatermark(l.LogEndOffset())
	before, _ := readAll(t, l)
	epochs := l.LeaderEpochCache().EpochEntries()
	active := activeSegmentBytes(t, l)
	leo := l.LogEndOffset()

	stats, err := cleanOnce(t, l, clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	end := l.status().cleanerCheckpoint
	l.mu.RLock()
	activeBase := l.segs[len(l.segs)-1].base
	l.mu.RUnlock()
	if end != activeBase {
		t.Fatalf("cleaner checkpoint %d, want the active segment's base %d", end, activeBase)
	}
	after, _ := readAll(t, l)
	expectCompacted(t, before, after, end, true)
	if stats.recordsKept >= stats.recordsRead {
		t.Fatalf("nothing removed: %+v", stats)
	}
	if !bytes.Equal(active, activeSegmentBytes(t, l)) {
		t.Fatal("the active segment changed")
	}
	if got := l.LeaderEpochCache().EpochEntries(); !slices.Equal(got, epochs) {
		t.Fatalf("epoch cache %v, want %v", got, epochs)
	}
	if l.LogEndOffset() != leo {
		t.Fatalf("LEO %d, want %d", l.LogEndOffset(), leo)
	}
	// a read from an offset removed by compaction returns the next batch (offset gaps)
	for _, r := range after {
		if r.offset >= end {
			break
		}
		b, err := l.Read(r.offset, 1, l.LogEndOffset(), true)
		if err != nil || len(b) == 0 {
			t.Fatalf("read at kept offset %d: %v", r.offset, err)
		}
		if h := mustHeaders(t, b)[0]; h.BaseOffset > r.offset || h.LastOffset() < r.offset {
			t.Fatalf("read at %d returned batch %d..%d", r.offset, h.BaseOffset, h.LastOffset())
		}
	}

	// everything survives a clean close and reopen; a second cleaning changes nothing
	cfg := l.Config()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l2 := reopenLog(t, l, cfg, clock)
	l2.SetHighWatermark(l2.LogEndOffset())
	again, _ := readAll(t, l2)
	expectCompacted(t, after, again, 0, true)
}

// Records above the high watermark, and the segment holding it, are never cleaned.
func TestCleanerStopsBelowHighWatermark(t *testing.T) {
	clock := newFakeClock()
	l := newCompactLog(t, compactConfig(), clock)
	fillKeys(t, l, 300, 10, clock.Now().UnixMilli(), 1)
	l.SetHighWatermark(100)
	ltc, ok := cleanableOffsets(l, clock.Now())
	if !ok {
		t.Fatal("not cleanable")
	}
	if ltc.firstUncleanable > 100 {
		t.Fatalf("first uncleanable offset %d above the HW 100", ltc.firstUncleanable)
	}
	before, after := cleanAndRead(t, l, clock.Now())
	for _, r := range before {
		if r.offset >= 100 && !slices.ContainsFunc(after, func(a readRec) bool { return a.offset == r.offset }) {
			t.Fatalf("record %d above the HW was removed", r.offset)
		}
	}
	if end := l.status().cleanerCheckpoint; end > 100 {
		t.Fatalf("cleaner checkpoint %d above the HW", end)
	}
}

// A tombstone survives the cleaning that finds it, and is removed by a later cleaning once its
// segment was last modified more than delete.retention.ms before the last clean segment.
func TestCleanerTombstonesAfterDeleteRetention(t *testing.T) {
	for _, tc := range []struct {
		name      string
		retention int64
		removed   bool
	}{{"retention passed", 3600_000, true}, {"retention not passed", 100 * 3600_000, false}} {
		t.Run(tc.name, func(t *testing.T) {
			clock := newFakeClock()
			cfg := compactConfig()
			cfg.DeleteRetentionMs = tc.retention
			l := newCompactLog(t, cfg, clock)
			ts := clock.Now().UnixMilli()
			fillKeys(t, l, 40, 5, ts, 1)
			for k := 0; k < 5; k++ {
				mustAppend(t, l, keyedBatch(t, plain(ts), tomb(fmt.Sprintf("k%d", k))), 1)
			}
			// keys that stay, so the tombstones do not sit in the last clean segment
			for i := 0; i < 100; i++ {
				mustAppend(t, l, keyedBatch(t, plain(ts), put(fmt.Sprintf("stay%d", i), "x")), 1)
			}
			l.SetHighWatermark(l.LogEndOffset())
			before, after := cleanAndRead(t, l, clock.Now())
			expectCompacted(t, before, after, l.status().cleanerCheckpoint, true)
			tombs := func(rs []readRec) int {
				n := 0
				for _, r := range rs {
					if r.value == nil {
						n++
					}
				}
				return n
			}
			if tombs(after) != 5 {
				t.Fatalf("first cleaning kept %d tombstones, want 5", tombs(after))
			}
			// the tombstones' segments were last modified 2 h before the last clean segment
			now := time.Now()
			l.mu.RLock()
			for _, s := range l.segs[:len(l.segs)-1] {
				mt := now
				if s.base <= before[len(before)-101].offset { // segments up to the last tombstone
					mt = now.Add(-2 * time.Hour)
				}
				os.Chtimes(s.logPath(), mt, mt)
			}
			l.mu.RUnlock()
			// new dirty data for a second cleaning
			for i := 0; i < 60; i++ {
				mustAppend(t, l, keyedBatch(t, plain(ts), put(fmt.Sprintf("new%d", i), "y")), 1)
			}
			l.SetHighWatermark(l.LogEndOffset())
			before2, after2 := cleanAndRead(t, l, clock.Now())
			got := tombs(after2)
			if tc.removed && got != 0 {
				t.Fatalf("%d tombstones left after delete.retention.ms passed", got)
			}
			if !tc.removed && got != 5 {
				t.Fatalf("%d tombstones left before delete.retention.ms passed, want 5", got)
			}
			expectCompacted(t, before2, after2, l.status().cleanerCheckpoint, !tc.removed)
		})
	}
}

// min.compaction.lag.ms keeps young segments dirty; once they are old enough they are cleaned.
// max.compaction.lag.ms makes a log due for cleaning whatever its dirty ratio.
func TestCleanerCompactionLags(t *testing.T) {
	clock := newFakeClock()
	cfg := compactConfig()
	cfg.MinCompactionLagMs = 3600_000
	cfg.MinCleanableRatio = 0.99
	l := newCompactLog(t, cfg, clock)
	fillKeys(t, l, 200, 10, clock.Now().UnixMilli(), 1)
	l.SetHighWatermark(l.LogEndOffset())
	ltc, _ := cleanableOffsets(l, clock.Now())
	if ltc.cleanableBytes != 0 || ltc.firstUncleanable != ltc.firstDirty {
		t.Fatalf("records younger than min.compaction.lag.ms are cleanable: %+v", ltc)
	}
	clock.Advance(2 * time.Hour)
	ltc, _ = cleanableOffsets(l, clock.Now())
	if ltc.cleanableBytes == 0 {
		t.Fatalf("records older than min.compaction.lag.ms are not cleanable: %+v", ltc)
	}
	if ltc.needNow {
		t.Fatal("due by max.compaction.lag.ms with the default (unlimited)")
	}
	cfg.MaxCompactionLagMs = 1800_000
	l.SetConfig(cfg)
	if ltc, _ = cleanableOffsets(l, clock.Now()); !ltc.needNow {
		t.Fatal("not due although the dirty records are older than max.compaction.lag.ms")
	}
	before, after := cleanAndRead(t, l, clock.Now())
	expectCompacted(t, before, after, l.status().cleanerCheckpoint, true)
}

// Compressed batches are decoded, cleaned and written back with their codec.
func TestCleanerCompressedBatches(t *testing.T) {
	for _, codec := range []int{codecGzip, codecSnappy, codecLz4, codecZstd} {
		t.Run(fmt.Sprint("codec", codec), func(t *testing.T) {
			clock := newFakeClock()
			l := newCompactLog(t, compactConfig(), clock)
			ts := clock.Now().UnixMilli()
			for i := 0; i < 60; i++ {
				// each batch: one key that is rewritten later, one that is not
				mustAppend(t, l, keyedBatch(t, batchOpts{codec: codec, pid: -1, ts: ts},
					put("hot", fmt.Sprintf("v%d", i)), put(fmt.Sprintf("cold%d", i), "c"), put("hot2", "w")), 1)
			}
			l.SetHighWatermark(l.LogEndOffset())
			before, after := cleanAndRead(t, l, clock.Now())
			expectCompacted(t, before, after, l.status().cleanerCheckpoint, true)
			for _, r := range after {
				if r.codec != codec {
					t.Fatalf("record %d in a codec %d batch, want %d", r.offset, r.codec, codec)
				}
			}
		})
	}
}

// An idempotent producer's last batch stays as an empty batch (base offset, lastOffsetDelta,
// sequence and epoch kept) when all its records are removed; its earlier emptied batches go.
// A retry of that batch after a restart is still recognised as a duplicate.
func TestCleanerKeepsLastBatchOfProducer(t *testing.T) {
	clock := newFakeClock()
	l := newCompactLog(t, compactConfig(), clock)
	ts := clock.Now().UnixMilli()
	var last []byte
	for i := 0; i < 10; i++ {
		b := keyedBatch(t, batchOpts{pid: 7, seq: int32(2 * i), ts: ts}, put("p", fmt.Sprint(i)), put("q", fmt.Sprint(i)))
		last = append([]byte(nil), b...)
		mustAppend(t, l, b, 1)
	}
	lastBase := l.LogEndOffset() - 2
	// other writers supersede p and q
	for i := 0; i < 80; i++ {
		mustAppend(t, l, keyedBatch(t, plain(ts), put("p", "x"), put("q", "y"), put(fmt.Sprint("o", i), "z")), 1)
	}
	l.SetHighWatermark(l.LogEndOffset())
	if _, err := cleanOnce(t, l, clock.Now()); err != nil {
		t.Fatal(err)
	}
	b, _ := l.Read(0, 1<<30, l.LogEndOffset(), true)
	var pidBatches []BatchHeader
	pos := 0
	for _, h := range mustHeaders(t, b) {
		pid, epoch, seq := producerFields(b[pos:])
		if pid == 7 {
			pidBatches = append(pidBatches, h)
			if h.BaseOffset != lastBase || h.RecordCount != 0 || h.LastOffsetDelta != 1 || seq != 18 || epoch != 0 {
				t.Fatalf("kept producer batch base %d count %d lastDelta %d seq %d epoch %d; want the last batch (base %d) empty with lastDelta 1, seq 18",
					h.BaseOffset, h.RecordCount, h.LastOffsetDelta, seq, epoch, lastBase)
			}
		}
		pos += h.Size()
	}
	if len(pidBatches) != 1 {
		t.Fatalf("%d batches of producer 7 kept, want 1", len(pidBatches))
	}
	cfg := l.Config()
	crashLog(l)
	l2 := reopenLog(t, l, cfg, clock)
	info, err := l2.AppendAsLeader(last, 1)
	if err != nil || info.FirstOffset != lastBase {
		t.Fatalf("retry of the last batch after cleaning and restart: first offset %d (%v), want the original %d", info.FirstOffset, err, lastBase)
	}
}

// A crash at every step of the swap leaves, after reopening, a log with every latest value,
// no duplicate or lost offsets and no .cleaned/.swap files.
func TestCleanerCrashDuringSwap(t *testing.T) {
	steps := []string{"group", "beforeSwap", "swap:.index", "swap:.timeindex", "swap:.log", "deleted", "final:.index", "final:.timeindex", "final:.log"}
	for _, step := range steps {
		t.Run(step, func(t *testing.T) {
			clock := newFakeClock()
			cfg := compactConfig()
			l := newCompactLog(t, cfg, clock)
			fillKeys(t, l, 300, 15, clock.Now().UnixMilli(), 2)
			l.SetHighWatermark(l.LogEndOffset())
			if _, err := cleanOnce(t, l, clock.Now()); err != nil {
				t.Fatal(err)
			}
			// a second round rewrites k0..k7 only: the latest values of k8..k14 stay in the
			// small segments of the first cleaning, which the next cleaning merges into one
			// group; unique keys at the end keep every tracked latest value out of the active
			// segment
			fillKeys(t, l, 200, 8, clock.Now().UnixMilli(), 2)
			for i := 0; i < 60; i++ {
				mustAppend(t, l, keyedBatch(t, plain(1), put(fmt.Sprint("tail", i), "t")), 2)
			}
			l.SetHighWatermark(l.LogEndOffset())
			before, _ := readAll(t, l)
			leo := l.LogEndOffset()
			hit := false
			l.cleaning.testHook = func(s string) bool {
				if s == step && !hit {
					hit = true
					return true
				}
				return false
			}
			var groupSize int
			l.mu.RLock()
			for _, s := range l.segs[1:] {
				if s.base < l.cleaning.checkpoint {
					groupSize++
				}
			}
			l.mu.RUnlock()
			if groupSize < 2 {
				t.Fatalf("setup: %d cleaned segments to merge", groupSize)
			}
			if _, err := cleanOnce(t, l, clock.Now()); !errors.Is(err, errSwapStopped) {
				t.Fatalf("cleaning did not stop at %s: %v", step, err)
			}
			crashLog(l)
			l2 := reopenLog(t, l, cfg, clock)
			if left := segmentFiles(t, l2.dir, cleanedSuffix, swapSuffix); len(left) > 0 {
				t.Fatalf("left after recovery: %v", left)
			}
			if l2.LogEndOffset() != leo {
				t.Fatalf("LEO %d after recovery, want %d", l2.LogEndOffset(), leo)
			}
			after, _ := readAll(t, l2)
			checkOffsetsRise(t, after)
			// nothing lost: every record is either still there or superseded by a later one
			latest := latestByKey(before)
			for k, r := range latest {
				if got := latestByKey(after)[k]; got.offset != r.offset || str(got.value) != str(r.value) {
					t.Fatalf("key %s: latest offset %d value %s after recovery, want %d %s", k, got.offset, str(got.value), r.offset, str(r.value))
				}
			}
			for _, a := range after {
				if !slices.ContainsFunc(before, func(b readRec) bool { return b.offset == a.offset && b.key == a.key && str(b.value) == str(a.value) }) {
					t.Fatalf("record %d (%s) after recovery was never written", a.offset, a.key)
				}
			}
			// the recovered log cleans normally
			l2.SetHighWatermark(l2.LogEndOffset())
			if _, err := cleanOnce(t, l2, clock.Now()); err != nil {
				t.Fatal(err)
			}
			final, _ := readAll(t, l2)
			expectCompacted(t, after, final, l2.status().cleanerCheckpoint, true)
		})
	}
}

// A truncation while a cleaning runs aborts it (nothing swapped in, no files left) and lowers
// the cleaner checkpoint to the truncation offset; the log holds exactly the truncated data.
// A truncation that leaves the cleaned segments in place (it cuts only the active segment)
// aborts the swap too (abortAndPauseCleaning), through the log's cleaning generation.
func TestCleanerAbortedByTruncation(t *testing.T) {
	for _, tc := range []struct {
		step       string
		activeOnly bool // truncate inside the active segment, above the segments being cleaned
	}{{"group", false}, {"beforeSwap", false}, {"beforeSwap", true}} {
		step := tc.step
		name := step
		if tc.activeOnly {
			name += "/activeSegmentOnly"
		}
		t.Run(name, func(t *testing.T) {
			clock := newFakeClock()
			l := newCompactLog(t, compactConfig(), clock)
			fillKeys(t, l, 300, 15, clock.Now().UnixMilli(), 1)
			l.SetHighWatermark(l.LogEndOffset())
			if _, err := cleanOnce(t, l, clock.Now()); err != nil {
				t.Fatal(err)
			}
			cp := l.status().cleanerCheckpoint
			fillKeys(t, l, 300, 15, clock.Now().UnixMilli(), 1)
			l.SetHighWatermark(l.LogEndOffset())
			before, _ := readAll(t, l)
			cut := cp - 10
			if tc.activeOnly {
				cut = l.LogEndOffset() - 1
				if cut <= l.segs.active().base {
					t.Fatalf("the active segment (base %d) holds no record below %d", l.segs.active().base, cut)
				}
			}
			l.cleaning.testHook = func(s string) bool {
				if s == step {
					l.cleaning.testHook = nil
					if err := l.TruncateTo(cut); err != nil {
						t.Error(err)
					}
				}
				return false
			}
			if _, err := cleanOnce(t, l, clock.Now()); !errors.Is(err, errCleaningAborted) {
				t.Fatalf("cleaning not aborted by the truncation: %v", err)
			}
			if got := l.status().cleanerCheckpoint; got > cut {
				t.Fatalf("cleaner checkpoint %d above the truncation offset %d", got, cut)
			}
			if left := segmentFiles(t, l.dir, cleanedSuffix, swapSuffix); len(left) > 0 {
				t.Fatalf("left after the abort: %v", left)
			}
			after, _ := readAll(t, l)
			var want []readRec
			for _, r := range before {
				if r.offset < l.LogEndOffset() {
					want = append(want, r)
				}
			}
			expectCompacted(t, want, after, 0, true)
			if l.LogEndOffset() > cut {
				t.Fatalf("LEO %d after truncating to %d", l.LogEndOffset(), cut)
			}
		})
	}
}

// Retention removing a segment of the group under a compact,delete cleaning aborts the swap.
func TestCleanerAbortedByRetention(t *testing.T) {
	clock := newFakeClock()
	cfg := compactConfig()
	cfg.CleanupPolicy = PolicyCompactDelete
	cfg.RetentionMs = 3600_000
	l := newCompactLog(t, cfg, clock)
	fillKeys(t, l, 300, 15, clock.Now().UnixMilli(), 1)
	l.SetHighWatermark(l.LogEndOffset())
	l.cleaning.testHook = func(s string) bool {
		if s == "beforeSwap" {
			l.cleaning.testHook = nil
			if n, err := l.DeleteOldSegments(clock.Now().Add(2 * time.Hour)); err != nil || n == 0 {
				t.Errorf("retention deleted %d segments: %v", n, err)
			}
		}
		return false
	}
	if _, err := cleanOnce(t, l, clock.Now()); !errors.Is(err, errCleaningAborted) {
		t.Fatalf("cleaning not aborted by retention: %v", err)
	}
	if left := segmentFiles(t, l.dir, cleanedSuffix, swapSuffix); len(left) > 0 {
		t.Fatalf("left after the abort: %v", left)
	}
	recs, _ := readAll(t, l)
	checkOffsetsRise(t, recs)
}

// A compact-only log is not subject to time or size retention; compact,delete and delete are.
func TestRetentionFollowsCleanupPolicy(t *testing.T) {
	for _, tc := range []struct {
		p       CleanupPolicy
		deletes bool
	}{{PolicyCompact, false}, {PolicyCompactDelete, true}, {PolicyDelete, true}} {
		clock := newFakeClock()
		cfg := compactConfig()
		cfg.CleanupPolicy = tc.p
		cfg.RetentionMs = 1000
		l := newCompactLog(t, cfg, clock)
		fillKeys(t, l, 100, 10, clock.Now().UnixMilli(), 1)
		l.SetHighWatermark(l.LogEndOffset())
		n, err := l.DeleteOldSegments(clock.Now().Add(time.Hour))
		if err != nil || (n > 0) != tc.deletes {
			t.Fatalf("policy %s: retention deleted %d segments (%v)", tc.p, n, err)
		}
	}
}

// The offset map filling up ends a cleaning early: the checkpoint stops at the last offset
// mapped, and the next cleaning continues from there.
func TestCleanerOffsetMapFull(t *testing.T) {
	clock := newFakeClock()
	l := newCompactLog(t, compactConfig(), clock)
	ts := clock.Now().UnixMilli()
	for i := 0; i < 400; i++ {
		mustAppend(t, l, keyedBatch(t, plain(ts), put(fmt.Sprintf("k%d", i%200), fmt.Sprint(i))), 1)
	}
	l.SetHighWatermark(l.LogEndOffset())
	before, _ := readAll(t, l)
	small := newOffsetMap(100 * offsetMapEntryBytes) // 90 keys
	if _, err := cleanOnceWith(t, l, clock.Now(), small); err != nil {
		t.Fatal(err)
	}
	cp := l.status().cleanerCheckpoint
	if cp <= 0 || cp > 100 {
		t.Fatalf("cleaner checkpoint %d after a full map of 90 keys", cp)
	}
	after, _ := readAll(t, l)
	expectCompacted(t, before, after, cp, true) // keys of records below cp all lie in the map
	for cp < 300 {
		prev := cp
		if _, err := cleanOnceWith(t, l, clock.Now(), small); err != nil {
			t.Fatal(err)
		}
		if cp = l.status().cleanerCheckpoint; cp <= prev {
			t.Fatalf("no progress: checkpoint %d after %d", cp, prev)
		}
	}
	final, _ := readAll(t, l)
	checkOffsetsRise(t, final)
	if got, want := latestByKey(final), latestByKey(before); len(got) != len(want) {
		t.Fatalf("%d keys after cleaning, want %d", len(got), len(want))
	}
}

// Produce to a compacted topic: a record without a key is INVALID_RECORD with Kafka's message
// (nothing appended); the same batch to a delete topic is accepted.
func TestProduceKeylessToCompactedTopic(t *testing.T) {
	clock := newFakeClock()
	for _, codec := range []int{codecNone, codecLz4} {
		keyless := keyedBatch(t, batchOpts{codec: codec, pid: -1, ts: 1}, put("a", "1"), kv{noKey: true, value: val("x")})
		lc := newCompactLog(t, compactConfig(), clock)
		_, err := lc.AppendAsLeader(append([]byte(nil), keyless...), 1)
		if !errors.Is(err, ErrInvalidRecord) || !bytes.Contains([]byte(err.Error()), []byte(ErrMsgNoKeyCompacted)) {
			t.Fatalf("codec %d: keyless record to a compacted log: %v", codec, err)
		}
		if lc.LogEndOffset() != 0 {
			t.Fatalf("codec %d: appended despite the error", codec)
		}
		if _, err := lc.AppendAsLeader(keyedBatch(t, batchOpts{codec: codec, pid: -1, ts: 1}, put("a", "1"), tomb("b")), 1); err != nil {
			t.Fatalf("codec %d: keyed records to a compacted log: %v", codec, err)
		}
		cfg := compactConfig()
		cfg.CleanupPolicy = PolicyDelete
		ld := newCompactLog(t, cfg, clock)
		if _, err := ld.AppendAsLeader(append([]byte(nil), keyless...), 1); err != nil {
			t.Fatalf("codec %d: keyless record to a delete log: %v", codec, err)
		}
	}
}

// The manager's cleaner thread cleans a compacted log on its own, writes
// cleaner-offset-checkpoint, and a reopened manager honours it; logs loaded at Open wait for
// their topic config before they are cleaned.
func TestManagerCleanerCheckpoint(t *testing.T) {
	dir := t.TempDir()
	cfg := compactConfig()
	m, err := Open([]string{dir}, 1, testConfig(), nil)
	if err != nil {
		t.Fatal(err)
	}
	tp := TopicPartition{Topic: "c", Partition: 0}
	l, err := m.GetOrCreate(tp, cfg)
	if err != nil {
		t.Fatal(err)
	}
	fillKeys(t, l, 300, 10, time.Now().UnixMilli(), 1)
	if err := m.CheckpointHighWatermarks(map[TopicPartition]int64{tp: l.LogEndOffset()}); err != nil {
		t.Fatal(err)
	}
	m.StartCleaner(CleanerConfig{Enable: true, Threads: 1, Backoff: 10 * time.Millisecond, DedupeBufferSize: 1 << 20})
	deadline := time.Now().Add(10 * time.Second)
	var cps map[TopicPartition]int64
	for {
		cps, _ = readOffsetCheckpoint(osFS{}, filepath.Join(dir, cleanerCheckpointFile))
		if cps[tp] > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("cleaner-offset-checkpoint never written")
		}
		time.Sleep(5 * time.Millisecond) // polling a file the cleaner writes; not synchronisation
	}
	if cps[tp] != l.status().cleanerCheckpoint {
		t.Fatalf("checkpoint file %d, log %d", cps[tp], l.status().cleanerCheckpoint)
	}
	want := l.status().cleanerCheckpoint
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	m2, err := Open([]string{dir}, 1, testConfig(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m2.Close()
	l2 := m2.Get(tp)
	if l2.status().cleanerCheckpoint != want {
		t.Fatalf("reopened log's cleaner checkpoint %d, want %d", l2.status().cleanerCheckpoint, want)
	}
	if _, ok := cleanableOffsets(l2, time.Now()); ok {
		t.Fatal("a log loaded at Open is cleanable before its topic config arrived")
	}
	l2, _ = m2.GetOrCreate(tp, cfg)
	ltc, ok := cleanableOffsets(l2, time.Now())
	if !ok || ltc.firstDirty != want {
		t.Fatalf("first dirty offset %d (ok %v), want the checkpoint %d", ltc.firstDirty, ok, want)
	}
}

// Close stops the cleaner before the logs close; Delete of a log being cleaned is safe.
func TestManagerCleanerCloseAndDelete(t *testing.T) {
	dir := t.TempDir()
	m, err := Open([]string{dir}, 1, testConfig(), nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg := compactConfig()
	var logs []*Log
	for p := int32(0); p < 4; p++ {
		l, err := m.GetOrCreate(TopicPartition{Topic: "c", Partition: p}, cfg)
		if err != nil {
			t.Fatal(err)
		}
		fillKeys(t, l, 400, 20, time.Now().UnixMilli(), 1)
		logs = append(logs, l)
	}
	m.StartCleaner(CleanerConfig{Enable: true, Threads: 2, Backoff: time.Millisecond, DedupeBufferSize: 1 << 20})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { // keep appending while the cleaner runs
		for i := 0; ctx.Err() == nil; i++ {
			if _, err := logs[1].AppendAsLeader(keyedBatch(t, plain(1), put(fmt.Sprint("k", i%20), "v")), 1); err != nil {
				return
			}
		}
	}()
	if err := m.Delete(TopicPartition{Topic: "c", Partition: 0}); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	cancel()
}
