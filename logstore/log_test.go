package logstore

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

func TestAppendReadRoundTrip(t *testing.T) {
	l := newTestLog(t, testConfig(), nil)
	var want [][]byte
	for i := 0; i < 3; i++ {
		b := testBatch{records: 5, valueSize: 10, baseTs: 1000}.build()
		info := mustAppend(t, l, b, 7)
		if info.FirstOffset != int64(i*5) || info.LastOffset != int64(i*5+4) || info.NumRecords != 5 || info.Bytes != len(b) {
			t.Fatalf("append %d: %+v", i, info)
		}
		want = append(want, b) // modified in place: carries the assigned offset and epoch
	}
	if l.LogEndOffset() != 15 {
		t.Fatalf("LEO = %d", l.LogEndOffset())
	}
	got, err := l.Read(0, 1<<20, l.LogEndOffset(), false)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, bytes.Join(want, nil)) {
		t.Fatal("read bytes differ from appended bytes")
	}
	hs := mustHeaders(t, got)
	for i, h := range hs {
		if h.BaseOffset != int64(i*5) || h.LeaderEpoch != 7 || h.LastOffset() != int64(i*5+4) {
			t.Fatalf("batch %d header %+v", i, h)
		}
	}
	// startOffset == LEO: empty; above: out of range
	if b, err := l.Read(15, 1<<20, 15, false); err != nil || len(b) != 0 {
		t.Fatalf("read at LEO: %d bytes, %v", len(b), err)
	}
	if _, err := l.Read(16, 1<<20, 20, false); !isErr(err, ErrOffsetOutOfRange) {
		t.Fatalf("read above LEO: %v", err)
	}
	// a read from inside a batch starts with that batch
	got, err = l.Read(7, 1<<20, 15, false)
	if err != nil || mustHeaders(t, got)[0].BaseOffset != 5 {
		t.Fatalf("read from 7: %v", err)
	}
}

func TestS1_AppendAssignsSequentialOffsetsKeepingCRC(t *testing.T) {
	l := newTestLog(t, testConfig(), nil)
	mustAppend(t, l, testBatch{records: 3}.build(), 1)
	multi := append(testBatch{records: 2, base: 999, epoch: 42}.build(), testBatch{records: 4, base: 5}.build()...)
	info := mustAppend(t, l, multi, 2)
	if info.FirstOffset != 3 || info.LastOffset != 8 || info.NumRecords != 6 {
		t.Fatalf("info %+v", info)
	}
	hs := mustHeaders(t, multi) // CRCs still valid after the rewrite
	if hs[0].BaseOffset != 3 || hs[1].BaseOffset != 5 || hs[0].LeaderEpoch != 2 || hs[1].LeaderEpoch != 2 {
		t.Fatalf("headers %+v", hs)
	}
	if got := l.LeaderEpochCache().EpochEntries(); len(got) != 2 || got[0] != (EpochEntry{1, 0}) || got[1] != (EpochEntry{2, 3}) {
		t.Fatalf("epochs %+v", got)
	}
}

func TestAppendRejectsCorruptAndTooLarge(t *testing.T) {
	cfg := testConfig()
	cfg.MaxMessageBytes = 1000
	l := newTestLog(t, cfg, nil)
	good := testBatch{records: 2, valueSize: 10}.build()

	flipped := testBatch{records: 2, valueSize: 10}.build()
	flipped[len(flipped)-1] ^= 0xff
	if _, err := l.AppendAsLeader(append(append([]byte{}, good...), flipped...), 0); !isErr(err, ErrCorruptMessage) {
		t.Fatalf("flipped CRC byte: %v", err)
	}
	crcByte := testBatch{records: 2, valueSize: 10}.build()
	crcByte[offCRC] ^= 1
	if _, err := l.AppendAsLeader(crcByte, 0); !isErr(err, ErrCorruptMessage) {
		t.Fatalf("flipped CRC field: %v", err)
	}
	badMagic := testBatch{records: 1}.build()
	badMagic[offMagic] = 1
	if _, err := l.AppendAsLeader(badMagic, 0); !isErr(err, ErrCorruptMessage) {
		t.Fatalf("magic 1: %v", err)
	}
	big := testBatch{records: 1, valueSize: 1000}.build()
	if _, err := l.AppendAsLeader(big, 0); !isErr(err, ErrMessageTooLarge) {
		t.Fatalf("too large: %v", err)
	}
	if _, err := l.AppendAsLeader(good[:len(good)-3], 0); !isErr(err, ErrCorruptMessage) {
		t.Fatalf("truncated: %v", err)
	}
	huge := append([]byte{}, good...)
	huge[offLength], huge[offLength+1] = 0x7f, 0xff // claims ~2 GiB
	if _, err := l.AppendAsLeader(huge, 0); !isErr(err, ErrCorruptMessage) {
		t.Fatalf("huge length: %v", err)
	}
	// lastOffsetDelta inconsistent with the record count, CRC recomputed
	bad := testBatch{records: 3}.build()
	bad[offLastOffsetDelta+3] = 5
	fixCRC(bad)
	if _, err := l.AppendAsLeader(bad, 0); !isErr(err, ErrInvalidRecord) {
		t.Fatalf("inconsistent count: %v", err)
	}
	if l.LogEndOffset() != 0 {
		t.Fatalf("nothing may be appended, LEO %d", l.LogEndOffset())
	}
	if info, err := l.AppendAsLeader(nil, 0); err != nil || info.FirstOffset != -1 {
		t.Fatalf("empty append %+v %v", info, err)
	}
}

func fixCRC(b []byte) {
	h := parseHeader(b)
	sum := crcOf(b[offAttributes:h.Size()])
	b[offCRC], b[offCRC+1], b[offCRC+2], b[offCRC+3] = byte(sum>>24), byte(sum>>16), byte(sum>>8), byte(sum)
}

func TestAppendAsFollowerKeepsOffsetsAndEpochs(t *testing.T) {
	l := newTestLog(t, testConfig(), nil)
	b1 := testBatch{records: 2, base: 0, epoch: 3}.build()
	b2 := testBatch{records: 2, base: 2, epoch: 5}.build()
	b3 := testBatch{records: 1, base: 4, epoch: 5}.build()
	data := bytes.Join([][]byte{b1, b2, b3}, nil)
	// a trailing partial batch is ignored, as Kafka's follower does
	info, err := l.AppendAsFollower(append(append([]byte{}, data...), b1[:20]...))
	if err != nil || info.FirstOffset != 0 || info.LastOffset != 4 {
		t.Fatalf("%+v %v", info, err)
	}
	if got := l.LeaderEpochCache().EpochEntries(); len(got) != 2 || got[1] != (EpochEntry{5, 2}) {
		t.Fatalf("epochs %+v", got)
	}
	// a first offset below the LEO is refused (above it is a compaction gap: follower_gap_test.go)
	if _, err := l.AppendAsFollower(testBatch{records: 1, base: 4, epoch: 5}.build()); !isErr(err, ErrUnexpectedOffset) {
		t.Fatalf("overlap: %v", err)
	}
	got, _ := l.Read(0, 1<<20, 5, false)
	if !bytes.Equal(got, data) {
		t.Fatal("follower must store leader bytes unchanged")
	}
}

func TestReadThroughIndexInMultiSegmentLog(t *testing.T) {
	cfg := testConfig()
	cfg.SegmentBytes = 4096
	cfg.IndexIntervalBytes = 300
	l := newTestLog(t, cfg, nil)
	var sizes []int
	for i := 0; i < 200; i++ {
		b := testBatch{records: 1 + i%4, valueSize: 20 + i%50, baseTs: int64(i)}.build()
		sizes = append(sizes, len(b))
		mustAppend(t, l, b, 1)
	}
	l.mu.RLock()
	nsegs := len(l.segs)
	nidx := len(l.segs[1].ix.idx)
	l.mu.RUnlock()
	if nsegs < 5 || nidx == 0 {
		t.Fatalf("want a multi-segment log with index entries: %d segments, %d entries", nsegs, nidx)
	}
	leo := l.LogEndOffset()
	for off := int64(0); off < leo; off += 7 {
		got, err := l.Read(off, 1000, leo, true)
		if err != nil {
			t.Fatalf("read %d: %v", off, err)
		}
		hs := mustHeaders(t, got)
		if hs[0].BaseOffset > off || hs[0].LastOffset() < off {
			t.Fatalf("read %d starts with batch %d..%d", off, hs[0].BaseOffset, hs[0].LastOffset())
		}
		if len(got) > 1000 {
			t.Fatalf("read %d returned %d bytes > maxBytes", off, len(got))
		}
		for i := 1; i < len(hs); i++ {
			if hs[i].BaseOffset != hs[i-1].LastOffset()+1 {
				t.Fatalf("read %d: gap between batches", off)
			}
		}
	}
	// whole log in one read crosses segments
	all, err := l.Read(0, 1<<30, leo, false)
	if err != nil {
		t.Fatal(err)
	}
	if hs := mustHeaders(t, all); len(hs) != 200 || hs[199].LastOffset() != leo-1 {
		t.Fatalf("full read: %d batches", len(hs))
	}
	// maxOffset (HW) cuts before a batch starting at or after it
	got, _ := l.Read(0, 1<<30, 10, false)
	hs := mustHeaders(t, got)
	if last := hs[len(hs)-1]; last.BaseOffset >= 10 || last.LastOffset() < 9 && last.LastOffset()+1 != 10 {
		t.Fatalf("maxOffset 10: last batch %d..%d", last.BaseOffset, last.LastOffset())
	}
	// KIP-74: a first batch larger than maxBytes comes whole only with minOneBatch
	if got, _ := l.Read(0, 10, leo, false); len(got) != 0 {
		t.Fatalf("maxBytes 10 without minOneBatch returned %d bytes", len(got))
	}
	if got, _ := l.Read(0, 10, leo, true); len(got) != sizes[0] {
		t.Fatalf("minOneBatch returned %d bytes, want %d", len(got), sizes[0])
	}
}

func TestRollBySizeAndTime(t *testing.T) {
	clock := newFakeClock()
	cfg := testConfig()
	cfg.SegmentBytes = 1000
	cfg.SegmentMs = time.Hour
	l := newTestLog(t, cfg, clock)
	b := func() []byte { return testBatch{records: 1, valueSize: 300}.build() }
	mustAppend(t, l, b(), 0)
	mustAppend(t, l, b(), 0)
	mustAppend(t, l, b(), 0) // 3*~370 > 1000: rolls
	segBases := func() []int64 {
		l.mu.RLock()
		defer l.mu.RUnlock()
		var out []int64
		for _, s := range l.segs {
			out = append(out, s.base)
		}
		return out
	}
	if got := segBases(); len(got) != 2 || got[1] != 2 {
		t.Fatalf("size roll: segments %v", got)
	}
	if _, err := os.Stat(filepath.Join(l.Dir(), "00000000000000000002.log")); err != nil {
		t.Fatal(err)
	}
	clock.Advance(59 * time.Minute)
	mustAppend(t, l, testBatch{records: 1}.build(), 0)
	if got := segBases(); len(got) != 2 {
		t.Fatalf("rolled too early: %v", got)
	}
	clock.Advance(2 * time.Minute) // the active segment's first batch is now > 1h old
	mustAppend(t, l, testBatch{records: 1}.build(), 0)
	if got := segBases(); len(got) != 3 || got[2] != 4 {
		t.Fatalf("time roll: segments %v", got)
	}
	// the rolled segments get flushed asynchronously: the recovery point reaches the roll
	deadline := time.Now().Add(5 * time.Second)
	for l.status().recoveryPoint < 4 {
		if time.Now().After(deadline) {
			t.Fatalf("recovery point %d never reached 4", l.status().recoveryPoint)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestRetentionByBytesMovesLogStart(t *testing.T) {
	cfg := testConfig()
	cfg.SegmentBytes = 1000
	cfg.RetentionMs = -1
	l := newTestLog(t, cfg, nil)
	for i := 0; i < 20; i++ {
		mustAppend(t, l, testBatch{records: 1, valueSize: 400}.build(), 0)
	}
	// 2 batches (940 bytes) per segment: 10 segments, 9400 bytes. Kafka deletes the oldest
	// segments while what remains stays >= retention.bytes: 6 go, 3760 bytes remain.
	cfg.RetentionBytes = 3000
	l.SetConfig(cfg)
	n, err := l.DeleteOldSegments(time.Now())
	if err != nil || n != 6 {
		t.Fatalf("deleted %d, %v", n, err)
	}
	if l.LogStartOffset() != 12 {
		t.Fatalf("log start %d", l.LogStartOffset())
	}
	if _, err := l.Read(11, 1000, 20, true); !isErr(err, ErrOffsetOutOfRange) {
		t.Fatalf("read below log start: %v", err)
	}
	if _, err := os.Stat(filepath.Join(l.Dir(), "00000000000000000000.log")); !os.IsNotExist(err) {
		t.Fatalf("old segment still present: %v", err)
	}
	if got, err := l.Read(12, 1<<20, 20, false); err != nil || len(mustHeaders(t, got)) != 8 {
		t.Fatalf("read after retention: %v", err)
	}
}

func TestRetentionByTimeRollsExpiredActiveSegment(t *testing.T) {
	clock := newFakeClock()
	cfg := testConfig()
	cfg.SegmentBytes = 1000
	cfg.RetentionMs = int64(time.Hour / time.Millisecond)
	l := newTestLog(t, cfg, clock)
	now := clock.Now().UnixMilli()
	for i := 0; i < 4; i++ { // old data, two segments
		mustAppend(t, l, testBatch{records: 1, valueSize: 400, baseTs: now - 3*3600_000}.build(), 0)
	}
	mustAppend(t, l, testBatch{records: 1, valueSize: 400, baseTs: now}.build(), 0)
	if n, err := l.DeleteOldSegments(clock.Now()); err != nil || n != 2 || l.LogStartOffset() != 4 {
		t.Fatalf("deleted %d (%v), log start %d", n, err, l.LogStartOffset())
	}
	// everything expires: the non-empty active segment is rolled, then deleted
	clock.Advance(2 * time.Hour)
	if n, err := l.DeleteOldSegments(clock.Now()); err != nil || n != 1 {
		t.Fatalf("deleted %d, %v", n, err)
	}
	if l.LogStartOffset() != 5 || l.LogEndOffset() != 5 {
		t.Fatalf("log start %d, LEO %d", l.LogStartOffset(), l.LogEndOffset())
	}
	if info := mustAppend(t, l, testBatch{records: 1}.build(), 0); info.FirstOffset != 5 {
		t.Fatalf("append after full retention at %d", info.FirstOffset)
	}
	// retention never passes the HW
	l.SetHighWatermark(5)
	clock.Advance(2 * time.Hour)
	if n, _ := l.DeleteOldSegments(clock.Now().Add(1000 * time.Hour)); n != 0 {
		t.Fatalf("deleted %d segments above the HW", n)
	}
}

func TestTruncateTo(t *testing.T) {
	cfg := testConfig()
	cfg.SegmentBytes = 500
	cfg.IndexIntervalBytes = 1
	l := newTestLog(t, cfg, nil)
	for i := 0; i < 10; i++ { // batches of 3: offsets 0..29, epoch i/3
		mustAppend(t, l, testBatch{records: 3, valueSize: 50}.build(), int32(i/3))
	}
	if err := l.TruncateTo(40); err != nil || l.LogEndOffset() != 30 {
		t.Fatalf("no-op truncation: %v, LEO %d", err, l.LogEndOffset())
	}
	// mid-batch: the whole batch 24..26 goes
	if err := l.TruncateTo(25); err != nil || l.LogEndOffset() != 24 {
		t.Fatalf("truncate 25: %v, LEO %d", err, l.LogEndOffset())
	}
	// epoch 3 started at 27 (batch 9): dropped
	if e, _ := l.LeaderEpochCache().LatestEpoch(); e != 2 {
		t.Fatalf("latest epoch %d", e)
	}
	got, err := l.Read(0, 1<<20, 100, false)
	if err != nil || mustHeaders(t, got)[7].LastOffset() != 23 || len(mustHeaders(t, got)) != 8 {
		t.Fatalf("after truncation: %v", err)
	}
	// batch boundary that is also a segment boundary
	if err := l.TruncateTo(12); err != nil || l.LogEndOffset() != 12 {
		t.Fatalf("truncate 12: %v, LEO %d", err, l.LogEndOffset())
	}
	if info := mustAppend(t, l, testBatch{records: 2}.build(), 9); info.FirstOffset != 12 {
		t.Fatalf("append after truncation at %d", info.FirstOffset)
	}
	if got := l.LeaderEpochCache().EpochEntries(); got[len(got)-1] != (EpochEntry{9, 12}) {
		t.Fatalf("epochs %+v", got)
	}
	all, _ := l.Read(0, 1<<20, 100, false)
	if hs := mustHeaders(t, all); hs[len(hs)-1].LastOffset() != 13 {
		t.Fatalf("last offset %d", hs[len(hs)-1].LastOffset())
	}
	if err := l.TruncateTo(0); err != nil || l.LogEndOffset() != 0 || l.LogStartOffset() != 0 {
		t.Fatalf("truncate 0: %v", err)
	}
	if got := l.LeaderEpochCache().EpochEntries(); len(got) != 0 {
		t.Fatalf("epochs after truncate to 0: %+v", got)
	}
}

func TestTruncateFullyAndStartAt(t *testing.T) {
	l := newTestLog(t, testConfig(), nil)
	for i := 0; i < 3; i++ {
		mustAppend(t, l, testBatch{records: 2}.build(), 4)
	}
	if err := l.TruncateFullyAndStartAt(100); err != nil {
		t.Fatal(err)
	}
	if l.LogStartOffset() != 100 || l.LogEndOffset() != 100 || l.status().recoveryPoint != 100 || len(l.LeaderEpochCache().EpochEntries()) != 0 {
		t.Fatalf("start %d end %d rp %d epochs %v", l.LogStartOffset(), l.LogEndOffset(), l.status().recoveryPoint, l.LeaderEpochCache().EpochEntries())
	}
	if _, err := l.AppendAsFollower(testBatch{records: 2, base: 100, epoch: 6}.build()); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Read(50, 100, 200, true); !isErr(err, ErrOffsetOutOfRange) {
		t.Fatalf("read below start: %v", err)
	}
	if _, err := os.Stat(filepath.Join(l.Dir(), "00000000000000000100.log")); err != nil {
		t.Fatal(err)
	}
}

func TestMaybeIncrementLogStartOffset(t *testing.T) {
	l := newTestLog(t, testConfig(), nil)
	mustAppend(t, l, testBatch{records: 5}.build(), 1)
	mustAppend(t, l, testBatch{records: 5}.build(), 2)
	l.MaybeIncrementLogStartOffset(7)
	l.MaybeIncrementLogStartOffset(3) // never lowers
	if l.LogStartOffset() != 7 {
		t.Fatalf("log start %d", l.LogStartOffset())
	}
	if got := l.LeaderEpochCache().EpochEntries(); len(got) != 1 || got[0] != (EpochEntry{2, 7}) {
		t.Fatalf("epochs %+v", got)
	}
	got, err := l.Read(7, 1<<20, 10, false)
	if err != nil || mustHeaders(t, got)[0].BaseOffset != 5 {
		t.Fatalf("read at new start: %v", err)
	}
	l.MaybeIncrementLogStartOffset(100) // clamped to the LEO
	if l.LogStartOffset() != 10 {
		t.Fatalf("log start %d", l.LogStartOffset())
	}
}

func TestOffsetForTimestamp(t *testing.T) {
	cfg := testConfig()
	cfg.SegmentBytes = 600
	cfg.IndexIntervalBytes = 100
	l := newTestLog(t, cfg, nil)
	for i := 0; i < 20; i++ { // batch i: 5 records, timestamps 1000*i .. 1000*i+4
		mustAppend(t, l, testBatch{records: 5, valueSize: 10, baseTs: int64(1000 * i)}.build(), 0)
	}
	cases := []struct {
		ts, off, gotTs int64
		found          bool
	}{
		{0, 0, 0, true},
		{3, 3, 3, true},
		{4, 4, 4, true},
		{5, 5, 1000, true},
		{7002, 37, 7002, true},
		{19004, 99, 19004, true},
		{19005, -1, -1, false},
	}
	for _, c := range cases {
		off, ts, found := l.OffsetForTimestamp(c.ts)
		if off != c.off || ts != c.gotTs || found != c.found {
			t.Errorf("ts %d: got (%d, %d, %v), want (%d, %d, %v)", c.ts, off, ts, found, c.off, c.gotTs, c.found)
		}
	}
}

func TestFlushByMessageCountMovesRecoveryPoint(t *testing.T) {
	cfg := testConfig()
	cfg.FlushIntervalMessages = 10
	l := newTestLog(t, cfg, nil)
	mustAppend(t, l, testBatch{records: 6}.build(), 0)
	if l.status().recoveryPoint != 0 {
		t.Fatalf("flushed too early: %d", l.status().recoveryPoint)
	}
	mustAppend(t, l, testBatch{records: 6}.build(), 0)
	if l.status().recoveryPoint != 12 {
		t.Fatalf("recovery point %d", l.status().recoveryPoint)
	}
}

func TestConcurrentAppendsAndReads(t *testing.T) {
	cfg := testConfig()
	cfg.SegmentBytes = 8 << 10
	cfg.IndexIntervalBytes = 512
	l := newTestLog(t, cfg, nil)
	const n = 300
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < n; i++ {
			if _, err := l.AppendAsLeader(testBatch{records: 2, valueSize: 100}.build(), 0); err != nil {
				errs <- err
				return
			}
		}
	}()
	for r := 0; r < 2; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for l.LogEndOffset() < 2*n {
				leo := l.LogEndOffset()
				if leo == 0 {
					continue
				}
				got, err := l.Read(leo/2, 4096, leo, true)
				if err != nil {
					errs <- err
					return
				}
				if _, err := BatchHeaders(got); err != nil {
					errs <- fmt.Errorf("read at %d: %w", leo/2, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

func TestIdempotentRetryIsNotAppendedTwice(t *testing.T) {
	l := newTestLog(t, testConfig(), nil)
	mk := func(pid int64, seq int32, n int) []byte {
		b := testBatch{records: n}.build()
		binary.BigEndian.PutUint64(b[offProducerID:], uint64(pid))
		binary.BigEndian.PutUint16(b[offProducerEpoch:], 0)
		binary.BigEndian.PutUint32(b[offBaseSequence:], uint32(seq))
		fixCRC(b)
		return b
	}
	first := mustAppend(t, l, mk(7, 0, 3), 1)
	mustAppend(t, l, mk(7, 3, 2), 1)
	retry := mustAppend(t, l, mk(7, 0, 3), 1)
	if retry != (AppendInfo{FirstOffset: 0, LastOffset: 2, MaxTimestamp: first.MaxTimestamp, NumRecords: 3, LogAppendTime: -1}) || l.LogEndOffset() != 5 {
		t.Fatalf("retry %+v, LEO %d", retry, l.LogEndOffset())
	}
	if info := mustAppend(t, l, mk(8, 0, 3), 1); info.FirstOffset != 5 { // another producer
		t.Fatalf("other producer at %d", info.FirstOffset)
	}
	if info := mustAppend(t, l, testBatch{records: 1}.build(), 1); info.FirstOffset != 8 { // non-idempotent
		t.Fatalf("plain batch at %d", info.FirstOffset)
	}
}
