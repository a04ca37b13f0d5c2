package logstore

import (
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"
)

// System calls the scheduler does not see (docs/performance.md, the section of that name;
// kproto's rawio_linux.go for sockets). Go's os.File.WriteAt and ReadAt enter the kernel
// through syscall.Syscall, which tells the scheduler (entersyscall) so that a call that
// blocks can have its P handed to another thread; when the runtime's monitor thread is in its
// deep sleep (every P idle), that also wakes it, and it then polls every 20 µs until the
// process is idle again. A broker under a steady acks=all load appends on almost every busy
// spell (the leader's produce, each follower's fetch response), so those wake-ups came with
// nearly every request. An append of a few kilobytes to the page cache and a read of pages
// the kernel cannot have evicted do not wait for the disk, so here they are issued directly
// (syscall.RawSyscall6), which skips the hooks:
//
//   - Reads of resident data: the active segment's bytes whose writeback the log has not
//     started (writeback.go). Dirty pages cannot be evicted, so pread(2) and sendfile(2) of
//     them only copy memory (FileRegion.Resident).
//   - Appends, while they do not wait. A buffered write can still sleep in the kernel: it
//     throttles writers when too much of memory is dirty, and ext4 may wait for its journal.
//     The directWriteGate watches each direct append for one that took directAppendSlow or
//     more and slept on the way (the thread's voluntary context switches moved; being
//     preempted on a busy machine does not count). A few of those now and then are the
//     journal's commits (seen here: 5–30 ms, every few seconds, on every broker at once), and
//     cost a P for that long; directAppendStrikes of them within directAppendWindow are the
//     kernel throttling writers, and turn direct appends off for directAppendCooldown, so
//     under sustained disk pressure appends block the way os.File's do, with the P handed
//     on. Appends above directAppendMax always go through os.File: those come with
//     throughput, when a broker is busy without pause and the monitor is awake anyway, and a
//     long copy would hold its P (and a stop-the-world) for longer.
//
// A direct call that does block holds its P (other Ps steal its goroutines) and delays a
// stop-the-world until it returns, as a page fault on the Go heap would.

const (
	directAppendMax      = 64 << 10
	directAppendSlow     = 5 * time.Millisecond
	directAppendStrikes  = 3
	directAppendWindow   = time.Second
	directAppendCooldown = 10 * time.Second
)

// directWriteGate decides, for one Manager's logs, whether an append's write may be direct.
type directWriteGate struct {
	offUntil atomic.Int64 // Unix ns; direct appends are off before it
	log      logrus.FieldLogger

	mu      sync.Mutex
	strikes [directAppendStrikes]time.Time // the latest appends that slept, oldest first

	// pwrite is the direct write and sleeps the calling thread's count of voluntary context
	// switches (directio_linux.go); tests substitute a slow write and a sleeping thread.
	pwrite func(f *os.File, b []byte, off int64) (int, error)
	sleeps func() int64
	now    func() time.Time
}

func newDirectWriteGate(log logrus.FieldLogger, now func() time.Time) *directWriteGate {
	if now == nil {
		now = time.Now
	}
	return &directWriteGate{log: log, pwrite: pwriteDirect, sleeps: threadSleeps, now: now}
}

// writeAt appends b at off of f: directly while the gate is open and b is small, through
// os.File otherwise.
func (g *directWriteGate) writeAt(file File, b []byte, off int64) (int, error) {
	f := directOSFile(file) // nil under a File that is not the OS FS's (fs.go)
	if g == nil || !directIO || len(b) > directAppendMax || f == nil {
		return file.WriteAt(b, off)
	}
	start := g.now()
	if start.UnixNano() < g.offUntil.Load() {
		return file.WriteAt(b, off)
	}
	// The thread must stay the same between the two counts.
	runtime.LockOSThread()
	slept := g.sleeps()
	n, err := g.pwrite(f, b, off)
	took := g.now().Sub(start)
	if took >= directAppendSlow {
		slept = g.sleeps() - slept
	} else {
		slept = 0
	}
	runtime.UnlockOSThread()
	if slept > 0 {
		g.strike(f, len(b), start.Add(took), took)
	}
	return n, err
}

// strike records a direct append that slept in the kernel, ending at end, and turns direct
// appends off for directAppendCooldown when it is the directAppendStrikes-th within
// directAppendWindow.
func (g *directWriteGate) strike(f *os.File, n int, end time.Time, took time.Duration) {
	g.mu.Lock()
	copy(g.strikes[:], g.strikes[1:])
	g.strikes[len(g.strikes)-1] = end
	throttled := end.Sub(g.strikes[0]) <= directAppendWindow
	if throttled {
		g.strikes = [directAppendStrikes]time.Time{}
		g.offUntil.Store(end.Add(directAppendCooldown).UnixNano())
	}
	g.mu.Unlock()
	if g.log == nil {
		return
	}
	fields := logrus.Fields{"file": f.Name(), "bytes": n, "duration": took}
	if throttled {
		fields["backoff"] = directAppendCooldown
		g.log.WithFields(fields).Info("appends keep waiting in the kernel: they go through the scheduler's system calls for a while")
	} else {
		g.log.WithFields(fields).Debug("an append waited in the kernel")
	}
}

// readAtResident reads len(b) bytes at off of f, directly when resident says the pages are in
// the page cache for certain (see above).
func readAtResident(f File, b []byte, off int64, resident bool) (int, error) {
	if of := directOSFile(f); resident && directIO && of != nil {
		return preadDirect(of, b, off)
	}
	return f.ReadAt(b, off)
}
