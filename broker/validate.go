package broker

import (
	"encoding/binary"
	"errors"

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

// Record batch v2 layout (the fields the broker looks at).
const (
	batchLengthOffset = 8  // int32 batchLength: bytes after this field
	batchMagicOffset  = 16 // int8 magic
	batchCRCOffset    = 17 // uint32 CRC-32C over attributes..end
	batchAttrOffset   = 21
	batchHeaderSize   = 61 // RECORD_BATCH_OVERHEAD
)

var (
	errBatchFraming = errors.New("record batch framing is invalid")
	errBatchMagic   = errors.New("record batch magic is not 2")
)

// validateProduceRecords checks what Kafka checks on the request thread for produce v3+
// (ProduceRequest.validateRecords): the records are exactly one magic-2 batch whose length
// matches. It returns the Kafka error code (CORRUPT_MESSAGE) or 0. The CRC-32C and the size
// limit (MESSAGE_TOO_LARGE; max.message.bytes is a topic config) are checked once, by the log
// on append, so the hot path computes the CRC a single time.
func validateProduceRecords(b []byte) (int16, error) {
	if len(b) < batchHeaderSize {
		return kerr.CorruptMessage.Code, errBatchFraming
	}
	n := int64(int32(binary.BigEndian.Uint32(b[batchLengthOffset:])))
	if n+12 != int64(len(b)) {
		return kerr.CorruptMessage.Code, errBatchFraming
	}
	if b[batchMagicOffset] != 2 {
		return kerr.CorruptMessage.Code, errBatchMagic
	}
	return 0, nil
}

// batchPrefix returns how many leading bytes of records are whole batches fitting in
// limit bytes. With minOne, the first batch is kept even when it alone exceeds limit
// (KIP-74: a fetch always makes progress).
func batchPrefix(records []byte, limit int64, minOne bool) int {
	off := 0
	for off+12 <= len(records) {
		size := int64(int32(binary.BigEndian.Uint32(records[off+batchLengthOffset:]))) + 12
		if size < 12 {
			break
		}
		end := int64(off) + size
		if end > limit {
			if off == 0 && minOne {
				return int(min(end, int64(len(records))))
			}
			break
		}
		if end > int64(len(records)) {
			break
		}
		off = int(end)
	}
	if off == 0 && minOne && len(records) > 0 && int64(len(records)) <= limit {
		return len(records)
	}
	return off
}
