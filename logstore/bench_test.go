package logstore

import (
	"fmt"
	"math/rand"
	"testing"
)

// BenchmarkAppend appends 16 KB batches of 1 KB records as leader (no fsync, Kafka's default).
func BenchmarkAppend(b *testing.B) {
	cfg := testConfig()
	cfg.SegmentBytes = 64 << 20
	cfg.RetentionBytes = 256 << 20
	cfg.RetentionMs = -1
	l := newTestLog(b, cfg, nil)
	batch := testBatch{records: 16, valueSize: 1000, baseTs: 1}.build()
	b.SetBytes(int64(len(batch)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := l.AppendAsLeader(batch, 1); err != nil {
			b.Fatal(err)
		}
		if i%4096 == 4095 { // keep the temp dir bounded
			if _, err := l.DeleteOldSegments(l.now()); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkRead reads 1 MB from random offsets of a 64 MB log through the offset index.
func BenchmarkRead(b *testing.B) {
	benchmarkRandomReads(b, func(l *Log, off, leo int64) error {
		_, err := l.Read(off, 1<<20, leo, true)
		return err
	})
}

// BenchmarkReadRegions is BenchmarkRead on the zero-copy path: it delimits the same 1 MB as
// file regions (batch headers only) instead of copying it; the bytes then go from the page
// cache to the socket with sendfile (kproto.BenchmarkWriteFileRegion).
func BenchmarkReadRegions(b *testing.B) {
	benchmarkRandomReads(b, func(l *Log, off, leo int64) error {
		_, err := l.ReadRegions(off, 1<<20, leo, true)
		return err
	})
}

// benchmarkRandomReads fills a 64 MB log (16 MB segments) and times read at random offsets,
// 1 MB each.
func benchmarkRandomReads(b *testing.B, read func(l *Log, off, leo int64) error) {
	cfg := testConfig()
	cfg.SegmentBytes = 16 << 20
	l := newTestLog(b, cfg, nil)
	fillLog(b, l, testBatch{records: 16, valueSize: 1000, baseTs: 1}.build(), 4096)
	leo := l.LogEndOffset()
	rng := rand.New(rand.NewSource(1))
	b.SetBytes(1 << 20)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := read(l, rng.Int63n(leo), leo); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTruncateCut is the cost of a truncation that removes the last batch of a segment of
// size MB (truncate_swap.go copies the kept bytes to a new file; docs/performance.md, "Truncation
// under a send"), with the append of a batch at the same offset that follows it on a follower.
func BenchmarkTruncateCut(b *testing.B) {
	for _, mb := range []int{1, 16, 64} {
		b.Run(fmt.Sprintf("%dMB", mb), func(b *testing.B) {
			cfg := testConfig()
			cfg.SegmentBytes = 128 << 20
			l := newTestLog(b, cfg, nil)
			batch := testBatch{records: 16, valueSize: 1000, baseTs: 1}.build()
			for l.Size() < int64(mb)<<20 {
				if _, err := l.AppendAsLeader(batch, 1); err != nil {
					b.Fatal(err)
				}
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				leo := l.LogEndOffset()
				if err := l.TruncateTo(leo - 16); err != nil {
					b.Fatal(err)
				}
				if _, err := l.AppendAsLeader(batch, 1); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkReadRegionsTail delimits what a caught-up follower fetches: everything from a batch
// near the log end to the end, in a log of 1 KB batches, 64 KB (64 batches) or 1 MB (1,024)
// from the end. Taking the rest of the segment whole, only the first batch's header is read.
func BenchmarkReadRegionsTail(b *testing.B) {
	for _, back := range []int{64, 1024} {
		b.Run(fmt.Sprintf("batches=%d", back), func(b *testing.B) {
			cfg := testConfig()
			l := newTestLog(b, cfg, nil)
			batch := testBatch{records: 1, valueSize: 1000, baseTs: 1}.build()
			fillLog(b, l, batch, 4096)
			leo := l.LogEndOffset()
			b.ReportAllocs()
			for b.Loop() {
				fr, err := l.ReadRegions(leo-int64(back), int32(back*len(batch)), leo, true)
				if err != nil || fr.Len != int64(back*len(batch)) {
					b.Fatalf("%d bytes, %v", fr.Len, err)
				}
			}
		})
	}
}

// fillLog appends batch to l n times as leader (epoch 1).
func fillLog(b *testing.B, l *Log, batch []byte, n int) {
	b.Helper()
	for range n {
		if _, err := l.AppendAsLeader(batch, 1); err != nil {
			b.Fatal(err)
		}
	}
}
