package logstore

import (
	"os"
	"sync"
	"testing"
	"time"
)

// Appending starts the writeback of the active segment in page-aligned, contiguous ranges of
// at least writebackChunk that never pass the segment's end, and, after a truncation, goes on
// from the new end.
func TestAppendsStartWritebackInContiguousRanges(t *testing.T) {
	l := newTestLog(t, testConfig(), nil)
	var mu sync.Mutex
	var got []writebackRange
	l.writeback = &writebackQueue{start: func(f *os.File, off, n int64) {
		mu.Lock()
		got = append(got, writebackRange{f, off, n})
		mu.Unlock()
	}}
	batch := testBatch{valueSize: 100 << 10}.build()
	appendN := func(n int) {
		for i := 0; i < n; i++ {
			mustAppend(t, l, append([]byte(nil), batch...), 0)
		}
	}
	appendN(100) // ~10 MiB: two ranges
	wait := func(n int) []writebackRange {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			mu.Lock()
			c := append([]writebackRange(nil), got...)
			mu.Unlock()
			if len(c) >= n {
				return c
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d writeback ranges started, want %d", len(c), n)
			}
			time.Sleep(time.Millisecond)
		}
	}
	rs := wait(2)
	var next int64
	size := l.segs.active().size
	for i, r := range rs {
		if r.off != next || r.off%writebackPage != 0 || r.n%writebackPage != 0 || r.n < writebackChunk || r.off+r.n > size {
			t.Fatalf("range %d: [%d, +%d) after %d, segment size %d", i, r.off, r.n, next, size)
		}
		if r.f != l.segs.active().f {
			t.Fatalf("range %d is not on the active segment's file", i)
		}
		next = r.off + r.n
	}
	if size-next >= writebackChunk+writebackPage {
		t.Fatalf("%d bytes appended after the last range and none started", size-next)
	}
	if err := l.TruncateTo(l.LogEndOffset() - 90); err != nil { // below the ranges already started
		t.Fatal(err)
	}
	mu.Lock()
	before := len(got)
	mu.Unlock()
	appendN(100)
	rs = wait(before + 1)
	r := rs[before]
	if r.off > l.segs.active().size || r.off >= next {
		t.Fatalf("after truncation to below %d the next range starts at %d", next, r.off)
	}
}
