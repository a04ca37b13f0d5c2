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
	if r := rs[0]; r.f != first.f.OSFile() || r.off != 0 || r.n != want1 {
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

// Under a steady load the writeback is paced: an append every 10 ms for 5 s starts ranges
// that are contiguous, cover a step's worth of data each (not a lag's), and start once their
// data is a lag old and not much later.
func TestSteadyAppendsStartWritebackEveryStep(t *testing.T) {
	clock := newFakeClock()
	l := newTestLog(t, testConfig(), clock)
	var mu sync.Mutex
	var got []writebackRange
	var startedAt []time.Time
	l.writeback = &writebackQueue{start: func(f *os.File, off, n int64) {
		mu.Lock()
		got = append(got, writebackRange{f, off, n})
		mu.Unlock()
	}}
	batch := testBatch{valueSize: 10_000}.build()
	const tick = 10 * time.Millisecond
	const run = 5 * time.Second
	start := clock.Now()
	var sizes []int64     // the segment's size after each append
	var times []time.Time // each append's time
	for at := time.Duration(0); at < run; at += tick {
		mustAppend(t, l, append([]byte(nil), batch...), 0)
		sizes = append(sizes, l.segs.active().size)
		times = append(times, clock.Now())
		// The queue runs on its own goroutine: wait for what this append queued, so each
		// range is seen with the append that started it.
		deadline := time.Now().Add(10 * time.Second)
		for {
			l.writeback.mu.Lock()
			idle := len(l.writeback.pending) == 0 && !l.writeback.running
			l.writeback.mu.Unlock()
			if idle {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("writeback queue did not drain")
			}
			time.Sleep(100 * time.Microsecond)
		}
		mu.Lock()
		for len(startedAt) < len(got) {
			startedAt = append(startedAt, clock.Now())
		}
		mu.Unlock()
		clock.Advance(tick)
	}
	mu.Lock()
	defer mu.Unlock()
	// Data is written back from about the lag on: (run - lag) / step ranges, give or take one,
	// and at least ten: the disk gets small pieces often, not a lag's worth at once.
	want := int((run - writebackLag) / writebackStep)
	if len(got) < want-1 || len(got) > want+1 || len(got) < 10 {
		t.Fatalf("%d ranges in %v of steady appends, want about %d (one per %v after the first %v) and at least 10", len(got), run, want, writebackStep, writebackLag)
	}
	stepBytes := int64(writebackStep/tick) * int64(len(batch))
	if lagBytes := int64(writebackLag/tick) * int64(len(batch)); stepBytes > lagBytes/4 {
		t.Fatalf("a step's worth of data (%d bytes) is more than a quarter of a lag's (%d)", stepBytes, lagBytes)
	}
	var next int64
	for i, r := range got {
		if r.off != next {
			t.Fatalf("range %d starts at %d, want %d (contiguous)", i, r.off, next)
		}
		if r.off%writebackPage != 0 || (r.off+r.n)%writebackPage != 0 {
			t.Fatalf("range %d [%d, +%d) is not page-aligned", i, r.off, r.n)
		}
		if i > 0 && r.n > stepBytes+writebackPage {
			t.Fatalf("range %d covers %d bytes, more than a step's %d", i, r.n, stepBytes)
		}
		next = r.off + r.n
		// Its last byte was appended a lag, and at most a step more, before it started.
		appended := times[0]
		for j, s := range sizes {
			if s >= next {
				appended = times[j]
				break
			}
		}
		age := startedAt[i].Sub(appended)
		if age < writebackLag || age > writebackLag+writebackStep+tick {
			t.Fatalf("range %d ends at %d, appended at %v, started at %v: %v old, want %v to %v", i, next,
				appended.Sub(start), startedAt[i].Sub(start), age, writebackLag, writebackLag+writebackStep+tick)
		}
	}
}

// A checkpoint's fsyncs hold writeback starts back: a range queued while a checkpoint is
// being written starts only after it (after every checkpoint written at once), and a
// checkpoint waits for a start in progress.
func TestCheckpointWritesHoldWritebackBack(t *testing.T) {
	q := newWritebackQueue()
	started := make(chan writebackRange, 16)
	q.start = func(f *os.File, off, n int64) { started <- writebackRange{f, off, n} }
	f, err := os.CreateTemp(t.TempDir(), "seg")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()

	resume := q.pauseForFsync()
	resume2 := q.pauseForFsync() // a second checkpoint at once (Checkpoint writes two files)
	if !q.add(f, 0, 4096) {
		t.Fatal("queue refused a range")
	}
	// Give the queue's goroutine the time it would need to start the range; it must not.
	select {
	case r := <-started:
		t.Fatalf("range [%d, +%d) started while a checkpoint's fsync ran", r.off, r.n)
	case <-time.After(50 * time.Millisecond):
	}
	resume()
	select {
	case r := <-started:
		t.Fatalf("range [%d, +%d) started while a second checkpoint's fsync ran", r.off, r.n)
	case <-time.After(50 * time.Millisecond):
	}
	resume2()
	select {
	case r := <-started:
		if r.f != f || r.off != 0 || r.n != 4096 {
			t.Fatalf("started [%d, +%d), want [0, +4096)", r.off, r.n)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("range not started after the checkpoints")
	}
}

// The Manager's checkpoint files are written under that hold: a HW checkpoint waits for a
// writeback start in progress and completes once it returns.
func TestHighWatermarkCheckpointWaitsForWritebackStart(t *testing.T) {
	m, _ := openTestManager(t, []string{t.TempDir()}, testConfig(), newFakeClock())
	inStart, release := make(chan struct{}), make(chan struct{})
	m.writeback.start = func(*os.File, int64, int64) {
		close(inStart)
		<-release
	}
	f, err := os.CreateTemp(t.TempDir(), "seg")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m.writeback.add(f, 0, 4096)
	<-inStart
	done := make(chan error, 1)
	go func() { done <- m.CheckpointHighWatermarks(map[TopicPartition]int64{{Topic: "t", Partition: 0}: 1}) }()
	select {
	case err := <-done:
		t.Fatalf("HW checkpoint written during a writeback start (err %v)", err)
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("HW checkpoint not written after the writeback start returned")
	}
}

// A rolled segment's background flush is held like the checkpoints: it waits for a writeback
// start in progress (the recovery point stays) and completes once that returns.
func TestRolledSegmentFlushWaitsForWritebackStart(t *testing.T) {
	l := newTestLog(t, testConfig(), newFakeClock())
	inStart, release := make(chan struct{}), make(chan struct{})
	l.writeback = newWritebackQueue()
	l.writeback.start = func(*os.File, int64, int64) {
		close(inStart)
		<-release
	}
	mustAppend(t, l, testBatch{valueSize: 100}.build(), 0)
	target := l.LogEndOffset()
	before := l.status().recoveryPoint
	l.writeback.add(l.segs.active().f.OSFile(), 0, 4096)
	<-inStart
	l.flusher.flushAsync(target)
	done := make(chan struct{})
	go func() { l.flusher.wg.Wait(); close(done) }()
	select {
	case <-done:
		t.Fatalf("rolled-segment flush ran during a writeback start (recovery point %d -> %d)", before, l.status().recoveryPoint)
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("rolled-segment flush not done after the writeback start returned")
	}
	if got := l.status().recoveryPoint; got != target {
		t.Fatalf("recovery point %d after the flush, want %d", got, target)
	}
}
