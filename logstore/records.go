package logstore

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Record-level access for the log cleaner (keys and values). The produce path's record walk
// is validate.go's, which allocates nothing per record. The wire format is read and written through
// kmsg (RecordBatch, Record); compression codecs are franz-go kgo's (the same client code
// that produced most of these batches).

// Compression codec ids in the batch attributes (bits 0-2), as in Kafka's CompressionType.
const (
	codecNone   = 0
	codecGzip   = 1
	codecSnappy = 2
	codecLz4    = 3
	codecZstd   = 4
)

var (
	decompressor = kgo.DefaultDecompressor()

	compressorsMu sync.Mutex
	compressors   = map[int]kgo.Compressor{}
)

// compressorFor returns kgo's compressor for a batch codec id.
func compressorFor(codec int) (kgo.Compressor, error) {
	compressorsMu.Lock()
	defer compressorsMu.Unlock()
	if c, ok := compressors[codec]; ok {
		return c, nil
	}
	var cc kgo.CompressionCodec
	switch codec {
	case codecGzip:
		cc = kgo.GzipCompression()
	case codecSnappy:
		cc = kgo.SnappyCompression()
	case codecLz4:
		cc = kgo.Lz4Compression()
	case codecZstd:
		cc = kgo.ZstdCompression()
	default:
		return nil, fmt.Errorf("%w: unknown compression codec %d", ErrCorruptMessage, codec)
	}
	c, err := kgo.DefaultCompressor(cc)
	if err != nil {
		return nil, err
	}
	compressors[codec] = c
	return c, nil
}

// batchRecord is one decoded record of a batch: its absolute offset, timestamp, key
// (nil for a null key), whether it has a value (a null value is a tombstone), and its
// encoded bytes (length varint included) for verbatim copying into a cleaned batch, whose
// base offset and base timestamp are the original ones so the deltas stay valid.
type batchRecord struct {
	offset    int64
	timestamp int64
	key       []byte
	hasValue  bool
	raw       []byte
}

// decodeBatch parses one whole v2 batch (b holds exactly the batch) through kmsg and returns
// its header and records, decompressing them when the batch is compressed. The records
// alias b or a fresh decompression buffer; they are valid until b is reused.
func decodeBatch(b []byte) (kmsg.RecordBatch, []batchRecord, error) {
	return decodeBatchInto(b, nil)
}

// decodeBatchInto is decodeBatch with the records decoded into dst (reused).
func decodeBatchInto(b []byte, dst []batchRecord) (kmsg.RecordBatch, []batchRecord, error) {
	var rb kmsg.RecordBatch
	if err := rb.ReadFrom(b); err != nil {
		return rb, nil, fmt.Errorf("%w: %v", ErrCorruptMessage, err)
	}
	recs, err := batchRecords(&rb, dst)
	return rb, recs, err
}

// batchRecords decodes rb's records into dst (reused).
func batchRecords(rb *kmsg.RecordBatch, dst []batchRecord) ([]batchRecord, error) {
	data := rb.Records
	if codec := int(rb.Attributes & attrCompressionMask); codec != codecNone {
		var err error
		data, err = decompressor.Decompress(rb.Records, kgo.CompressionCodecType(codec))
		if err != nil {
			return nil, fmt.Errorf("%w: decompressing a codec %d batch: %v", ErrCorruptMessage, codec, err)
		}
	}
	dst = dst[:0]
	var rec kmsg.Record
	for len(data) > 0 {
		length, n := binary.Varint(data)
		if n <= 0 || length < 0 || int64(len(data)-n) < length {
			return nil, fmt.Errorf("%w: malformed record length in batch at %d", ErrCorruptMessage, rb.FirstOffset)
		}
		raw := data[:n+int(length)]
		data = data[n+int(length):]
		if err := rec.UnsafeReadFrom(raw); err != nil {
			return nil, fmt.Errorf("%w: malformed record in batch at %d: %v", ErrCorruptMessage, rb.FirstOffset, err)
		}
		if rec.OffsetDelta < 0 || rec.OffsetDelta > rb.LastOffsetDelta {
			return nil, fmt.Errorf("%w: record offset delta %d outside batch at %d (last delta %d)", ErrCorruptMessage, rec.OffsetDelta, rb.FirstOffset, rb.LastOffsetDelta)
		}
		dst = append(dst, batchRecord{
			offset:    rb.FirstOffset + int64(rec.OffsetDelta),
			timestamp: rb.FirstTimestamp + rec.TimestampDelta64,
			key:       rec.Key,
			hasValue:  rec.Value != nil,
			raw:       raw,
		})
	}
	if int32(len(dst)) != rb.NumRecords {
		return nil, fmt.Errorf("%w: batch at %d claims %d records, holds %d", ErrCorruptMessage, rb.FirstOffset, rb.NumRecords, len(dst))
	}
	return dst, nil
}

// ErrMsgNoKeyCompacted is Kafka 2.4's InvalidRecordException message for a keyless record
// produced to a compacted topic (LogValidator.validateKey).
const ErrMsgNoKeyCompacted = "Compacted topic cannot accept message without key"

// rebuildBatch writes a cleaned copy of the batch rb holding only keep (a subset of its
// records, in order) to dst, as Kafka's MemoryRecords.filterTo does for a v2 batch: base
// offset, partition leader epoch, attributes, base timestamp and the producer fields are the
// original batch's, and lastOffsetDelta is kept (MemoryRecordsBuilder.overrideLastOffset) so
// the producer's last sequence survives; the record count, maxTimestamp (CreateTime) and
// CRC are recomputed. A compressed batch is recompressed with its original codec. An empty
// keep writes Kafka's empty batch (DefaultRecordBatch.writeEmptyHeader: no records,
// uncompressed), which keeps a producer's last sequence and epoch.
func rebuildBatch(dst []byte, rb *kmsg.RecordBatch, keep []batchRecord, scratch *bytes.Buffer) ([]byte, error) {
	out := *rb
	out.NumRecords = int32(len(keep))
	attrs := rb.Attributes
	var recs []byte
	if len(keep) == 0 {
		attrs &^= attrCompressionMask
		out.FirstTimestamp = rb.MaxTimestamp
	} else {
		if attrs&attrTimestampType == 0 {
			out.MaxTimestamp = keep[0].timestamp
			for _, r := range keep[1:] {
				out.MaxTimestamp = max(out.MaxTimestamp, r.timestamp)
			}
		}
		scratch.Reset()
		for _, r := range keep {
			scratch.Write(r.raw)
		}
		recs = scratch.Bytes()
		if codec := int(attrs & attrCompressionMask); codec != codecNone {
			c, err := compressorFor(codec)
			if err != nil {
				return dst, err
			}
			var zbuf bytes.Buffer
			z, used := c.Compress(&zbuf, recs)
			if z == nil || int(used) != codec {
				// kgo falls back to no compression when the output would not be smaller
				attrs &^= attrCompressionMask
			} else {
				recs = z
			}
		}
	}
	out.Attributes = attrs
	out.Records = recs
	out.Length = int32(minBatchLength + len(recs))
	out.CRC = 0
	start := len(dst)
	dst = out.AppendTo(dst)
	binary.BigEndian.PutUint32(dst[start+offCRC:], crc32.Checksum(dst[start+offAttributes:], castagnoli))
	return dst, nil
}
