package logstore

import "github.com/sirupsen/logrus"

// MaybeIncrementLogStartOffset raises the log start offset (a follower mirrors the leader's,
// DeleteRecords); it never lowers it and never passes the LEO. Segments wholly below it are
// removed by the next retention pass.
func (l *Log) MaybeIncrementLogStartOffset(offset int64) {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
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
			l.log.WithError(err).Error("writing leader-epoch-checkpoint")
		}
	}
}

// TruncateTo keeps the batches whose last offset is below offset: the LEO becomes the base
// offset of the first removed batch (a batch boundary). Epoch entries starting at or after
// the new LEO are dropped (K1). For offset >= LEO the log is left as it is, but epoch entries
// starting at or after the LEO are still dropped: a replica that became leader and wrote
// nothing holds such an entry, and a follower keeping it would ask OffsetForLeaderEpoch about
// that epoch forever (KAFKA-10706).
func (l *Log) TruncateTo(offset int64) error {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return ErrClosed
	}
	if err := l.health.check(); err != nil { // offline dir: no truncation (logdir_failure.go)
		l.mu.Unlock()
		return err
	}
	if offset >= l.leo {
		changed := l.epochs.truncateFromEnd(l.leo)
		epochs := l.epochs.snapshot()
		l.mu.Unlock()
		if changed {
			l.log.WithFields(logrus.Fields{"targetOffset": offset, "logEndOffset": l.leo, "epochs": epochs}).
				Info("truncation at or above the LEO: dropped leader epoch entries starting at or after the LEO")
			return l.epochs.persist(epochs)
		}
		return nil
	}
	if offset < 0 {
		offset = 0
	}
	l.cleaning.abort(offset)
	if offset <= l.segs[0].base {
		l.mu.Unlock()
		return l.truncateFullyLocked(offset, false)
	}
	defer l.mu.Unlock()
	kept, newLEO, err := l.segs.truncateTo(offset, l.cfg.IndexIntervalBytes)
	l.segs = kept
	l.recent = nil // positions after the cut change
	if err != nil {
		return err
	}
	l.leo = newLEO
	l.producers.truncateFrom(newLEO)
	if l.logStart > newLEO {
		l.logStart = newLEO
	}
	if l.recoveryPoint > newLEO {
		l.recoveryPoint = newLEO
	}
	if l.hw > newLEO {
		l.hw = newLEO
	}
	l.log.WithFields(logrus.Fields{"targetOffset": offset, "logEndOffset": newLEO}).Info("truncated log")
	if l.epochs.truncateFromEnd(newLEO) {
		if err := l.epochs.persist(l.epochs.snapshot()); err != nil {
			return err
		}
	}
	return nil
}

// TruncateFullyAndStartAt deletes every segment and starts an empty log at offset: LEO, log
// start and recovery point become offset and the epoch cache is cleared (S20).
func (l *Log) TruncateFullyAndStartAt(offset int64) error {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	return l.truncateFullyLocked(offset, true)
}

// truncateFullyLocked (appendMu and flushMu held) replaces all segments by an empty one.
func (l *Log) truncateFullyLocked(offset int64, clearEpochs bool) error {
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
	for _, s := range l.segs {
		s.markDeleted(0)
	}
	l.segs = nil
	l.recent = nil
	s, err := createSegment(l.dir, offset, l.now())
	if err != nil {
		return err
	}
	l.segs = []*segment{s}
	l.producers = producerState{}
	l.leo, l.logStart, l.recoveryPoint = offset, offset, offset
	if l.hw > offset || clearEpochs {
		l.hw = offset
	}
	var changed bool
	if clearEpochs {
		changed = len(l.epochs.entries) > 0
		l.epochs.entries = nil
	} else {
		changed = l.epochs.truncateFromEnd(offset)
	}
	l.log.WithField("targetOffset", offset).Info("truncated log fully")
	if changed {
		return l.epochs.persist(l.epochs.snapshot())
	}
	return nil
}
