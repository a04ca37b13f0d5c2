package logstore

import (
	"context"
	"errors"
	"path/filepath"
	"time"
)

// The scrubber CRC-checks, in the background, the segments loaded without recovery that no
// read has checked yet (verify.go; docs/design.md, "Corruption below the recovery point"). It
// reads at most scrubBytesPerSecond per broker (an internal bound: Kafka has no scrubber and so
// no setting for one), in steps of scrubStepBytes each taken under the log's read lock, and
// stops once every such segment is verified: only loading creates unverified segments.
const (
	scrubBytesPerSecond = 16 << 20
	scrubStepBytes      = 1 << 20
)

// runScrub verifies the unverified segments of every log until all are verified or ctx is
// done (started by RunBackground).
func (m *Manager) runScrub(ctx context.Context) {
	for _, l := range m.All() {
		for {
			if ctx.Err() != nil {
				return
			}
			n, more := l.scrubStep(scrubStepBytes)
			if n > 0 {
				t := time.NewTimer(time.Duration(n) * time.Second / scrubBytesPerSecond)
				select {
				case <-ctx.Done():
					t.Stop()
					return
				case <-t.C:
				}
			}
			if !more {
				break
			}
		}
	}
}

// scrubStep verifies up to limit bytes of the log's first unverified segment and returns the
// bytes read and whether anything may be left to verify. A bad batch is handled as a read's
// (checkCorruption) and ends the log's scrub.
func (l *Log) scrubStep(limit int64) (int64, bool) {
	l.mu.RLock()
	if l.closed || l.health.check() != nil {
		l.mu.RUnlock()
		return 0, false
	}
	var n int64
	var err error
	more := false
	for _, s := range l.segs {
		if s.verify == nil || s.verify.complete.Load() {
			continue
		}
		n, err = s.verifyNext(limit)
		more = true
		break
	}
	l.mu.RUnlock()
	if err != nil {
		if cerr := l.checkCorruption(err); !errors.Is(cerr, ErrLogDirOffline) {
			l.log.WithError(cerr).Warn("scrubbing a segment")
		}
		return n, false
	}
	return n, more
}

// Unverified reports how many of the log's segments hold bytes not CRC-checked since they
// were loaded (tests, diagnostics).
func (l *Log) Unverified() int {
	l.mu.RLock()
	defer l.mu.RUnlock()
	n := 0
	for _, s := range l.segs {
		if s.verify != nil && !s.verify.complete.Load() {
			n++
		}
	}
	return n
}

// writeCorruptionCheckpoint writes dir's recovery-point checkpoint after a corrupt batch was
// found in one of its logs, the dir being offline already (so nothing else writes there any
// more): each log's recovery point, lowered to the base offset of its corrupt segment, so the
// next start recovers that segment. It is the one write to an offline dir: the dir's I/O did
// not fail, its stored data did.
func (m *Manager) writeCorruptionCheckpoint(dir string) error {
	m.checkpointMu.Lock()
	defer m.checkpointMu.Unlock()
	recovery := map[TopicPartition]int64{}
	m.mu.RLock()
	for tp, l := range m.logs {
		if m.dirOf[tp] == dir {
			rp := l.status().recoveryPoint
			if c := l.corruptFrom.Load(); c >= 0 {
				rp = min(rp, c)
			}
			recovery[tp] = rp
		}
	}
	m.mu.RUnlock()
	path := filepath.Join(dir, recoveryPointCheckpointFile)
	m.writtenMu.Lock()
	delete(m.written, path)
	m.writtenMu.Unlock()
	return writeOffsetCheckpoint(m.fs, path, recovery)
}
