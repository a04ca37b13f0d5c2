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
	"sort"
	"time"

	"github.com/sirupsen/logrus"
)

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
	case isIOError(err):
		// an I/O error on the log's dir takes it offline, as Kafka's cleaner does (KIP-112)
		_ = ltc.l.health.failed(fmt.Errorf("logstore: cleaning %s: %w", ltc.l.dir, err))
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
	gen := l.cleaning.gen
	segs := append([]*segment(nil), l.segs[:len(l.segs)-1]...)
	sizes := make([]int64, len(segs))
	// The files as of now: a truncation that removes batches gives a segment a new file
	// (truncate_swap.go) while the cleaner reads the old one, which then fails on the closed
	// file or is aborted by the cleaning generation.
	files := make([]File, len(segs))
	for i, s := range segs {
		sizes[i], files[i] = s.size, s.f
	}
	cfg := l.cfg
	l.mu.RUnlock()
	abort := func() error {
		if ctx.Err() != nil {
			return errCleaningAborted
		}
		l.mu.RLock()
		defer l.mu.RUnlock()
		if l.closed || l.cleaning.gen != gen {
			return errCleaningAborted
		}
		return nil
	}

	// tombstones of segments last modified before this horizon are removed: delete.retention.ms
	// before the last modification of the last clean segment
	deleteHorizonMs := int64(0)
	for i, s := range segs {
		if s.base < ltc.firstDirty {
			deleteHorizonMs = fileModTime(files[i]) - cfg.DeleteRetentionMs
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
		full, err = t.mapSegment(s, files[i], startPos, sizes[i], ltc.firstDirty, &stats, abort)
		if err != nil {
			return stats, abortedOr(abort, err)
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
		if err := t.cleanSegments(l, gen, segs[g[0]:g[1]], files[g[0]:g[1]], sizes[g[0]:g[1]], deleteHorizonMs, lastOfProducer, cfg, &stats, abort); err != nil {
			return stats, abortedOr(abort, err)
		}
		stats.groupsDone++
		stats.segmentsCleaned += g[1] - g[0]
	}
	stats.cleanDone = time.Now()

	l.mu.Lock()
	if l.closed || l.cleaning.gen != gen {
		l.mu.Unlock()
		return stats, errCleaningAborted
	}
	l.cleaning.checkpoint = endOffset
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

// abortedOr returns abort's error when the cleaning was aborted meanwhile (a truncation closes
// the file of a segment it cuts, truncate_swap.go, so reading it fails first), else err.
func abortedOr(abort func() error, err error) error {
	if aerr := abort(); aerr != nil {
		return aerr
	}
	return err
}

// forEachBatch reads the whole batches of s, from its file f, in [startPos, size) in order.
func forEachBatch(s *segment, f File, startPos, size int64, fn func(b []byte, h BatchHeader) error) error {
	if startPos >= size {
		return nil
	}
	br := bufio.NewReaderSize(io.NewSectionReader(f, startPos, size-startPos), 1<<20)
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
		if err := s.checkUnverified(buf, pos); err != nil {
			return err // never rewritten with a fresh CRC (verify.go)
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
func (t *cleanerThread) mapSegment(s *segment, f File, startPos, size, firstDirty int64, stats *cleanerStats, abort func() error) (bool, error) {
	maxEntries := t.omap.maxEntries()
	full := false
	errFull := errors.New("full")
	err := forEachBatch(s, f, startPos, size, func(b []byte, h BatchHeader) error {
		if err := abort(); err != nil {
			return err
		}
		if h.LastOffset() < firstDirty {
			return nil
		}
		if !h.IsControl() {
			var err error
			if _, t.recs, err = decodeBatchInto(b, t.recs); err != nil {
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
func (t *cleanerThread) cleanSegments(l *Log, gen uint64, group []*segment, files []File, sizes []int64, deleteHorizonMs int64,
	lastOfProducer map[int64]int64, cfg Config, stats *cleanerStats, abort func() error) (err error) {
	base := group[0].base
	paths := cleanedPaths(l.dir, base)
	f, err := l.fs.OpenFile(paths.log, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
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
				l.fs.Remove(p)
			}
		}
	}()
	if l.cleaning.testStep("group") {
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
		retainDeletes := fileModTime(files[gi]) > deleteHorizonMs
		err := forEachBatch(s, files[gi], 0, sizes[gi], func(b []byte, h BatchHeader) error {
			if err := abort(); err != nil {
				return err
			}
			stats.bytesRead += int64(len(b))
			if h.IsControl() {
				// no transactions in isrbroker: markers are kept as they are
				return write(b, h)
			}
			rb, recs, err := decodeBatchInto(b, t.recs)
			t.recs = recs
			if err != nil {
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
	if err := writeSynced(l.fs, paths.index, encodeOffsetEntries(ix.idx)); err != nil {
		return err
	}
	if err := writeSynced(l.fs, paths.timeIndex, encodeTimeEntries(ix.tidx)); err != nil {
		return err
	}
	// the cleaned segment keeps the last modification time of the segments it replaces
	mtime := time.UnixMilli(fileModTime(files[len(files)-1]))
	if err := l.fs.Chtimes(paths.log, mtime, mtime); err != nil {
		return err
	}
	if l.cleaning.testStep("beforeSwap") {
		return errSwapStopped
	}
	ns := &segment{
		base: base, dir: l.dir, fs: l.fs, f: f, size: pos, ix: ix, created: l.now(),
		flushedSize: pos, idxPersisted: len(ix.idx), tidxPersisted: len(ix.tidx),
	}
	if err := (segmentSwap{l: l, group: group, ns: ns, gen: gen}).run(); err != nil {
		return err
	}
	swapped = true
	return nil
}
