package logstore

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"

	"github.com/sirupsen/logrus"
)

// A truncation that removes batches replaces the log's tail from one segment base X on by one
// new file, through the segment swap protocol of the cleaner (completeSwaps) with a tail swap's
// meaning: `<X>.log.truncate.swap` replaces every segment whose base is at or above X. Steps:
//
//  1. prepare, outside the log's locks: the kept bytes of the cut segment (none when the cut is at
//     a segment boundary or below the first segment) are copied to `<X>.log.truncate.cleaned`,
//     which is fsynced. A crash or a failure leaves the old log (the loader removes `.cleaned`).
//  2. commit, under appendMu and flushMu, once the plan is checked against the log: the rename
//     to `<X>.log.truncate.swap` and a directory fsync. From the rename on, the loader completes
//     the truncation: it removes the segments at or above X and renames the swap file to
//     `<X>.log` (completeSwaps).
//  3. the removed segments' files are renamed `.deleted`, the swap file becomes `<X>.log`, the
//     directory is fsynced; the log switches to the new tail under mu, writes its
//     leader-epoch-checkpoint and has the Manager write the dir's recovery-point checkpoint.
//
// The old files stay open until the switch, so fetches whose regions were chosen before it send
// the bytes that were at their offsets (docs/performance.md, "Truncation under a send"). A
// failure after the commit's rename leaves the log unusable in this process: it is marked
// failed (every later call returns ErrClosed) and the next open completes the truncation.
const (
	truncCleanedSuffix = ".truncate" + cleanedSuffix
	truncSwapSuffix    = ".truncate" + swapSuffix
)

// errTruncationStale: the log changed between a truncation's preparation and its commit (a
// retention or cleaner swap replaced the cut segment): the truncation is prepared again.
var errTruncationStale = errors.New("logstore: log changed while the truncation was prepared")

// errTruncationStopped: the test hook stopped a truncation at a step, as a crash would (files
// left as they are, nothing changed in memory).
var errTruncationStopped = errors.New("logstore: truncation stopped by test hook")

// PreparedTruncation is a TruncateTo whose file copy is done: Commit applies it, Abort drops
// it. Exactly one of them must be called; until then other truncations of the log wait.
type PreparedTruncation struct {
	l      *Log
	offset int64 // the requested offset
	noop   bool  // offset >= LEO: only the epoch cache is truncated
	full   bool  // offset <= the first segment's base: the log restarts empty at offset
	seg    *segment
	src    File  // seg.f as prepared
	pos    int64 // bytes of seg kept (the swap file's size)
	base   int64 // X: the base of the swap file; segments at or above it are replaced
	newLEO int64
	path   string // the `.truncate.cleaned` file
	nf     File   // its descriptor, open
	done   bool
}

// truncationHook (tests) is called before each step of a truncation; an error stands for that
// step's failure, errTruncationStopped for a crash before it. A nil hook does nothing.
type truncationHook func(step string) error

// step runs the hook before a step; its error stands for that step's failure.
func (h truncationHook) step(step string) error {
	if h == nil {
		return nil
	}
	return h(step)
}

// newPreparedTruncation plans a truncation of l to offset and copies the kept bytes (truncMu
// held; also appendMu when locked, so that nothing can change the plan).
func newPreparedTruncation(l *Log, offset int64) (*PreparedTruncation, error) {
	p := &PreparedTruncation{l: l, offset: max(offset, 0)}
	l.mu.RLock()
	if l.closed {
		l.mu.RUnlock()
		return nil, ErrClosed
	}
	if err := l.health.check(); err != nil { // offline dir: no truncation (logdir_failure.go)
		l.mu.RUnlock()
		return nil, err
	}
	if p.offset >= l.leo {
		p.noop = true
		l.mu.RUnlock()
		return p, nil
	}
	if p.offset <= l.segs[0].base {
		p.full, p.base, p.newLEO = true, p.offset, p.offset
	} else {
		var err error
		if err = p.planCut(l.segs); err != nil {
			l.mu.RUnlock()
			return nil, err
		}
	}
	l.mu.RUnlock()
	return p, p.copyKept()
}

// planCut finds the cut (mu held): the segment holding offset-1, the first batch whose last
// offset is >= offset, and the base of the swap file.
func (p *PreparedTruncation) planCut(segs segmentList) error {
	k := sort.Search(len(segs), func(i int) bool { return segs[i].base >= p.offset }) - 1
	s := segs[k]
	pos := s.lookup(p.offset - 1)
	var hdr [batchHeaderSize]byte
	for pos+batchHeaderSize <= s.size {
		if _, err := s.f.ReadAt(hdr[:], pos); err != nil {
			return fmt.Errorf("logstore: read %s: %w", s.logPath(), err)
		}
		h := parseHeader(hdr[:])
		if h.Length < minBatchLength || pos+int64(h.Size()) > s.size {
			break
		}
		if h.LastOffset() >= p.offset {
			p.seg, p.src, p.pos, p.base, p.newLEO = s, s.f, pos, s.base, h.BaseOffset
			return nil
		}
		pos += int64(h.Size())
	}
	// every batch of s ends below offset: the cut is at the next segment (offset < LEO, so
	// there is one), replaced by an empty one
	next := segs[k+1]
	p.seg, p.base, p.newLEO = next, next.base, next.base
	return nil
}

// copyKept writes the swap file's content: the first pos bytes of the cut segment (nothing for
// an empty one), fsynced. On an error nothing is left behind.
func (p *PreparedTruncation) copyKept() error {
	l := p.l
	p.path = filepath.Join(l.dir, segmentName(p.base)+logSuffix+truncCleanedSuffix)
	fail := func(err error) error {
		if errors.Is(err, errTruncationStopped) {
			return err // a crash: the file stays
		}
		if p.nf != nil {
			p.nf.Close()
			p.nf = nil
		}
		l.fs.Remove(p.path)
		// The log is as it was, but its dir failed a write (ENOSPC, EIO): the dir goes
		// offline as after any I/O error on it (KIP-112, docs/kafka-facts.md §12).
		return l.health.failed(fmt.Errorf("logstore: truncating %s to %d: %w", l.dir, p.offset, err))
	}
	if err := l.truncHook.step("create"); err != nil {
		return fail(err)
	}
	nf, err := l.fs.OpenFile(p.path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fail(err)
	}
	p.nf = nf
	if p.pos > 0 {
		if err := l.truncHook.step("copy"); err != nil {
			return fail(err)
		}
		if err := copyPrefix(nf, p.src, p.pos); err != nil {
			return fail(err)
		}
	}
	// Always: the kept bytes may be below the recovery point (a segment recovered at open has
	// no flushed size of its own, and its bytes are as durable as any).
	if err := l.truncHook.step("sync"); err != nil {
		return fail(err)
	}
	if err := nf.Sync(); err != nil {
		return fail(err)
	}
	return nil
}

// discard removes the prepared file.
func (p *PreparedTruncation) discard() {
	if p.nf != nil {
		p.nf.Close()
		p.nf = nil
		p.l.fs.Remove(p.path)
	}
}

// valid (mu held) reports whether the plan still fits the log: not closed, and the segment it
// cuts still in the log with the file it copied (appends since only add what it removes).
func (p *PreparedTruncation) valid() bool {
	l := p.l
	if l.closed {
		return false
	}
	if p.full || p.noop {
		return true
	}
	i := sort.Search(len(l.segs), func(i int) bool { return l.segs[i].base >= p.seg.base })
	if i == len(l.segs) || l.segs[i] != p.seg {
		return false
	}
	if p.src != nil { // a cut inside seg
		return p.seg.f == p.src && p.seg.size >= p.pos
	}
	return i > 0 // an empty segment replaces seg: something must stay below it
}

// commit applies the prepared truncation (truncMu, appendMu and flushMu held).
func (p *PreparedTruncation) commit() error {
	l := p.l
	if p.noop {
		return p.truncateEpochsAtLEO()
	}
	l.mu.RLock()
	ok := p.valid()
	closed := l.closed
	l.mu.RUnlock()
	if !ok {
		p.discard()
		if closed {
			return ErrClosed
		}
		return errTruncationStale
	}
	swap := filepath.Join(l.dir, segmentName(p.base)+logSuffix+truncSwapSuffix)
	if err := l.truncHook.step("commit"); err == nil {
		err = l.fs.Rename(p.path, swap)
		if err != nil {
			p.discard()
			return l.health.failed(fmt.Errorf("logstore: truncating %s to %d: %w", l.dir, p.offset, err))
		}
	} else {
		if !errors.Is(err, errTruncationStopped) {
			p.discard()
			return l.health.failed(err) // an I/O error on the dir: offline (KIP-112)
		}
		return err
	}
	// Committed: from here the loader completes the truncation, so the log takes it.
	deleted, ferr := p.finishFiles(swap)
	if errors.Is(ferr, errTruncationStopped) {
		return ferr
	}
	l.mu.Lock()
	p.switchTail()
	l.mu.Unlock()
	removeAfter(l.fs, deleted, l.Config().FileDeleteDelay)
	if ferr == nil {
		ferr = p.persistOffsets()
	}
	if ferr != nil {
		if errors.Is(ferr, errTruncationStopped) {
			return ferr
		}
		p.markLogFailed(ferr)
		return fmt.Errorf("logstore: truncating %s to %d: %w", l.dir, p.offset, ferr)
	}
	return nil
}

// finishFiles runs the file steps after the commit's rename: the directory fsync, the replaced
// segments' files renamed `.deleted`, the swap file renamed `<X>.log`, the directory fsync. It
// returns the `.deleted` files.
func (p *PreparedTruncation) finishFiles(swap string) ([]string, error) {
	l := p.l
	if err := l.truncHook.step("commitSync"); err != nil {
		return nil, err
	}
	if err := syncDir(l.fs, l.dir); err != nil {
		return nil, err
	}
	l.mu.RLock()
	var replaced []*segment
	for _, s := range l.segs {
		if s.base >= p.base {
			replaced = append(replaced, s)
		}
	}
	l.mu.RUnlock()
	var deleted []string
	for _, s := range replaced {
		if err := l.truncHook.step("delete"); err != nil {
			return deleted, err
		}
		for _, f := range []string{s.logPath(), s.indexPath(), s.timeIndexPath()} {
			if err := l.fs.Rename(f, f+deletedSuffix); err == nil {
				deleted = append(deleted, f+deletedSuffix)
			} else if !os.IsNotExist(err) {
				return deleted, err
			}
		}
	}
	final := filepath.Join(l.dir, segmentName(p.base)+logSuffix)
	if err := l.truncHook.step("final"); err != nil {
		return deleted, err
	}
	if err := l.fs.Rename(swap, final); err != nil {
		return deleted, err
	}
	if err := l.truncHook.step("finalSync"); err != nil {
		return deleted, err
	}
	return deleted, syncDir(l.fs, l.dir)
}

// switchTail (mu held for writing) makes the log the truncated one: the segments at or above
// X give way to the new file, and the LEO, producer state, log start, recovery point, HW and
// leader epoch cache follow the new LEO. The old files are closed: a region chosen from them
// and not yet sent fails, and its connection is closed.
func (p *PreparedTruncation) switchTail() {
	l := p.l
	l.cleaning.abort(p.offset)
	keep := sort.Search(len(l.segs), func(i int) bool { return l.segs[i].base >= p.base })
	for _, s := range l.segs[keep:] {
		if s.f != nil {
			s.f.Close()
		}
	}
	interval := l.cfg.IndexIntervalBytes
	var ns *segment
	if p.src != nil {
		// the cut segment keeps its index entries below the cut
		ns = p.seg
		ns.f, ns.size, ns.flushedSize = p.nf, p.pos, p.pos
		ki := sort.Search(len(ns.ix.idx), func(i int) bool { return int64(ns.ix.idx[i].pos) >= p.pos })
		ns.ix.idx = ns.ix.idx[:ki:ki]
		kt := sort.Search(len(ns.ix.tidx), func(i int) bool { return ns.base+int64(ns.ix.tidx[i].rel) >= p.newLEO })
		ns.ix.tidx = ns.ix.tidx[:kt:kt]
		ns.resetIndexState(interval)
	} else {
		ns = &segment{base: p.base, dir: l.dir, fs: l.fs, f: p.nf, ix: newIndexState(p.base), created: l.now(), noIndexFiles: true}
	}
	ns.idxPersisted, ns.tidxPersisted = 0, 0 // the index files went with the old segment
	p.nf = nil
	l.segs = append(l.segs[:keep:keep], ns)
	l.recent = nil // positions after the cut change
	l.leo = p.newLEO
	if p.full {
		l.producers = producerState{}
		l.logStart = p.newLEO
		l.recoveryPoint = p.newLEO
	} else {
		l.producers.truncateFrom(p.newLEO)
		l.logStart = min(l.logStart, p.newLEO)
		l.recoveryPoint = min(l.recoveryPoint, p.newLEO)
	}
	if l.hw > p.newLEO {
		l.hw = p.newLEO
	}
	l.epochs.truncateFromEnd(p.newLEO)
	l.log.WithFields(logrus.Fields{"targetOffset": p.offset, "logEndOffset": p.newLEO, "segment": ns.logPath()}).Info("truncated log")
}

// persistOffsets writes what the truncation lowered before any append can follow it (Kafka's
// Log.truncateTo and LogManager.truncateTo): the cut segment's indexes, the leader epoch cache
// (with any snapshot left pending) and, through the Manager, the dir's recovery point
// checkpoint. Otherwise a crash after appends past the cut would load the old, higher recovery
// point, skip re-validating the batches written since and rebuild their epochs wrongly.
func (p *PreparedTruncation) persistOffsets() error {
	l := p.l
	l.mu.RLock()
	ns := l.segs.active()
	idx, tidx := ns.ix.idx, ns.ix.tidx
	epochs := l.epochs.snapshot()
	l.mu.RUnlock()
	if err := ns.persistIndexes(idx, tidx, false); err != nil {
		return err
	}
	if err := l.truncHook.step("epochs"); err != nil {
		return err
	}
	if err := l.epochs.persist(epochs); err != nil {
		return err
	}
	if l.checkpointOffsets == nil {
		return nil
	}
	if err := l.truncHook.step("checkpoint"); err != nil {
		return err
	}
	return l.checkpointOffsets()
}

// markLogFailed takes the log out of service after a failure that left its files and its state
// apart (a truncation's step after its commit): every later call returns ErrClosed, and the next
// open of the log completes what was committed.
func (p *PreparedTruncation) markLogFailed(err error) {
	l := p.l
	l.log.WithError(err).Error("marking the log failed: its files may not match its state until the broker restarts")
	_ = l.health.failed(err) // and its dir offline, so its partitions move (KIP-112)
	l.mu.Lock()
	l.closed = true
	l.cleaning.gen++
	l.segs.closeFiles()
	l.mu.Unlock()
}

// copyPrefix copies the first n bytes of src to dst, with copy_file_range where the kernel
// offers it (os.File.ReadFrom over an io.LimitedReader of an *os.File), by reading otherwise.
// It moves both files' positions: src is the file being replaced, whose readers and appends all
// use explicit offsets (ReadAt, sendfile with an offset, WriteAt), and only a truncation, which
// holds the log's truncMu, moves its position.
func copyPrefix(dstFile, srcFile File, n int64) error {
	dst, src := directOSFile(dstFile), directOSFile(srcFile)
	if dst == nil || src == nil {
		// a File that is not the OS FS's (the tests' error FS): through its ReadAt and WriteAt
		got, err := io.Copy(io.NewOffsetWriter(dstFile, 0), io.NewSectionReader(srcFile, 0, n))
		if err == nil && got < n {
			err = io.ErrUnexpectedEOF
		}
		return err
	}
	if _, err := dst.Seek(0, io.SeekStart); err != nil {
		return err
	}
	if _, err := src.Seek(0, io.SeekStart); err != nil {
		return err
	}
	got, err := dst.ReadFrom(&io.LimitedReader{R: src, N: n})
	if err == nil && got < n {
		err = io.ErrUnexpectedEOF
	}
	return err
}
