package logstore

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
)

// Record timestamps on the leader's append path (Kafka 2.4 LogValidator; docs/live-configs.md
// §4), checked from what the record walk (validate.go) gathered: the common path (CreateTime,
// no difference limit) costs one attribute test per batch.

// noTimestamp is RecordBatch.NO_TIMESTAMP.
const noTimestamp = -1

// validateTimestamps applies LogValidator.validateTimestamp to batch i of a produce: a
// producer may not set the LogAppendTime attribute, and with CreateTime and a limited
// message.timestamp.difference.max.ms every record's timestamp must lie within that many ms
// of now (sum holds the smallest and largest; records without a timestamp are not checked).
func validateTimestamps(i int, h BatchHeader, sum recordSummary, cfg Config, nowMs int64) error {
	if h.Attributes&attrTimestampType != 0 {
		return fmt.Errorf("%w: batch %d: producer should not set timestamp type to LogAppendTime", ErrInvalidTimestamp, i)
	}
	if !cfg.TimestampDiffLimited || cfg.TimestampType != CreateTime {
		return nil
	}
	for _, ts := range [2]int64{sum.minTimestamp, sum.maxTimestamp} {
		if ts == noTimestamp {
			continue
		}
		if d := ts - nowMs; d > cfg.TimestampDiffMaxMs || -d > cfg.TimestampDiffMaxMs {
			return fmt.Errorf("%w: batch %d: timestamp %d is out of range; it should be within [%d, %d]",
				ErrInvalidTimestamp, i, ts, nowMs-cfg.TimestampDiffMaxMs, nowMs+cfg.TimestampDiffMaxMs)
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
