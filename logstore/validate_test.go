package logstore

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"math/rand"
	"testing"

	"github.com/klauspost/compress/s2"
)

// rec is one record to encode by hand: its offset delta, key (nil = null) and value.
type rec struct {
	delta int64
	key   []byte
	value []byte
}

// encodeRecords writes records in the v2 record format (DefaultRecord).
func encodeRecords(rs []rec) []byte {
	var out []byte
	for i, r := range rs {
		var b []byte
		b = append(b, 0)              // attributes
		b = appendVarint(b, int64(i)) // timestampDelta
		b = appendVarint(b, r.delta)  // offsetDelta
		if r.key == nil {
			b = appendVarint(b, -1)
		} else {
			b = appendVarint(b, int64(len(r.key)))
			b = append(b, r.key...)
		}
		b = appendVarint(b, int64(len(r.value)))
		b = append(b, r.value...)
		b = appendVarint(b, 0) // headers
		out = appendVarint(out, int64(len(b)))
		out = append(out, b...)
	}
	return out
}

// seqRecords returns n records with offset deltas 0..n-1, a key and a value of size bytes.
func seqRecords(n, size int) []rec {
	rs := make([]rec, n)
	for i := range rs {
		rs[i] = rec{delta: int64(i), key: []byte{'k', byte(i)}, value: bytes.Repeat([]byte{byte('a' + i%26)}, size)}
	}
	return rs
}

// rawBatch wraps already encoded (and possibly compressed) records in a v2 header with
// the given attributes, record count and lastOffsetDelta, and a valid CRC-32C.
func rawBatch(recs []byte, attrs int16, count, lastDelta int32) []byte {
	b := make([]byte, batchHeaderSize, batchHeaderSize+len(recs))
	binary.BigEndian.PutUint32(b[offLength:], uint32(minBatchLength+len(recs)))
	binary.BigEndian.PutUint32(b[offLeaderEpoch:], 0xffffffff)
	b[offMagic] = 2
	binary.BigEndian.PutUint16(b[offAttributes:], uint16(attrs))
	binary.BigEndian.PutUint32(b[offLastOffsetDelta:], uint32(lastDelta))
	binary.BigEndian.PutUint64(b[offBaseTimestamp:], 1)
	binary.BigEndian.PutUint64(b[offMaxTimestamp:], 1)
	binary.BigEndian.PutUint64(b[43:], ^uint64(0)) // producerId -1
	binary.BigEndian.PutUint16(b[51:], 0xffff)     // producerEpoch -1
	binary.BigEndian.PutUint32(b[53:], 0xffffffff) // baseSequence -1
	binary.BigEndian.PutUint32(b[offRecordCount:], uint32(count))
	b = append(b, recs...)
	resealCRC(b)
	return b
}

func resealCRC(b []byte) { binary.BigEndian.PutUint32(b[offCRC:], crcOf(b[offAttributes:])) }

// compressWith compresses encoded records with a batch codec, as producers do.
func compressWith(t testing.TB, codec int, recs []byte) []byte {
	t.Helper()
	switch codec {
	case codecNone:
		return recs
	case codecSnappy + 100: // Java producers frame snappy the xerial way
		out := []byte{130, 83, 78, 65, 80, 80, 89, 0, 0, 0, 0, 1, 0, 0, 0, 1}
		for len(recs) > 0 {
			n := min(len(recs), 32<<10)
			blk := s2.EncodeSnappy(nil, recs[:n])
			out = binary.BigEndian.AppendUint32(out, uint32(len(blk)))
			out = append(out, blk...)
			recs = recs[n:]
		}
		return out
	}
	c, err := compressorFor(codec)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	z, used := c.Compress(&buf, recs)
	if int(used) != codec {
		t.Fatalf("codec %d compressed as %d", codec, used)
	}
	return append([]byte(nil), z...)
}

func codecBatch(t testing.TB, codec int, rs []rec) []byte {
	attr := int16(codec)
	if codec == codecSnappy+100 {
		attr = codecSnappy
	}
	return rawBatch(compressWith(t, codec, encodeRecords(rs)), attr, int32(len(rs)), int32(len(rs)-1))
}

var allCodecs = []struct {
	name  string
	codec int
}{{"none", codecNone}, {"gzip", codecGzip}, {"snappy", codecSnappy}, {"snappy-xerial", codecSnappy + 100}, {"lz4", codecLz4}, {"zstd", codecZstd}}

// TestAppendAsLeaderRefusesMalformedBatches: batches whose header and CRC are fine but whose
// records do not match it are refused as Kafka's LogValidator refuses them, and nothing is
// appended (the LEO does not move, no segment is rolled).
func TestAppendAsLeaderRefusesMalformedBatches(t *testing.T) {
	rnd := rand.New(rand.NewSource(1))
	random := make([]byte, 300)
	rnd.Read(random)

	// 72 bytes: one real 11-byte record, a header claiming 2^31-1 records.
	huge := rawBatch(encodeRecords([]rec{{value: []byte("abcd")}}), 0, math.MaxInt32, math.MaxInt32-1)

	outOfOrder := []rec{{delta: 1, value: []byte("x")}, {delta: 0, value: []byte("y")}}
	gapped := []rec{{delta: 0, value: []byte("x")}, {delta: 2, value: []byte("y")}}
	three := encodeRecords(seqRecords(3, 5))

	trailing := encodeRecords([]rec{{value: []byte("v")}})
	trailing[0] += 2               // the record claims one byte more than its fields use (zigzag)
	trailing = append(trailing, 0) // ... and that byte is there

	negHeaders := encodeRecords([]rec{{value: []byte("v")}})
	negHeaders[len(negHeaders)-1] = 1 // headers count varint 1 = zigzag -1

	control := rawBatch(encodeRecords(seqRecords(1, 1)), attrControl, 1, 0)
	noSeq := rawBatch(encodeRecords(seqRecords(1, 1)), 0, 1, 0)
	binary.BigEndian.PutUint64(noSeq[43:], 7) // producerId 7 with baseSequence -1
	resealCRC(noSeq)

	bomb := codecBatch(t, codecZstd, []rec{{value: make([]byte, 2<<20)}}) // 2 MiB of zeros

	cases := []struct {
		name  string
		batch []byte
		want  error
	}{
		{"72-byte batch claiming 2^31-1 records", huge, ErrInvalidRecord},
		{"gzip over random bytes", rawBatch(random, codecGzip, 1, 0), ErrInvalidRecord},
		{"zstd over random bytes", rawBatch(random, codecZstd, 1, 0), ErrInvalidRecord},
		{"lz4 over random bytes", rawBatch(random, codecLz4, 1, 0), ErrInvalidRecord},
		{"snappy over random bytes", rawBatch(random, codecSnappy, 1, 0), ErrInvalidRecord},
		{"compression id 7", rawBatch(encodeRecords(seqRecords(1, 1)), 7, 1, 0), ErrInvalidRecord},
		{"compression id 5", rawBatch(encodeRecords(seqRecords(1, 1)), 5, 1, 0), ErrInvalidRecord},
		{"offset deltas out of order", rawBatch(encodeRecords(outOfOrder), 0, 2, 1), ErrInvalidRecord},
		{"offset deltas not consecutive", rawBatch(encodeRecords(gapped), 0, 2, 1), ErrInvalidRecord},
		{"gzip offset deltas out of order", codecBatch(t, codecGzip, outOfOrder), ErrInvalidRecord},
		{"count below the records held", rawBatch(three, 0, 2, 1), ErrInvalidRecord},
		{"count above the records held", rawBatch(three, 0, 4, 3), ErrInvalidRecord},
		{"zstd count above the records held", rawBatch(compressWith(t, codecZstd, three), codecZstd, 4, 3), ErrInvalidRecord},
		{"truncated record", rawBatch(three[:len(three)-3], 0, 3, 2), ErrInvalidRecord},
		{"record longer than its fields", rawBatch(trailing, 0, 1, 0), ErrInvalidRecord},
		{"negative header count", rawBatch(negHeaders, 0, 1, 0), ErrInvalidRecord},
		{"control batch from a producer", control, ErrInvalidRecord},
		{"producer id without a sequence", noSeq, ErrInvalidRecord},
		{"decompresses past the bound", bomb, ErrMessageTooLarge},
	}
	cfg := testConfig()
	cfg.MaxMessageBytes = 4000 // the bound on decompressed records: 1 MiB (its floor)
	l := newTestLog(t, cfg, nil)
	mustAppend(t, l, testBatch{records: 3, valueSize: 10, baseTs: 1}.build(), 1)
	if len(huge) != 72 {
		t.Fatalf("huge batch is %d bytes", len(huge))
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			leo, segs := l.LogEndOffset(), len(l.segs)
			_, err := l.AppendAsLeader(append([]byte(nil), tc.batch...), 1)
			if !errors.Is(err, tc.want) {
				t.Fatalf("err %v, want %v", err, tc.want)
			}
			if l.LogEndOffset() != leo || len(l.segs) != segs {
				t.Fatalf("LEO %d segments %d after a refused append, want %d and %d", l.LogEndOffset(), len(l.segs), leo, segs)
			}
		})
	}
}

// TestAppendAsLeaderAcceptsEachCodec: well-formed batches of every codec, with keys on a
// compacted topic, are appended and move the LEO by their record count.
func TestAppendAsLeaderAcceptsEachCodec(t *testing.T) {
	cfg := testConfig()
	cfg.CleanupPolicy = PolicyCompactDelete
	l := newTestLog(t, cfg, nil)
	for _, c := range allCodecs {
		t.Run(c.name, func(t *testing.T) {
			leo := l.LogEndOffset()
			info, err := l.AppendAsLeader(codecBatch(t, c.codec, seqRecords(50, 300)), 1)
			if err != nil {
				t.Fatal(err)
			}
			if info.FirstOffset != leo || l.LogEndOffset() != leo+50 {
				t.Fatalf("first %d LEO %d, want %d and %d", info.FirstOffset, l.LogEndOffset(), leo, leo+50)
			}
		})
	}
}
