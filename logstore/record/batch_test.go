package record

import (
	"encoding/binary"
	"errors"
	"math"
	"testing"
)

// batchOf returns a v2 batch framing of batchLength length and magic (the bytes after the
// header up to the length are zero; NextBatch looks at framing only).
func batchOf(length int32, magic int8) []byte {
	n := max(int(length)+BatchLogOverhead, BatchHeaderSize)
	b := make([]byte, n)
	binary.BigEndian.PutUint32(b[BatchLengthOffset:], uint32(length))
	b[BatchMagicOffset] = byte(magic)
	return b
}

// NextBatch is Kafka's nextBatchSize for v2: it needs 12 bytes to judge the length and 17 to
// judge the magic; until then it reports nothing, never an error; a batch is whole only when
// all its bytes are there, and a length that lies is only compared, never allocated.
func TestNextBatchFraming(t *testing.T) {
	empty := batchOf(BatchMinLength, 2) // a batch with no records: exactly the header
	twoRecs := batchOf(BatchMinLength+20, 2)
	cases := []struct {
		name      string
		b         []byte
		size      int
		whole     bool
		wantError error
	}{
		{"nothing", nil, 0, false, nil},
		{"11 bytes", empty[:11], 0, false, nil},
		{"12 bytes", empty[:12], 0, false, nil},
		{"16 bytes", empty[:16], 0, false, nil},
		{"17 bytes", empty[:17], BatchHeaderSize, false, nil},
		{"header only batch", empty, BatchHeaderSize, true, nil},
		{"partial", twoRecs[:len(twoRecs)-1], len(twoRecs), false, nil},
		{"whole with a next batch behind", append(append([]byte{}, twoRecs...), empty[:20]...), len(twoRecs), true, nil},
		{"length 48", batchOf(BatchMinLength-1, 2), 0, false, ErrBatchLength},
		{"length 48, 12 bytes", batchOf(BatchMinLength-1, 2)[:12], 0, false, ErrBatchLength},
		{"negative length", batchOf(-1, 2), 0, false, ErrBatchLength},
		{"magic 1", batchOf(BatchMinLength, 1), 0, false, ErrBatchMagic},
		{"magic -1", batchOf(BatchMinLength, -1), 0, false, ErrBatchMagic},
		{"magic 3, 17 bytes", batchOf(BatchMinLength, 3)[:17], 0, false, ErrBatchMagic},
		{"2 GiB claimed", batchOf(math.MaxInt32, 2)[:BatchHeaderSize], math.MaxInt32 + BatchLogOverhead, false, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			size, whole, err := NextBatch(c.b)
			if c.wantError != nil {
				if !errors.Is(err, c.wantError) {
					t.Fatalf("err = %v, want %v", err, c.wantError)
				}
				return
			}
			if err != nil || size != c.size || whole != c.whole {
				t.Fatalf("NextBatch = (%d, %v, %v), want (%d, %v, nil)", size, whole, err, c.size, c.whole)
			}
		})
	}
}

// Arbitrary bytes never panic, and a whole batch never claims more than b holds or less than
// a header.
func FuzzNextBatch(f *testing.F) {
	f.Add(batchOf(BatchMinLength, 2))
	f.Add(batchOf(-5, 2)[:13])
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0, 0x7f, 0xff, 0xff, 0xff, 0, 0, 0, 0, 2})
	f.Fuzz(func(t *testing.T, b []byte) {
		size, whole, err := NextBatch(b)
		if err != nil && (size != 0 || whole) {
			t.Fatalf("error %v with size %d whole %v", err, size, whole)
		}
		if whole && (size > len(b) || size < BatchHeaderSize) {
			t.Fatalf("whole batch of %d bytes in %d", size, len(b))
		}
	})
}
