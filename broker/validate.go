package broker

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/isrbroker/isrbroker/logstore/kproto"
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

// validateProduceRecords checks what Kafka checks on the request thread for produce v3+
// (ProduceRequest.validateRecords): the records are exactly one magic-2 batch whose length
// matches. It returns the Kafka error code (CORRUPT_MESSAGE) or 0. The CRC-32C and the size
// limit (MESSAGE_TOO_LARGE; max.message.bytes is a topic config) are checked once, by the log
// on append, so the hot path computes the CRC a single time.
func validateProduceRecords(b []byte) (int16, error) {
	size, whole, err := kproto.NextBatch(b)
	if err != nil {
		return kerr.CorruptMessage.Code, err
	}
	if !whole || size != len(b) {
		return kerr.CorruptMessage.Code, fmt.Errorf("%w: %d bytes, the batch frames %d", errBatchFraming, len(b), size)
	}
	return 0, nil
}

var errBatchFraming = errors.New("records are not exactly one record batch")

// batchPrefix returns how many leading bytes of records are whole batches fitting in
// limit bytes. With minOne, the first batch is kept even when it alone exceeds limit
// (KIP-74: a fetch always makes progress).
func batchPrefix(records []byte, limit int64, minOne bool) int {
	off := 0
	for off < len(records) {
		size, whole, err := kproto.NextBatch(records[off:])
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
