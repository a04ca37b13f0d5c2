package broker

import (
	"errors"
	"fmt"

	"github.com/isrbroker/isrbroker/logstore/record"
	"github.com/twmb/franz-go/pkg/kerr"
)

// maxTopicNameLen is Kafka's limit (249: the partition directory name adds "-<partition>").
const maxTopicNameLen = 249

// validTopicName applies Kafka's topic name rules (Topic.validate): 1–249 characters of
// [a-zA-Z0-9._-], and not "." or "..".
func validTopicName(name string) bool {
	if name == "" || name == "." || name == ".." || len(name) > maxTopicNameLen {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '.', c == '_', c == '-':
		default:
			return false
		}
	}
	return true
}

// validateProduceRecords checks what Kafka 2.4 checks on the request thread for produce v3+
// (ProduceRequest.validateRecords, docs/kafka-facts.md §13): the records are exactly one
// batch of magic 2 (else INVALID_RECORD; a batch length below the v2 header is
// CORRUPT_MESSAGE, as Kafka's log input stream answers it), and a zstd batch needs Produce v7
// (else UNSUPPORTED_COMPRESSION_TYPE). A compression id above 4 is INVALID_RECORD (Kafka 2.4
// lets CompressionType.forId's IllegalArgumentException through as UNKNOWN_SERVER_ERROR).
// Deviation: bytes after the batch are refused (Kafka 2.4 appends the batch and drops a
// partial trailing one). It returns the Kafka error code or 0. The CRC-32C, the size limit
// (MESSAGE_TOO_LARGE; max.message.bytes is a topic config) and the records are checked once,
// by the log on append (logstore/validate.go).
func validateProduceRecords(version int16, b []byte) (int16, error) {
	size, whole, err := record.NextBatch(b)
	switch {
	case errors.Is(err, record.ErrBatchLength):
		return kerr.CorruptMessage.Code, err
	case err != nil:
		return kerr.InvalidRecord.Code, err
	case !whole || size != len(b):
		return kerr.InvalidRecord.Code, fmt.Errorf("%w: %d bytes, the batch frames %d", errBatchFraming, len(b), size)
	}
	switch codec := b[batchAttributesOffset+1] & 0x07; {
	case codec == codecZstd && version < 7:
		return kerr.UnsupportedCompressionType.Code, fmt.Errorf("produce v%d may not use zstd compression", version)
	case codec > codecZstd:
		return kerr.InvalidRecord.Code, fmt.Errorf("unknown compression type id %d", codec)
	}
	return 0, nil
}

// The v2 batch's attributes (int16; the compression id is bits 0-2) and the zstd id.
const (
	batchAttributesOffset = 21
	codecZstd             = 4
)

var errBatchFraming = errors.New("records are not exactly one record batch")

// batchPrefix returns how many leading bytes of records are whole batches fitting in
// limit bytes. With minOne, the first batch is kept even when it alone exceeds limit
// (KIP-74: a fetch always makes progress).
func batchPrefix(records []byte, limit int64, minOne bool) int {
	off := 0
	for off < len(records) {
		size, whole, err := record.NextBatch(records[off:])
		if err != nil || size == 0 {
			break
		}
		end := int64(off + size)
		if end > limit {
			if off == 0 && minOne {
				return int(min(end, int64(len(records))))
			}
			break
		}
		if !whole {
			break
		}
		off = int(end)
	}
	if off == 0 && minOne && len(records) > 0 && int64(len(records)) <= limit {
		return len(records)
	}
	return off
}
