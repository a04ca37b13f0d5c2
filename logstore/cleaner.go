package logstore

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/rcrowley/go-metrics"
	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kmsg"
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

	cancel context.CancelFunc
	wg     sync.WaitGroup
	wake   chan struct{}

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
	ctx, cancel := context.WithCancel(context.Background())
	c := &cleaner{
		m: m, cfg: cfg, log: m.log.WithField("component", "log-cleaner"),
		cancel: cancel, wake: make(chan struct{}, 1),
		inProgress: map[*Log]bool{}, uncleanable: map[*Log]bool{},
		timeOfLastRun: m.now(), lastStats: make([]cleanerStats, cfg.Threads),
	}
	m.cleaner = c
	m.mu.Unlock()
	c.registerMetrics()
	for i := 0; i < cfg.Threads; i++ {
		c.wg.Add(1)
		go func(id int) {
			defer c.wg.Done()
			c.run(ctx, id)
		}(i)
	}
	c.log.WithFields(logrus.Fields{"threads": cfg.Threads, "dedupeBufferSize": cfg.DedupeBufferSize, "backoff": cfg.Backoff}).Info("started log cleaner")
}

// stop cancels the threads (an in-progress cleaning aborts at its next batch) and waits.
func (c *cleaner) stop() {
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
		return c.m.now().Sub(c.timeOfLastRun).Milliseconds()
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
	now := c.m.now()
	logs := c.m.All()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.timeOfLastRun = now
	var best logToClean
	found := false
	dirtiest := 0.0
	for _, l := range logs {
		if c.inProgress[l] || c.uncleanable[l] {
			continue
		}
		ltc, ok := l.cleanableRange(now)
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

// cleanableRange computes the log's cleanable range at now (LogCleanerManager.cleanableOffsets,
// calculateCleanableBytes, maxCompactionDelay). ok is false for a log that is not compacted,
// closed, or still waiting for its topic configuration.
func (l *Log) cleanableRange(now time.Time) (logToClean, bool) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed || !l.configured || !l.cfg.CleanupPolicy.Compact() || len(l.segs) < 2 {
		return logToClean{}, false
	}
	cfg := l.cfg
	nowMs := now.UnixMilli()
	firstDirty := l.cleanerCheckpoint
	if firstDirty < l.logStart || firstDirty > l.leo {
		firstDirty = l.logStart
	}
	n := len(l.segs)
	endOf := func(i int) int64 {
		if i+1 < n {
			return l.segs[i+1].base
		}
		return l.leo
	}
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

// firstBatchMaxTimestamp is the maxTimestamp of the segment's first batch, -1 if none
// (LogSegment.getFirstBatchTimestamp).
func (s *segment) firstBatchMaxTimestamp() int64 {
	if s.size < batchHeaderSize {
		return -1
	}
	var hdr [batchHeaderSize]byte
	if _, err := s.f.ReadAt(hdr[:], 0); err != nil {
		return -1
	}
	return parseHeader(hdr[:]).MaxTimestamp
}

// lastModified is the segment file's modification time in ms (LogSegment.lastModified).
func (s *segment) lastModified() int64 {
	fi, err := s.f.Stat()
	if err != nil {
		return 0
	}
	return fi.ModTime().UnixMilli()
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
		if err := c.m.writeCleanerCheckpoints(); err != nil {
			l.log.WithError(err).Warn("writing cleaner-offset-checkpoint")
		}
	}
}

// cleanerThread holds one thread's offset map and buffers.
type cleanerThread struct {
	c       *cleaner
	id      int
	omap    *offsetMap
	recs    []batchRecord
	keep    []batchRecord
	scratch bytes.Buffer
	out     []byte
}

// cleanFilthiestLog cleans one log if any needs it and reports whether it did.
func (t *cleanerThread) cleanFilthiestLog(ctx context.Context) bool {
	ltc, ok := t.c.grabFilthiestLog()
	if !ok {
		return false
	}
	if t.omap == nil {
		t.omap = newOffsetMap(t.c.cfg.DedupeBufferSize / int64(t.c.cfg.Threads))
	}
	stats, err := t.clean(ctx, ltc)
	switch {
	case err == nil:
		t.c.doneCleaning(ltc.l, stats, t.id, true)
	case errors.Is(err, errCleaningAborted) || ctx.Err() != nil:
		ltc.l.log.WithError(err).Info("log cleaning aborted")
		t.c.doneCleaning(ltc.l, stats, t.id, false)
	case errors.Is(err, ErrCorruptMessage) || errors.Is(err, ErrInvalidRecord):
		ltc.l.log.WithError(err).Error("log cleaning failed; the partition is marked uncleanable until restart")
		t.c.mu.Lock()
		t.c.uncleanable[ltc.l] = true
		t.c.mu.Unlock()
		t.c.doneCleaning(ltc.l, stats, t.id, false)
	default:
		ltc.l.log.WithError(err).Warn("log cleaning failed")
		t.c.doneCleaning(ltc.l, stats, t.id, false)
	}
	return true
}

// clean cleans ltc's log once (Cleaner.clean/doClean) and moves its cleaner checkpoint to the
// end of the offset map.
func (t *cleanerThread) clean(ctx context.Context, ltc logToClean) (cleanerStats, error) {
	l := ltc.l
	stats := cleanerStats{start: time.Now()}
	l.mu.RLock()
	if l.closed {
		l.mu.RUnlock()
		return stats, errCleaningAborted
	}
	gen := l.cleanGen
	segs := append([]*segment(nil), l.segs[:len(l.segs)-1]...)
	sizes := make([]int64, len(segs))
	for i, s := range segs {
		sizes[i] = s.size
	}
	cfg := l.cfg
	l.mu.RUnlock()
	abort := func() error {
		if ctx.Err() != nil {
			return errCleaningAborted
		}
		l.mu.RLock()
		defer l.mu.RUnlock()
		if l.closed || l.cleanGen != gen {
			return errCleaningAborted
		}
		return nil
	}

	// tombstones of segments last modified before this horizon are removed: delete.retention.ms
	// before the last modification of the last clean segment
	deleteHorizonMs := int64(0)
	for _, s := range segs {
		if s.base < ltc.firstDirty {
			deleteHorizonMs = s.lastModified() - cfg.DeleteRetentionMs
		}
	}

	// 1. the offset map of the dirty range
	t.omap.clear()
	full := false
	for i, s := range segs {
		if full || s.base >= ltc.firstUncleanable {
			break
		}
		end := ltc.firstUncleanable
		if i+1 < len(segs) && segs[i+1].base < end {
			end = segs[i+1].base
		}
		if end <= ltc.firstDirty {
			continue
		}
		startPos := int64(0)
		if s.base <= ltc.firstDirty {
			l.mu.RLock()
			startPos = s.lookup(ltc.firstDirty)
			l.mu.RUnlock()
		}
		var err error
		full, err = t.mapSegment(s, startPos, sizes[i], ltc.firstDirty, &stats, abort)
		if err != nil {
			return stats, err
		}
		if !full {
			t.omap.updateLatest(end - 1)
		}
	}
	if t.omap.latest < ltc.firstDirty {
		return stats, fmt.Errorf("logstore: the offset map (log.cleaner.dedupe.buffer.size / log.cleaner.threads = %d slots) cannot hold one batch of %s-%d", t.omap.slots(), l.tp.Topic, l.tp.Partition)
	}
	endOffset := t.omap.latest + 1
	stats.mapDone = time.Now()
	stats.bufferUtilization = t.omap.utilization()

	// 2. the active producers' last batches are kept even when emptied
	l.appendMu.Lock()
	lastOfProducer := make(map[int64]int64, len(l.producers))
	for pid, list := range l.producers {
		if len(list) > 0 {
			lastOfProducer[pid] = list[len(list)-1].lastOffset
		}
	}
	l.appendMu.Unlock()

	// 3. clean every segment below endOffset, in groups
	n := sort.Search(len(segs), func(i int) bool { return segs[i].base >= endOffset })
	maxGroupBytes := min(cfg.SegmentBytes, math.MaxInt32)
	for _, g := range groupSegments(segs[:n], sizes[:n], maxGroupBytes, ltc.firstUncleanable) {
		if err := t.cleanSegments(l, gen, segs[g[0]:g[1]], sizes[g[0]:g[1]], deleteHorizonMs, lastOfProducer, cfg, &stats, abort); err != nil {
			return stats, err
		}
		stats.groupsDone++
		stats.segmentsCleaned += g[1] - g[0]
	}
	stats.cleanDone = time.Now()

	l.mu.Lock()
	if l.closed || l.cleanGen != gen {
		l.mu.Unlock()
		return stats, errCleaningAborted
	}
	l.cleanerCheckpoint = endOffset
	l.mu.Unlock()
	l.log.WithFields(logrus.Fields{
		"firstDirtyOffset": ltc.firstDirty, "endOffset": endOffset, "segments": stats.segmentsCleaned,
		"bytesRead": stats.bytesRead, "bytesWritten": stats.bytesWritten,
		"recordsKept": stats.recordsKept, "recordsRemoved": stats.recordsRead - stats.recordsKept,
		"bufferUtilization": fmt.Sprintf("%.1f%%", 100*stats.bufferUtilization),
		"duration":          stats.cleanDone.Sub(stats.start).String(), "mapDuration": stats.mapDone.Sub(stats.start).String(),
	}).Info("cleaned log")
	return stats, nil
}

// groupSegments splits segs into runs [from, to) whose sizes add up to at most maxBytes, whose
// indexes stay under log.index.size.max.bytes and whose offsets fit one segment's 32-bit
// relative offsets (Cleaner.groupSegmentsBySize). The end of the last segment is estimated by
// the next segment's base, or firstUncleanable.
func groupSegments(segs []*segment, sizes []int64, maxBytes int64, firstUncleanable int64) [][2]int {
	var groups [][2]int
	for i := 0; i < len(segs); {
		j := i + 1
		total := sizes[i]
		idx := int64(len(segs[i].ix.idx)) * offsetEntrySize
		tidx := int64(len(segs[i].ix.tidx)) * timeEntrySize
		for j < len(segs) {
			lastOffset := firstUncleanable - 1
			if j+1 < len(segs) {
				lastOffset = segs[j+1].base - 1
			}
			nIdx := int64(len(segs[j].ix.idx)) * offsetEntrySize
			nTidx := int64(len(segs[j].ix.tidx)) * timeEntrySize
			if total+sizes[j] > maxBytes || idx+nIdx > maxIndexBytes || tidx+nTidx > maxIndexBytes ||
				lastOffset-segs[i].base > math.MaxInt32 {
				break
			}
			total += sizes[j]
			idx += nIdx
			tidx += nTidx
			j++
		}
		groups = append(groups, [2]int{i, j})
		i = j
	}
	return groups
}

// forEachBatch reads the whole batches of s in [startPos, size) in order.
func forEachBatch(s *segment, startPos, size int64, fn func(b []byte, h BatchHeader) error) error {
	if startPos >= size {
		return nil
	}
	br := bufio.NewReaderSize(io.NewSectionReader(s.f, startPos, size-startPos), 1<<20)
	var buf []byte
	for pos := startPos; pos < size; {
		if size-pos < batchHeaderSize {
			return fmt.Errorf("%w: %d trailing bytes at %d in %s", ErrCorruptMessage, size-pos, pos, s.logPath())
		}
		if cap(buf) < batchHeaderSize {
			buf = make([]byte, batchHeaderSize, 64<<10)
		}
		buf = buf[:batchHeaderSize]
		if _, err := io.ReadFull(br, buf); err != nil {
			return fmt.Errorf("logstore: read %s: %w", s.logPath(), err)
		}
		h := parseHeader(buf)
		if h.Length < minBatchLength || pos+int64(h.Size()) > size {
			return fmt.Errorf("%w: bad batch length %d at %d in %s", ErrCorruptMessage, h.Length, pos, s.logPath())
		}
		if cap(buf) < h.Size() {
			nb := make([]byte, h.Size())
			copy(nb, buf)
			buf = nb
		}
		buf = buf[:h.Size()]
		if _, err := io.ReadFull(br, buf[batchHeaderSize:]); err != nil {
			return fmt.Errorf("logstore: read %s: %w", s.logPath(), err)
		}
		if err := fn(buf, h); err != nil {
			return err
		}
		pos += int64(h.Size())
	}
	return nil
}

// mapSegment adds the keys of s's records at or after firstDirty to the offset map
// (buildOffsetMapForSegment). It reports full when the map reached its load factor; the
// map's latest offset then is the last record mapped.
func (t *cleanerThread) mapSegment(s *segment, startPos, size, firstDirty int64, stats *cleanerStats, abort func() error) (bool, error) {
	maxEntries := t.omap.maxEntries()
	full := false
	errFull := errors.New("full")
	err := forEachBatch(s, startPos, size, func(b []byte, h BatchHeader) error {
		if err := abort(); err != nil {
			return err
		}
		if h.LastOffset() < firstDirty {
			return nil
		}
		if !h.IsControl() {
			var rb kmsg.RecordBatch
			if err := rb.ReadFrom(b); err != nil {
				return fmt.Errorf("%w: %v", ErrCorruptMessage, err)
			}
			var err error
			if t.recs, err = batchRecords(&rb, t.recs); err != nil {
				return err
			}
			for _, r := range t.recs {
				if r.key == nil || r.offset < firstDirty {
					continue
				}
				if t.omap.entries >= maxEntries {
					full = true
					return errFull
				}
				t.omap.put(r.key, r.offset)
				stats.mapRecords++
			}
		}
		t.omap.updateLatest(h.LastOffset())
		return nil
	})
	if err == errFull {
		return true, nil
	}
	if err != nil {
		return full, err
	}
	return false, nil
}

// cleanSegments cleans one group into a single replacement segment and swaps it in
// (Cleaner.cleanSegments, cleanInto).
func (t *cleanerThread) cleanSegments(l *Log, gen uint64, group []*segment, sizes []int64, deleteHorizonMs int64,
	lastOfProducer map[int64]int64, cfg Config, stats *cleanerStats, abort func() error) (err error) {
	base := group[0].base
	paths := cleanedPaths(l.dir, base)
	f, err := os.OpenFile(paths.log, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	swapped := false
	defer func() {
		if !swapped {
			f.Close()
			if err == errSwapStopped {
				return // a simulated crash leaves its files behind
			}
			for _, p := range []string{paths.log, paths.index, paths.timeIndex} {
				os.Remove(p)
			}
		}
	}()
	if l.testStep("group") {
		return errSwapStopped
	}
	w := bufio.NewWriterSize(f, 1<<20)
	ix := newIndexState(base)
	var pos int64
	write := func(b []byte, h BatchHeader) error {
		if pos+int64(len(b)) > math.MaxInt32 || h.LastOffset()-base > math.MaxInt32 {
			return fmt.Errorf("logstore: cleaned segment %d of %s-%d would overflow", base, l.tp.Topic, l.tp.Partition)
		}
		ix.add(base, h, pos, cfg.IndexIntervalBytes)
		if _, err := w.Write(b); err != nil {
			return err
		}
		pos += int64(len(b))
		stats.bytesWritten += int64(len(b))
		return nil
	}
	latest := t.omap.latest
	for gi, s := range group {
		retainDeletes := s.lastModified() > deleteHorizonMs
		err := forEachBatch(s, 0, sizes[gi], func(b []byte, h BatchHeader) error {
			if err := abort(); err != nil {
				return err
			}
			stats.bytesRead += int64(len(b))
			if h.IsControl() {
				// no transactions in isrbroker: markers are kept as they are
				return write(b, h)
			}
			var rb kmsg.RecordBatch
			if err := rb.ReadFrom(b); err != nil {
				return fmt.Errorf("%w: %v", ErrCorruptMessage, err)
			}
			var err error
			if t.recs, err = batchRecords(&rb, t.recs); err != nil {
				return err
			}
			t.keep = t.keep[:0]
			for _, r := range t.recs {
				stats.recordsRead++
				switch {
				case r.offset > latest:
					t.keep = append(t.keep, r)
				case r.key == nil:
					stats.invalidRecords++ // Kafka removes keyless records of a compacted log
				case r.offset >= t.omap.get(r.key) && (r.hasValue || retainDeletes):
					t.keep = append(t.keep, r)
				}
			}
			stats.recordsKept += int64(len(t.keep))
			if len(t.keep) == len(t.recs) {
				return write(b, h)
			}
			lastOfPid, active := lastOfProducer[rb.ProducerID]
			retainEmpty := rb.ProducerID >= 0 && active && lastOfPid == h.LastOffset()
			if len(t.keep) == 0 && !retainEmpty {
				stats.batchesDropped++
				return nil
			}
			if len(t.keep) == 0 {
				stats.emptyKept++
			}
			t.out, err = rebuildBatch(t.out[:0], &rb, t.keep, &t.scratch)
			if err != nil {
				return err
			}
			nh, err := checkBatchAt(t.out)
			if err != nil {
				return fmt.Errorf("logstore: rebuilt batch at %d is invalid: %w", h.BaseOffset, err)
			}
			return write(t.out, nh)
		})
		if err != nil {
			return err
		}
	}
	if err := w.Flush(); err != nil {
		return err
	}
	ix.maybeAppendTime(base) // the cleaned segment is inactive (onBecomeInactiveSegment)
	if err := f.Sync(); err != nil {
		return err
	}
	if err := writeSynced(paths.index, encodeOffsetEntries(ix.idx)); err != nil {
		return err
	}
	if err := writeSynced(paths.timeIndex, encodeTimeEntries(ix.tidx)); err != nil {
		return err
	}
	// the cleaned segment keeps the last modification time of the segments it replaces
	mtime := time.UnixMilli(group[len(group)-1].lastModified())
	if err := os.Chtimes(paths.log, mtime, mtime); err != nil {
		return err
	}
	if l.testStep("beforeSwap") {
		return errSwapStopped
	}
	ns := &segment{
		base: base, dir: l.dir, f: f, size: pos, ix: ix, created: l.now(),
		flushedSize: pos, idxPersisted: len(ix.idx), tidxPersisted: len(ix.tidx),
	}
	if err := l.replaceSegments(group, ns, gen); err != nil {
		return err
	}
	swapped = true
	return nil
}

type segmentPaths struct{ log, index, timeIndex string }

func cleanedPaths(dir string, base int64) segmentPaths {
	n := filepath.Join(dir, segmentName(base))
	return segmentPaths{n + logSuffix + cleanedSuffix, n + indexSuffix + cleanedSuffix, n + timeIndexSuffix + cleanedSuffix}
}

// replaceSegments swaps the cleaned segment ns in for group (Log.replaceSegments): under
// appendMu and flushMu, so no append, roll, truncation, retention or flush interleaves, and
// only if no truncation or Close happened since the cleaning started (gen) and every
// segment of the group is still in the log.
func (l *Log) replaceSegments(group []*segment, ns *segment, gen uint64) error {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	l.mu.RLock()
	at := -1
	if !l.closed && l.cleanGen == gen {
		for i, s := range l.segs {
			if s == group[0] {
				at = i
				break
			}
		}
	}
	ok := at >= 0 && at+len(group) < len(l.segs) // never up to the active segment
	for k := 0; ok && k < len(group); k++ {
		ok = l.segs[at+k] == group[k]
	}
	l.mu.RUnlock()
	if !ok {
		return errCleaningAborted
	}
	stop := l.testStep
	cleaned := cleanedPaths(l.dir, ns.base)
	final := segmentPaths{ns.logPath(), ns.indexPath(), ns.timeIndexPath()}
	swap := segmentPaths{final.log + swapSuffix, final.index + swapSuffix, final.timeIndex + swapSuffix}
	// 1. .cleaned -> .swap; the log's .swap, renamed last, commits the swap
	for _, r := range [][2]string{{cleaned.index, swap.index}, {cleaned.timeIndex, swap.timeIndex}, {cleaned.log, swap.log}} {
		if err := os.Rename(r[0], r[1]); err != nil {
			return fmt.Errorf("logstore: swapping in cleaned segment: %w", err)
		}
		if stop("swap:" + filepath.Ext(strings.TrimSuffix(r[1], swapSuffix))) {
			return errSwapStopped
		}
	}
	if err := syncDir(l.dir); err != nil {
		return err
	}
	// 2. the old segments' files -> .deleted (open descriptors keep serving readers)
	var deleted []string
	for _, s := range group {
		for _, p := range []string{s.logPath(), s.indexPath(), s.timeIndexPath()} {
			if err := os.Rename(p, p+deletedSuffix); err == nil {
				deleted = append(deleted, p+deletedSuffix)
			} else if !os.IsNotExist(err) {
				return fmt.Errorf("logstore: swapping in cleaned segment: %w", err)
			}
		}
		if stop("deleted") {
			return errSwapStopped
		}
	}
	// 3. .swap -> final names
	for _, r := range [][2]string{{swap.index, final.index}, {swap.timeIndex, final.timeIndex}, {swap.log, final.log}} {
		if err := os.Rename(r[0], r[1]); err != nil {
			return fmt.Errorf("logstore: swapping in cleaned segment: %w", err)
		}
		if stop("final:" + filepath.Ext(r[1])) {
			return errSwapStopped
		}
	}
	if err := syncDir(l.dir); err != nil {
		return err
	}
	l.mu.Lock()
	segs := make([]*segment, 0, len(l.segs)-len(group)+1)
	segs = append(segs, l.segs[:at]...)
	segs = append(segs, ns)
	segs = append(segs, l.segs[at+len(group):]...)
	l.segs = segs
	for _, s := range group {
		s.f.Close()
	}
	delay := l.cfg.FileDeleteDelay
	l.mu.Unlock()
	removeAfter(deleted, delay)
	return nil
}

// testStep runs the test hook at a step of a cleaning; true stops the cleaning there, as a
// crash would (the files are left as they are).
func (l *Log) testStep(step string) bool { return l.testHook != nil && l.testHook(step) }

// errSwapStopped: the test hook stopped a cleaning (tests simulating a crash).
var errSwapStopped = errors.New("logstore: swap stopped by test hook")

// completeSwaps finishes or rolls back a cleaning interrupted by a crash, before segments are
// loaded (Log.removeTempFilesAndCollectSwapFiles, completeSwapOperations): `.cleaned` files
// are removed (the swap had not started), index `.swap` files are removed (indexes are
// rebuilt), and each `<base>.log.swap` replaces every segment whose base offset lies in
// [base, its next offset): those segments' files are removed and the swap file becomes
// `<base>.log`, without indexes so that loading recovers it.
func (l *Log) completeSwaps() error {
	entries, err := os.ReadDir(l.dir)
	if err != nil {
		return err
	}
	var swaps []int64
	var logBases []int64
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() {
			continue
		}
		full := filepath.Join(l.dir, name)
		switch {
		case strings.HasSuffix(name, cleanedSuffix):
			l.log.WithField("file", name).Info("removing an unfinished cleaned segment")
			os.Remove(full)
		case strings.HasSuffix(name, swapSuffix):
			if b, ok := parseSegmentName(strings.TrimSuffix(name, swapSuffix), logSuffix); ok {
				swaps = append(swaps, b)
			} else {
				os.Remove(full)
			}
		default:
			if b, ok := parseSegmentName(name, logSuffix); ok {
				logBases = append(logBases, b)
			}
		}
	}
	if len(swaps) == 0 {
		return nil
	}
	sort.Slice(swaps, func(i, j int) bool { return swaps[i] < swaps[j] })
	for _, base := range swaps {
		swapPath := filepath.Join(l.dir, segmentName(base)+logSuffix+swapSuffix)
		f, err := os.Open(swapPath)
		if err != nil {
			return err
		}
		fi, err := f.Stat()
		if err != nil {
			f.Close()
			return err
		}
		res := scanSegment(f, fi.Size(), base, 0, base, newIndexState(base), l.cfg.IndexIntervalBytes)
		f.Close()
		next := max(res.nextOffset, base+1)
		for _, b := range logBases {
			if b < base || b >= next {
				continue
			}
			old := &segment{base: b, dir: l.dir}
			for _, p := range []string{old.logPath(), old.indexPath(), old.timeIndexPath()} {
				if err := os.Remove(p); err != nil && !os.IsNotExist(err) {
					return err
				}
			}
		}
		ns := &segment{base: base, dir: l.dir}
		os.Remove(ns.indexPath())
		os.Remove(ns.timeIndexPath())
		if err := os.Rename(swapPath, ns.logPath()); err != nil {
			return err
		}
		l.log.WithFields(logrus.Fields{"segment": ns.logPath(), "nextOffset": res.nextOffset}).Info("completed the swap of a cleaned segment interrupted by a crash")
	}
	return syncDir(l.dir)
}

// CleanerCheckpoint returns the log's first dirty offset as last checkpointed by the cleaner,
// -1 if it was never cleaned.
func (l *Log) CleanerCheckpoint() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.cleanerCheckpoint
}

// abortCleaningLocked (mu held for writing) makes an in-progress cleaning abort and lowers the
// cleaner checkpoint to a truncation offset (abortAndPauseCleaning, maybeTruncateCheckpoint).
func (l *Log) abortCleaningLocked(offset int64) {
	l.cleanGen++
	if l.cleanerCheckpoint > offset {
		l.cleanerCheckpoint = offset
	}
}

// writeCleanerCheckpoints writes cleaner-offset-checkpoint in every log dir for its cleaned logs.
func (m *Manager) writeCleanerCheckpoints() error {
	m.checkpointMu.Lock()
	defer m.checkpointMu.Unlock()
	return m.writeCleanerCheckpointsLocked()
}

// writeCleanerCheckpointsLocked is writeCleanerCheckpoints with checkpointMu held.
func (m *Manager) writeCleanerCheckpointsLocked() error {
	m.mu.RLock()
	perDir := m.perDir(func(_ TopicPartition, l *Log) (int64, bool) {
		cp := l.CleanerCheckpoint()
		return cp, cp >= 0
	})
	m.mu.RUnlock()
	return m.writePerDir(cleanerCheckpointFile, perDir)
}
