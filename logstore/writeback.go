package logstore

import (
	"os"
	"sync"
	"time"
)

// Smooth writeback (docs/performance.md, "Smooth writeback"). Linux writes a file's dirty pages
// back when the *inode* has been dirty for vm.dirty_expire_centisecs (30 s): an active segment
// appended to without pause stays dirty from its first append on, so 30 s after a steady load
// starts the flusher writes everything appended since, about 1.8 GB at 20 MiB/s with RF=3 on
// one machine, in a burst of seconds that takes every CPU and stalls acknowledgements. So each
// log starts the writeback of what it appended to its active segment once that is writebackLag
// old (sync_file_range with SYNC_FILE_RANGE_WRITE on a background goroutine: it starts the I/O
// and waits for nothing, not an fsync, so durability is unchanged), and the kernel's own
// writeback finds at most two lags' worth left. The lag keeps a burst shorter than it (a
// benchmark's gigabyte, a catch-up) free of writeback, as before: starting it at once cost
// RF=3 acks=all throughput 15 % in such bursts. Kafka leaves this to the OS (and to tuning
// vm.dirty_*); isrbroker does it so that a default machine has no cliff.
const writebackLag = 2 * time.Second

// writebackPage aligns the ranges: the partial page at the end is left to the next range.
const writebackPage = 4096

// maxPendingWriteback bounds the queue; a range that does not fit is left to the kernel.
const maxPendingWriteback = 1024

type writebackRange struct {
	f      *os.File
	off, n int64
}

// writebackQueue runs the writeback starts of one Manager's logs on one goroutine, started
// when a range is queued and ending when the queue is empty, so appends never wait for it.
type writebackQueue struct {
	start func(f *os.File, off, n int64) // startWriteback; tests record instead

	mu      sync.Mutex
	pending []writebackRange
	running bool
}

func newWritebackQueue() *writebackQueue {
	return &writebackQueue{start: startWriteback}
}

// add queues the writeback of n bytes of f from off; false when the queue is full.
func (q *writebackQueue) add(f *os.File, off, n int64) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.pending) >= maxPendingWriteback {
		return false
	}
	q.pending = append(q.pending, writebackRange{f, off, n})
	if !q.running {
		q.running = true
		go q.run()
	}
	return true
}

func (q *writebackQueue) run() {
	for {
		q.mu.Lock()
		batch := q.pending
		q.pending = nil
		if len(batch) == 0 {
			q.running = false
			q.mu.Unlock()
			return
		}
		q.mu.Unlock()
		for _, r := range batch {
			q.start(r.f, r.off, r.n)
		}
	}
}

// writebackLocked queues the writeback of the active segment's whole pages appended before its
// writeback mark, once the mark is writebackLag old, and sets a new mark at the end (appendMu
// held; now is the append's time).
func (l *Log) writebackLocked(seg *segment, now time.Time) {
	if l.writeback == nil {
		return
	}
	if seg.writebackFrom > seg.size { // truncated below it: start over (clean pages cost nothing)
		seg.writebackFrom = 0
	}
	if seg.writebackMarkTime.IsZero() {
		seg.writebackMark, seg.writebackMarkTime = seg.size, now
		return
	}
	if now.Sub(seg.writebackMarkTime) < writebackLag {
		return
	}
	end := min(seg.writebackMark, seg.size) &^ (writebackPage - 1)
	if end > seg.writebackFrom && l.writeback.add(seg.f, seg.writebackFrom, end-seg.writebackFrom) {
		seg.writebackFrom = end
	}
	seg.writebackMark, seg.writebackMarkTime = seg.size, now
}
