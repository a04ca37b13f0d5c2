package logstore

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// corruptFixture writes 20 batches of 2 records into segments of 2 batches (bases 0, 4, ...,
// 36), closes the manager cleanly (every segment is below the recovery point and none is
// re-validated at the next start) and flips one byte inside the records of the second batch
// of the segment at 8 (offsets 10-11).
func corruptFixture(t *testing.T) ([]string, Config, TopicPartition) {
	t.Helper()
	dirs := []string{t.TempDir()}
	cfg := testConfig()
	cfg.SegmentBytes = 1000
	m, _ := openTestManager(t, dirs, cfg, nil)
	tp := TopicPartition{Topic: "t", Partition: 0}
	l, err := m.GetOrCreate(tp, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 20; i++ {
		mustAppend(t, l, testBatch{records: 2, valueSize: 200}.build(), 1)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	flipByte(t, filepath.Join(dirs[0], "t-0", "00000000000000000008.log"), 0.75)
	return dirs, cfg, tp
}

// flipByte flips a bit of the last value byte (inside the records, under the CRC) of the batch that
// holds the byte at fraction at of the segment file.
func flipByte(t *testing.T, path string, at float64) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	target := int(float64(len(data)) * at)
	for pos := 0; pos+batchHeaderSize <= len(data); {
		end := pos + parseHeader(data[pos:]).Size()
		if end > target {
			data[end-2] ^= 0x01 // the last value byte of the last record
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}
			return
		}
		pos = end
	}
	t.Fatalf("%s: no batch at byte %d", path, target)
}

// badCRC reports whether the whole batches of b include one whose CRC does not match.
func badCRC(b []byte) bool {
	for len(b) >= batchHeaderSize {
		h := parseHeader(b)
		if h.Size() > len(b) || h.Size() < batchHeaderSize {
			return true
		}
		if _, err := checkBatchAt(b[:h.Size()]); err != nil {
			return true
		}
		b = b[h.Size():]
	}
	return len(b) != 0
}

// TestCorruptBatchBelowRecoveryPointNotServed: a batch flipped on disk in a segment below the
// recovery point is never served, by a copying read or a zero-copy one; the read answers
// ErrLogDirOffline (KAFKA_STORAGE_ERROR), the dir is reported failed, the recovery-point
// checkpoint is lowered to the segment's base, and the next start truncates at the bad batch.
func TestCorruptBatchBelowRecoveryPointNotServed(t *testing.T) {
	dirs, cfg, tp := corruptFixture(t)
	m, hook := openTestManager(t, dirs, cfg, nil)
	l := m.Get(tp)
	// before the bad segment: served
	if b, err := l.Read(0, 1<<20, 8, false); err != nil || badCRC(b) || len(b) == 0 {
		t.Fatalf("read below the bad segment: %d bytes, err %v", len(b), err)
	}
	b, err := l.Read(8, 1<<20, 40, false)
	if err == nil || !isErr(err, ErrLogDirOffline) || isErr(err, ErrCorruptMessage) {
		t.Fatalf("read of the corrupt segment: %d bytes, bad CRC %v, err %v", len(b), badCRC(b), err)
	}
	fr, err := l.ReadRegions(8, 1<<20, 40, false)
	if err == nil || !isErr(err, ErrLogDirOffline) || fr.Len != 0 {
		t.Fatalf("zero-copy read of the corrupt segment: %d bytes, err %v", fr.Len, err)
	}
	select {
	case d := <-m.LogDirFailures():
		if d != dirs[0] {
			t.Fatalf("failed dir %s", d)
		}
	default:
		t.Fatal("the dir was not reported failed")
	}
	if rp := l.status().recoveryPoint; rp != 8 {
		t.Fatalf("recovery point %d, want 8", rp)
	}
	cp, err := readOffsetCheckpoint(osFS{}, filepath.Join(dirs[0], recoveryPointCheckpointFile))
	if err != nil || cp[tp] != 8 {
		t.Fatalf("recovery-point checkpoint %v (%v), want %v: 8", cp, err, tp)
	}
	if hook.find("corrupt batch below the recovery point: not served; the recovery point is lowered to the segment and the log dir taken offline, so the next start recovers the segment") == nil {
		t.Fatalf("no error logged: %v", hook.messages())
	}
	m.Close()
	if _, err := os.Stat(filepath.Join(dirs[0], cleanShutdownFile)); !os.IsNotExist(err) {
		t.Fatalf("clean shutdown marker written in the failed dir: %v", err)
	}

	m2, _ := openTestManager(t, dirs, cfg, nil)
	defer m2.Close()
	l2 := m2.Get(tp)
	if leo := l2.LogEndOffset(); leo != 10 {
		t.Fatalf("LEO after recovery %d, want 10 (truncated at the bad batch)", leo)
	}
	if n := l2.corrupt.unverified(); n != 2 {
		t.Fatalf("%d unverified segments after recovery, want 2 (0 and 4)", n)
	}
	if b, err := l2.Read(0, 1<<20, 10, false); err != nil || badCRC(b) || len(mustHeaders(t, b)) != 5 {
		t.Fatalf("read after recovery: %d bytes, err %v", len(b), err)
	}
}

// TestScrubFindsCorruptBatch: with no read, the scrubber finds the bad batch and reacts as a
// read does.
func TestScrubFindsCorruptBatch(t *testing.T) {
	dirs, cfg, tp := corruptFixture(t)
	m, _ := openTestManager(t, dirs, cfg, nil)
	defer m.Close()
	scrubLogs(context.Background(), m.All())
	select {
	case <-m.LogDirFailures():
	default:
		t.Fatal("the scrubber did not fail the dir")
	}
	if rp := m.Get(tp).status().recoveryPoint; rp != 8 {
		t.Fatalf("recovery point %d, want 8", rp)
	}
	if _, err := m.Get(tp).Read(0, 1<<20, 8, false); !isErr(err, ErrLogDirOffline) {
		t.Fatalf("read after the dir failed: %v", err)
	}
}

// TestScrubVerifiesEverySegmentOnce: a clean log is verified by the scrubber (then reads check
// nothing more), and a read's check is remembered: a byte flipped in the file after it was
// verified is not read again (each byte is checked once, at its first use since loading).
func TestScrubVerifiesEverySegmentOnce(t *testing.T) {
	dirs := []string{t.TempDir()}
	cfg := testConfig()
	cfg.SegmentBytes = 1000
	m, _ := openTestManager(t, dirs, cfg, nil)
	tp := TopicPartition{Topic: "t", Partition: 0}
	l, _ := m.GetOrCreate(tp, cfg)
	for i := 0; i < 20; i++ {
		mustAppend(t, l, testBatch{records: 2, valueSize: 200}.build(), 1)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	m2, _ := openTestManager(t, dirs, cfg, nil)
	defer m2.Close()
	l2 := m2.Get(tp)
	if n := l2.corrupt.unverified(); n != 9 { // the active one was scanned from its last index entry: all of it
		t.Fatalf("%d unverified segments after a clean start, want 9", n)
	}
	if _, err := l2.ReadRegions(4, 1<<20, 8, false); err != nil { // segment 4, verified here
		t.Fatal(err)
	}
	flipByte(t, filepath.Join(dirs[0], "t-0", "00000000000000000004.log"), 0.75)
	if _, err := l2.Read(4, 1<<20, 8, false); err != nil {
		t.Fatalf("a verified range was checked again: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	scrubLogs(ctx, m2.All())
	if n := l2.corrupt.unverified(); n != 0 || l2.Offline() {
		t.Fatalf("%d unverified segments after the scrub (offline %v)", n, l2.Offline())
	}
}

func TestSegmentVerifyRanges(t *testing.T) {
	v := newSegmentVerify(100)
	v.addLocked(10, 20)
	v.addLocked(30, 40)
	if g, ok := v.nextGapLocked(0, 100); !ok || g != (posRange{0, 10}) {
		t.Fatalf("gap %v %v", g, ok)
	}
	if g, ok := v.nextGapLocked(12, 35); !ok || g != (posRange{20, 30}) {
		t.Fatalf("gap %v %v", g, ok)
	}
	if _, ok := v.nextGapLocked(30, 40); ok {
		t.Fatal("gap in a verified range")
	}
	if g, ok := v.nextGapLocked(35, 150); !ok || g != (posRange{40, 100}) {
		t.Fatalf("gap %v %v (clipped to the loaded size)", g, ok)
	}
	v.addLocked(20, 30)
	if len(v.done) != 1 || v.done[0] != (posRange{10, 40}) {
		t.Fatalf("merged %v", v.done)
	}
	v.addLocked(0, 10)
	v.addLocked(40, 100)
	if !v.complete.Load() {
		t.Fatalf("not complete: %v", v.done)
	}
}

// TestCleanerRefusesUnverifiedCorruptBatch: the cleaner reads segments directly; a bad batch in
// a segment loaded without recovery fails the cleaning instead of being rewritten with a
// fresh CRC (which would hide it from every later check).
func TestCleanerRefusesUnverifiedCorruptBatch(t *testing.T) {
	clock := newFakeClock()
	cfg := compactConfig()
	l := newCompactLog(t, cfg, clock)
	fillKeys(t, l, 300, 20, clock.Now().UnixMilli(), 1)
	dir := l.Dir()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	seg := filepath.Join(dir, "00000000000000000000.log")
	flipByte(t, seg, 0.5)
	lg, _ := testLogger()
	l2, err := openLog(loadParams{tp: l.TopicPartition(), dir: dir, cfg: cfg, recoveryPoint: 300,
		logStart: -1, hw: -1, clean: true, log: lg, now: clock.Now, configured: true})
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	l2.SetHighWatermark(l2.LogEndOffset())
	if n := l2.corrupt.unverified(); n == 0 {
		t.Fatalf("fixture: no unverified segment")
	}
	if _, err := cleanOnce(t, l2, clock.Now()); err == nil {
		t.Fatalf("cleaned a segment holding a corrupt batch (%d unverified segments, LEO %d)", l2.corrupt.unverified(), l2.LogEndOffset())
	}
	data, err := os.ReadFile(seg)
	if err != nil {
		t.Fatal(err)
	}
	if !badCRC(data) {
		t.Fatal("the corrupt batch was rewritten with a valid CRC")
	}
}
