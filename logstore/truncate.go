package logstore

import (
	"errors"
	"fmt"

	"github.com/sirupsen/logrus"
)

// MaybeIncrementLogStartOffset raises the log start offset (a follower mirrors the leader's,
// DeleteRecords); it never lowers it and never passes the LEO. Segments wholly below it are
// removed by the next retention pass.
func (l *Log) MaybeIncrementLogStartOffset(offset int64) {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if l.health.check() != nil {
		return // offline dir: nothing is written to it again (logdir_failure.go)
	}
	l.mu.Lock()
	if offset > l.leo {
		offset = l.leo
	}
	if offset <= l.logStart {
		l.mu.Unlock()
		return
	}
	l.logStart = offset
	changed := l.epochs.truncateFromStart(offset)
	epochs := l.epochs.snapshot()
	l.mu.Unlock()
	if changed {
		if err := l.epochs.persist(epochs); err != nil {
			_ = l.health.failed(fmt.Errorf("logstore: writing leader-epoch-checkpoint of %s: %w", l.dir, err)) // offline (KIP-112)
		}
	}
}

// TruncateTo keeps the batches whose last offset is below offset: the LEO becomes the base
// offset of the first removed batch (a batch boundary). Epoch entries starting at or after
// the new LEO are dropped (K1). For offset >= LEO the log is left as it is, but epoch entries
// starting at or after the LEO are still dropped: a replica that became leader and wrote
// nothing holds such an entry, and a follower keeping it would ask OffsetForLeaderEpoch about
// that epoch forever (KAFKA-10706).
//
// A truncation that removes batches is all or nothing, also across a crash at any step
// (truncate_swap.go); an error before its commit leaves the log as it was. It is
// PrepareTruncateTo and Commit in one call.
func (l *Log) TruncateTo(offset int64) error {
	p, err := l.PrepareTruncateTo(offset)
	if err != nil {
		return err
	}
	return p.Commit()
}

// truncationAttempts is how many times a truncation is prepared without holding appendMu before
// the last attempt holds it throughout (then nothing can make the plan stale).
const truncationAttempts = 3

// PrepareTruncateTo does the slow part of TruncateTo(offset) without the log's appendMu, flushMu
// and mu, so that the caller can hold no lock another partition needs while it runs: it plans the
// cut and copies the kept bytes of the cut segment to a new, fsynced file. Commit applies it,
// Abort drops it; other truncations of this log wait until then. An error leaves the log as it
// was.
func (l *Log) PrepareTruncateTo(offset int64) (*PreparedTruncation, error) {
	l.truncMu.Lock()
	p, err := newPreparedTruncation(l, offset)
	if err != nil {
		l.truncMu.Unlock()
		return nil, err
	}
	return p, nil
}

// Commit applies the prepared truncation. When the log changed meanwhile so that the copy no
// longer fits it (retention or the cleaner replaced the cut segment), the truncation is
// prepared again, the last time with appendMu held throughout.
func (p *PreparedTruncation) Commit() error {
	if p.done {
		return errors.New("logstore: truncation already committed or aborted")
	}
	p.done = true
	l := p.l
	defer l.truncMu.Unlock()
	for attempt := 1; ; attempt++ {
		l.appendMu.Lock()
		l.flushMu.Lock()
		err := p.commit()
		l.flushMu.Unlock()
		l.appendMu.Unlock()
		if !errors.Is(err, errTruncationStale) {
			return err
		}
		if attempt+1 < truncationAttempts {
			if p, err = newPreparedTruncation(l, p.offset); err != nil {
				return err
			}
			continue
		}
		// the last attempt: planned, copied and committed with appendMu held
		l.appendMu.Lock()
		defer l.appendMu.Unlock()
		l.flushMu.Lock()
		defer l.flushMu.Unlock()
		if p, err = newPreparedTruncation(l, p.offset); err != nil {
			return err
		}
		return p.commit()
	}
}

// Abort drops the prepared truncation: the log stays as it is.
func (p *PreparedTruncation) Abort() {
	if p.done {
		return
	}
	p.done = true
	p.discard()
	p.l.truncMu.Unlock()
}

// NewLogEndOffset is the LEO the truncation leaves (the LEO as prepared for one at or above it).
func (p *PreparedTruncation) NewLogEndOffset() int64 { return p.newLEO }

// truncateEpochsAtLEO commits TruncateTo(offset) for offset >= LEO (appendMu held): only the
// epoch entries starting at or after the LEO go (KAFKA-10706).
func (p *PreparedTruncation) truncateEpochsAtLEO() error {
	l, offset := p.l, p.offset
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return ErrClosed
	}
	if err := l.health.check(); err != nil { // offline dir: no truncation (logdir_failure.go)
		l.mu.Unlock()
		return err
	}
	if offset < l.leo {
		l.mu.Unlock()
		return errTruncationStale // appended meanwhile (not on a follower): plan again
	}
	changed := l.epochs.truncateFromEnd(l.leo)
	epochs := l.epochs.snapshot()
	leo := l.leo
	l.mu.Unlock()
	if changed {
		l.log.WithFields(logrus.Fields{"targetOffset": offset, "logEndOffset": leo, "epochs": epochs}).
			Info("truncation at or above the LEO: dropped leader epoch entries starting at or after the LEO")
		return l.epochs.persist(epochs)
	}
	return nil
}

// TruncateFullyAndStartAt deletes every segment and starts an empty log at offset: LEO, log
// start and recovery point become offset and the epoch cache is cleared (S20). The segments
// are deleted oldest first, so a crash leaves a suffix of the log (the fetcher finds it out of
// range again), and the epoch cache and the recovery point checkpoint are written before it
// returns (as TruncateTo's).
func (l *Log) TruncateFullyAndStartAt(offset int64) error {
	l.truncMu.Lock()
	defer l.truncMu.Unlock()
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	if err := l.truncateFullyLocked(offset); err != nil {
		return err
	}
	if err := l.epochs.persist(nil); err != nil {
		return l.health.failed(fmt.Errorf("logstore: writing leader-epoch-checkpoint of %s: %w", l.dir, err)) // offline (KIP-112)
	}
	if l.checkpointOffsets != nil {
		return l.checkpointOffsets()
	}
	return nil
}

// truncateFullyLocked (appendMu and flushMu held) replaces all segments by an empty one.
func (l *Log) truncateFullyLocked(offset int64) error {
	if offset < 0 {
		offset = 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.health.check(); err != nil { // offline dir: no truncation (logdir_failure.go)
		return err
	}
	if l.closed {
		return ErrClosed
	}
	l.cleaning.abort(offset)
	var err error
	for _, s := range l.segs {
		if err == nil {
			err = s.markDeleted(0)
		} else if s.f != nil {
			s.f.Close() // kept: a crash leaves a suffix of the log, and so does a failed rename
		}
	}
	l.segs = nil
	l.recent = nil
	var s *segment
	if err == nil {
		s, err = createSegment(l.fs, l.dir, offset, l.now())
	}
	if err != nil {
		// no segment left: the log is failed (its old files are `.deleted`, removed at the next
		// open) and its dir offline (an I/O error on it, KIP-112)
		l.log.WithError(err).Error("marking the log failed: no segment after a full truncation")
		l.closed = true
		l.cleaning.gen++
		return l.health.failed(fmt.Errorf("logstore: truncating %s fully: %w", l.dir, err))
	}
	l.segs = []*segment{s}
	l.producers = producerState{}
	l.leo, l.logStart, l.recoveryPoint, l.hw = offset, offset, offset, offset
	l.epochs.entries = nil
	l.log.WithField("targetOffset", offset).Info("truncated log fully")
	return nil
}
