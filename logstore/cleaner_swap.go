package logstore

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// cleaningState is the log cleaner's state in one log, guarded by the log's mu: the cleaner
// checkpoint (the first dirty offset) and the cleaning generation that a truncation or Close
// bumps so that an in-progress cleaning aborts (see the cleaner's description in cleaner.go).
type cleaningState struct {
	checkpoint int64  // first dirty offset: the end of the last cleaning, -1 if never cleaned
	gen        uint64 // bumped by every truncation and by Close: an in-progress cleaning aborts

	testHook func(step string) bool // tests: called at each step of a cleaning, set before it starts
}

// abort (the log's mu held for writing) makes an in-progress cleaning abort and lowers the
// cleaner checkpoint to a truncation offset (abortAndPauseCleaning, maybeTruncateCheckpoint).
func (c *cleaningState) abort(offset int64) {
	c.gen++
	if c.checkpoint > offset {
		c.checkpoint = offset
	}
}

// testStep runs the test hook at a step of a cleaning; true stops the cleaning there, as a
// crash would (the files are left as they are).
func (c *cleaningState) testStep(step string) bool { return c.testHook != nil && c.testHook(step) }

// errSwapStopped: the test hook stopped a cleaning (tests simulating a crash).
var errSwapStopped = errors.New("logstore: swap stopped by test hook")

type segmentPaths struct{ log, index, timeIndex string }

func cleanedPaths(dir string, base int64) segmentPaths {
	n := filepath.Join(dir, segmentName(base))
	return segmentPaths{n + logSuffix + cleanedSuffix, n + indexSuffix + cleanedSuffix, n + timeIndexSuffix + cleanedSuffix}
}

// segmentSwap swaps a cleaned segment in for the group of segments it replaces
// (Log.replaceSegments). It runs under the log's appendMu and flushMu, so no append, roll,
// truncation, retention or flush interleaves, and only if no truncation or Close happened
// since the cleaning started (gen) and every segment of the group is still in the log.
// A crash at any step leaves either the old segments or the cleaned one; opening the log
// completes or rolls back the swap (logLoader.completeSwaps).
type segmentSwap struct {
	l     *Log
	group []*segment // consecutive segments of the log, never the active one
	ns    *segment   // the cleaned segment, its files still named `.cleaned`
	gen   uint64     // the log's cleaning generation when the cleaning started
}

// run performs the swap; errCleaningAborted when the log changed under the cleaning.
func (w segmentSwap) run() error {
	l := w.l
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	l.mu.RLock()
	at, ok := w.position()
	l.mu.RUnlock()
	if !ok {
		return errCleaningAborted
	}
	deleted, err := w.renameFiles()
	if err != nil {
		return err
	}
	l.mu.Lock()
	segs := make(segmentList, 0, len(l.segs)-len(w.group)+1)
	segs = append(segs, l.segs[:at]...)
	segs = append(segs, w.ns)
	segs = append(segs, l.segs[at+len(w.group):]...)
	l.segs = segs
	for _, s := range w.group {
		s.f.Close()
	}
	delay := l.cfg.FileDeleteDelay
	l.mu.Unlock()
	removeAfter(l.fs, deleted, delay)
	return nil
}

// position (the log's mu held) finds the group in the log: its index, and false when the log
// was closed or truncated since the cleaning started, or the group is no longer a run of
// inactive segments of the log.
func (w segmentSwap) position() (int, bool) {
	l := w.l
	at := -1
	if !l.closed && l.cleaning.gen == w.gen {
		for i, s := range l.segs {
			if s == w.group[0] {
				at = i
				break
			}
		}
	}
	ok := at >= 0 && at+len(w.group) < len(l.segs) // never up to the active segment
	for k := 0; ok && k < len(w.group); k++ {
		ok = l.segs[at+k] == w.group[k]
	}
	return at, ok
}

// renameFiles runs the file protocol of the swap: `.cleaned` -> `.swap` (the log's `.swap`,
// renamed last, commits the swap), the old segments' files -> `.deleted`, `.swap` -> final
// names, with the directory synced after the first and last step. It returns the `.deleted`
// files, removed after file.delete.delay.ms.
func (w segmentSwap) renameFiles() ([]string, error) {
	dir, ns, stop, fsys := w.l.dir, w.ns, w.l.cleaning.testStep, w.l.fs
	cleaned := cleanedPaths(dir, ns.base)
	final := segmentPaths{ns.logPath(), ns.indexPath(), ns.timeIndexPath()}
	swap := segmentPaths{final.log + swapSuffix, final.index + swapSuffix, final.timeIndex + swapSuffix}
	// 1. .cleaned -> .swap; the log's .swap, renamed last, commits the swap
	for _, r := range [][2]string{{cleaned.index, swap.index}, {cleaned.timeIndex, swap.timeIndex}, {cleaned.log, swap.log}} {
		if err := fsys.Rename(r[0], r[1]); err != nil {
			return nil, fmt.Errorf("logstore: swapping in cleaned segment: %w", err)
		}
		if stop("swap:" + filepath.Ext(strings.TrimSuffix(r[1], swapSuffix))) {
			return nil, errSwapStopped
		}
	}
	if err := syncDir(fsys, dir); err != nil {
		return nil, err
	}
	// 2. the old segments' files -> .deleted (open descriptors keep serving readers)
	var deleted []string
	for _, s := range w.group {
		for _, p := range []string{s.logPath(), s.indexPath(), s.timeIndexPath()} {
			if err := fsys.Rename(p, p+deletedSuffix); err == nil {
				deleted = append(deleted, p+deletedSuffix)
			} else if !os.IsNotExist(err) {
				return nil, fmt.Errorf("logstore: swapping in cleaned segment: %w", err)
			}
		}
		if stop("deleted") {
			return nil, errSwapStopped
		}
	}
	// 3. .swap -> final names
	for _, r := range [][2]string{{swap.index, final.index}, {swap.timeIndex, final.timeIndex}, {swap.log, final.log}} {
		if err := fsys.Rename(r[0], r[1]); err != nil {
			return nil, fmt.Errorf("logstore: swapping in cleaned segment: %w", err)
		}
		if stop("final:" + filepath.Ext(r[1])) {
			return nil, errSwapStopped
		}
	}
	if err := syncDir(fsys, dir); err != nil {
		return nil, err
	}
	return deleted, nil
}
