package logstore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// The leader's record validation (Kafka 2.4 LogValidator, docs/kafka-facts.md §13): every
// record of every batch a producer sends is walked, decompressing compressed batches, and
// checked against the batch header before anything is appended. The walk reads only varints
// and skips keys, values and headers: nothing is allocated per record, an uncompressed batch
// is walked in place, and a compressed one is streamed through a pooled decompressor into a
// pooled window (validate_codecs.go). The batch is stored exactly as received.
//
// Refusals (the Kafka 2.4 exception and the error code it answers):
//   - a record count that the bytes cannot hold, a record that does not consume exactly its
//     length, a malformed varint, a negative header count or header key size, records left
//     after the count or missing before it (InvalidRecordException: INVALID_RECORD);
//   - per record, in Kafka's order once the record is read (Kafka's RecordValidationException,
//     which names the record: a *RecordError, validate_errors.go): a null key on a compacted
//     topic (INVALID_RECORD), a CreateTime timestamp out of message.timestamp.difference.max.ms
//     and a LogAppendTime batch from a producer (INVALID_TIMESTAMP), an offset delta other than
//     the record's index ("does not have incremental offsets": INVALID_RECORD);
//   - a compression id above 4 and compressed bytes that do not decompress: INVALID_RECORD
//     (deviation: Kafka 2.4 lets the IllegalArgumentException / KafkaException through as
//     UNKNOWN_SERVER_ERROR; the batch is equally refused);
//   - records that decompress past maxDecompressedBytes: MESSAGE_TOO_LARGE (no Kafka check:
//     the bound is isrbroker's, see maxDecompressedBytes).

// minRecordSize is the smallest encoded v2 record: the length varint and a body of
// attributes, timestampDelta, offsetDelta, key length, value length and header count, one
// byte each. A batch of n records holds at least 7n bytes of records.
const minRecordSize = 7

// maxDecompressedBytes bounds what one compressed batch's records may decompress to: 64 times
// the topic's max.message.bytes (the bound on the compressed batch), at least 1 MiB and at
// most 1 GiB, which is where franz-go consumers stop (MaxDecompressBatchBytes' default); the
// default max.message.bytes (1000012) allows 61 MiB. A producer's batch of real data comes
// nowhere near it, since producers bound their batches by bytes, and the walk's memory does
// not depend on it (it streams): it bounds the CPU a produce can make the leader spend.
func maxDecompressedBytes(maxMessageBytes int32) int64 {
	return min(max(64*int64(maxMessageBytes), 1<<20), 1<<30)
}

// recordSummary is what the walk learns about a batch's records for the checks that depend
// on the topic's config (the timestamp range, the compacted topic's key check).
type recordSummary struct {
	minTimestamp, maxTimestamp int64 // CreateTime timestamps of the records, noTimestamp when none has one
	keyless                    bool  // a record has a null key
}

// Walk failures; walkRecords wraps each in ErrInvalidRecord (or ErrMessageTooLarge).
var (
	errPrematureEOF   = errors.New("incorrect declared batch size, premature EOF reached")
	errRecordsLeft    = errors.New("incorrect declared batch size, records still remaining")
	errVarintTooLong  = errors.New("varint is too long")
	errDecompressSize = errors.New("records decompress past the limit")
)

// walkRecords walks the records of the whole, CRC-checked v2 batch b with header h (the
// record count is positive) and checks them against the header as Kafka's LogValidator
// does, without the checks that depend on the topic's config. Compressed records may
// decompress to at most limit bytes.
func walkRecords(b []byte, h BatchHeader, limit int64) (recordSummary, error) {
	return walkRecordsChecked(b, h, limit, recordChecks{})
}

// walkRecordsChecked is walkRecords with the per-record checks chk (validate_errors.go): a
// record they refuse is a *RecordError naming it.
func walkRecordsChecked(b []byte, h BatchHeader, limit int64, chk recordChecks) (recordSummary, error) {
	codec := int(h.Attributes & attrCompressionMask)
	data := b[batchHeaderSize:h.Size()]
	var w recordWalker
	switch {
	case codec == codecNone:
		if int64(h.RecordCount)*minRecordSize > int64(len(data)) {
			return recordSummary{}, fmt.Errorf("%w: %d records claimed in %d bytes of records", ErrInvalidRecord, h.RecordCount, len(data))
		}
		w.buf = data
	case codec > codecZstd:
		return recordSummary{}, fmt.Errorf("%w: unknown compression type id %d", ErrInvalidRecord, codec)
	default:
		if int64(h.RecordCount)*minRecordSize > limit {
			return recordSummary{}, fmt.Errorf("%w: %d records cannot decompress to at most %d bytes", ErrMessageTooLarge, h.RecordCount, limit)
		}
		src, err := openDecompressor(codec, data, limit)
		if err != nil {
			return recordSummary{}, decompressError(codec, err)
		}
		defer src.release()
		w.src, w.buf, w.limit = src, src.window()[:0], limit
	}
	baseTs := int64(binary.BigEndian.Uint64(b[offBaseTimestamp:]))
	sum, err := w.walk(h, baseTs, chk)
	if _, named := err.(*RecordError); err == nil || named {
		return sum, err
	}
	switch {
	case errors.Is(err, errDecompressSize):
		return sum, fmt.Errorf("%w: %w", ErrMessageTooLarge, err)
	case w.src != nil:
		return sum, fmt.Errorf("%w: %s records: %w", ErrInvalidRecord, codecName(codec), err)
	default:
		return sum, fmt.Errorf("%w: %w", ErrInvalidRecord, err)
	}
}

func decompressError(codec int, err error) error {
	if errors.Is(err, errDecompressSize) {
		return fmt.Errorf("%w: %w", ErrMessageTooLarge, err)
	}
	return fmt.Errorf("%w: decompressing a %s batch: %v", ErrInvalidRecord, codecName(codec), err)
}

func codecName(codec int) string {
	return [...]string{"none", "gzip", "snappy", "lz4", "zstd"}[codec]
}

// recordWalker reads the records: buf[pos:] are the unread bytes; with a src (a compressed
// batch) buf is a window refilled from it and base counts the bytes already dropped from it.
type recordWalker struct {
	buf   []byte
	pos   int
	src   recordSource
	base  int64
	limit int64
	eof   bool
}

// errInvalidRecordBody marks a record whose fields disagree with its length.
var errInvalidRecordBody = errors.New("invalid record")

// walk reads h's records and checks each as Kafka's record iterator and LogValidator do: a
// record is read whole (a malformed one fails the batch), then, after the last, that nothing
// follows ("records still remaining"), then chk's checks and its offset delta (0..count-1)
// name the record (RecordError). Kafka reads an uncompressed batch's records one at a time
// as it validates them, but decompresses all the records of a compressed batch before it
// validates any (DefaultRecordBatch.iterator): there a record that does not parse, anywhere,
// fails the batch before a record is named, so the walk keeps the first named record and
// reads on.
func (w *recordWalker) walk(h BatchHeader, baseTs int64, chk recordChecks) (recordSummary, error) {
	sum := recordSummary{minTimestamp: noTimestamp, maxTimestamp: noTimestamp}
	var named error // a compressed batch's first refused record
	count := h.RecordCount
	logAppendTime := h.Attributes&attrTimestampType != 0
	for i := int32(0); i < count; i++ {
		length, err := w.varint()
		if err != nil {
			return sum, err
		}
		if length < 0 {
			return sum, fmt.Errorf("%w %d: negative size %d", errInvalidRecordBody, i, length)
		}
		start := w.offset()
		end := start + length
		if _, err := w.byte(); err != nil { // attributes (unused in v2)
			return sum, err
		}
		tsDelta, err := w.varlong()
		if err != nil {
			return sum, err
		}
		offsetDelta, err := w.varint()
		if err != nil {
			return sum, err
		}
		ts := baseTs + tsDelta
		if ts != noTimestamp {
			if sum.minTimestamp == noTimestamp || ts < sum.minTimestamp {
				sum.minTimestamp = ts
			}
			if ts > sum.maxTimestamp {
				sum.maxTimestamp = ts
			}
		}
		keyLen, err := w.varint()
		if err != nil {
			return sum, err
		}
		if keyLen < 0 {
			keyLen = -1
			sum.keyless = true
		} else if err := w.skip(keyLen, end); err != nil {
			return sum, fmt.Errorf("record %d key: %w", i, err)
		}
		valueLen, err := w.varint()
		if err != nil {
			return sum, err
		}
		if valueLen >= 0 {
			if err := w.skip(valueLen, end); err != nil {
				return sum, fmt.Errorf("record %d value: %w", i, err)
			}
		} else {
			valueLen = -1
		}
		headers, err := w.varint()
		if err != nil {
			return sum, err
		}
		if headers < 0 {
			return sum, fmt.Errorf("%w %d: invalid number of record headers %d", errInvalidRecordBody, i, headers)
		}
		for j := int64(0); j < headers; j++ {
			keyLen, err := w.varint()
			if err != nil {
				return sum, err
			}
			if keyLen < 0 {
				return sum, fmt.Errorf("%w %d: negative header key size %d", errInvalidRecordBody, i, keyLen)
			}
			if err := w.skip(keyLen, end); err != nil {
				return sum, fmt.Errorf("record %d header key: %w", i, err)
			}
			valueLen, err := w.varint()
			if err != nil {
				return sum, err
			}
			if valueLen >= 0 {
				if err := w.skip(valueLen, end); err != nil {
					return sum, fmt.Errorf("record %d header value: %w", i, err)
				}
			}
		}
		if got := w.offset() - start; got != length {
			return sum, fmt.Errorf("%w %d: size %d, its fields take %d bytes", errInvalidRecordBody, i, length, got)
		}
		if i == count-1 {
			if more, err := w.more(); err != nil {
				return sum, err
			} else if more {
				return sum, errRecordsLeft
			}
		}
		if logAppendTime {
			ts = h.MaxTimestamp // DefaultRecordBatch gives every record of a LogAppendTime batch its maxTimestamp
		}
		if named != nil {
			continue
		}
		r := recordFacts{offset: h.BaseOffset + offsetDelta, timestamp: ts, keySize: keyLen, valueSize: valueLen, compressed: w.src != nil}
		if err := chk.checkRecord(h, i, r, offsetDelta); err != nil {
			if w.src == nil {
				return sum, err
			}
			named = err
		}
	}
	if count <= 0 { // not a produce's batch (validateForLeader refuses it): nothing may follow
		if more, err := w.more(); err != nil {
			return sum, err
		} else if more {
			return sum, errRecordsLeft
		}
	}
	return sum, named
}

// offset is how many bytes of records have been read.
func (w *recordWalker) offset() int64 { return w.base + int64(w.pos) }

// fill makes n bytes unread in buf if the source has them (n is at most a varint's 10).
func (w *recordWalker) fill(n int) error {
	if len(w.buf)-w.pos >= n || w.src == nil || w.eof {
		return nil
	}
	window := w.src.window()
	rest := copy(window, w.buf[w.pos:])
	w.base += int64(w.pos)
	w.pos = 0
	w.buf = window[:rest]
	for len(w.buf) < n && !w.eof {
		m, err := w.src.Read(window[len(w.buf):])
		w.buf = window[:len(w.buf)+m]
		if err == io.EOF {
			w.eof = true
		} else if err != nil {
			return fmt.Errorf("decompressing: %w", err)
		}
		if w.base+int64(len(w.buf)) > w.limit {
			return fmt.Errorf("%w of %d bytes", errDecompressSize, w.limit)
		}
	}
	return nil
}

// more reports whether any byte follows.
func (w *recordWalker) more() (bool, error) {
	if err := w.fill(1); err != nil {
		return false, err
	}
	return w.pos < len(w.buf), nil
}

func (w *recordWalker) byte() (byte, error) {
	if err := w.fill(1); err != nil {
		return 0, err
	}
	if w.pos >= len(w.buf) {
		return 0, errPrematureEOF
	}
	c := w.buf[w.pos]
	w.pos++
	return c, nil
}

// uvarint reads an unsigned varint of at most maxBytes bytes (Kafka's ByteUtils: 5 for an
// int, 10 for a long).
func (w *recordWalker) uvarint(maxBytes int) (uint64, error) {
	if err := w.fill(maxBytes); err != nil {
		return 0, err
	}
	var x uint64
	for i, s := 0, uint(0); i < maxBytes; i, s = i+1, s+7 {
		if w.pos+i >= len(w.buf) {
			return 0, errPrematureEOF
		}
		c := w.buf[w.pos+i]
		x |= uint64(c&0x7f) << s
		if c < 0x80 {
			w.pos += i + 1
			return x, nil
		}
	}
	return 0, errVarintTooLong
}

// varint reads a zigzag int (Java's int arithmetic keeps the low 32 bits).
func (w *recordWalker) varint() (int64, error) {
	u, err := w.uvarint(5)
	v := uint32(u)
	return int64(int32(v>>1) ^ -int32(v&1)), err
}

// varlong reads a zigzag long.
func (w *recordWalker) varlong() (int64, error) {
	u, err := w.uvarint(10)
	return int64(u>>1) ^ -int64(u&1), err
}

// skip passes n bytes that must end by end (the record's last byte).
func (w *recordWalker) skip(n, end int64) error {
	if w.offset()+n > end {
		return fmt.Errorf("%w: a field of %d bytes passes the record's end", errInvalidRecordBody, n)
	}
	for {
		avail := int64(len(w.buf) - w.pos)
		if n <= avail {
			w.pos += int(n)
			return nil
		}
		n -= avail
		w.pos = len(w.buf)
		if w.src == nil || w.eof {
			return errPrematureEOF
		}
		if err := w.fill(1); err != nil {
			return err
		}
	}
}

// validateAsLeader is Kafka's validation of a producer's append (analyzeAndValidateRecords,
// then LogValidator with origin Client), over batches whose framing and CRC parseBatches
// checked: each batch's header (validateForLeader), then its records (walkRecords), the keys
// of a compacted topic and the timestamps.
func validateAsLeader(records []byte, hs []BatchHeader, cfg Config, nowMs int64) error {
	pos := 0
	for i, h := range hs {
		if err := validateForLeader(records[pos:], h, cfg.MaxMessageBytes); err != nil {
			return fmt.Errorf("batch %d: %w", i, err)
		}
		pos += h.Size()
	}
	limit := maxDecompressedBytes(cfg.MaxMessageBytes)
	chk := recordChecks{
		compacted: cfg.CleanupPolicy.Compact(),
		tsLimited: cfg.TimestampDiffLimited && cfg.TimestampType == CreateTime,
		nowMs:     nowMs,
		diffMs:    cfg.TimestampDiffMaxMs,
	}
	pos = 0
	for i, h := range hs {
		b := records[pos : pos+h.Size()]
		pos += h.Size()
		if _, err := walkRecordsChecked(b, h, limit, chk); err != nil {
			if re, ok := err.(*RecordError); ok {
				re.Batch = i
			}
			return fmt.Errorf("batch %d: %w", i, err)
		}
	}
	return nil
}
