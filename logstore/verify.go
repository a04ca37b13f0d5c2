package logstore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"
)

// Corruption below the recovery point (docs/design.md, "Corruption below the recovery
// point"). A segment the loader accepts without recovering it (it lies below the recovery
// point, or the dir was shut down cleanly) was never CRC-checked by this process: a bit flip on
// the disk would be served as is, to consumers and to followers, through zero-copy regions
// that never pass through this process. Such a segment carries a segmentVerify: before a read
// serves a range of it, the batches of that range are CRC-checked (CRC-32C of the v2 batch, as
// Kafka's DefaultRecordBatch.isValid), and the checked ranges are remembered so each byte is
// checked once; the scrubber (scrub.go) checks the rest in the background. A bad batch makes
// the read answer KAFKA_STORAGE_ERROR (never the bytes), lowers the log's recovery point to
// the segment's base offset (in memory and in the recovery-point checkpoint, so the next start
// recovers the segment and truncates at the bad batch) and takes the log dir offline (KIP-112,
// logdir_failure.go): the controller moves leadership to another ISR member, whose copy this
// broker re-fetches once it restarted and truncated.

// segmentVerify is the verification state of a segment loaded without recovery. Bytes at or
// past size (appended by this process) are trusted. Guarded by mu, except complete.
type segmentVerify struct {
	mu       sync.Mutex
	size     int64      // the segment's size when it was loaded
	done     []posRange // verified ranges, sorted, disjoint, not adjacent
	bad      *corruptBatchError
	complete atomic.Bool // [0, size) is verified
}

// posRange is the byte range [from, to) of a segment file.
type posRange struct{ from, to int64 }

func newSegmentVerify(size int64) *segmentVerify {
	v := &segmentVerify{size: size}
	v.complete.Store(size == 0)
	return v
}

// nextGapLocked returns the first unverified range inside [from, to), clipped to v.size.
func (v *segmentVerify) nextGapLocked(from, to int64) (posRange, bool) {
	if v.complete.Load() {
		return posRange{}, false
	}
	to = min(to, v.size)
	for _, r := range v.done {
		if from >= to {
			break
		}
		if r.to <= from {
			continue
		}
		if r.from > from {
			return posRange{from, min(r.from, to)}, true
		}
		from = r.to
	}
	if from < to {
		return posRange{from, to}, true
	}
	return posRange{}, false
}

// addLocked records [from, to) as verified, merging it with the ranges it touches.
func (v *segmentVerify) addLocked(from, to int64) {
	if from >= to {
		return
	}
	i := sort.Search(len(v.done), func(i int) bool { return v.done[i].to >= from })
	j := i
	for j < len(v.done) && v.done[j].from <= to {
		from, to = min(from, v.done[j].from), max(to, v.done[j].to)
		j++
	}
	v.done = append(v.done[:i], append([]posRange{{from, to}}, v.done[j:]...)...)
	if len(v.done) == 1 && v.done[0].from <= 0 && v.done[0].to >= v.size {
		v.complete.Store(true)
		v.done = nil
	}
}

// markVerified records [from, to) as verified (the loader scanned it); nil-safe.
func (v *segmentVerify) markVerified(from, to int64) {
	if v == nil {
		return
	}
	v.mu.Lock()
	v.addLocked(from, to)
	v.mu.Unlock()
}

// corruptBatchError is a batch that failed its check in a segment loaded without recovery. It
// deliberately does not wrap ErrCorruptMessage: the read answers KAFKA_STORAGE_ERROR (the
// stored copy is bad), not CORRUPT_MESSAGE (which blames the producer).
type corruptBatchError struct {
	path  string // the segment file
	base  int64  // the segment's base offset
	pos   int64  // where the bad batch starts
	cause error
}

func (e *corruptBatchError) Error() string {
	return fmt.Sprintf("logstore: corrupt batch at position %d of %s (below the recovery point): %v", e.pos, e.path, e.cause)
}

// verifyBatches CRC-checks the whole batches of f from position from: it stops at to, or at
// the first batch boundary at or past from+limit, and returns the position reached. Every
// batch must end by to. A read error is reported like a bad batch.
func verifyBatches(f io.ReaderAt, from, to, limit int64, buf []byte) (int64, []byte, error) {
	pos := from
	var hdr [batchHeaderSize]byte
	for pos < to && pos-from < limit {
		if pos+batchHeaderSize > to {
			return pos, buf, fmt.Errorf("%w: %d bytes left, less than a batch header", ErrCorruptMessage, to-pos)
		}
		if _, err := f.ReadAt(hdr[:], pos); err != nil {
			return pos, buf, err
		}
		length := int64(int32(binary.BigEndian.Uint32(hdr[offLength:])))
		total := length + batchLengthShift
		if length < minBatchLength || pos+total > to {
			return pos, buf, fmt.Errorf("%w: batch length %d", ErrCorruptMessage, length)
		}
		if int64(cap(buf)) < total {
			buf = make([]byte, total)
		}
		b := buf[:total]
		if _, err := f.ReadAt(b, pos); err != nil {
			return pos, buf, err
		}
		if _, err := checkBatchAt(b); err != nil {
			return pos, buf, err
		}
		pos += total
	}
	return pos, buf, nil
}

// verifyRange CRC-checks the batches of [pos, pos+n) not yet verified (the range a read is
// about to serve: whole batches). Callers hold Log.mu (either side). nil: safe to serve.
func (s *segment) verifyRange(pos, n int64) error {
	v := s.verify
	if v == nil || v.complete.Load() {
		return nil
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.bad != nil {
		return v.bad
	}
	var buf []byte
	for {
		gap, ok := v.nextGapLocked(pos, pos+n)
		if !ok {
			return nil
		}
		var end int64
		var err error
		end, buf, err = verifyBatches(s.f, gap.from, gap.to, math.MaxInt64, buf)
		v.addLocked(gap.from, end)
		if err != nil {
			v.bad = &corruptBatchError{path: s.logPath(), base: s.base, pos: end, cause: err}
			return v.bad
		}
	}
}

// verifyNext CRC-checks about limit bytes of the segment's first unverified range (the
// scrubber's step) and returns how many bytes it read. Callers hold Log.mu (either side).
func (s *segment) verifyNext(limit int64) (int64, error) {
	v := s.verify
	if v == nil || v.complete.Load() {
		return 0, nil
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.bad != nil {
		return 0, v.bad
	}
	gap, ok := v.nextGapLocked(0, v.size)
	if !ok {
		v.complete.Store(true)
		return 0, nil
	}
	end, _, err := verifyBatches(s.f, gap.from, min(gap.to, s.size), limit, nil)
	v.addLocked(gap.from, end)
	if err == nil && end == gap.from && s.size < gap.to {
		// the segment was truncated below its loaded size: nothing is left to check there
		v.addLocked(gap.from, gap.to)
	}
	if err != nil {
		v.bad = &corruptBatchError{path: s.logPath(), base: s.base, pos: end, cause: err}
		return end - gap.from, v.bad
	}
	return end - gap.from, nil
}

// corruptionLogEvery bounds the corruption ERROR lines of one log (one per segment at most
// anyway: the dir goes offline at the first).
const corruptionLogEvery = 10 * time.Second

// logCorruption is a log's record of corrupt batches found below its recovery point, and the
// scrubbing of its segments loaded without recovery (scrub.go): what the reads, the scrubber and
// the Manager's corruption checkpoint share. Its atomics need no lock; it reads the segments
// under the log's mu.
type logCorruption struct {
	l *Log
	// from is the base offset of the lowest segment found corrupt below the recovery point, -1
	// if none; logged the last such ERROR's time.
	from, logged atomic.Int64
}

// check handles err from a read or the scrubber (Log.mu not held): a bad batch below the
// recovery point lowers the recovery point to its segment's base offset and takes the dir
// offline; the error returned then wraps ErrLogDirOffline (KAFKA_STORAGE_ERROR). Any other err
// is returned as is.
func (c *logCorruption) check(err error) error {
	l := c.l
	var ce *corruptBatchError
	if !errors.As(err, &ce) {
		return err
	}
	l.mu.Lock()
	l.recoveryPoint = min(l.recoveryPoint, ce.base)
	l.mu.Unlock()
	for {
		cur := c.from.Load()
		if cur >= 0 && cur <= ce.base || c.from.CompareAndSwap(cur, ce.base) {
			break
		}
	}
	now := l.now().UnixNano()
	if last := c.logged.Load(); now-last >= int64(corruptionLogEvery) && c.logged.CompareAndSwap(last, now) {
		l.log.WithFields(logrus.Fields{
			"segment": ce.path, "baseOffset": ce.base, "validSize": ce.pos, "error": ce.cause.Error(),
		}).Error("corrupt batch below the recovery point: not served; the recovery point is lowered to the segment and the log dir taken offline, so the next start recovers the segment")
	}
	out := l.health.failed(ce)
	if l.health != nil && l.health.corruptionCheckpoint != nil {
		if werr := l.health.corruptionCheckpoint(); werr != nil {
			l.log.WithError(werr).Error("writing the lowered recovery point after a corrupt batch; the next start may not recover the segment")
		}
	}
	if !errors.Is(out, ErrLogDirOffline) {
		out = fmt.Errorf("%w: %w", ErrLogDirOffline, ce)
	}
	return out
}

// checkUnverified CRC-checks batch b at pos when s was loaded without recovery and is not
// verified yet: the cleaner reads such segments directly, and would otherwise rewrite a bad
// batch with a fresh CRC. The error fails that cleaning; reads still find the batch.
func (s *segment) checkUnverified(b []byte, pos int64) error {
	if s.verify == nil || s.verify.complete.Load() {
		return nil
	}
	if _, err := checkBatchAt(b); err != nil {
		return &corruptBatchError{path: s.logPath(), base: s.base, pos: pos, cause: err}
	}
	return nil
}
