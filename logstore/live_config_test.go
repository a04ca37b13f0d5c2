package logstore

import (
	"errors"
	"math"
	"sync"
	"testing"
	"time"
)

func segCount(l *Log) int {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return len(l.segs)
}

// A config change applies to the next roll and the next retention run (issue 12: topic
// configs live): segment.bytes lowered rolls at the next append; retention.ms lowered deletes
// the old segments at the next DeleteOldSegments; a policy switched to compact stops time
// retention and makes the log cleanable.
func TestSetConfigAppliesToNextRollAndRetention(t *testing.T) {
	clock := newFakeClock()
	l := newTestLog(t, testConfig(), clock)
	for i := 0; i < 10; i++ {
		mustAppend(t, l, testBatch{records: 2, valueSize: 200, baseTs: clock.Now().UnixMilli()}.build(), 1)
	}
	if n := segCount(l); n != 1 {
		t.Fatalf("segments %d, want 1 with the default segment.bytes", n)
	}
	cfg := l.Config()
	cfg.SegmentBytes = 1000
	l.SetConfig(cfg)
	for i := 0; i < 10; i++ {
		mustAppend(t, l, testBatch{records: 2, valueSize: 200, baseTs: clock.Now().UnixMilli()}.build(), 1)
	}
	if n := segCount(l); n < 5 {
		t.Fatalf("segments %d after segment.bytes=1000, want the next appends to roll", n)
	}
	l.SetHighWatermark(l.LogEndOffset())
	clock.Advance(time.Hour)
	if n, err := l.DeleteOldSegments(clock.Now()); err != nil || n != 0 {
		t.Fatalf("deleted %d (%v) with retention.ms 7 days", n, err)
	}
	cfg.CleanupPolicy = PolicyCompact
	cfg.RetentionMs = 1000
	l.SetConfig(cfg)
	if n, _ := l.DeleteOldSegments(clock.Now()); n != 0 {
		t.Fatalf("compact-only log lost %d segments to retention.ms", n)
	}
	if _, ok := cleanableOffsets(l, clock.Now()); !ok {
		t.Fatal("log not considered by the cleaner after cleanup.policy=compact")
	}
	cfg.CleanupPolicy = PolicyDelete
	l.SetConfig(cfg)
	if n, err := l.DeleteOldSegments(clock.Now()); err != nil || n == 0 {
		t.Fatalf("deleted %d (%v) after retention.ms=1000 and cleanup.policy=delete", n, err)
	}
	if l.LogStartOffset() == 0 {
		t.Fatal("log start offset did not move")
	}
}

// SetConfig races with appends, reads, retention and the cleaner's look at the log (go test -race).
func TestSetConfigConcurrent(t *testing.T) {
	clock := newFakeClock()
	l := newTestLog(t, testConfig(), clock)
	var wg sync.WaitGroup
	run := func(f func(i int)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 300; i++ {
				f(i)
			}
		}()
	}
	run(func(i int) {
		// a compacted config rejects these keyless records: only other errors count
		if _, err := l.AppendAsLeader(testBatch{records: 3, valueSize: 50, baseTs: clock.Now().UnixMilli()}.build(), 1); err != nil && !errors.Is(err, ErrInvalidRecord) {
			t.Error(err)
		}
	})
	run(func(i int) {
		c := l.Config()
		c.SegmentBytes = int64(500 + i%3*500)
		c.RetentionMs = int64(1 + i%2*1_000_000)
		c.CleanupPolicy = CleanupPolicy(i % 3)
		c.TimestampType = TimestampType(i % 2)
		l.SetConfig(c)
	})
	run(func(int) {
		l.SetHighWatermark(l.LogEndOffset())
		if _, err := l.DeleteOldSegments(clock.Now()); err != nil {
			t.Error(err)
		}
		cleanableOffsets(l, clock.Now())
	})
	run(func(int) { _, _ = l.Read(l.LogStartOffset(), 1<<16, math.MaxInt64, true) })
	wg.Wait()
}

// message.timestamp.type=LogAppendTime: the leader sets the timestamp-type bit and maxTimestamp
// to its clock, keeps a valid CRC, and reports the time; a producer batch claiming
// LogAppendTime and, with a limited message.timestamp.difference.max.ms, a CreateTime batch
// too far from the clock are INVALID_TIMESTAMP.
func TestLogAppendTimeAndTimestampDifference(t *testing.T) {
	clock := newFakeClock()
	cfg := testConfig()
	cfg.TimestampType = LogAppendTime
	l := newTestLog(t, cfg, clock)
	old := clock.Now().Add(-48 * time.Hour).UnixMilli()
	info := mustAppend(t, l, testBatch{records: 3, baseTs: old}.build(), 1)
	now := clock.Now().UnixMilli()
	if info.LogAppendTime != now || info.MaxTimestamp != now {
		t.Fatalf("append info %+v, want LogAppendTime and MaxTimestamp %d", info, now)
	}
	b, err := l.Read(0, 1<<20, math.MaxInt64, true)
	if err != nil {
		t.Fatal(err)
	}
	hs, _, err := parseBatches(b) // checks the CRC
	if err != nil || len(hs) != 1 {
		t.Fatalf("stored batch: %v %v", hs, err)
	}
	if hs[0].Attributes&attrTimestampType == 0 || hs[0].MaxTimestamp != now {
		t.Fatalf("stored header %+v: want the LogAppendTime bit and maxTimestamp %d", hs[0], now)
	}

	claimed := testBatch{records: 1, baseTs: now}.build()
	claimed[offAttributes+1] |= attrTimestampType
	fixCRC(claimed)
	if _, err := l.AppendAsLeader(claimed, 1); !errors.Is(err, ErrInvalidTimestamp) {
		t.Fatalf("producer batch with LogAppendTime: %v, want ErrInvalidTimestamp", err)
	}

	cfg.TimestampType = CreateTime
	cfg.TimestampDiffLimited, cfg.TimestampDiffMaxMs = true, 60_000
	l.SetConfig(cfg)
	if _, err := l.AppendAsLeader(testBatch{records: 2, baseTs: old}.build(), 1); !errors.Is(err, ErrInvalidTimestamp) {
		t.Fatalf("batch 48 h old with a 60 s limit: %v, want ErrInvalidTimestamp", err)
	}
	if _, err := l.AppendAsLeader(testBatch{records: 2, baseTs: now + 120_000}.build(), 1); !errors.Is(err, ErrInvalidTimestamp) {
		t.Fatalf("batch 2 min ahead with a 60 s limit: %v, want ErrInvalidTimestamp", err)
	}
	info = mustAppend(t, l, testBatch{records: 2, baseTs: now - 1000}.build(), 1)
	if info.LogAppendTime != -1 || info.MaxTimestamp != now-999 {
		t.Fatalf("CreateTime append %+v: want LogAppendTime -1 and the producer's max timestamp", info)
	}
	cfg.TimestampDiffMaxMs = math.MaxInt64 // Kafka's default: no check
	l.SetConfig(cfg)
	mustAppend(t, l, testBatch{records: 2, baseTs: old}.build(), 1)
}
