package logstore

import (
	"fmt"
	"testing"
)

// BenchmarkCleaner measures one cleaning of a 64 MiB compacted log (64 MiB segments' worth of
// 16 KiB uncompressed batches of 100-byte records over 10,000 keys, so about 97 % of the
// records are superseded) with a 128 MiB offset map: MB/s of log read and rewritten.
//
//	go test -run XXX -bench BenchmarkCleaner -benchtime 5x ./logstore
func BenchmarkCleaner(b *testing.B) {
	const total, keys, perBatch, valueSize = 64 << 20, 10_000, 128, 100
	clock := newFakeClock()
	cfg := compactConfig()
	cfg.SegmentBytes = 8 << 20
	cfg.IndexIntervalBytes = 4096
	value := string(make([]byte, valueSize))
	var batches [][]byte
	n := 0
	for size := 0; size < total; {
		recs := make([]kv, perBatch)
		for i := range recs {
			recs[i] = put(fmt.Sprintf("key-%06d", n%keys), value)
			n++
		}
		bt := keyedBatch(b, plain(clock.Now().UnixMilli()), recs...)
		batches = append(batches, bt)
		size += len(bt)
	}
	m := newOffsetMap(128 << 20)
	b.SetBytes(total)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		l := newCompactLog(b, cfg, clock)
		for _, bt := range batches {
			mustAppend(b, l, append([]byte(nil), bt...), 1)
		}
		l.SetHighWatermark(l.LogEndOffset())
		b.StartTimer()
		stats, err := cleanOnceWith(b, l, clock.Now(), m)
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if stats.recordsKept >= stats.recordsRead {
			b.Fatalf("nothing removed: %+v", stats)
		}
		b.ReportMetric(100*float64(stats.bytesWritten)/float64(stats.bytesRead), "recopy%")
		l.Close()
		b.StartTimer()
	}
}
