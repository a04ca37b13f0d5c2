package logstore

import (
	"fmt"
	"strconv"
)

// RecordError is a produce refused because of one of its records: Kafka 2.4's
// RecordValidationException (LogValidator.validateRecord and the compressed path's offset
// check), which names the record by its index in its batch and carries the exception's message.
// ReplicaManager.appendToLocalLog answers it with the exception's error code, record_errors
// [{batch_index, null message}] and the message as error_message (ProduceResponse v8, KIP-467;
// docs/kafka-facts.md §13). Errors of the batch as a whole (its header, its framing, a record
// that does not parse, bytes left after the records) are plain errors: Kafka names no record
// and sends no error_message for them.
//
// BatchIndex counts the records of the batch from 0, as Kafka's zipWithIndex over the batch
// does. A produce carries exactly one v2 batch per partition (ProduceRequest.validateRecords,
// broker/validate.go), so it is also the record's position in the partition's records.
type RecordError struct {
	Batch      int   // the batch's index in the appended records (0 for a produce)
	BatchIndex int32 // the record's index in its batch (ProduceResponse v8 batch_index)

	kind     recordErrorKind
	record   recordFacts
	expected int64 // recordNotIncremental: the offset expected
	nowMs    int64 // recordTimestampOutOfRange: the broker's clock
	diffMs   int64 // recordTimestampOutOfRange: message.timestamp.difference.max.ms
}

type recordErrorKind uint8

const (
	recordNoKeyCompacted      recordErrorKind = iota // validateKey: INVALID_RECORD
	recordTimestampOutOfRange                        // validateTimestamp, CreateTime: INVALID_TIMESTAMP
	recordLogAppendTime                              // validateTimestamp, a producer's LogAppendTime batch: INVALID_TIMESTAMP
	recordNotIncremental                             // "does not have incremental offsets": INVALID_RECORD
)

// recordFacts is what DefaultRecord.toString shows of a record.
type recordFacts struct {
	offset, timestamp  int64 // the batch's base offset (as sent) + offset delta; the record's timestamp
	keySize, valueSize int64 // -1 for a null key or value
	compressed         bool  // the batch is compressed
}

// String is DefaultRecord.toString: a null key or value counts 0 bytes.
func (r recordFacts) String() string {
	return fmt.Sprintf("DefaultRecord(offset=%d, timestamp=%d, key=%d bytes, value=%d bytes)",
		r.offset, r.timestamp, max(r.keySize, 0), max(r.valueSize, 0))
}

// Unwrap is the sentinel the error code comes from: ErrInvalidTimestamp (INVALID_TIMESTAMP)
// for the timestamp checks, ErrInvalidRecord (INVALID_RECORD) for the others.
func (e *RecordError) Unwrap() error {
	if e.kind == recordTimestampOutOfRange || e.kind == recordLogAppendTime {
		return ErrInvalidTimestamp
	}
	return ErrInvalidRecord
}

func (e *RecordError) Error() string {
	return fmt.Sprintf("%v: record %d: %s", e.Unwrap(), e.BatchIndex, e.text(""))
}

// Message is the Kafka 2.4 exception message for a record of partition tp: the error_message of
// the partition's ProduceResponse v8 answer. Kafka's TopicPartition prints as "topic-partition".
func (e *RecordError) Message(tp TopicPartition) string {
	return e.text(tp.Topic + "-" + strconv.Itoa(int(tp.Partition)))
}

// text is the message; tp "" leaves out the messages' " in topic partition tp" (logs).
func (e *RecordError) text(tp string) string {
	in := ""
	if tp != "" {
		in = " in topic partition " + tp
	}
	switch e.kind {
	case recordNoKeyCompacted:
		return ErrMsgNoKeyCompacted + in + "."
	case recordTimestampOutOfRange:
		return fmt.Sprintf("Timestamp %d of message with offset %d is out of range. The timestamp should be within [%d, %d]",
			e.record.timestamp, e.record.offset, e.nowMs-e.diffMs, e.nowMs+e.diffMs)
	case recordLogAppendTime:
		return fmt.Sprintf("Invalid timestamp type in message %s. Producer should not set timestamp type to LogAppendTime.", e.record)
	default:
		// Kafka checks the offsets of compressed batches only; isrbroker checks uncompressed
		// ones too (docs/kafka-facts.md §13), and says which kind it found.
		kind := "compressed "
		if !e.record.compressed {
			kind = ""
		}
		return fmt.Sprintf("Inner record %s inside the %srecord batch does not have incremental offsets, expected offset is %d%s.",
			e.record, kind, e.expected, in)
	}
}

// recordChecks are the per-record checks that depend on the topic's config
// (LogValidator.validateRecord): a compacted topic's keys and CreateTime timestamps.
type recordChecks struct {
	compacted bool  // cleanup.policy includes compact: a null key is refused
	tsLimited bool  // CreateTime with a limited message.timestamp.difference.max.ms
	nowMs     int64 // the broker's clock
	diffMs    int64 // message.timestamp.difference.max.ms
}

// checkRecord applies LogValidator.validateRecord to record i of batch h (validateKey, then
// validateTimestamp), then the offset check of the compressed path, in Kafka's order.
// offsetDelta is the record's; ts its timestamp as Kafka reads it (the batch's maxTimestamp
// for a LogAppendTime batch). It allocates only when it refuses.
func (c recordChecks) checkRecord(h BatchHeader, i int32, r recordFacts, offsetDelta int64) error {
	var kind recordErrorKind
	switch {
	case c.compacted && r.keySize < 0:
		kind = recordNoKeyCompacted
	case c.tsLimited && r.timestamp != noTimestamp && (r.timestamp-c.nowMs > c.diffMs || c.nowMs-r.timestamp > c.diffMs):
		kind = recordTimestampOutOfRange
	case h.Attributes&attrTimestampType != 0:
		kind = recordLogAppendTime
	case offsetDelta != int64(i):
		kind = recordNotIncremental
	default:
		return nil
	}
	return &RecordError{BatchIndex: i, kind: kind, record: r, expected: int64(i), nowMs: c.nowMs, diffMs: c.diffMs}
}
