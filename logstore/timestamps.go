package logstore

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
)

// Record timestamps on the leader's append path (Kafka 2.4 LogValidator; docs/live-configs.md
// §4). Only batch headers are read and written: no record is
// decoded, so the common path (CreateTime, no difference limit) costs one attribute test per
// batch.

// noTimestamp is RecordBatch.NO_TIMESTAMP.
const noTimestamp = -1

// validateTimestamps applies LogValidator.validateTimestamp to each batch of a produce: a
// producer may not set the LogAppendTime attribute, and with CreateTime and a limited
// message.timestamp.difference.max.ms the batch's first and max timestamps must lie within
// that many ms of now. Deviation: Kafka checks every record's timestamp; isrbroker checks the
// two the header carries (records whose negative timestamp delta puts them below the first
// timestamp are not checked), so it never decodes or decompresses records.
func validateTimestamps(records []byte, hs []BatchHeader, cfg Config, nowMs int64) error {
	pos := 0
	for i, h := range hs {
		b := records[pos:]
		pos += h.Size()
		if h.Attributes&attrTimestampType != 0 {
			return fmt.Errorf("%w: batch %d: producer should not set timestamp type to LogAppendTime", ErrInvalidTimestamp, i)
		}
		if !cfg.TimestampDiffLimited || cfg.TimestampType != CreateTime {
			continue
		}
		first := int64(binary.BigEndian.Uint64(b[offBaseTimestamp:]))
		for _, ts := range [2]int64{first, h.MaxTimestamp} {
			if ts == noTimestamp {
				continue
			}
			if d := ts - nowMs; d > cfg.TimestampDiffMaxMs || -d > cfg.TimestampDiffMaxMs {
				return fmt.Errorf("%w: batch %d: timestamp %d is out of range; it should be within [%d, %d]",
					ErrInvalidTimestamp, i, ts, nowMs-cfg.TimestampDiffMaxMs, nowMs+cfg.TimestampDiffMaxMs)
			}
		}
	}
	return nil
}

// stampLogAppendTime is DefaultRecordBatch.setMaxTimestamp(LOG_APPEND_TIME, now) for each
// batch: the timestamp-type attribute bit is set, maxTimestamp becomes now and the CRC-32C is
// recomputed (both fields lie in the CRC'd range). The first timestamp and the records are
// left as the producer wrote them; readers take every record's timestamp from maxTimestamp.
func stampLogAppendTime(records []byte, hs []BatchHeader, nowMs int64) {
	pos := 0
	for i := range hs {
		h := &hs[i]
		b := records[pos : pos+h.Size()]
		pos += h.Size()
		h.Attributes |= attrTimestampType
		h.MaxTimestamp = nowMs
		binary.BigEndian.PutUint16(b[offAttributes:], uint16(h.Attributes))
		binary.BigEndian.PutUint64(b[offMaxTimestamp:], uint64(nowMs))
		h.CRC = crc32.Checksum(b[offAttributes:], castagnoli)
		binary.BigEndian.PutUint32(b[offCRC:], h.CRC)
	}
}
