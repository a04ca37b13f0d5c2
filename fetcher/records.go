package fetcher

import (
	"errors"
	"fmt"

	"github.com/isrbroker/isrbroker/logstore/record"
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
	for pos < len(records) {
		size, whole, err := record.NextBatch(records[pos:])
		if err != nil {
			return nil, 0, false, fmt.Errorf("%w: batch at byte %d: %w", errCorruptResponse, pos, err)
		}
		if !whole {
			break // partial trailing batch
		}
		pos += size
		n++
	}
	return records[:pos], n, n > 1 && int64(pos) > int64(maxBytes), nil
}
