package fetcher

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Record batch v2 header layout (the part the fetcher looks at; the log validates CRCs on append).
const (
	batchLengthOffset = 8  // baseOffset int64, then batchLength int32
	batchOverhead     = 12 // baseOffset + batchLength, not counted by batchLength
	batchMinLength    = 49 // batchLength of a v2 batch with no records
	batchMagicOffset  = 16 // baseOffset 8 + batchLength 4 + partitionLeaderEpoch 4
)

// errCorruptResponse marks a fetched record set that is malformed or breaks the size limits.
var errCorruptResponse = errors.New("fetcher: corrupt fetch response")

// completeBatches checks a fetched record set (S18 size check) and returns the prefix made of
// complete batches. A partial trailing batch is normal (the leader cuts its read at the byte
// limit) and is dropped. A batch header that cannot be a v2 batch is an error (the partition is
// delayed). oversize reports more than one batch totalling above maxBytes (Fetch v3+ may exceed
// the limit only with its first batch): like Kafka, that is only warned about, since refusing
// it would wedge replication. Never panics on malformed input.
func completeBatches(records []byte, maxBytes int32) (valid []byte, n int, oversize bool, err error) {
	pos := 0
	for len(records)-pos >= batchOverhead {
		length := int32(binary.BigEndian.Uint32(records[pos+batchLengthOffset:]))
		if length < batchMinLength {
			return nil, 0, false, fmt.Errorf("%w: batch at byte %d has length %d", errCorruptResponse, pos, length)
		}
		if len(records)-pos > batchMagicOffset {
			if magic := int8(records[pos+batchMagicOffset]); magic != 2 {
				return nil, 0, false, fmt.Errorf("%w: batch at byte %d has magic %d", errCorruptResponse, pos, magic)
			}
		}
		end := pos + batchOverhead + int(length)
		if end > len(records) || end < pos {
			break // partial trailing batch
		}
		pos = end
		n++
	}
	return records[:pos], n, n > 1 && int64(pos) > int64(maxBytes), nil
}
