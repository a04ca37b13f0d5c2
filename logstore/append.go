package logstore

import (
	"fmt"
	"math"
	"time"

	"github.com/sirupsen/logrus"
)

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
	// Kafka's LogValidator, outside appendMu: it walks every record (validate.go), so
	// concurrent produces to one partition do not queue behind each other's decompression.
	cfg := l.Config()
	nowMs := l.now().UnixMilli()
	if err := validateAsLeader(records, hs, cfg, nowMs); err != nil {
		return AppendInfo{FirstOffset: -1, LastOffset: -1}, err
	}
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	cfg = l.cfg
	if len(hs) == 0 {
		return AppendInfo{FirstOffset: -1, LastOffset: -1}, nil
	}
	if l.status().closed {
		return AppendInfo{FirstOffset: -1, LastOffset: -1}, ErrClosed
	}
	if len(hs) == 1 {
		// a retried idempotent batch gets its original offsets and is not appended again
		if pb, dup := l.producers.duplicate(records, hs[0]); dup {
			l.log.WithFields(logrus.Fields{"baseOffset": pb.firstOffset}).Debug("duplicate idempotent batch")
			info := AppendInfo{FirstOffset: pb.firstOffset, LastOffset: pb.lastOffset, MaxTimestamp: pb.maxTimestamp, NumRecords: pb.records, LogAppendTime: -1}
			if cfg.TimestampType == LogAppendTime {
				info.LogAppendTime = pb.maxTimestamp // Kafka: the original append's time
			}
			return info, nil
		}
	}
	logAppendTime := int64(-1)
	if cfg.TimestampType == LogAppendTime {
		logAppendTime = nowMs
		stampLogAppendTime(records, hs, nowMs)
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
	info, err := l.appendLocked(records, hs)
	info.LogAppendTime = logAppendTime
	return info, err
}

// AppendAsFollower appends batches fetched from the leader, keeping the leader's offsets and
// epochs (S18). CRCs are validated; the offsets must rise from batch to batch, and the first
// batch must not start below the LEO (ErrUnexpectedOffset, Kafka's
// UnexpectedAppendOffsetException). It may start above it: the leader's cleaner removed whole
// batches of a compacted log, so a fetch at the LEO is answered from the next kept batch, and
// the LEO moves past it (docs/kafka-facts.md §4, "Compaction gaps"). Batches whose offsets do
// not fit one segment's 32-bit relative offsets (a gap wider than that, or a leader read
// spanning segments) go to segments of their own, rolled at their base offsets. An incomplete
// trailing batch is ignored, as Kafka's follower does. Each batch's (epoch -> baseOffset) is
// assigned to the epoch cache (epochCache.assign). The follower does not apply
// max.message.bytes: the leader accepted the data already.
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
	if l.status().closed {
		return AppendInfo{FirstOffset: -1, LastOffset: -1}, ErrClosed
	}
	if hs[0].BaseOffset < l.leo {
		return AppendInfo{FirstOffset: -1, LastOffset: -1}, fmt.Errorf("%w: first offset %d is below the log end offset %d", ErrUnexpectedOffset, hs[0].BaseOffset, l.leo)
	}
	for i := 1; i < len(hs); i++ {
		if hs[i].BaseOffset <= hs[i-1].LastOffset() {
			return AppendInfo{FirstOffset: -1, LastOffset: -1}, fmt.Errorf("%w: out of order offsets: batch at %d after one ending at %d", ErrInvalidRecord, hs[i].BaseOffset, hs[i-1].LastOffset())
		}
	}
	// Runs of batches whose offsets fit one segment (one batch always does: its last offset
	// delta is an int32); nearly always the whole record set.
	info := AppendInfo{FirstOffset: -1, LastOffset: -1, MaxTimestamp: -1}
	start, runPos, pos := 0, 0, 0
	for i := 0; i <= len(hs); i++ {
		if i < len(hs) && (i == start || hs[i].LastOffset()-hs[start].BaseOffset <= math.MaxInt32) {
			pos += hs[i].Size()
			continue
		}
		run, err := l.appendLocked(records[runPos:pos], hs[start:i])
		if err != nil {
			return run, err
		}
		if info.FirstOffset < 0 {
			info.FirstOffset = run.FirstOffset
		}
		info.LastOffset = run.LastOffset
		info.MaxTimestamp = max(info.MaxTimestamp, run.MaxTimestamp)
		info.NumRecords += run.NumRecords
		info.Bytes += run.Bytes
		if i < len(hs) {
			start, runPos = i, pos
			pos += hs[i].Size()
		}
	}
	return info, nil
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
	if err := l.health.check(); err != nil {
		return AppendInfo{FirstOffset: -1, LastOffset: -1}, err
	}
	cfg := l.cfg
	now := l.now()
	seg := l.segs.active()
	// Kafka's shouldRoll: a full segment or an old one, and, even when it is empty, offsets
	// that do not fit its relative offsets (a follower crossing a wide compaction gap); the
	// new segment starts at the first offset appended.
	if (seg.size > 0 && (seg.size+int64(len(records)) > cfg.SegmentBytes ||
		(cfg.SegmentMs > 0 && now.Sub(seg.created) > cfg.SegmentMs) ||
		seg.size+int64(len(records)) > math.MaxInt32)) ||
		last-seg.base > math.MaxInt32 {
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
	if _, err := l.directWrites.writeAt(seg.f, records, seg.size); err != nil {
		// The dir goes offline and the file is not touched again: a partial write stays
		// unpublished here and is truncated as a torn tail by the recovery after a restart
		// (logdir_failure.go).
		return AppendInfo{FirstOffset: -1, LastOffset: -1}, l.health.failed(fmt.Errorf("logstore: append to %s: %w", seg.logPath(), err))
	}
	var epochsChanged, epochsRemoved bool
	var epochsFrom int64 // the base offset of the first batch that changed the epoch cache
	l.mu.Lock()
	if l.recent == nil || l.recent.seg != seg {
		l.recent = &recentBatches{seg: seg}
	}
	pos := seg.size
	for _, h := range hs {
		seg.ix.add(seg.base, h, pos, cfg.IndexIntervalBytes)
		l.recent.add(recentBatch{base: h.BaseOffset, last: h.LastOffset(), pos: pos, size: int64(h.Size())})
		pos += int64(h.Size())
		// Kafka's maybeAssignEpochStartOffset for every batch: a no-op within the latest
		// epoch; an older epoch replaces the conflicting later entries (epochCache.assign).
		if changed, removed := l.epochs.assignTracked(h.LeaderEpoch, h.BaseOffset); changed {
			epochsRemoved = epochsRemoved || removed
			if !epochsChanged {
				epochsChanged, epochsFrom = true, h.BaseOffset
			}
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
	// Under mu as well as appendMu: readers decide from writebackFrom which data is resident.
	l.writebackRing = l.writeback.appended(l.writebackRing, seg, now)
	l.mu.Unlock()
	if epochsChanged {
		// New entries only: written by the flush that raises the recovery point past these
		// batches (recovery re-enters their epochs until then), so a follower taking the first
		// batches of a new leader's epoch on thousands of partitions fsyncs nothing on its
		// fetch path. An older epoch's batch that replaced later entries: written now, as
		// Kafka does (recovery re-enters only rising epochs, so it would not redo the removal).
		if err := l.epochs.persistChange(epochs, epochsFrom, epochsRemoved); err != nil {
			return info, l.health.failed(fmt.Errorf("logstore: writing leader-epoch-checkpoint: %w", err))
		}
	}
	if err := l.flusher.appended(int64(info.NumRecords), last+1, now, cfg); err != nil {
		return info, err
	}
	return info, nil
}

// rollLocked starts a new active segment at offset (appendMu held). The old segment's time
// index gets its final entry and is flushed asynchronously, moving the recovery point, as
// Kafka's roll schedules flush(newOffset).
func (l *Log) rollLocked(base int64, now time.Time) (*segment, error) {
	s, err := createSegment(l.fs, l.dir, base, now)
	if err != nil {
		return nil, l.health.failed(fmt.Errorf("logstore: rolling %s: %w", l.dir, err))
	}
	l.mu.Lock()
	old := l.segs.active()
	old.ix.maybeAppendTime(old.base)
	l.segs = append(l.segs, s)
	l.mu.Unlock()
	l.log.WithFields(logrus.Fields{"segment": s.logPath(), "previousSize": old.size}).Debug("rolled log segment")
	l.flusher.flushAsync(base)
	return s, nil
}
