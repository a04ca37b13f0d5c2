package logstore

import (
	"bufio"
	"encoding/binary"
	"io"

	"github.com/sirupsen/logrus"
)

// Producer state for idempotent producers (Kafka's ProducerStateManager, reduced): the last
// producerBatchesCached batches of each producer id, so that a retried batch (same producer
// id, epoch and sequence range) is answered with the offsets it got the first time instead
// of being appended twice (Redpanda #3039: the cache must hold max.in.flight = 5 batches).
//
// The state must survive a leader change and a restart (docs/kafka-facts.md §10):
//   - both AppendAsLeader and AppendAsFollower record the batches they append (through
//     appendLocked; a follower's batches carry the leader's offsets), so a new leader
//     recognises a retried batch it replicated as a follower;
//   - on log load the state is rebuilt from the tail of the log (the last
//     producerRebuildBytes bytes, across segments), so a retry across a restart is caught
//     as long as the producer's last batches are in that tail;
//   - TruncateTo drops only the cached batches at or above the truncation point.
//
// It is lenient: a sequence gap or an unknown producer is appended as-is; no
// OUT_OF_ORDER_SEQUENCE_NUMBER or UNKNOWN_PRODUCER_ID errors are produced (kgo would reset
// its producer id on them, which this reduced state cannot make safer). Retention does not
// expire producers (the cache is bounded by 5 batches per producer id).
const producerBatchesCached = 5

// producerRebuildBytes bounds how much of the log tail is read on load to rebuild the
// producer state.
const producerRebuildBytes = 8 << 20

const (
	offProducerID    = 43
	offProducerEpoch = 51
	offBaseSequence  = 53
)

type producerBatch struct {
	epoch             int16
	firstSeq, lastSeq int32
	firstOffset       int64
	lastOffset        int64
	maxTimestamp      int64
	records           int
}

type producerState map[int64][]producerBatch

// producerFields reads producerId, producerEpoch and baseSequence of the batch at b.
func producerFields(b []byte) (pid int64, epoch int16, seq int32) {
	return int64(binary.BigEndian.Uint64(b[offProducerID:])),
		int16(binary.BigEndian.Uint16(b[offProducerEpoch:])),
		int32(binary.BigEndian.Uint32(b[offBaseSequence:]))
}

// duplicate returns the cached batch matching an incoming idempotent batch, if any.
func (ps producerState) duplicate(b []byte, h BatchHeader) (producerBatch, bool) {
	pid, epoch, seq := producerFields(b)
	if pid < 0 || seq < 0 {
		return producerBatch{}, false
	}
	for _, pb := range ps[pid] {
		if pb.epoch == epoch && pb.firstSeq == seq && pb.lastSeq == seq+h.LastOffsetDelta {
			return pb, true
		}
	}
	return producerBatch{}, false
}

// record remembers an appended idempotent batch (b carries its final base offset).
func (ps producerState) record(b []byte, h BatchHeader) {
	pid, epoch, seq := producerFields(b)
	if pid < 0 || seq < 0 {
		return
	}
	list := ps[pid]
	if len(list) > 0 && list[len(list)-1].epoch != epoch {
		list = list[:0] // a new producer epoch restarts the sequence
	}
	if len(list) == producerBatchesCached {
		list = append(list[:0], list[1:]...)
	}
	ps[pid] = append(list, producerBatch{
		epoch: epoch, firstSeq: seq, lastSeq: seq + h.LastOffsetDelta,
		firstOffset: h.BaseOffset, lastOffset: h.LastOffset(),
		maxTimestamp: h.MaxTimestamp, records: int(h.RecordCount),
	})
}

// truncateFrom forgets the cached batches whose last offset is >= offset (the log was
// truncated there); earlier batches of each producer stay.
func (ps producerState) truncateFrom(offset int64) {
	for pid, list := range ps {
		n := 0
		for _, pb := range list {
			if pb.lastOffset < offset {
				list[n] = pb
				n++
			}
		}
		if n == 0 {
			delete(ps, pid)
		} else {
			ps[pid] = list[:n]
		}
	}
}

// rebuildProducerState re-reads the batch headers of the last producerRebuildBytes of the
// log (at least the tail of the active segment, earlier segments when it is smaller) and
// records every idempotent batch, oldest first. Called by openLog before the log is shared.
// A malformed header stops the scan of that segment (recovery already cut torn tails).
func (sl segmentList) rebuildProducerState(log logrus.FieldLogger) producerState {
	producers := producerState{}
	type region struct {
		s        *segment
		startPos int64
	}
	var regions []region
	budget := int64(producerRebuildBytes)
	for i := len(sl) - 1; i >= 0 && budget > 0; i-- {
		s := sl[i]
		if s.size <= budget {
			regions = append(regions, region{s, 0})
			budget -= s.size
			continue
		}
		// start at the last indexed batch at or before size-budget
		target := s.size - budget
		start := int64(0)
		for _, e := range s.ix.idx {
			if int64(e.pos) > target {
				break
			}
			start = int64(e.pos)
		}
		regions = append(regions, region{s, start})
		budget = 0
	}
	batches := 0
	for i := len(regions) - 1; i >= 0; i-- {
		r := regions[i]
		n := r.s.size - r.startPos
		if n <= 0 {
			continue // empty (a new log): no 1 MiB read buffer to allocate and clear
		}
		br := bufio.NewReaderSize(io.NewSectionReader(r.s.f, r.startPos, n), int(min(n, 1<<20)))
		var hdr [batchHeaderSize]byte
		for pos := r.startPos; pos+batchHeaderSize <= r.s.size; {
			if _, err := io.ReadFull(br, hdr[:]); err != nil {
				break
			}
			h := parseHeader(hdr[:])
			if h.Length < minBatchLength || pos+int64(h.Size()) > r.s.size {
				break
			}
			if _, err := br.Discard(h.Size() - batchHeaderSize); err != nil {
				break
			}
			producers.record(hdr[:], h)
			batches++
			pos += int64(h.Size())
		}
	}
	if len(producers) > 0 {
		log.WithFields(logrus.Fields{"producers": len(producers), "batchesScanned": batches}).Debug("rebuilt producer state from the log tail")
	}
	return producers
}
