package logstore

import (
	"fmt"
	"time"

	"github.com/sirupsen/logrus"
)

// DeleteOldSegments applies retention (Log.deleteOldSegments): segments whose largest
// timestamp is older than retention.ms, then the oldest segments while the log exceeds
// retention.bytes, then segments wholly below the log start offset. Only whole segments
// ending at or below the HW are deleted. If the active segment itself qualifies and is not
// empty, the log is rolled first. The log start offset moves to the first remaining segment.
func (l *Log) DeleteOldSegments(now time.Time) (int, error) {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	l.mu.RLock()
	if l.closed {
		l.mu.RUnlock()
		return 0, ErrClosed
	}
	if err := l.health.check(); err != nil {
		l.mu.RUnlock()
		return 0, err // offline dir: nothing is renamed or written in it (logdir_failure.go)
	}
	cfg := l.cfg
	n := l.segs.deletable(cfg, now.UnixMilli(), l.leo, l.hw, l.logStart)
	all := n == len(l.segs)
	l.mu.RUnlock()
	if n == 0 {
		return 0, nil
	}
	if all {
		if _, err := l.rollLocked(l.leo, l.now()); err != nil {
			return 0, err
		}
	}
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	l.mu.Lock()
	dead := l.segs[:n]
	l.segs = append(segmentList(nil), l.segs[n:]...)
	var failed error
	for _, s := range dead {
		l.log.WithFields(logrus.Fields{"segment": s.logPath(), "size": s.size}).Info("deleting segment by retention")
		if failed != nil {
			s.f.Close() // not renamed after a failed rename: the next load finds it again
			continue
		}
		if err := s.markDeleted(cfg.FileDeleteDelay); err != nil {
			failed = l.health.failed(fmt.Errorf("logstore: deleting segment %s: %w", s.logPath(), err))
		}
	}
	if l.segs[0].base > l.logStart {
		l.logStart = l.segs[0].base
	}
	if l.recoveryPoint < l.logStart {
		l.recoveryPoint = l.logStart
	}
	changed := l.epochs.truncateFromStart(l.logStart)
	epochs := l.epochs.snapshot()
	l.mu.Unlock()
	if changed {
		if err := l.epochs.persist(epochs); err != nil && failed == nil {
			failed = l.health.failed(fmt.Errorf("logstore: writing leader-epoch-checkpoint of %s: %w", l.dir, err))
		}
	}
	return n, failed
}

// deletable is the number of leading segments retention deletes (deletableSegments): a
// segment qualifies by retention.ms or retention.bytes (cleanup.policy delete only) or by
// lying wholly below logStart, and only while it ends at or below the HW (or the LEO when the
// HW is unknown, hw < 0); the active segment qualifies only when it is not empty.
func (sl segmentList) deletable(cfg Config, nowMs, leo, hw, logStart int64) int {
	upper := leo
	if hw >= 0 && hw < upper {
		upper = hw
	}
	n := 0 // number of leading segments to delete
	diff := sl.totalSize() - cfg.RetentionBytes
	for i, s := range sl {
		end := sl.endOf(i, leo)
		if end > upper || (i+1 == len(sl) && s.size == 0) {
			break
		}
		del := false
		// time and size retention only with cleanup.policy delete (Log.deleteOldSegments);
		// a compact-only log loses segments only below its log start offset
		if cfg.CleanupPolicy.Delete() && cfg.RetentionMs >= 0 && nowMs-s.largestTimestamp() > cfg.RetentionMs {
			del = true
		}
		if cfg.CleanupPolicy.Delete() && cfg.RetentionBytes >= 0 && diff-s.size >= 0 {
			del = true
		}
		if i+1 < len(sl) && sl[i+1].base <= logStart {
			del = true
		}
		if !del {
			break
		}
		diff -= s.size
		n++
	}
	return n
}
