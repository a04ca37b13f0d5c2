package logstore

import (
	"os"
	"sync"
	"testing"
	"time"
)

// Appends start the writeback of the active segment's data once it is writebackLag old: in
// page-aligned, contiguous ranges that end at the size the segment had a lag earlier, none
// for data younger than that, and after a truncation from the new end.
func TestAppendsStartWritebackOfDataOlderThanTheLag(t *testing.T) {
	clock := newFakeClock()
	l := newTestLog(t, testConfig(), clock)
	var mu sync.Mutex
	var got []writebackRange
	l.writeback = &writebackQueue{start: func(f *os.File, off, n int64) {
		mu.Lock()
		got = append(got, writebackRange{f, off, n})
		mu.Unlock()
	}}
	batch := testBatch{valueSize: 10_000}.build()
	appendN := func(n int) int64 {
		for i := 0; i < n; i++ {
			mustAppend(t, l, append([]byte(nil), batch...), 0)
		}
		return l.segs.active().size
	}
	// waitRanges waits for the background goroutine to have started n ranges.
	waitRanges := func(n int) []writebackRange {
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
	count := func() int { mu.Lock(); defer mu.Unlock(); return len(got) }

	appendN(50) // the first append sets the mark at its end
	clock.Advance(writebackLag / 2)
	appendN(50)
	if n := count(); n != 0 {
		t.Fatalf("%d ranges started for data younger than the lag", n)
	}
	clock.Advance(writebackLag / 2)
	mark2 := appendN(1) // a lag after the first append: the data before it, page-aligned
	rs := waitRanges(1)
	first := l.segs.active() // one segment: 1 GiB by default
	want1 := int64(len(batch)) &^ (writebackPage - 1)
	if r := rs[0]; r.f != first.f || r.off != 0 || r.n != want1 {
		t.Fatalf("first range [%d, +%d), want [0, +%d) (the first batch's whole pages)", r.off, r.n, want1)
	}
	clock.Advance(writebackLag)
	appendN(1)
	rs = waitRanges(2)
	if r := rs[1]; r.off != want1 || r.off+r.n != mark2&^(writebackPage-1) {
		t.Fatalf("second range [%d, %d), want [%d, %d)", r.off, r.off+r.n, want1, mark2&^(writebackPage-1))
	}

	// Truncated below the ranges started: the next range starts at or below the new end.
	if err := l.TruncateTo(l.LogEndOffset() - 95); err != nil {
		t.Fatal(err)
	}
	newEnd := l.segs.active().size
	clock.Advance(writebackLag)
	appendN(20)
	clock.Advance(writebackLag)
	appendN(1)
	rs = waitRanges(3)
	if r := rs[2]; r.off > newEnd || r.off%writebackPage != 0 || r.n <= 0 {
		t.Fatalf("after truncation to %d bytes the next range is [%d, +%d)", newEnd, r.off, r.n)
	}
}
