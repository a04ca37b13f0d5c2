package logstore

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/sirupsen/logrus"
)

// loadParams is what the manager knows about a log before loading it.
type loadParams struct {
	tp            TopicPartition
	dir           string
	cfg           Config
	recoveryPoint int64 // from recovery-point-offset-checkpoint, 0 if absent
	logStart      int64 // from log-start-offset-checkpoint, -1 if absent
	hw            int64 // from replication-offset-checkpoint, -1 if absent
	clean         bool  // the log dir had .kafka_cleanshutdown
	cleanerCP     int64 // from cleaner-offset-checkpoint, -1 if absent
	configured    bool  // cfg is the topic's own configuration (not only the broker defaults)
	log           logrus.FieldLogger
	now           func() time.Time
	writeback     *writebackQueue  // nil: none (tests)
	directWrites  *directWriteGate // nil: appends through os.File (tests)
	fs            FS               // nil: the OS FS (fs.go)
	// checkpointOffsets writes the dir's recovery-point and log-start checkpoints (Log's field).
	checkpointOffsets func() error
}

// logLoader loads a log's segments from its directory before the log is shared (Kafka's
// LogLoader): it finishes or rolls back a cleaning interrupted by a crash, removes leftovers
// of interrupted deletes and atomic writes, reads the leader-epoch-checkpoint, re-validates
// every segment at or past the recovery point after an unclean shutdown (truncating a torn or
// corrupt tail and deleting the segments after it), and computes the LEO, log start offset
// and recovery point.
type logLoader struct {
	dir      string
	fs       FS
	log      logrus.FieldLogger
	now      func() time.Time
	interval int32         // index.interval.bytes
	epochs   *leaderEpochs // read from the checkpoint, extended by recovered batches

	// the result
	segs                         segmentList
	leo, logStart, recoveryPoint int64
}

// load loads the segments of ld.dir; on an error the segments loaded so far are in ld.segs,
// their files open.
func (ld *logLoader) load(p loadParams) error {
	// an interrupted cleaning is finished or rolled back first (cleaner_swap.go)
	if err := ld.completeSwaps(); err != nil {
		return err
	}
	bases, err := ld.segmentBases()
	if err != nil {
		return err
	}

	// the epoch cache is read first so recovered batches can extend it
	if err := ld.epochs.load(ld.log); err != nil {
		return err
	}
	loadedEpochs := ld.epochs.snapshot()

	recoveryPoint := p.recoveryPoint
	now := ld.now()
	for i := 0; i < len(bases); i++ {
		base := bases[i]
		s := &segment{base: base, dir: ld.dir, fs: ld.fs, ix: newIndexState(base), created: now}
		f, err := ld.fs.OpenFile(s.logPath(), os.O_RDWR, 0o644)
		if err != nil {
			return err
		}
		s.f = f
		fi, err := f.Stat()
		if err != nil {
			return err
		}
		s.size = fi.Size()
		last := i == len(bases)-1
		needsRecovery := !p.clean && (last || bases[i+1] > recoveryPoint)
		if !needsRecovery {
			idx, ok1 := loadOffsetIndex(ld.fs, s.indexPath(), s.size)
			tidx, ok2 := loadTimeIndex(ld.fs, s.timeIndexPath())
			if ok1 && ok2 && (s.size == 0 || fileExists(ld.fs, s.indexPath())) {
				s.ix.idx, s.ix.tidx = idx, tidx
				if n := len(tidx); n > 0 {
					s.ix.maxTs = tidx[n-1].ts
					s.ix.offsetOfMaxTs = base + int64(tidx[n-1].rel)
				}
				s.idxPersisted, s.tidxPersisted = len(idx), len(tidx)
				s.flushedSize = s.size
				s.verify = newSegmentVerify(s.size) // CRC-checked before served (verify.go)
			} else {
				ld.log.WithField("segment", s.logPath()).Warn("missing or inconsistent index; rebuilding it by recovering the segment")
				needsRecovery = true
			}
		}
		truncated := false
		if needsRecovery {
			// The batches from here on re-enter their epochs: a cached entry at or after this
			// segment is either one of them or stale (a truncation committed but its
			// leader-epoch-checkpoint not yet written), and a stale later entry of a higher
			// epoch would make the first batch's assign drop the entries before it too.
			ld.epochs.truncateFromEnd(base)
			truncated, err = ld.recoverSegment(s, 0, base, newIndexState(base))
			if err != nil {
				s.f.Close()
				return err
			}
		} else if last {
			// clean: find the LEO by scanning from the last index entry
			startPos, startOff := int64(0), base
			st := newIndexState(base)
			if n := len(s.ix.idx); n > 0 {
				startPos = int64(s.ix.idx[n-1].pos)
				st = s.ix
			}
			truncated, err = ld.recoverSegment(s, startPos, startOff, st)
			if err != nil {
				s.f.Close()
				return err
			}
			s.verify.markVerified(startPos, s.size) // the scan checked them
		}
		ld.segs = append(ld.segs, s)
		if truncated && !last {
			// LogLoader: once a segment is truncated, the later (unflushed) segments are deleted
			for _, b := range bases[i+1:] {
				dead := &segment{base: b, dir: ld.dir, fs: ld.fs}
				ld.log.WithField("segment", dead.logPath()).Warn("deleting segment after a truncated one")
				if err := dead.markDeleted(0); err != nil {
					return err
				}
			}
			bases = bases[:i+1]
		}
	}
	if len(ld.segs) == 0 {
		start := p.logStart
		if start < 0 {
			start = 0
		}
		s, err := createSegment(ld.fs, ld.dir, start, now)
		if err != nil {
			return err
		}
		ld.segs = segmentList{s}
		ld.leo = start
	}
	ld.logStart = ld.segs[0].base
	if p.logStart > ld.logStart {
		ld.logStart = p.logStart
	}
	if ld.logStart > ld.leo {
		ld.logStart = ld.leo
	}
	ld.recoveryPoint = recoveryPoint
	if ld.recoveryPoint > ld.leo {
		ld.recoveryPoint = ld.leo
	}
	if ld.recoveryPoint < ld.logStart {
		ld.recoveryPoint = ld.logStart
	}
	ld.epochs.truncateFromEnd(ld.leo)
	ld.epochs.truncateFromStart(ld.logStart)
	// written when recovery or the offsets changed the cache: no later flush writes a cache
	// that only lost entries (persistDeferred records additions)
	if !slices.Equal(loadedEpochs, ld.epochs.entries) {
		if err := ld.epochs.persist(ld.epochs.snapshot()); err != nil {
			return err
		}
	}
	return nil
}

// loadNew sets up the log of a directory that openLog has just created, so is empty: one
// segment at the log start offset (0 unless p says otherwise), created without looking for
// the leftovers load clears, with the LEO, log start offset and recovery point all at its
// base and an empty leader epoch cache (what load computes for an empty directory).
func (ld *logLoader) loadNew(p loadParams) error {
	start := max(p.logStart, 0)
	s := &segment{base: start, dir: ld.dir, fs: ld.fs, ix: newIndexState(start), created: ld.now(), noIndexFiles: true}
	f, err := ld.fs.OpenFile(s.logPath(), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	s.f = f
	ld.segs = segmentList{s}
	ld.leo, ld.logStart, ld.recoveryPoint = start, start, start
	return nil
}

// segmentBases lists the base offsets of the segments in the directory, in order, and
// removes leftovers of interrupted deletes and atomic writes and orphan indexes (no .log).
func (ld *logLoader) segmentBases() ([]int64, error) {
	entries, err := ld.fs.ReadDir(ld.dir)
	if err != nil {
		return nil, err
	}
	var bases []int64
	logs := map[int64]bool{}
	for _, e := range entries {
		name := e.Name()
		full := filepath.Join(ld.dir, name)
		switch {
		case filepath.Ext(name) == deletedSuffix || filepath.Ext(name) == ".cleaned" ||
			filepath.Ext(name) == ".swap" || filepath.Ext(name) == ".tmp":
			// leftovers of an interrupted delete / atomic write
			if !e.IsDir() {
				ld.fs.Remove(full)
			}
		default:
			if b, ok := parseSegmentName(name, logSuffix); ok && !e.IsDir() {
				bases = append(bases, b)
				logs[b] = true
			}
		}
	}
	// orphan indexes (no .log) are removed
	for _, e := range entries {
		for _, suf := range []string{indexSuffix, timeIndexSuffix} {
			if b, ok := parseSegmentName(e.Name(), suf); ok && !logs[b] {
				ld.fs.Remove(filepath.Join(ld.dir, e.Name()))
			}
		}
	}
	sort.Slice(bases, func(i, j int) bool { return bases[i] < bases[j] })
	return bases, nil
}

// recoverSegment scans s from startPos, rebuilds its indexes and epoch entries, sets the LEO
// if it is the active segment, and truncates a torn or corrupt tail with a WARN naming the
// topic, partition, segment and bytes cut. It reports whether it truncated.
func (ld *logLoader) recoverSegment(s *segment, startPos, startOffset int64, st indexState) (bool, error) {
	res := scanSegment(s.f, s.size, s.base, startPos, startOffset, st, ld.interval)
	if isIOError(res.err) {
		return false, res.err // a failed read is no corrupt batch: nothing is truncated
	}
	if startPos > 0 && res.batches == 0 && s.size > startPos {
		// the batch the index points at is bad: recover the whole segment instead
		return ld.recoverSegment(s, 0, s.base, newIndexState(s.base))
	}
	s.ix = res.ix
	for _, e := range res.epochs {
		ld.epochs.assign(e.Epoch, e.StartOffset)
	}
	valid := startPos + res.validBytes
	truncated := false
	if valid < s.size {
		ld.log.WithFields(logrus.Fields{
			"segment":   s.logPath(),
			"bytesCut":  s.size - valid,
			"validSize": valid,
			"error":     fmt.Sprint(res.err),
		}).Warn("truncating a torn or corrupt tail of a segment during recovery")
		if err := s.f.Truncate(valid); err != nil {
			return false, err
		}
		s.size = valid
		truncated = true
	}
	// the in-memory indexes are authoritative; rewrite the files to match
	s.idxPersisted, s.tidxPersisted = 0, 0
	if err := s.persistIndexes(s.ix.idx, s.ix.tidx, false); err != nil {
		return truncated, err
	}
	if res.batches > 0 || startPos == 0 {
		ld.leo = res.nextOffset
		if res.batches == 0 {
			ld.leo = s.base
		}
	}
	return truncated, nil
}

// completeSwaps finishes or rolls back a cleaning interrupted by a crash, before segments are
// loaded (Log.removeTempFilesAndCollectSwapFiles, completeSwapOperations): `.cleaned` files
// are removed (the swap had not started), index `.swap` files are removed (indexes are
// rebuilt), and each `<base>.log.swap` replaces every segment whose base offset lies in
// [base, its next offset): those segments' files are removed and the swap file becomes
// `<base>.log`, without indexes so that loading recovers it.
func (ld *logLoader) completeSwaps() error {
	entries, err := ld.fs.ReadDir(ld.dir)
	if err != nil {
		return err
	}
	var swaps, tails []int64
	var logBases []int64
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() {
			continue
		}
		full := filepath.Join(ld.dir, name)
		switch {
		case strings.HasSuffix(name, cleanedSuffix):
			ld.log.WithField("file", name).Info("removing an unfinished cleaned segment")
			ld.fs.Remove(full)
		case strings.HasSuffix(name, truncSwapSuffix):
			if b, ok := parseSegmentName(strings.TrimSuffix(name, truncSwapSuffix), logSuffix); ok {
				tails = append(tails, b)
			} else {
				ld.fs.Remove(full)
			}
		case strings.HasSuffix(name, swapSuffix):
			if b, ok := parseSegmentName(strings.TrimSuffix(name, swapSuffix), logSuffix); ok {
				swaps = append(swaps, b)
			} else {
				ld.fs.Remove(full)
			}
		default:
			if b, ok := parseSegmentName(name, logSuffix); ok {
				logBases = append(logBases, b)
			}
		}
	}
	if len(swaps) == 0 && len(tails) == 0 {
		return nil
	}
	sort.Slice(swaps, func(i, j int) bool { return swaps[i] < swaps[j] })
	for _, base := range swaps {
		swapPath := filepath.Join(ld.dir, segmentName(base)+logSuffix+swapSuffix)
		f, err := openFS(ld.fs, swapPath)
		if err != nil {
			return err
		}
		fi, err := f.Stat()
		if err != nil {
			f.Close()
			return err
		}
		res := scanSegment(f, fi.Size(), base, 0, base, newIndexState(base), ld.interval)
		f.Close()
		next := max(res.nextOffset, base+1)
		for _, b := range logBases {
			if b < base || b >= next {
				continue
			}
			old := &segment{base: b, dir: ld.dir, fs: ld.fs}
			for _, p := range []string{old.logPath(), old.indexPath(), old.timeIndexPath()} {
				if err := ld.fs.Remove(p); err != nil && !os.IsNotExist(err) {
					return err
				}
			}
		}
		ns := &segment{base: base, dir: ld.dir, fs: ld.fs}
		ld.fs.Remove(ns.indexPath())
		ld.fs.Remove(ns.timeIndexPath())
		if err := ld.fs.Rename(swapPath, ns.logPath()); err != nil {
			return err
		}
		ld.log.WithFields(logrus.Fields{"segment": ns.logPath(), "nextOffset": res.nextOffset}).Info("completed the swap of a cleaned segment interrupted by a crash")
	}
	if len(tails) > 0 {
		if err := ld.completeTruncation(tails); err != nil {
			return err
		}
	}
	return syncDir(ld.fs, ld.dir)
}

// completeTruncation finishes a truncation whose commit was renamed in (truncate_swap.go):
// `<X>.log.truncate.swap` replaces every segment whose base is at or above X, so the segment
// files at or above X are removed and the swap file becomes `<X>.log`, without indexes so that
// loading recovers it. At most one is left: a log whose truncation did not finish is marked
// failed and truncates nothing more until it is loaded again; should there be more, the lowest
// wins (it replaces the others' tails too) and the others are removed.
func (ld *logLoader) completeTruncation(tails []int64) error {
	slices.Sort(tails)
	x := tails[0]
	for _, b := range tails[1:] {
		ld.fs.Remove(filepath.Join(ld.dir, segmentName(b)+logSuffix+truncSwapSuffix))
	}
	entries, err := ld.fs.ReadDir(ld.dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		for _, suf := range []string{logSuffix, indexSuffix, timeIndexSuffix} {
			if b, ok := parseSegmentName(e.Name(), suf); ok && b >= x {
				if err := ld.fs.Remove(filepath.Join(ld.dir, e.Name())); err != nil && !os.IsNotExist(err) {
					return err
				}
			}
		}
	}
	ns := &segment{base: x, dir: ld.dir, fs: ld.fs}
	if err := ld.fs.Rename(ns.logPath()+truncSwapSuffix, ns.logPath()); err != nil {
		return err
	}
	ld.log.WithField("segment", ns.logPath()).Info("completed a truncation interrupted by a crash")
	return nil
}

func fileExists(fsys FS, p string) bool { return fileExistsFS(fsys, p) }
