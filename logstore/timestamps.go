package logstore

import (
	"encoding/binary"
	"hash/crc32"
)

// Record timestamps on the leader's append path (Kafka 2.4 LogValidator; docs/live-configs.md
// §4): the record walk (validate.go) checks each record's timestamp and names the first one out
// of range (Produce v8); LogAppendTime is stamped here.

// noTimestamp is RecordBatch.NO_TIMESTAMP.
const noTimestamp = -1

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
