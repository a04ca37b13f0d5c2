package logstore

import (
	"context"
	"errors"
	"time"
)

// RunBackground runs retention every retentionCheck (log.retention.check.interval.ms),
// time-based flushes (log.flush.interval.ms) and the recovery-point / log-start checkpoints
// every checkpointInterval, until ctx is done. A non-positive interval disables its task.
func (m *Manager) RunBackground(ctx context.Context, retentionCheck, checkpointInterval time.Duration) {
	tick := func(d time.Duration) (<-chan time.Time, func()) {
		if d <= 0 {
			return nil, func() {}
		}
		t := time.NewTicker(d)
		return t.C, t.Stop
	}
	retC, stop1 := tick(retentionCheck)
	defer stop1()
	cpC, stop2 := tick(checkpointInterval)
	defer stop2()
	flushEvery := time.Second
	if fi := m.defaults.FlushInterval; fi > 0 && fi < flushEvery {
		flushEvery = fi
	}
	flushC, stop3 := tick(flushEvery)
	defer stop3()
	go func() { scrubLogs(ctx, m.All()) }() // segments loaded without recovery (scrub.go)
	for {
		select {
		case <-ctx.Done():
			return
		case <-retC:
			now := m.clock.now()
			cleanupLogs(m.All(), now)
		case <-cpC:
			if err := m.Checkpoint(); err != nil {
				m.log.WithError(err).Warn("writing offset checkpoints")
			}
		case <-flushC:
			now := m.clock.now()
			flushDirtyLogs(m.All(), now)
		}
	}
}

// cleanupLogs applies DeleteOldSegments to every log whose topic configuration is known (a
// log loaded at Open waits for GetOrCreate, so a compacted topic never meets the broker's
// delete policy): Kafka's LogManager.cleanupLogs.
func cleanupLogs(logs map[TopicPartition]*Log, now time.Time) {
	for _, l := range logs {
		if !l.status().configured || l.Offline() {
			continue
		}
		if _, err := l.DeleteOldSegments(now); err != nil && !errors.Is(err, ErrClosed) {
			l.log.WithError(err).Warn("retention")
		}
	}
}

// flushDirtyLogs applies log.flush.interval.ms to every online log (Kafka's
// LogManager.flushDirtyLogs).
func flushDirtyLogs(logs map[TopicPartition]*Log, now time.Time) {
	for _, l := range logs {
		if l.Offline() {
			continue
		}
		if err := l.flusher.maybeTimeFlush(now); err != nil && !errors.Is(err, ErrClosed) {
			l.log.WithError(err).Warn("time-based flush")
		}
	}
}
