package logstore

import (
	"context"
	"time"

	"github.com/sirupsen/logrus"
)

// CleanerOverrides are dynamic values of the cleaner's thread settings (KIP-226: the
// cluster-wide broker keys log.cleaner.threads, log.cleaner.dedupe.buffer.size and
// log.cleaner.backoff.ms); a zero field means "the value StartCleaner was given".
type CleanerOverrides struct {
	Threads          int
	DedupeBufferSize int64
	Backoff          time.Duration
}

// ReconfigureCleaner applies o as Kafka's LogCleaner.reconfigure does: the cleaner threads
// stop (a cleaning in progress aborts at its next batch and is retried later), then start
// again with the new settings. What the cleaner knows of the logs (in-progress and uncleanable
// marks, the cleaner checkpoints) is kept. Nothing happens when the settings in effect do not
// change, when the cleaner is disabled (log.cleaner.enable is read-only) or after Close.
func (m *Manager) ReconfigureCleaner(o CleanerOverrides) {
	m.mu.Lock()
	c := m.cleaner
	m.mu.Unlock()
	if c == nil {
		return
	}
	c.restartMu.Lock()
	defer c.restartMu.Unlock()
	if c.stopped {
		return
	}
	next := c.static
	if o.Threads > 0 {
		next.Threads = o.Threads
	}
	if o.DedupeBufferSize > 0 {
		next.DedupeBufferSize = o.DedupeBufferSize
	}
	if o.Backoff > 0 {
		next.Backoff = o.Backoff
	}
	if next.Threads == c.cfg.Threads && next.DedupeBufferSize == c.cfg.DedupeBufferSize && next.Backoff == c.cfg.Backoff {
		return
	}
	c.cancel()
	c.wg.Wait()
	// The threads are gone: cfg is read by them without a lock and may be replaced now.
	c.mu.Lock()
	c.cfg = next
	c.lastStats = make([]cleanerStats, next.Threads)
	c.mu.Unlock()
	c.startThreads()
	c.log.WithFields(logrus.Fields{"threads": next.Threads, "dedupeBufferSize": next.DedupeBufferSize, "backoff": next.Backoff}).
		Info("log cleaner reconfigured")
}

// startThreads starts cfg.Threads cleaner threads under a new context.
func (c *cleaner) startThreads() {
	ctx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	for i := 0; i < c.cfg.Threads; i++ {
		c.wg.Add(1)
		go func(id int) {
			defer c.wg.Done()
			c.run(ctx, id)
		}(i)
	}
}
