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
// writeback finds less than a lag's worth left. The lag keeps the first moments of a burst
// free of writeback: starting it at once cost RF=3 acks=all throughput 15 % in bursts. It is
// short because of what the kernel still does: sync_file_range does not clear the inode's
// dirty time, so every 30 s the flusher visits each active segment and writes its unwritten
// tail, the last lag's worth of every log at once. With a 2 s lag that was ~120 MB in a second
// at 20 MiB/s RF=3, a window of 40-220 ms acknowledgements; with 500 ms it is a quarter of that,
// and RF=3 bursts of 300 MB and 1 GB ran as fast (docs/performance.md, "Fifth look"). Kafka
// leaves this to the OS (and to tuning vm.dirty_*); isrbroker does it so that a default machine
// has no cliff.
const writebackLag = 500 * time.Millisecond

// writebackStep paces the writeback under a steady load: a log takes a mark (its active
// segment's size and the time) at most every step, and starts the writeback up to each mark
// once the mark is a lag old, so the disk gets a step's worth of data every step instead of
// a lag's worth every lag. On a virtual machine whose host does the guest's I/O on the
// guest's CPU time, a lag's worth of a steady 60 MB/s at once (tens of MB per log with the 2 s
// lag of the time) stalled the whole guest for tens of milliseconds every lag
// (docs/performance.md, "Paced writeback").
const writebackStep = 100 * time.Millisecond

// writebackMarks is the capacity of a log's mark ring: marks younger than the lag, one per
// step, and one more. A mark that finds the ring full is not taken; the next one covers it.
const writebackMarks = int(writebackLag/writebackStep) + 2

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

	// fsyncs keeps writeback starts (write side) and the checkpoints' fsyncs (read side,
	// pauseForFsync) apart. On ext4 a writeback start allocates the blocks of delayed
	// allocation holding the segment inode's i_data_sem, and the allocator waits for the block
	// bitmap when a checkpoint's fsync is writing it; every append to that segment then waits
	// for i_data_sem, for as long as the fsync's I/O takes (24-234 ms seen on a slow virtual
	// disk, docs/performance.md, "Paced writeback"). A start that waits instead costs nothing.
	fsyncs sync.RWMutex

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

// pauseForFsync holds writeback starts back until the returned function is called (a nil
// queue: nothing to hold). The Manager's background fsyncs hold it (checkpoint files,
// writePerDir; a rolled segment's flush, flushAsync); several may hold it at once. Fsyncs
// on the append path do not: an append must not wait for a writeback start.
func (q *writebackQueue) pauseForFsync() (resume func()) {
	if q == nil {
		return func() {}
	}
	q.fsyncs.RLock()
	return q.fsyncs.RUnlock
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
			q.fsyncs.Lock()
			q.start(r.f, r.off, r.n)
			q.fsyncs.Unlock()
		}
	}
}

// writebackMark is the active segment's size at a time (Unix ns): the bytes before it were
// appended by then.
type writebackMark struct {
	size int64
	at   int64
}

// writebackRing holds a log's marks on its active segment, oldest first (guarded by appendMu).
// It belongs to one segment; a roll or a new segment starts a new ring.
type writebackRing struct {
	seg        *segment
	marks      [writebackMarks]writebackMark
	head, size int
}

func (r *writebackRing) oldest() *writebackMark { return &r.marks[r.head] }

func (r *writebackRing) newest() *writebackMark {
	return &r.marks[(r.head+r.size-1)%writebackMarks]
}

func (r *writebackRing) pop() { r.head, r.size = (r.head+1)%writebackMarks, r.size-1 }

// push adds m as the newest mark; a full ring does not take it (the next mark covers it).
func (r *writebackRing) push(m writebackMark) {
	if r.size == writebackMarks {
		return
	}
	r.marks[(r.head+r.size)%writebackMarks] = m
	r.size++
}

// appended queues the writeback of the active segment's whole pages appended before its
// newest mark in r that is writebackLag old, and takes a new mark at the segment's end when the
// newest is writebackStep old (the log's appendMu and mu held; now is the append's time). r is
// the log's ring; the ring returned replaces it (a new one for a new segment). A nil queue (no
// smooth writeback) does nothing.
func (q *writebackQueue) appended(r *writebackRing, seg *segment, now time.Time) *writebackRing {
	if q == nil {
		return r
	}
	if seg.writebackFrom > seg.size { // truncated below it: start over (clean pages cost nothing)
		seg.writebackFrom = 0
	}
	if r == nil || r.seg != seg {
		// Allocated on a log's first append after it opens or rolls, so idle logs hold none.
		r = &writebackRing{seg: seg}
	}
	at := now.UnixNano()
	end := int64(-1)
	for r.size > 0 && at-r.oldest().at >= int64(writebackLag) {
		end = r.oldest().size
		r.pop()
	}
	if end >= 0 {
		end = min(end, seg.size) &^ (writebackPage - 1)
		if end > seg.writebackFrom && q.add(seg.f.OSFile(), seg.writebackFrom, end-seg.writebackFrom) {
			seg.writebackFrom = end
		}
	}
	if r.size == 0 || at-r.newest().at >= int64(writebackStep) {
		r.push(writebackMark{size: seg.size, at: at})
	}
	return r
}
