package logstore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
)

// AppendInfo describes one append: offsets of the first and last record, the largest batch
// timestamp, the record count and the bytes written. FirstOffset is -1 for an empty append.
type AppendInfo struct {
	FirstOffset, LastOffset, MaxTimestamp int64
	NumRecords                            int
	Bytes                                 int
}

// Log is one partition's log (S1). It is safe for concurrent use: appends, truncations and
// retention are serialised; reads run concurrently with each other and with the file write
// of an append (see the package comment for the lock order).
type Log struct {
	tp  TopicPartition
	dir string
	log logrus.FieldLogger
	now func() time.Time

	appendMu sync.Mutex
	flushMu  sync.Mutex
	mu       sync.RWMutex

	// guarded by mu (writers also hold appendMu)
	cfg           Config
	segs          []*segment // sorted by base offset; the last is the active segment
	leo           int64
	logStart      int64
	recoveryPoint int64
	hw            int64 // last high watermark handed in (retention and cleaning bound), -1 if unknown
	epochs        epochCache
	closed        bool

	// log cleaner state (cleaner.go), guarded by mu
	cleanerCheckpoint int64  // first dirty offset: the end of the last cleaning, -1 if never cleaned
	cleanGen          uint64 // bumped by every truncation and by Close: an in-progress cleaning aborts
	configured        bool   // the topic's config was applied (GetOrCreate); logs loaded at Open wait for it

	// guarded by appendMu
	producers producerState

	// guarded by appendMu
	unflushedMessages int64
	lastFlush         time.Time

	wg sync.WaitGroup // asynchronous flushes after a roll

	testHook func(step string) bool // tests: called at each step of a cleaning (cleaner.go), set before it starts
}

// loadParams is what the manager knows about a log before loading it.
type loadParams struct {
	tp            TopicPartition
	dir           string
	cfg           Config
	recoveryPoint int64 // from recovery-point-offset-checkpoint, 0 if absent
	logStart      int64 // from log-start-offset-checkpoint, -1 if absent
	hw            int64 // from replication-offset-checkpoint, -1 if absent
	clean         bool  // the log dir had .kafka_cleanshutdown
	cleanerCP     int64 // from cleaner-offset-checkpoint, -1 if absent
	configured    bool  // cfg is the topic's own configuration (not only the broker defaults)
	log           logrus.FieldLogger
	now           func() time.Time
}

// openLog loads (or creates) the log in p.dir. After an unclean shutdown every segment at or
// past the recovery point is re-validated and a torn or corrupt tail is truncated; segments
// after a truncated one are dropped (LogLoader).
func openLog(p loadParams) (*Log, error) {
	if p.now == nil {
		p.now = time.Now
	}
	if p.log == nil {
		l := logrus.New()
		l.Out = io.Discard
		p.log = l
	}
	l := &Log{
		tp:        p.tp,
		dir:       p.dir,
		log:       p.log.WithFields(logrus.Fields{"topic": p.tp.Topic, "partition": p.tp.Partition}),
		now:       p.now,
		cfg:       p.cfg.sanitized(),
		hw:        p.hw,
		producers: producerState{},

		cleanerCheckpoint: p.cleanerCP,
		configured:        p.configured,
	}
	if err := os.MkdirAll(p.dir, 0o755); err != nil {
		return nil, err
	}
	if err := l.loadSegments(p); err != nil {
		l.closeFiles()
		return nil, err
	}
	l.rebuildProducerState()
	l.lastFlush = l.now()
	return l, nil
}

func (l *Log) loadSegments(p loadParams) error {
	// an interrupted cleaning is finished or rolled back first (cleaner.go)
	if err := l.completeSwaps(); err != nil {
		return err
	}
	entries, err := os.ReadDir(l.dir)
	if err != nil {
		return err
	}
	var bases []int64
	logs := map[int64]bool{}
	for _, e := range entries {
		name := e.Name()
		full := filepath.Join(l.dir, name)
		switch {
		case filepath.Ext(name) == deletedSuffix || filepath.Ext(name) == ".cleaned" ||
			filepath.Ext(name) == ".swap" || filepath.Ext(name) == ".tmp":
			// leftovers of an interrupted delete / atomic write
			if !e.IsDir() {
				os.Remove(full)
			}
		default:
			if b, ok := parseSegmentName(name, logSuffix); ok && !e.IsDir() {
				bases = append(bases, b)
				logs[b] = true
			}
		}
	}
	// orphan indexes (no .log) are removed
	for _, e := range entries {
		for _, suf := range []string{indexSuffix, timeIndexSuffix} {
			if b, ok := parseSegmentName(e.Name(), suf); ok && !logs[b] {
				os.Remove(filepath.Join(l.dir, e.Name()))
			}
		}
	}
	sort.Slice(bases, func(i, j int) bool { return bases[i] < bases[j] })

	// the epoch cache is read first so recovered batches can extend it
	if ents, err := readEpochCheckpoint(filepath.Join(l.dir, leaderEpochCheckpointFile)); err != nil {
		l.log.WithError(err).Warn("unreadable leader-epoch-checkpoint; starting with an empty leader epoch cache")
	} else {
		for _, e := range ents {
			l.epochs.assign(e.Epoch, e.StartOffset)
		}
	}

	recoveryPoint := p.recoveryPoint
	now := l.now()
	for i := 0; i < len(bases); i++ {
		base := bases[i]
		s := &segment{base: base, dir: l.dir, ix: newIndexState(base), created: now}
		f, err := os.OpenFile(s.logPath(), os.O_RDWR, 0o644)
		if err != nil {
			return err
		}
		s.f = f
		fi, err := f.Stat()
		if err != nil {
			return err
		}
		s.size = fi.Size()
		last := i == len(bases)-1
		needsRecovery := !p.clean && (last || bases[i+1] > recoveryPoint)
		if !needsRecovery {
			idx, ok1 := loadOffsetIndex(s.indexPath(), s.size)
			tidx, ok2 := loadTimeIndex(s.timeIndexPath())
			if ok1 && ok2 && (s.size == 0 || fileExists(s.indexPath())) {
				s.ix.idx, s.ix.tidx = idx, tidx
				if n := len(tidx); n > 0 {
					s.ix.maxTs = tidx[n-1].ts
					s.ix.offsetOfMaxTs = base + int64(tidx[n-1].rel)
				}
				s.idxPersisted, s.tidxPersisted = len(idx), len(tidx)
				s.flushedSize = s.size
			} else {
				l.log.WithField("segment", s.logPath()).Warn("missing or inconsistent index; rebuilding it by recovering the segment")
				needsRecovery = true
			}
		}
		truncated := false
		if needsRecovery {
			truncated, err = l.recoverSegment(s, 0, base, newIndexState(base))
			if err != nil {
				s.f.Close()
				return err
			}
		} else if last {
			// clean: find the LEO by scanning from the last index entry
			startPos, startOff := int64(0), base
			st := newIndexState(base)
			if n := len(s.ix.idx); n > 0 {
				startPos = int64(s.ix.idx[n-1].pos)
				st = s.ix
			}
			truncated, err = l.recoverSegment(s, startPos, startOff, st)
			if err != nil {
				s.f.Close()
				return err
			}
		}
		l.segs = append(l.segs, s)
		if truncated && !last {
			// LogLoader: once a segment is truncated, the later (unflushed) segments are deleted
			for _, b := range bases[i+1:] {
				dead := &segment{base: b, dir: l.dir}
				l.log.WithField("segment", dead.logPath()).Warn("deleting segment after a truncated one")
				dead.markDeleted(0)
			}
			bases = bases[:i+1]
		}
	}
	if len(l.segs) == 0 {
		start := p.logStart
		if start < 0 {
			start = 0
		}
		s, err := createSegment(l.dir, start, now)
		if err != nil {
			return err
		}
		l.segs = []*segment{s}
		l.leo = start
	}
	l.logStart = l.segs[0].base
	if p.logStart > l.logStart {
		l.logStart = p.logStart
	}
	if l.logStart > l.leo {
		l.logStart = l.leo
	}
	l.recoveryPoint = recoveryPoint
	if l.recoveryPoint > l.leo {
		l.recoveryPoint = l.leo
	}
	if l.recoveryPoint < l.logStart {
		l.recoveryPoint = l.logStart
	}
	changed := l.epochs.truncateFromEnd(l.leo)
	if l.epochs.truncateFromStart(l.logStart) {
		changed = true
	}
	if changed {
		if err := l.writeEpochCheckpoint(l.epochs.snapshot()); err != nil {
			return err
		}
	}
	return nil
}

// recoverSegment scans s from startPos, rebuilds its indexes and epoch entries, sets the LEO
// if it is the active segment, and truncates a torn or corrupt tail with a WARN naming the
// topic, partition, segment and bytes cut. It reports whether it truncated.
func (l *Log) recoverSegment(s *segment, startPos, startOffset int64, st indexState) (bool, error) {
	res := scanSegment(s.f, s.size, s.base, startPos, startOffset, st, l.cfg.IndexIntervalBytes)
	if startPos > 0 && res.batches == 0 && s.size > startPos {
		// the batch the index points at is bad: recover the whole segment instead
		return l.recoverSegment(s, 0, s.base, newIndexState(s.base))
	}
	s.ix = res.ix
	for _, e := range res.epochs {
		l.epochs.assign(e.Epoch, e.StartOffset)
	}
	valid := startPos + res.validBytes
	truncated := false
	if valid < s.size {
		l.log.WithFields(logrus.Fields{
			"segment":   s.logPath(),
			"bytesCut":  s.size - valid,
			"validSize": valid,
			"cause":     fmt.Sprint(res.err),
		}).Warn("truncating a torn or corrupt tail of a segment during recovery")
		if err := s.f.Truncate(valid); err != nil {
			return false, err
		}
		s.size = valid
		truncated = true
	}
	// the in-memory indexes are authoritative; rewrite the files to match
	s.idxPersisted, s.tidxPersisted = 0, 0
	if err := s.persistIndexes(s.ix.idx, s.ix.tidx, false); err != nil {
		return truncated, err
	}
	if res.batches > 0 || startPos == 0 {
		l.leo = res.nextOffset
		if res.batches == 0 {
			l.leo = s.base
		}
	}
	return truncated, nil
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

func (l *Log) closeFiles() {
	for _, s := range l.segs {
		if s.f != nil {
			s.f.Close()
		}
	}
}

// TopicPartition returns the partition this log belongs to.
func (l *Log) TopicPartition() TopicPartition { return l.tp }

// Dir returns the partition directory.
func (l *Log) Dir() string { return l.dir }

// Config returns the log's configuration.
func (l *Log) Config() Config {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.cfg
}

// SetConfig replaces the configuration (a topic config change); it applies to the next append.
func (l *Log) SetConfig(c Config) {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	l.mu.Lock()
	l.cfg = c.sanitized()
	l.configured = true
	l.mu.Unlock()
}

func (l *Log) isConfigured() bool {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.configured
}

// LogEndOffset is the LEO: the offset the next appended record gets.
func (l *Log) LogEndOffset() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.leo
}

// LogStartOffset is the first offset that can be read.
func (l *Log) LogStartOffset() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.logStart
}

// RecoveryPoint is the offset below which everything has been fsynced.
func (l *Log) RecoveryPoint() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.recoveryPoint
}

// SetHighWatermark tells the log the partition's HW; retention never deletes a segment that
// ends above it (Kafka's deletableSegments bound). The manager sets it from
// CheckpointHighWatermarks; without one, retention is bounded by the LEO only.
func (l *Log) SetHighWatermark(hw int64) {
	l.mu.Lock()
	l.hw = hw
	l.mu.Unlock()
}

// AppendAsLeader validates every batch in records, assigns offsets from the LEO by rewriting
// only baseOffset and partitionLeaderEpoch in each header, appends, updates the indexes, and
// records (leaderEpoch -> first offset) in the epoch cache when leaderEpoch is new (K1).
// Nothing is appended if any batch is invalid. records is modified in place.
func (l *Log) AppendAsLeader(records []byte, leaderEpoch int32) (AppendInfo, error) {
	hs, rest, err := parseBatches(records)
	if err != nil {
		return AppendInfo{FirstOffset: -1, LastOffset: -1}, err
	}
	if rest != 0 {
		return AppendInfo{FirstOffset: -1, LastOffset: -1}, fmt.Errorf("%w: %d bytes of an incomplete batch", ErrCorruptMessage, rest)
	}
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	cfg := l.cfg
	for i, h := range hs {
		if err := validateForLeader(h, cfg.MaxMessageBytes); err != nil {
			return AppendInfo{FirstOffset: -1, LastOffset: -1}, fmt.Errorf("batch %d: %w", i, err)
		}
	}
	if cfg.CleanupPolicy.Compact() {
		// only compacted topics pay for decoding records (LogValidator.validateKey)
		if err := checkKeys(records, hs); err != nil {
			return AppendInfo{FirstOffset: -1, LastOffset: -1}, err
		}
	}
	if len(hs) == 0 {
		return AppendInfo{FirstOffset: -1, LastOffset: -1}, nil
	}
	if l.isClosed() {
		return AppendInfo{FirstOffset: -1, LastOffset: -1}, ErrClosed
	}
	if len(hs) == 1 {
		// a retried idempotent batch gets its original offsets and is not appended again
		if pb, dup := l.producers.duplicate(records, hs[0]); dup {
			l.log.WithFields(logrus.Fields{"baseOffset": pb.firstOffset}).Debug("duplicate idempotent batch")
			return AppendInfo{FirstOffset: pb.firstOffset, LastOffset: pb.lastOffset, MaxTimestamp: pb.maxTimestamp, NumRecords: pb.records}, nil
		}
	}
	next := l.leo
	pos := 0
	for i := range hs {
		setBaseOffsetAndEpoch(records[pos:], next, leaderEpoch)
		hs[i].BaseOffset = next
		hs[i].LeaderEpoch = leaderEpoch
		next += int64(hs[i].LastOffsetDelta) + 1
		pos += hs[i].Size()
	}
	return l.appendLocked(records, hs)
}

// AppendAsFollower appends batches fetched from the leader, keeping the leader's offsets and
// epochs (S18). CRCs are validated; the first batch must start at the LEO
// (ErrUnexpectedOffset). An incomplete trailing batch is ignored, as Kafka's follower does.
// Each batch's (epoch -> baseOffset) is assigned to the epoch cache (epochCache.assign).
// The follower does not apply max.message.bytes: the leader accepted the data already.
func (l *Log) AppendAsFollower(records []byte) (AppendInfo, error) {
	hs, rest, err := parseBatches(records)
	if err != nil {
		return AppendInfo{FirstOffset: -1, LastOffset: -1}, err
	}
	records = records[:len(records)-rest]
	if len(hs) == 0 {
		return AppendInfo{FirstOffset: -1, LastOffset: -1}, nil
	}
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if l.isClosed() {
		return AppendInfo{FirstOffset: -1, LastOffset: -1}, ErrClosed
	}
	if hs[0].BaseOffset != l.leo {
		return AppendInfo{FirstOffset: -1, LastOffset: -1}, fmt.Errorf("%w: first offset %d, log end offset %d", ErrUnexpectedOffset, hs[0].BaseOffset, l.leo)
	}
	for i := 1; i < len(hs); i++ {
		if hs[i].BaseOffset <= hs[i-1].LastOffset() {
			return AppendInfo{FirstOffset: -1, LastOffset: -1}, fmt.Errorf("%w: out of order offsets: batch at %d after one ending at %d", ErrInvalidRecord, hs[i].BaseOffset, hs[i-1].LastOffset())
		}
	}
	return l.appendLocked(records, hs)
}

func (l *Log) isClosed() bool {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.closed
}

// appendLocked writes already validated and offset-stamped batches (appendMu held).
func (l *Log) appendLocked(records []byte, hs []BatchHeader) (AppendInfo, error) {
	first, last := hs[0].BaseOffset, hs[len(hs)-1].LastOffset()
	info := AppendInfo{FirstOffset: first, LastOffset: last, MaxTimestamp: -1, Bytes: len(records)}
	for _, h := range hs {
		info.NumRecords += int(h.RecordCount)
		if h.MaxTimestamp > info.MaxTimestamp {
			info.MaxTimestamp = h.MaxTimestamp
		}
	}
	if last-first > math.MaxInt32 {
		return AppendInfo{FirstOffset: -1, LastOffset: -1}, fmt.Errorf("%w: offsets %d..%d do not fit one segment", ErrInvalidRecord, first, last)
	}
	cfg := l.cfg
	now := l.now()
	seg := l.segs[len(l.segs)-1]
	if seg.size > 0 && (seg.size+int64(len(records)) > cfg.SegmentBytes ||
		(cfg.SegmentMs > 0 && now.Sub(seg.created) > cfg.SegmentMs) ||
		last-seg.base > math.MaxInt32 ||
		seg.size+int64(len(records)) > math.MaxInt32) {
		var err error
		if seg, err = l.rollLocked(first, now); err != nil {
			return AppendInfo{FirstOffset: -1, LastOffset: -1}, err
		}
	}
	if first < seg.base || last-seg.base > math.MaxInt32 {
		return AppendInfo{FirstOffset: -1, LastOffset: -1}, fmt.Errorf("%w: offsets %d..%d do not fit segment %d", ErrInvalidRecord, first, last, seg.base)
	}
	if seg.size == 0 {
		seg.created = now
	}
	if n, err := seg.f.WriteAt(records, seg.size); err != nil {
		if n > 0 {
			seg.f.Truncate(seg.size) // best effort: never publish a partial write
		}
		return AppendInfo{FirstOffset: -1, LastOffset: -1}, fmt.Errorf("logstore: append to %s: %w", seg.logPath(), err)
	}
	var epochsChanged bool
	l.mu.Lock()
	pos := seg.size
	for _, h := range hs {
		seg.ix.add(seg.base, h, pos, cfg.IndexIntervalBytes)
		pos += int64(h.Size())
		// Kafka's maybeAssignEpochStartOffset for every batch: a no-op within the latest
		// epoch; an older epoch replaces the conflicting later entries (epochCache.assign).
		if l.epochs.assign(h.LeaderEpoch, h.BaseOffset) {
			epochsChanged = true
		}
	}
	seg.size = pos
	l.leo = last + 1
	pos = 0
	for _, h := range hs {
		l.producers.record(records[pos:], h)
		pos += int64(h.Size())
	}
	var epochs []EpochEntry
	if epochsChanged {
		epochs = l.epochs.snapshot()
	}
	l.mu.Unlock()
	if epochsChanged {
		if err := l.writeEpochCheckpoint(epochs); err != nil {
			l.log.WithError(err).Error("writing leader-epoch-checkpoint")
		}
	}
	l.unflushedMessages += int64(info.NumRecords)
	if l.unflushedMessages >= cfg.FlushIntervalMessages {
		l.unflushedMessages = 0
		l.lastFlush = now
		if err := l.flushTo(last + 1); err != nil {
			return info, err
		}
	}
	return info, nil
}

// rollLocked starts a new active segment at offset (appendMu held). The old segment's time
// index gets its final entry and is flushed asynchronously, moving the recovery point, as
// Kafka's roll schedules flush(newOffset).
func (l *Log) rollLocked(base int64, now time.Time) (*segment, error) {
	s, err := createSegment(l.dir, base, now)
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	old := l.segs[len(l.segs)-1]
	old.ix.maybeAppendTime(old.base)
	l.segs = append(l.segs, s)
	l.mu.Unlock()
	l.log.WithFields(logrus.Fields{"segment": s.logPath(), "previousSize": old.size}).Debug("rolled log segment")
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		if err := l.flushTo(base); err != nil && !errors.Is(err, ErrClosed) {
			l.log.WithError(err).Warn("flushing rolled segment")
		}
	}()
	return s, nil
}

// Flush fsyncs everything up to the LEO and moves the recovery point there.
func (l *Log) Flush() error {
	return l.flushTo(l.LogEndOffset())
}

// flushTo fsyncs the segments holding offsets below offset, writes their pending index
// entries, and raises the recovery point to offset (Log.flush).
func (l *Log) flushTo(offset int64) error {
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	type job struct {
		s    *segment
		size int64
		idx  []offsetEntry
		tidx []timeEntry
	}
	l.mu.RLock()
	if l.closed {
		l.mu.RUnlock()
		return ErrClosed
	}
	if offset > l.leo {
		offset = l.leo
	}
	if offset <= l.recoveryPoint {
		l.mu.RUnlock()
		return nil
	}
	var jobs []job
	for i, s := range l.segs {
		if s.base >= offset && i > 0 {
			break
		}
		if i+1 < len(l.segs) && l.segs[i+1].base <= l.recoveryPoint {
			continue
		}
		jobs = append(jobs, job{s: s, size: s.size, idx: s.ix.idx[:len(s.ix.idx):len(s.ix.idx)], tidx: s.ix.tidx[:len(s.ix.tidx):len(s.ix.tidx)]})
	}
	l.mu.RUnlock()
	for _, j := range jobs {
		if j.size != j.s.flushedSize {
			if err := j.s.f.Sync(); err != nil {
				return fmt.Errorf("logstore: fsync %s: %w", j.s.logPath(), err)
			}
			j.s.flushedSize = j.size
		}
		if err := j.s.persistIndexes(j.idx, j.tidx, true); err != nil {
			return fmt.Errorf("logstore: writing indexes of %s: %w", j.s.logPath(), err)
		}
	}
	l.mu.Lock()
	if offset > l.recoveryPoint {
		l.recoveryPoint = offset
	}
	l.mu.Unlock()
	return nil
}

// Read returns the raw stored bytes of whole batches, starting with the batch that contains
// startOffset (located through the sparse offset index). It stops before maxBytes would be
// exceeded, except that the first batch is returned whole when minOneBatch (KIP-74), and it
// never returns a batch that reaches maxOffset (last offset >= maxOffset): reads stop at the
// batch that contains the HW for consumers (S7), as Kafka's read up to the HW's position does;
// followers pass the LEO, which no stored batch reaches. startOffset below the log start or above the LEO is ErrOffsetOutOfRange;
// startOffset == LEO returns no bytes.
func (l *Log) Read(startOffset int64, maxBytes int32, maxOffset int64, minOneBatch bool) ([]byte, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed {
		return nil, ErrClosed
	}
	if startOffset < l.logStart || startOffset > l.leo {
		return nil, fmt.Errorf("%w: offset %d, log start %d, log end %d", ErrOffsetOutOfRange, startOffset, l.logStart, l.leo)
	}
	if startOffset == l.leo || startOffset >= maxOffset {
		return nil, nil
	}
	budget := int64(maxBytes)
	if budget < 0 {
		budget = 0
	}
	i := sort.Search(len(l.segs), func(i int) bool { return l.segs[i].base > startOffset }) - 1
	if i < 0 {
		i = 0
	}
	var out []byte
	for ; i < len(l.segs); i++ {
		s := l.segs[i]
		pos := int64(0)
		if s.base <= startOffset {
			pos = s.lookup(startOffset)
		}
		// skip batches ending before startOffset
		var hdr [batchHeaderSize]byte
		var first BatchHeader
		found := false
		for pos < s.size {
			if pos+batchHeaderSize > s.size {
				return out, fmt.Errorf("%w: truncated header at %d in %s", ErrCorruptMessage, pos, s.logPath())
			}
			if _, err := s.f.ReadAt(hdr[:], pos); err != nil {
				return out, fmt.Errorf("logstore: read %s: %w", s.logPath(), err)
			}
			h := parseHeader(hdr[:])
			if h.Length < minBatchLength || pos+int64(h.Size()) > s.size {
				return out, fmt.Errorf("%w: bad batch length %d at %d in %s", ErrCorruptMessage, h.Length, pos, s.logPath())
			}
			if h.LastOffset() >= startOffset {
				first, found = h, true
				break
			}
			pos += int64(h.Size())
		}
		if !found {
			continue
		}
		if first.LastOffset() >= maxOffset {
			break
		}
		limit := budget
		if out == nil && minOneBatch && int64(first.Size()) > limit {
			limit = int64(first.Size())
		}
		if avail := s.size - pos; limit > avail {
			limit = avail
		}
		if limit < int64(first.Size()) {
			break
		}
		buf := make([]byte, limit)
		n, err := s.f.ReadAt(buf, pos)
		if int64(n) < limit {
			return out, fmt.Errorf("logstore: read %s: %w", s.logPath(), err)
		}
		p := 0
		stop := false
		for p+batchHeaderSize <= len(buf) {
			base := int64(binary.BigEndian.Uint64(buf[p+offBaseOffset:]))
			size := int(int32(binary.BigEndian.Uint32(buf[p+offLength:]))) + batchLengthShift
			if size < batchHeaderSize {
				return out, fmt.Errorf("%w: bad batch length at %d in %s", ErrCorruptMessage, pos+int64(p), s.logPath())
			}
			last := base + int64(int32(binary.BigEndian.Uint32(buf[p+offLastOffsetDelta:])))
			if last >= maxOffset {
				stop = true
				break
			}
			if p+size > len(buf) {
				stop = true
				break
			}
			p += size
		}
		if p < len(buf) {
			stop = true
		}
		if out == nil {
			out = buf[:p]
		} else {
			out = append(out, buf[:p]...)
		}
		budget -= int64(p)
		if stop || budget <= 0 {
			break
		}
	}
	return out, nil
}

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
		if err := l.writeEpochCheckpoint(epochs); err != nil {
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
	if offset >= l.leo {
		changed := l.epochs.truncateFromEnd(l.leo)
		epochs := l.epochs.snapshot()
		l.mu.Unlock()
		if changed {
			l.log.WithFields(logrus.Fields{"targetOffset": offset, "logEndOffset": l.leo, "epochs": epochs}).
				Info("truncation at or above the LEO: dropped leader epoch entries starting at or after the LEO")
			return l.writeEpochCheckpoint(epochs)
		}
		return nil
	}
	if offset < 0 {
		offset = 0
	}
	l.abortCleaningLocked(offset)
	if offset <= l.segs[0].base {
		l.mu.Unlock()
		return l.truncateFullyLocked(offset, false)
	}
	defer l.mu.Unlock()
	// drop whole segments starting at or after offset
	keep := sort.Search(len(l.segs), func(i int) bool { return l.segs[i].base >= offset })
	nextBase := int64(-1)
	if keep < len(l.segs) {
		nextBase = l.segs[keep].base
	}
	for _, s := range l.segs[keep:] {
		s.markDeleted(0)
	}
	l.segs = l.segs[:keep]
	s := l.segs[keep-1]
	// find the first batch of s whose last offset is >= offset
	pos := s.lookup(offset - 1)
	newLEO := int64(-1)
	var hdr [batchHeaderSize]byte
	for pos+batchHeaderSize <= s.size {
		if _, err := s.f.ReadAt(hdr[:], pos); err != nil {
			return fmt.Errorf("logstore: read %s: %w", s.logPath(), err)
		}
		h := parseHeader(hdr[:])
		if h.Length < minBatchLength || pos+int64(h.Size()) > s.size {
			break
		}
		if h.LastOffset() >= offset {
			newLEO = h.BaseOffset
			break
		}
		pos += int64(h.Size())
	}
	if newLEO < 0 {
		// every batch of s ends below offset: s is kept whole and the cut is at the
		// first removed segment
		pos = s.size
		if nextBase >= 0 {
			newLEO = nextBase
		} else {
			newLEO = l.lastOffsetOf(s) + 1
		}
	}
	if err := s.f.Truncate(pos); err != nil {
		return fmt.Errorf("logstore: truncate %s: %w", s.logPath(), err)
	}
	s.size = pos
	if s.flushedSize > pos {
		s.flushedSize = pos
	}
	// drop index entries at or after the cut
	ki := sort.Search(len(s.ix.idx), func(i int) bool { return int64(s.ix.idx[i].pos) >= pos })
	s.ix.idx = s.ix.idx[:ki]
	kt := sort.Search(len(s.ix.tidx), func(i int) bool { return s.base+int64(s.ix.tidx[i].rel) >= newLEO })
	s.ix.tidx = s.ix.tidx[:kt]
	l.resetIndexState(s)
	if s.idxPersisted > ki {
		s.idxPersisted = ki
	}
	if s.tidxPersisted > kt {
		s.tidxPersisted = kt
	}
	if err := s.persistIndexes(s.ix.idx, s.ix.tidx, false); err != nil {
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
		if err := l.writeEpochCheckpoint(l.epochs.snapshot()); err != nil {
			return err
		}
	}
	return nil
}

// lastOffsetOf scans s for its last batch's last offset (s non-empty; mu held).
func (l *Log) lastOffsetOf(s *segment) int64 {
	res := scanSegment(s.f, s.size, s.base, 0, s.base, newIndexState(s.base), l.cfg.IndexIntervalBytes)
	return res.nextOffset - 1
}

// resetIndexState recomputes the running index state after entries were dropped. maxTs
// comes from the remaining time index (exact enough for retention; Kafka does the same).
func (l *Log) resetIndexState(s *segment) {
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
	res := scanSegment(s.f, s.size, s.base, startPos, s.base, st, l.cfg.IndexIntervalBytes)
	s.ix = res.ix
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
	if l.closed {
		return ErrClosed
	}
	l.abortCleaningLocked(offset)
	for _, s := range l.segs {
		s.markDeleted(0)
	}
	l.segs = nil
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
	l.log.WithField("offset", offset).Info("truncated log fully")
	if changed {
		return l.writeEpochCheckpoint(l.epochs.snapshot())
	}
	return nil
}

// OffsetForTimestamp finds the first record whose timestamp is >= ts (ListOffsets by time),
// through the time index. For an uncompressed batch it decodes that one batch's records to
// return the exact record; for a compressed batch it returns the batch's base offset and
// max timestamp.
func (l *Log) OffsetForTimestamp(ts int64) (offset int64, timestamp int64, found bool) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed {
		return -1, -1, false
	}
	for _, s := range l.segs {
		if s.size == 0 || s.ix.maxTs < ts {
			continue
		}
		startOff := s.lookupTime(ts)
		if startOff < l.logStart {
			startOff = l.logStart
		}
		pos := s.lookup(startOff)
		var hdr [batchHeaderSize]byte
		for pos+batchHeaderSize <= s.size {
			if _, err := s.f.ReadAt(hdr[:], pos); err != nil {
				return -1, -1, false
			}
			h := parseHeader(hdr[:])
			if h.Length < minBatchLength || pos+int64(h.Size()) > s.size {
				return -1, -1, false
			}
			if h.MaxTimestamp >= ts && h.LastOffset() >= l.logStart {
				b := make([]byte, h.Size())
				if _, err := s.f.ReadAt(b, pos); err == nil {
					if off, rts, ok := firstRecordAtOrAfter(b, h, ts); ok && off >= l.logStart {
						return off, rts, true
					}
				}
				off := h.BaseOffset
				if off < l.logStart {
					off = l.logStart
				}
				return off, h.MaxTimestamp, true
			}
			pos += int64(h.Size())
		}
	}
	return -1, -1, false
}

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
	cfg := l.cfg
	nowMs := now.UnixMilli()
	var total int64
	for _, s := range l.segs {
		total += s.size
	}
	upper := l.leo
	if l.hw >= 0 && l.hw < upper {
		upper = l.hw
	}
	n := 0 // number of leading segments to delete
	diff := total - cfg.RetentionBytes
	for i, s := range l.segs {
		end := l.leo
		if i+1 < len(l.segs) {
			end = l.segs[i+1].base
		}
		if end > upper || (i+1 == len(l.segs) && s.size == 0) {
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
		if i+1 < len(l.segs) && l.segs[i+1].base <= l.logStart {
			del = true
		}
		if !del {
			break
		}
		diff -= s.size
		n++
	}
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
	l.segs = append([]*segment(nil), l.segs[n:]...)
	for _, s := range dead {
		l.log.WithFields(logrus.Fields{"segment": s.logPath(), "size": s.size}).Info("deleting segment by retention")
		s.markDeleted(cfg.FileDeleteDelay)
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
		if err := l.writeEpochCheckpoint(epochs); err != nil {
			return n, err
		}
	}
	return n, nil
}

// LatestEpoch returns the latest cached leader epoch.
func (l *Log) LatestEpoch() (int32, bool) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	e, ok := l.epochs.latest()
	return e.Epoch, ok
}

// AssignEpochStartOffset records (epoch -> startOffset) with epochCache.assign's semantics;
// makeLeader records (new epoch -> LEO) (KIP-279 PR #5678). The cache is
// persisted to leader-epoch-checkpoint on every change.
func (l *Log) AssignEpochStartOffset(epoch int32, startOffset int64) {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	l.mu.Lock()
	changed := l.epochs.assign(epoch, startOffset)
	epochs := l.epochs.snapshot()
	l.mu.Unlock()
	if changed {
		if err := l.writeEpochCheckpoint(epochs); err != nil {
			l.log.WithError(err).WithField("leaderEpoch", epoch).Error("writing leader-epoch-checkpoint")
		}
	}
}

// EndOffsetForEpoch answers OffsetsForLeaderEpoch (KIP-101/KIP-279): the largest cached epoch
// <= requested and its end offset, which is the start offset of the next larger epoch, or
// the LEO for the latest epoch. See epochCache.endOffsetFor for the edge cases.
func (l *Log) EndOffsetForEpoch(epoch int32) (int32, int64) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.epochs.endOffsetFor(epoch, l.leo)
}

// EpochEntries returns a copy of the leader epoch cache.
func (l *Log) EpochEntries() []EpochEntry {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.epochs.snapshot()
}

// writeEpochCheckpoint persists the cache (appendMu held, mu not needed).
func (l *Log) writeEpochCheckpoint(entries []EpochEntry) error {
	return writeFileAtomic(filepath.Join(l.dir, leaderEpochCheckpointFile), formatEpochCheckpoint(entries))
}

// Close flushes the log (data, indexes with the final time index entry) and closes its
// files. Further calls return ErrClosed.
func (l *Log) Close() error {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if l.isClosed() {
		return ErrClosed
	}
	l.wg.Wait()
	l.mu.Lock()
	active := l.segs[len(l.segs)-1]
	active.ix.maybeAppendTime(active.base)
	l.mu.Unlock()
	err := l.flushAll()
	l.mu.Lock()
	l.closed = true
	l.cleanGen++
	l.closeFiles()
	l.mu.Unlock()
	return err
}

// flushAll fsyncs every segment and index regardless of the recovery point.
func (l *Log) flushAll() error {
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	l.mu.RLock()
	segs := append([]*segment(nil), l.segs...)
	leo := l.leo
	l.mu.RUnlock()
	var first error
	for _, s := range segs {
		if s.size != s.flushedSize {
			if err := s.f.Sync(); err != nil && first == nil {
				first = err
			}
			s.flushedSize = s.size
		}
		if err := s.persistIndexes(s.ix.idx, s.ix.tidx, true); err != nil && first == nil {
			first = err
		}
	}
	if first == nil {
		l.mu.Lock()
		l.recoveryPoint = leo
		l.mu.Unlock()
	}
	return first
}

// maybeTimeFlush fsyncs when log.flush.interval.ms has passed since the last flush.
func (l *Log) maybeTimeFlush(now time.Time) error {
	l.appendMu.Lock()
	cfg := l.cfg
	due := cfg.FlushInterval > 0 && now.Sub(l.lastFlush) >= cfg.FlushInterval
	if due {
		l.lastFlush = now
		l.unflushedMessages = 0
	}
	l.appendMu.Unlock()
	if !due {
		return nil
	}
	return l.Flush()
}

// checkpointState returns the recovery point and log start offset for the checkpoints.
func (l *Log) checkpointState() (recovery, start int64, closed bool) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.recoveryPoint, l.logStart, l.closed
}
