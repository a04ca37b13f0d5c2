package logstore

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"

	"github.com/isrbroker/isrbroker/logstore/record"
)

// Record batch v2 header layout (big endian), the storage format of every segment:
//
//	 0 baseOffset           int64
//	 8 batchLength          int32  bytes after this field
//	12 partitionLeaderEpoch int32
//	16 magic                int8   (2)
//	17 crc                  uint32 CRC-32C over bytes 21..end
//	21 attributes           int16
//	23 lastOffsetDelta      int32
//	27 baseTimestamp        int64
//	35 maxTimestamp         int64
//	43 producerId           int64
//	51 producerEpoch        int16
//	53 baseSequence         int32
//	57 recordCount          int32
//	61 records...
//
// baseOffset and partitionLeaderEpoch lie before the CRC'd range, so the broker rewrites them
// without recomputing the CRC.
const (
	batchHeaderSize  = record.BatchHeaderSize  // whole v2 header, first record starts here
	batchLengthShift = record.BatchLogOverhead // baseOffset + batchLength: bytes not counted by batchLength
	minBatchLength   = record.BatchMinLength

	offBaseOffset      = 0
	offLength          = 8
	offLeaderEpoch     = 12
	offMagic           = 16
	offCRC             = 17
	offAttributes      = 21
	offLastOffsetDelta = 23
	offBaseTimestamp   = 27
	offMaxTimestamp    = 35
	offRecordCount     = 57

	attrCompressionMask = 0x07
	attrTimestampType   = 0x08 // LogAppendTime
	attrControl         = 0x20
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// BatchHeader is a parsed v2 record batch header (records are never decoded on the hot path).
type BatchHeader struct {
	BaseOffset      int64
	Length          int32 // batchLength: bytes after the length field; the whole batch is Length+12
	LeaderEpoch     int32
	Magic           int8
	CRC             uint32
	Attributes      int16
	LastOffsetDelta int32
	MaxTimestamp    int64
	RecordCount     int32
}

// LastOffset is the offset of the batch's last record.
func (h BatchHeader) LastOffset() int64 { return h.BaseOffset + int64(h.LastOffsetDelta) }

// Size is the whole batch size in bytes.
func (h BatchHeader) Size() int { return int(h.Length) + batchLengthShift }

// IsControl reports a transaction control batch.
func (h BatchHeader) IsControl() bool { return h.Attributes&attrControl != 0 }

// Compressed reports a compressed batch (records not decodable here without a codec).
func (h BatchHeader) Compressed() bool { return h.Attributes&attrCompressionMask != 0 }

// parseHeader reads the header at b[0:61]; b must hold at least batchHeaderSize bytes.
func parseHeader(b []byte) BatchHeader {
	return BatchHeader{
		BaseOffset:      int64(binary.BigEndian.Uint64(b[offBaseOffset:])),
		Length:          int32(binary.BigEndian.Uint32(b[offLength:])),
		LeaderEpoch:     int32(binary.BigEndian.Uint32(b[offLeaderEpoch:])),
		Magic:           int8(b[offMagic]),
		CRC:             binary.BigEndian.Uint32(b[offCRC:]),
		Attributes:      int16(binary.BigEndian.Uint16(b[offAttributes:])),
		LastOffsetDelta: int32(binary.BigEndian.Uint32(b[offLastOffsetDelta:])),
		MaxTimestamp:    int64(binary.BigEndian.Uint64(b[offMaxTimestamp:])),
		RecordCount:     int32(binary.BigEndian.Uint32(b[offRecordCount:])),
	}
}

// checkBatchAt validates the batch starting at b[0]: its framing (record.NextBatch: the length
// covers the header and is bounded by the bytes in b, never trusted beyond them, KAFKA-14063;
// magic is 2), then the CRC-32C and the offset delta. It returns the header. A batch that
// claims more bytes than b holds returns errTruncated so callers can tell a torn tail from
// corruption.
func checkBatchAt(b []byte) (BatchHeader, error) {
	_, whole, err := record.NextBatch(b)
	if err != nil {
		return BatchHeader{}, fmt.Errorf("%w: %w", ErrCorruptMessage, err)
	}
	if !whole {
		return BatchHeader{}, errTruncated
	}
	h := parseHeader(b)
	if crc := crc32.Checksum(b[offAttributes:h.Size()], castagnoli); crc != h.CRC {
		return h, fmt.Errorf("%w: CRC-32C mismatch (stored %08x, computed %08x)", ErrCorruptMessage, h.CRC, crc)
	}
	if h.LastOffsetDelta < 0 {
		return h, fmt.Errorf("%w: negative lastOffsetDelta %d", ErrCorruptMessage, h.LastOffsetDelta)
	}
	if h.BaseOffset < 0 || h.BaseOffset > math.MaxInt64-int64(h.LastOffsetDelta)-1 {
		return h, fmt.Errorf("%w: base offset %d out of range", ErrCorruptMessage, h.BaseOffset)
	}
	return h, nil
}

// errTruncated marks a batch cut short by the end of the buffer (a torn write or a partial
// batch at the end of a fetch response).
var errTruncated = fmt.Errorf("%w: truncated record batch", ErrCorruptMessage)

// BatchHeaders parses the headers of concatenated v2 batches without decoding records,
// validating lengths, magic and CRC of each. Trailing bytes that do not form a whole batch
// are an error.
func BatchHeaders(records []byte) ([]BatchHeader, error) {
	hs, rest, err := parseBatches(records)
	if err != nil {
		return hs, err
	}
	if rest != 0 {
		return hs, fmt.Errorf("%w: %d trailing bytes after the last whole batch", ErrCorruptMessage, rest)
	}
	return hs, nil
}

// parseBatches validates concatenated batches and returns their headers and the number of
// trailing bytes of an incomplete last batch (rest). A bad batch is an error.
func parseBatches(records []byte) (hs []BatchHeader, rest int, err error) {
	pos := 0
	for pos < len(records) {
		h, err := checkBatchAt(records[pos:])
		if err == errTruncated {
			return hs, len(records) - pos, nil
		}
		if err != nil {
			return hs, 0, fmt.Errorf("batch at byte %d: %w", pos, err)
		}
		hs = append(hs, h)
		pos += h.Size()
	}
	return hs, 0, nil
}

// validateForLeader applies the produce-side header checks (UnifiedLog.analyzeAndValidateRecords
// and LogValidator.validateBatch for a client's append): size against max.message.bytes
// (MESSAGE_TOO_LARGE); then, each an InvalidRecordException (INVALID_RECORD), a positive
// record count equal to lastOffsetDelta+1, no control batch (clients may not write
// transaction markers; isrbroker writes none either), and a base sequence for a batch with
// a producer id. The records themselves are checked by walkRecords.
func validateForLeader(b []byte, h BatchHeader, maxMessageBytes int32) error {
	if h.Size() > int(maxMessageBytes) {
		return fmt.Errorf("%w: batch of %d bytes, limit %d", ErrMessageTooLarge, h.Size(), maxMessageBytes)
	}
	if h.RecordCount <= 0 {
		return fmt.Errorf("%w: record count %d", ErrInvalidRecord, h.RecordCount)
	}
	if int64(h.LastOffsetDelta) != int64(h.RecordCount)-1 {
		return fmt.Errorf("%w: lastOffsetDelta %d with %d records", ErrInvalidRecord, h.LastOffsetDelta, h.RecordCount)
	}
	if h.IsControl() {
		return fmt.Errorf("%w: clients are not allowed to write control records", ErrInvalidRecord)
	}
	if pid, _, seq := producerFields(b); pid >= 0 && seq < 0 {
		return fmt.Errorf("%w: invalid sequence number %d with producerId %d", ErrInvalidRecord, seq, pid)
	}
	return nil
}

// setBaseOffsetAndEpoch rewrites the two header fields outside the CRC'd range.
func setBaseOffsetAndEpoch(b []byte, base int64, epoch int32) {
	binary.BigEndian.PutUint64(b[offBaseOffset:], uint64(base))
	binary.BigEndian.PutUint32(b[offLeaderEpoch:], uint32(epoch))
}

// firstRecordAtOrAfter decodes the records of one uncompressed batch and returns the offset
// and timestamp of the first record whose timestamp is >= ts. ok is false when the batch
// cannot be decoded cheaply (compressed) or no record qualifies.
func firstRecordAtOrAfter(b []byte, h BatchHeader, ts int64) (offset, timestamp int64, ok bool) {
	if h.Attributes&attrTimestampType != 0 {
		// LogAppendTime: every record carries the batch's maxTimestamp.
		if h.MaxTimestamp >= ts {
			return h.BaseOffset, h.MaxTimestamp, true
		}
		return 0, 0, false
	}
	if h.Compressed() || len(b) < h.Size() {
		return 0, 0, false
	}
	baseTs := int64(binary.BigEndian.Uint64(b[offBaseTimestamp:]))
	recs := b[batchHeaderSize:h.Size()]
	for i := int32(0); i < h.RecordCount && len(recs) > 0; i++ {
		length, n := binary.Varint(recs)
		if n <= 0 || length < 0 || int64(len(recs)-n) < length {
			return 0, 0, false
		}
		rec := recs[n : n+int(length)]
		recs = recs[n+int(length):]
		if len(rec) < 1 {
			return 0, 0, false
		}
		rec = rec[1:] // attributes
		tsDelta, n1 := binary.Varint(rec)
		if n1 <= 0 {
			return 0, 0, false
		}
		offDelta, n2 := binary.Varint(rec[n1:])
		if n2 <= 0 {
			return 0, 0, false
		}
		if baseTs+tsDelta >= ts {
			return h.BaseOffset + offDelta, baseTs + tsDelta, true
		}
	}
	return 0, 0, false
}
