package logstore

import (
	"errors"
	"fmt"
	"sync"
	"time"
)

// logFlusher applies a log's flush policy and performs its fsyncs (Log.flush): after
// log.flush.interval.messages appended records, after log.flush.interval.ms, after a roll
// (the rolled segment, asynchronously) and on Close. A flush fsyncs the segments holding
// offsets below its target and writes their pending index entries, then raises the log's
// recovery point. Flushes are serialised by the log's flushMu; the published state is read
// and the recovery point moved under its mu.
type logFlusher struct {
	l *Log

	// guarded by the log's appendMu
	unflushedMessages int64
	lastFlush         time.Time

	wg sync.WaitGroup // asynchronous flushes after a roll
}

// Flush fsyncs everything up to the LEO and moves the recovery point there.
func (l *Log) Flush() error {
	return l.flusher.flushTo(l.LogEndOffset())
}

// appended counts n records appended up to next (appendMu held) and flushes up to next when
// log.flush.interval.messages is reached.
func (f *logFlusher) appended(n, next int64, now time.Time, cfg Config) error {
	f.unflushedMessages += n
	if f.unflushedMessages >= cfg.FlushIntervalMessages {
		f.unflushedMessages = 0
		f.lastFlush = now
		return f.flushTo(next)
	}
	return nil
}

// flushAsync flushes up to base in the background: a roll schedules the flush of the
// segment it closed, as Kafka's roll schedules flush(newOffset).
func (f *logFlusher) flushAsync(base int64) {
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		// A background fsync, like the checkpoints': no writeback start meanwhile
		// (writebackQueue.fsyncs). Fsyncs on the append path (log.flush.interval.messages)
		// do not pause it, so that an append never waits for a writeback start.
		defer f.l.writeback.pauseForFsync()()
		if err := f.flushTo(base); err != nil && !errors.Is(err, ErrClosed) && !errors.Is(err, ErrLogDirOffline) {
			f.l.log.WithError(err).Warn("flushing rolled segment")
		}
	}()
}

// flushTo fsyncs the segments holding offsets below offset, writes their pending index
// entries, and raises the recovery point to offset (Log.flush).
func (f *logFlusher) flushTo(offset int64) error {
	l := f.l
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	l.mu.RLock()
	if l.closed {
		l.mu.RUnlock()
		return ErrClosed
	}
	if err := l.health.check(); err != nil {
		l.mu.RUnlock()
		return err // never fsync again after a failed fsync (logdir_failure.go)
	}
	if offset > l.leo {
		offset = l.leo
	}
	if offset <= l.recoveryPoint {
		l.mu.RUnlock()
		return nil
	}
	jobs := l.segs.flushJobs(offset, l.recoveryPoint)
	l.mu.RUnlock()
	for _, j := range jobs {
		if j.size != j.s.flushedSize {
			if err := l.health.sync(j.s.f); err != nil {
				return l.health.failed(fmt.Errorf("logstore: fsync %s: %w", j.s.logPath(), err))
			}
			j.s.flushedSize = j.size
		}
		if err := j.s.persistIndexes(j.idx, j.tidx, true); err != nil {
			return l.health.failed(fmt.Errorf("logstore: writing indexes of %s: %w", j.s.logPath(), err))
		}
	}
	// The leader epochs of the batches about to fall below the recovery point must survive a
	// crash: recovery will not re-read those batches.
	if err := l.epochs.syncBefore(offset); err != nil {
		return l.health.failed(fmt.Errorf("logstore: fsync %s: %w", l.dir, err))
	}
	l.mu.Lock()
	if offset > l.recoveryPoint {
		l.recoveryPoint = offset
	}
	l.mu.Unlock()
	return nil
}

// flushAll fsyncs every segment and index regardless of the recovery point.
func (f *logFlusher) flushAll() error {
	l := f.l
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	if err := l.health.check(); err != nil {
		return err
	}
	l.mu.RLock()
	segs := append([]*segment(nil), l.segs...)
	leo := l.leo
	l.mu.RUnlock()
	// The first failure ends it: nothing is written or fsynced after a failed fsync
	// (logdir_failure.go).
	for _, s := range segs {
		if s.size != s.flushedSize {
			if err := l.health.sync(s.f); err != nil {
				return l.health.failed(fmt.Errorf("logstore: fsync %s: %w", s.logPath(), err))
			}
			s.flushedSize = s.size
		}
		if err := s.persistIndexes(s.ix.idx, s.ix.tidx, true); err != nil {
			return l.health.failed(fmt.Errorf("logstore: writing indexes of %s: %w", s.logPath(), err))
		}
	}
	if err := l.epochs.syncBefore(leo); err != nil { // as in flushTo
		return l.health.failed(fmt.Errorf("logstore: fsync %s: %w", l.dir, err))
	}
	l.mu.Lock()
	l.recoveryPoint = leo
	l.mu.Unlock()
	return nil
}

// maybeTimeFlush fsyncs when log.flush.interval.ms has passed since the last flush.
func (f *logFlusher) maybeTimeFlush(now time.Time) error {
	l := f.l
	l.appendMu.Lock()
	cfg := l.cfg
	due := cfg.FlushInterval > 0 && now.Sub(f.lastFlush) >= cfg.FlushInterval
	if due {
		f.lastFlush = now
		f.unflushedMessages = 0
	}
	l.appendMu.Unlock()
	if !due {
		return nil
	}
	return l.Flush()
}
