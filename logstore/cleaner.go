package logstore

import (
	"context"
	"errors"
	"math"
	"sync"
	"time"

	"github.com/rcrowley/go-metrics"
	"github.com/sirupsen/logrus"
)

// The log cleaner (Kafka 2.4's LogCleaner and LogCleanerManager; docs/compaction.md restates
// the facts it relies on). Every log whose cleanup.policy includes compact is cleaned by the
// replica that holds it, leader or follower alike:
//
//   - The cleanable range of a log runs from its first dirty offset (cleaner-offset-checkpoint,
//     else the log start offset) to its first uncleanable offset: the smallest of the active
//     segment's base offset, the base of the first segment whose records pass
//     min.compaction.lag.ms, and the base of the first segment that ends above the high
//     watermark (isrbroker's own bound: Kafka 2.4 has no transactions to bound it here, and a
//     record above the HW may still be truncated away). The dirtiest log whose dirty ratio
//     (dirty bytes / (clean + dirty bytes)) exceeds min.cleanable.dirty.ratio, or whose oldest
//     dirty batch is older than max.compaction.lag.ms, is cleaned next.
//   - A cleaning maps each key of the dirty range to its latest offset (offsetMap), then
//     rewrites every segment from the start of the log up to the end of the map in groups
//     no larger than segment.bytes: a record is kept when it is the latest for its key, or
//     lies past the map; a tombstone (null value) is kept until its segment is older than
//     delete.retention.ms before the last modification of the last clean segment; a keyless
//     record is removed. Records keep their offsets; a changed batch keeps its base offset,
//     partition leader epoch, base timestamp, producer fields and lastOffsetDelta; an emptied
//     batch is dropped unless it is an active producer's last batch (it stays as an empty
//     batch, which keeps the producer's sequence). Control batches are kept (no transactions).
//   - A cleaned group is written to `<base>.log.cleaned` (+ `.index.cleaned`,
//     `.timeindex.cleaned`), fsynced, then swapped in under the log's locks: `.cleaned` ->
//     `.swap` (the log's `.swap` is the commit point), the old segments' files -> `.deleted`,
//     `.swap` -> final names. Opening a log (completeSwaps) removes `.cleaned` files and
//     finishes a `.swap`: the old segments its offsets overlap are removed and it becomes the
//     segment, with indexes rebuilt. A crash at any step therefore leaves either the old
//     segments or the cleaned one, never both or neither.
//   - A truncation (TruncateTo, TruncateFullyAndStartAt) or Close bumps the log's cleaning
//     generation: an in-progress cleaning notices at its next batch or at the swap (which runs
//     under appendMu, serialised with truncation and retention) and throws its output away;
//     the cleaner checkpoint is lowered to the truncation offset (abortAndPauseCleaning,
//     maybeTruncateCheckpoint). Retention that removed a segment of the group aborts the swap
//     the same way.

// CleanerConfig is the broker-wide cleaner configuration (log.cleaner.*).
type CleanerConfig struct {
	Enable           bool          // log.cleaner.enable (true)
	Threads          int           // log.cleaner.threads (1)
	Backoff          time.Duration // log.cleaner.backoff.ms (15000): sleep when no log needs cleaning
	DedupeBufferSize int64         // log.cleaner.dedupe.buffer.size (134217728), shared by the threads
	Registry         metrics.Registry
}

const (
	cleanerCheckpointFile = "cleaner-offset-checkpoint"
	cleanedSuffix         = ".cleaned"
	swapSuffix            = ".swap"
	maxIndexBytes         = 10 << 20 // log.index.size.max.bytes: bounds a cleaned group's index sizes
)

// errCleaningAborted: the log was truncated, closed or changed under the cleaning.
var errCleaningAborted = errors.New("logstore: log cleaning aborted")

// cleanerStats is one cleaning's accounting (Kafka's CleanerStats).
type cleanerStats struct {
	bytesRead, bytesWritten     int64
	recordsRead, recordsKept    int64
	mapRecords, invalidRecords  int64
	batchesDropped, emptyKept   int64
	bufferUtilization           float64
	start, mapDone, cleanDone   time.Time
	segmentsCleaned, groupsDone int
}

// cleaner runs the cleaner threads of a Manager.
type cleaner struct {
	m   *Manager
	cfg CleanerConfig
	log logrus.FieldLogger

	static CleanerConfig // as StartCleaner got it (server.properties); ReconfigureCleaner overrides it

	// restartMu serialises stop and ReconfigureCleaner's restart; cancel and wg change only
	// under it, and stopped is set by stop (Close) for good.
	restartMu sync.Mutex
	stopped   bool
	cancel    context.CancelFunc
	wg        sync.WaitGroup
	wake      chan struct{}

	mu            sync.Mutex
	inProgress    map[*Log]bool
	uncleanable   map[*Log]bool // cleaning failed on a malformed batch: skipped until restart (markPartitionUncleanable)
	timeOfLastRun time.Time
	dirtiestRatio float64
	lastStats     []cleanerStats // per thread
}

// StartCleaner starts log.cleaner.threads cleaner threads (nothing when log.cleaner.enable
// is false) and registers the LogCleaner metrics. Close stops them before closing the logs.
func (m *Manager) StartCleaner(cfg CleanerConfig) {
	if cfg.Threads <= 0 {
		cfg.Threads = 1
	}
	if cfg.DedupeBufferSize <= 0 {
		cfg.DedupeBufferSize = 128 << 20
	}
	if cfg.Backoff <= 0 {
		cfg.Backoff = 15 * time.Second
	}
	m.mu.Lock()
	if m.closed || m.cleaner != nil || !cfg.Enable {
		m.mu.Unlock()
		return
	}
	c := &cleaner{
		m: m, cfg: cfg, static: cfg, log: m.log.WithField("component", "cleaner"),
		wake:       make(chan struct{}, 1),
		inProgress: map[*Log]bool{}, uncleanable: map[*Log]bool{},
		timeOfLastRun: m.clock.now(), lastStats: make([]cleanerStats, cfg.Threads),
	}
	c.restartMu.Lock()
	m.cleaner = c
	m.mu.Unlock()
	c.registerMetrics()
	c.startThreads()
	c.restartMu.Unlock()
	c.log.WithFields(logrus.Fields{"threads": cfg.Threads, "dedupeBufferSize": cfg.DedupeBufferSize, "backoff": cfg.Backoff}).Info("started log cleaner")
}

// stop cancels the threads (an in-progress cleaning aborts at its next batch) and waits.
func (c *cleaner) stop() {
	c.restartMu.Lock()
	defer c.restartMu.Unlock()
	c.stopped = true
	c.cancel()
	c.wg.Wait()
}

func (c *cleaner) registerMetrics() {
	reg := c.cfg.Registry
	if reg == nil {
		return
	}
	gauge := func(name string, f func() int64) { _ = reg.Register(name, metrics.NewFunctionalGauge(f)) }
	overStats := func(f func(s cleanerStats) float64, agg func(a, b float64) float64) int64 {
		c.mu.Lock()
		defer c.mu.Unlock()
		v := 0.0
		for i, s := range c.lastStats {
			if i == 0 {
				v = f(s)
			} else {
				v = agg(v, f(s))
			}
		}
		return int64(v)
	}
	gauge("kafka.log:type=LogCleaner,name=max-buffer-utilization-percent", func() int64 {
		return overStats(func(s cleanerStats) float64 { return 100 * s.bufferUtilization }, math.Max)
	})
	gauge("kafka.log:type=LogCleaner,name=cleaner-recopy-percent", func() int64 {
		n := float64(len(c.lastStats))
		return overStats(func(s cleanerStats) float64 {
			if s.bytesRead == 0 {
				return 0
			}
			return 100 * float64(s.bytesWritten) / float64(s.bytesRead) / n
		}, func(a, b float64) float64 { return a + b })
	})
	gauge("kafka.log:type=LogCleaner,name=max-clean-time-secs", func() int64 {
		return overStats(func(s cleanerStats) float64 {
			if s.cleanDone.IsZero() {
				return 0
			}
			return s.cleanDone.Sub(s.start).Seconds()
		}, math.Max)
	})
	// Kafka registers these two under LogCleanerManager.
	gauge("kafka.log:type=LogCleanerManager,name=max-dirty-percent", func() int64 {
		c.mu.Lock()
		defer c.mu.Unlock()
		return int64(100 * c.dirtiestRatio)
	})
	gauge("kafka.log:type=LogCleanerManager,name=time-since-last-run-ms", func() int64 {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.m.clock.now().Sub(c.timeOfLastRun).Milliseconds()
	})
}

// run is one cleaner thread (CleanerThread.doWork): clean the filthiest log, else back off.
func (c *cleaner) run(ctx context.Context, id int) {
	t := &cleanerThread{c: c, id: id}
	for {
		if ctx.Err() != nil {
			return
		}
		cleaned := t.cleanFilthiestLog(ctx)
		if cleaned {
			continue
		}
		timer := time.NewTimer(c.cfg.Backoff)
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-timer.C:
		case <-c.wake:
			timer.Stop()
		}
	}
}

// logToClean is one candidate log and its cleanable range (LogToClean).
type logToClean struct {
	l                            *Log
	firstDirty, firstUncleanable int64
	cleanBytes, cleanableBytes   int64
	needNow                      bool // dirty data older than max.compaction.lag.ms
}

func (t logToClean) ratio() float64 {
	total := t.cleanBytes + t.cleanableBytes
	if total == 0 {
		return 0
	}
	return float64(t.cleanableBytes) / float64(total)
}

// grabFilthiestLog picks the log to clean and marks it in progress (grabFilthiestCompactedLog).
func (c *cleaner) grabFilthiestLog() (logToClean, bool) {
	now := c.m.clock.now()
	logs := c.m.All()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.timeOfLastRun = now
	var best logToClean
	found := false
	dirtiest := 0.0
	for _, l := range logs {
		if c.inProgress[l] || c.uncleanable[l] || l.Offline() {
			continue
		}
		ltc, ok := cleanableOffsets(l, now)
		if !ok || ltc.cleanBytes+ltc.cleanableBytes == 0 {
			continue
		}
		r := ltc.ratio()
		dirtiest = max(dirtiest, r)
		cfg := l.Config()
		if !((ltc.needNow && ltc.cleanableBytes > 0) || (ltc.cleanableBytes > 0 && r > cfg.MinCleanableRatio)) {
			continue
		}
		if !found || r > best.ratio() {
			best, found = ltc, true
		}
	}
	c.dirtiestRatio = dirtiest
	if found {
		c.inProgress[best.l] = true
	}
	return best, found
}

// cleanableOffsets computes l's cleanable range at now (LogCleanerManager.cleanableOffsets,
// calculateCleanableBytes, maxCompactionDelay). ok is false for a log that is not compacted,
// closed, or still waiting for its topic configuration.
func cleanableOffsets(l *Log, now time.Time) (logToClean, bool) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed || !l.configured || !l.cfg.CleanupPolicy.Compact() || len(l.segs) < 2 {
		return logToClean{}, false
	}
	cfg := l.cfg
	nowMs := now.UnixMilli()
	firstDirty := l.cleaning.checkpoint
	if firstDirty < l.logStart || firstDirty > l.leo {
		firstDirty = l.logStart
	}
	n := len(l.segs)
	endOf := func(i int) int64 { return l.segs.endOf(i, l.leo) }
	firstUncleanable := l.segs[n-1].base // the active segment is never cleaned
	for i := 0; i < n-1; i++ {
		s := l.segs[i]
		if l.hw >= 0 && endOf(i) > l.hw {
			firstUncleanable = min(firstUncleanable, s.base)
			break
		}
	}
	if cfg.MinCompactionLagMs > 0 {
		for i := 0; i < n-1; i++ {
			s := l.segs[i]
			if endOf(i) <= firstDirty {
				continue
			}
			if s.largestTimestamp() > nowMs-cfg.MinCompactionLagMs {
				firstUncleanable = min(firstUncleanable, s.base)
				break
			}
		}
	}
	firstUncleanable = max(firstUncleanable, firstDirty)
	ltc := logToClean{l: l, firstDirty: firstDirty, firstUncleanable: firstUncleanable}
	earliestDirtyTs := int64(math.MaxInt64)
	for i, s := range l.segs {
		if s.base >= firstUncleanable {
			break
		}
		if endOf(i) <= firstDirty {
			ltc.cleanBytes += s.size
			continue
		}
		ltc.cleanableBytes += s.size
		if ts := s.firstBatchMaxTimestamp(); ts > 0 {
			earliestDirtyTs = min(earliestDirtyTs, ts)
		}
	}
	if cfg.MaxCompactionLagMs < nowMs && earliestDirtyTs < nowMs-cfg.MaxCompactionLagMs {
		ltc.needNow = true
	}
	return ltc, true
}

// doneCleaning releases the log; on success the cleaner checkpoint file of its dir is
// rewritten (LogCleanerManager.doneCleaning).
func (c *cleaner) doneCleaning(l *Log, stats cleanerStats, threadID int, ok bool) {
	c.mu.Lock()
	delete(c.inProgress, l)
	if ok {
		c.lastStats[threadID] = stats
	}
	c.mu.Unlock()
	if ok {
		if err := c.m.checkpoints.writeCleanerCheckpoints(); err != nil {
			l.log.WithError(err).Warn("writing cleaner-offset-checkpoint")
		}
	}
}
