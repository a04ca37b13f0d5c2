package record

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Record batch v2 framing: the fields every walker over concatenated batches reads. The whole
// header layout is logstore's (logstore/batch.go), which also checks the CRC.
const (
	BatchLogOverhead  = 12 // baseOffset int64 + batchLength int32: the bytes batchLength does not count
	BatchLengthOffset = 8  // batchLength int32
	BatchMagicOffset  = 16 // magic int8, after partitionLeaderEpoch int32
	BatchHeaderSize   = 61 // a v2 batch's header (RECORD_BATCH_OVERHEAD); the first record starts here
	BatchMinLength    = BatchHeaderSize - BatchLogOverhead

	batchUpToMagic = BatchMagicOffset + 1
)

// Malformed batch framing. The callers wrap them in their own error (CORRUPT_MESSAGE,
// a corrupt fetch response, a corrupt segment).
var (
	ErrBatchLength = errors.New("record batch length below the v2 header")
	ErrBatchMagic  = errors.New("record batch magic is not 2")
)

// NextBatch reads the framing of the v2 record batch at the start of b, as Kafka's log input
// stream does (ByteBufferLogInputStream.nextBatchSize), for magic 2 only: once b holds the
// 12-byte log overhead, a batchLength below the v2 header is ErrBatchLength; once b holds the
// magic byte, a magic other than 2 is ErrBatchMagic. size is the whole batch in bytes
// (batchLength + 12), or 0 while b holds fewer than the 17 bytes up to the magic; whole
// reports that b holds all size bytes. The length is never trusted beyond the bytes in b
// (KAFKA-14063): nothing is allocated. Walking concatenated batches:
//
//	for pos < len(b) {
//		size, whole, err := NextBatch(b[pos:])
//		if err != nil || !whole { ... }
//		pos += size
//	}
func NextBatch(b []byte) (size int, whole bool, err error) {
	if len(b) < BatchLogOverhead {
		return 0, false, nil
	}
	length := int32(binary.BigEndian.Uint32(b[BatchLengthOffset:]))
	if length < BatchMinLength {
		return 0, false, fmt.Errorf("%w: %d < %d", ErrBatchLength, length, BatchMinLength)
	}
	if len(b) < batchUpToMagic {
		return 0, false, nil
	}
	if magic := int8(b[BatchMagicOffset]); magic != 2 {
		return 0, false, fmt.Errorf("%w: %d", ErrBatchMagic, magic)
	}
	size = int(length) + BatchLogOverhead
	return size, size <= len(b), nil
}
