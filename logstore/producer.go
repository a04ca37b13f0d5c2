package logstore

import "encoding/binary"

// Producer state for idempotent producers (Kafka's ProducerStateManager, reduced): the last
// producerBatchesCached batches of each producer id, so that a retried batch (same producer
// id, epoch and sequence range) is answered with the offsets it got the first time instead
// of being appended twice (Redpanda #3039: the cache must hold max.in.flight = 5 batches).
// The state is in memory only: it is rebuilt from nothing after a restart or a truncation,
// which is lenient (a retry across a broker restart may duplicate); no OutOfOrderSequence
// errors are produced.
const producerBatchesCached = 5

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
