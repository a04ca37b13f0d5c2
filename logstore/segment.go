package logstore

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

const (
	logSuffix       = ".log"
	indexSuffix     = ".index"
	timeIndexSuffix = ".timeindex"
	deletedSuffix   = ".deleted"

	offsetEntrySize = 8  // relativeOffset int32, position int32
	timeEntrySize   = 12 // timestamp int64, relativeOffset int32
)

// segmentName renders a base offset as Kafka's 20-digit file name prefix.
func segmentName(base int64) string { return fmt.Sprintf("%020d", base) }

// parseSegmentName parses `<20 digits><suffix>`; ok is false for any other name.
func parseSegmentName(name, suffix string) (int64, bool) {
	if !strings.HasSuffix(name, suffix) {
		return 0, false
	}
	digits := strings.TrimSuffix(name, suffix)
	if len(digits) != 20 {
		return 0, false
	}
	v, err := strconv.ParseInt(digits, 10, 64)
	if err != nil || v < 0 {
		return 0, false
	}
	return v, true
}

// offsetEntry is one sparse `.index` entry: the batch whose last offset is base+rel starts at pos.
type offsetEntry struct {
	rel int32
	pos int32
}

// timeEntry is one `.timeindex` entry: up to offset base+rel the largest timestamp is ts.
type timeEntry struct {
	ts  int64
	rel int32
}

// indexState is the in-memory form of a segment's indexes plus the running state that
// decides where the next entries go (LogSegment.append). Appends and recovery share it, so
// recovering a segment rebuilds exactly the indexes that appending it built.
type indexState struct {
	idx           []offsetEntry
	tidx          []timeEntry
	maxTs         int64 // largest batch maxTimestamp so far, -1 if none
	offsetOfMaxTs int64
	bytesSince    int64 // bytes appended since the last offset index entry
}

func newIndexState(base int64) indexState {
	return indexState{maxTs: -1, offsetOfMaxTs: base}
}

// add accounts for one batch at pos: an offset index entry (keyed by the batch's last offset,
// as Kafka does) and a time index entry every IndexIntervalBytes.
func (s *indexState) add(base int64, h BatchHeader, pos int64, interval int32) {
	if h.MaxTimestamp > s.maxTs {
		s.maxTs = h.MaxTimestamp
		s.offsetOfMaxTs = h.LastOffset()
	}
	if s.bytesSince > int64(interval) {
		s.idx = append(s.idx, offsetEntry{rel: int32(h.LastOffset() - base), pos: int32(pos)})
		s.maybeAppendTime(base)
		s.bytesSince = 0
	}
	s.bytesSince += int64(h.Size())
}

// maybeAppendTime adds (maxTs, offsetOfMaxTs) to the time index if it moves it forward.
func (s *indexState) maybeAppendTime(base int64) {
	if s.maxTs < 0 {
		return
	}
	if n := len(s.tidx); n > 0 {
		last := s.tidx[n-1]
		if s.maxTs <= last.ts || s.offsetOfMaxTs-base < int64(last.rel) {
			return
		}
	}
	s.tidx = append(s.tidx, timeEntry{ts: s.maxTs, rel: int32(s.offsetOfMaxTs - base)})
}

// segment is one `.log` file with its indexes. size, the index slices and maxTs are published
// under Log.mu; flushedSize and the persisted counts are guarded by Log.flushMu.
type segment struct {
	base    int64
	dir     string
	fs      FS // nil: the OS FS (fs.go)
	f       File
	size    int64
	ix      indexState
	created time.Time // time of the first append (or of loading), for log.roll.ms

	flushedSize int64
	// Smooth writeback (writeback.go), written under appendMu and mu (readers under mu take the
	// active segment's bytes from writebackFrom on as resident, directio.go): the next byte
	// whose writeback is not started yet.
	writebackFrom int64
	idxPersisted  int
	tidxPersisted int
	// noIndexFiles: this segment's index files are known not to exist (it was created in a
	// new directory and none was written since), so persisting nothing needs no look at the
	// file system. False means unknown.
	noIndexFiles bool
	// verify: the segment was loaded without recovery, so its batches are CRC-checked before
	// they are served (verify.go); nil: written or recovered by this process.
	verify *segmentVerify
}

// fsys is the segment's FS (fs.go).
func (s *segment) fsys() FS { return fsOr(s.fs) }

func (s *segment) logPath() string { return filepath.Join(s.dir, segmentName(s.base)+logSuffix) }
func (s *segment) indexPath() string {
	return filepath.Join(s.dir, segmentName(s.base)+indexSuffix)
}
func (s *segment) timeIndexPath() string {
	return filepath.Join(s.dir, segmentName(s.base)+timeIndexSuffix)
}

// createSegment creates an empty segment file (replacing a stale one) and drops stale indexes.
func createSegment(fsys FS, dir string, base int64, now time.Time) (*segment, error) {
	s := &segment{base: base, dir: dir, fs: fsys, ix: newIndexState(base), created: now}
	f, err := s.fsys().OpenFile(s.logPath(), os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	s.f = f
	// stale indexes must go: one left behind would be loaded as this segment's
	for _, p := range []string{s.indexPath(), s.timeIndexPath()} {
		if err := s.fsys().Remove(p); err != nil && !os.IsNotExist(err) {
			f.Close()
			return nil, err
		}
	}
	return s, nil
}

// lookup returns the file position from which to scan for target: the position of the
// largest index entry whose offset is <= target, else 0.
func (s *segment) lookup(target int64) int64 {
	idx := s.ix.idx
	i := sort.Search(len(idx), func(i int) bool { return s.base+int64(idx[i].rel) > target })
	if i == 0 {
		return 0
	}
	return int64(idx[i-1].pos)
}

// lookupTime returns the offset from which to scan for the first batch with maxTimestamp >=
// ts: the offset of the largest time entry whose timestamp is < ts, else the base.
func (s *segment) lookupTime(ts int64) int64 {
	tidx := s.ix.tidx
	i := sort.Search(len(tidx), func(i int) bool { return tidx[i].ts >= ts })
	if i == 0 {
		return s.base
	}
	return s.base + int64(tidx[i-1].rel)
}

// largestTimestamp is the segment's retention timestamp: its largest batch timestamp, else
// the file's modification time (Kafka's LogSegment.largestTimestamp).
func (s *segment) largestTimestamp() int64 {
	if s.ix.maxTs > 0 {
		return s.ix.maxTs
	}
	if fi, err := s.f.Stat(); err == nil {
		return fi.ModTime().UnixMilli()
	}
	return 0
}

// scanResult is what a scan of a segment's bytes found.
type scanResult struct {
	validBytes int64 // bytes of whole, valid batches from the start position
	nextOffset int64 // last valid batch's lastOffset+1 (or the start offset if none)
	batches    int
	ix         indexState
	epochs     []EpochEntry // (epoch, baseOffset) whenever a batch's epoch rises
	err        error        // why the scan stopped before the end; nil if all bytes were valid
}

// scanSegment validates the batches of a segment file from startPos (LogSegment.recover):
// length bounds, magic, CRC, and offsets that rise and fit the segment's 32-bit relative
// index. It rebuilds the index state from ix (the state before startPos) and stops at the
// first invalid or torn batch. It never trusts a length beyond the remaining bytes and
// never panics on arbitrary input.
func scanSegment(r io.ReaderAt, size, base, startPos, startOffset int64, ix indexState, interval int32) scanResult {
	res := scanResult{validBytes: 0, nextOffset: startOffset, ix: ix}
	if startPos < 0 || startPos > size {
		res.err = fmt.Errorf("%w: scan start %d outside segment of %d bytes", ErrCorruptMessage, startPos, size)
		return res
	}
	const chunk = 1 << 20
	var buf []byte
	bufPos := startPos // file position of buf[0]
	pos := startPos
	lastEpoch := int32(-1)
	fill := func(need int64) error {
		// make buf hold [pos, pos+need) if the file has it
		if pos+need > size {
			return errTruncated
		}
		if pos >= bufPos && pos+need <= bufPos+int64(len(buf)) {
			return nil
		}
		want := need
		if want < chunk {
			want = chunk
		}
		if pos+want > size {
			want = size - pos
		}
		if int64(cap(buf)) < want {
			buf = make([]byte, want)
		}
		buf = buf[:want]
		n, err := r.ReadAt(buf, pos)
		buf = buf[:n]
		bufPos = pos
		if int64(n) < need {
			if err == nil || err == io.EOF {
				return errTruncated
			}
			return err
		}
		return nil
	}
	for pos < size {
		if err := fill(batchHeaderSize); err != nil {
			res.err = err
			break
		}
		hb := buf[pos-bufPos:]
		length := int64(int32(binary.BigEndian.Uint32(hb[offLength:])))
		if length < minBatchLength {
			res.err = fmt.Errorf("%w: batch length %d at position %d", ErrCorruptMessage, length, pos)
			break
		}
		total := length + batchLengthShift
		if err := fill(total); err != nil {
			res.err = err
			break
		}
		b := buf[pos-bufPos : pos-bufPos+total]
		h, err := checkBatchAt(b)
		if err != nil {
			res.err = fmt.Errorf("at position %d: %w", pos, err)
			break
		}
		if h.BaseOffset < res.nextOffset || h.BaseOffset < base || h.LastOffset()-base > math.MaxInt32 || pos > math.MaxInt32 {
			res.err = fmt.Errorf("%w: batch offsets %d..%d out of order at position %d (expected >= %d)",
				ErrCorruptMessage, h.BaseOffset, h.LastOffset(), pos, res.nextOffset)
			break
		}
		res.ix.add(base, h, pos, interval)
		if h.LeaderEpoch > lastEpoch {
			lastEpoch = h.LeaderEpoch
			res.epochs = append(res.epochs, EpochEntry{Epoch: h.LeaderEpoch, StartOffset: h.BaseOffset})
		}
		res.nextOffset = h.LastOffset() + 1
		res.batches++
		pos += total
		res.validBytes = pos - startPos
	}
	return res
}

// loadOffsetIndex reads a `.index` file and checks it against the segment (entries rising,
// positions inside the log). ok is false when it is missing or inconsistent.
func loadOffsetIndex(fsys FS, path string, logSize int64) ([]offsetEntry, bool) {
	data, err := readFileFS(fsys, path)
	if err != nil || len(data)%offsetEntrySize != 0 {
		return nil, false
	}
	out := make([]offsetEntry, 0, len(data)/offsetEntrySize)
	for i := 0; i+offsetEntrySize <= len(data); i += offsetEntrySize {
		e := offsetEntry{
			rel: int32(binary.BigEndian.Uint32(data[i:])),
			pos: int32(binary.BigEndian.Uint32(data[i+4:])),
		}
		if e.rel < 0 || e.pos <= 0 || int64(e.pos) >= logSize {
			return nil, false
		}
		if n := len(out); n > 0 && (e.rel <= out[n-1].rel || e.pos <= out[n-1].pos) {
			return nil, false
		}
		out = append(out, e)
	}
	return out, true
}

// loadTimeIndex reads a `.timeindex` file; ok is false when missing or inconsistent.
func loadTimeIndex(fsys FS, path string) ([]timeEntry, bool) {
	data, err := readFileFS(fsys, path)
	if err != nil || len(data)%timeEntrySize != 0 {
		return nil, false
	}
	out := make([]timeEntry, 0, len(data)/timeEntrySize)
	for i := 0; i+timeEntrySize <= len(data); i += timeEntrySize {
		e := timeEntry{
			ts:  int64(binary.BigEndian.Uint64(data[i:])),
			rel: int32(binary.BigEndian.Uint32(data[i+8:])),
		}
		if e.rel < 0 || e.ts < 0 {
			return nil, false
		}
		if n := len(out); n > 0 && (e.ts <= out[n-1].ts || e.rel < out[n-1].rel) {
			return nil, false
		}
		out = append(out, e)
	}
	return out, true
}

func encodeOffsetEntries(es []offsetEntry) []byte {
	b := make([]byte, len(es)*offsetEntrySize)
	for i, e := range es {
		binary.BigEndian.PutUint32(b[i*offsetEntrySize:], uint32(e.rel))
		binary.BigEndian.PutUint32(b[i*offsetEntrySize+4:], uint32(e.pos))
	}
	return b
}

func encodeTimeEntries(es []timeEntry) []byte {
	b := make([]byte, len(es)*timeEntrySize)
	for i, e := range es {
		binary.BigEndian.PutUint64(b[i*timeEntrySize:], uint64(e.ts))
		binary.BigEndian.PutUint32(b[i*timeEntrySize+8:], uint32(e.rel))
	}
	return b
}

// writeIndexTail writes entries [from, ...) of an index at their offset in the file,
// truncating anything after them, and optionally fsyncs.
func writeIndexTail(fsys FS, path string, data []byte, at int64, sync bool) error {
	f, err := fsys.OpenFile(path, os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.WriteAt(data, at); err != nil {
		f.Close()
		return err
	}
	if err := f.Truncate(at + int64(len(data))); err != nil {
		f.Close()
		return err
	}
	if sync {
		if err := f.Sync(); err != nil {
			f.Close()
			return err
		}
	}
	return f.Close()
}

// persistIndexes writes the index entries not yet on disk (caller holds flushMu; idx and
// tidx are snapshots taken under Log.mu).
func (s *segment) persistIndexes(idx []offsetEntry, tidx []timeEntry, sync bool) error {
	if s.idxPersisted > len(idx) {
		s.idxPersisted = len(idx)
	}
	if s.tidxPersisted > len(tidx) {
		s.tidxPersisted = len(tidx)
	}
	// An empty segment without index files (a log that never got a record) has nothing to
	// persist: no files to create and fsync, which made closing thousands of new logs slow.
	if len(idx) == 0 && len(tidx) == 0 && s.size == 0 && (s.noIndexFiles || !fileExists(s.fsys(), s.indexPath()) && !fileExists(s.fsys(), s.timeIndexPath())) {
		return nil
	}
	s.noIndexFiles = false
	if err := writeIndexTail(s.fsys(), s.indexPath(), encodeOffsetEntries(idx[s.idxPersisted:]), int64(s.idxPersisted)*offsetEntrySize, sync); err != nil {
		return err
	}
	s.idxPersisted = len(idx)
	if err := writeIndexTail(s.fsys(), s.timeIndexPath(), encodeTimeEntries(tidx[s.tidxPersisted:]), int64(s.tidxPersisted)*timeEntrySize, sync); err != nil {
		return err
	}
	s.tidxPersisted = len(tidx)
	return nil
}

// markDeleted closes the segment and renames its files with the `.deleted` suffix; the
// files are removed after delay (file.delete.delay.ms). A rename that fails (but for a file
// that does not exist) stops it with that error: an I/O error on the dir (KIP-112).
func (s *segment) markDeleted(delay time.Duration) error {
	if s.f != nil {
		s.f.Close()
	}
	var renamed []string
	var err error
	for _, p := range []string{s.logPath(), s.indexPath(), s.timeIndexPath()} {
		if rerr := s.fsys().Rename(p, p+deletedSuffix); rerr == nil {
			renamed = append(renamed, p+deletedSuffix)
		} else if !os.IsNotExist(rerr) {
			err = rerr
			break
		}
	}
	removeAfter(s.fsys(), renamed, delay)
	return err
}

// lastOffset scans the segment for its last batch's last offset (s non-empty).
func (s *segment) lastOffset(interval int32) int64 {
	res := scanSegment(s.f, s.size, s.base, 0, s.base, newIndexState(s.base), interval)
	return res.nextOffset - 1
}

// resetIndexState recomputes the running index state after entries were dropped. maxTs
// comes from the remaining time index (exact enough for retention; Kafka does the same).
func (s *segment) resetIndexState(interval int32) {
	s.ix.maxTs, s.ix.offsetOfMaxTs = -1, s.base
	if n := len(s.ix.tidx); n > 0 {
		s.ix.maxTs = s.ix.tidx[n-1].ts
		s.ix.offsetOfMaxTs = s.base + int64(s.ix.tidx[n-1].rel)
	}
	// rescan the batches after the last index entry so maxTs and bytesSince are right
	startPos := int64(0)
	if n := len(s.ix.idx); n > 0 {
		startPos = int64(s.ix.idx[n-1].pos)
	}
	st := s.ix
	st.bytesSince = 0
	res := scanSegment(s.f, s.size, s.base, startPos, s.base, st, interval)
	s.ix = res.ix
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
func (s *segment) lastModified() int64 { return fileModTime(s.f) }

// fileModTime is f's last modification time in Unix milliseconds (0 when it cannot be read).
func fileModTime(f File) int64 {
	fi, err := f.Stat()
	if err != nil {
		return 0
	}
	return fi.ModTime().UnixMilli()
}
