package txncoord

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"sort"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// __transaction_state record formats (TransactionLog.scala 2.4.1, docs/transactions.md §2): key
// version 0 [transactional_id], value version 0 [producer_id, producer_epoch,
// transaction_timeout, transaction_status, transaction_partitions (nullable), entry timestamp,
// start timestamp]; a null value is the tombstone of an expired transactional id. Keys and
// values are kmsg's TxnMetadataKey / TxnMetadataValue; the batches are magic 2, CRC-32C,
// uncompressed (TransactionLog's enforced compression), CREATE_TIME, no producer.
const (
	keyVersion   = 0
	valueVersion = 0
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// kv is one record: a nil value is a tombstone.
type kv struct {
	key, value []byte
}

// txnRecord is the decoded value of one __transaction_state record.
type txnRecord struct {
	producerID    int64
	producerEpoch int16
	timeoutMs     int32
	state         kmsg.TransactionState
	partitions    map[topicPartition]struct{}
	lastUpdate    int64 // transaction_entry_timestamp (ms)
	start         int64 // transaction_start_timestamp (ms, -1: none)
}

// topicPartition is one partition of a transaction.
type topicPartition struct {
	topic     string
	partition int32
}

func keyBytes(transactionalID string) []byte {
	k := kmsg.TxnMetadataKey{Version: keyVersion, TransactionalID: transactionalID}
	return k.AppendTo(nil)
}

// valueBytes is TransactionLog.valueToBytes: the partitions are null for Empty and grouped by
// topic otherwise (an empty array for the Complete states). Topics and partition ids are
// sorted so that the bytes are deterministic (Kafka's order is a hash set's).
func valueBytes(r txnRecord) ([]byte, error) {
	v := kmsg.NewTxnMetadataValue()
	v.Version = valueVersion
	v.ProducerID = r.producerID
	v.ProducerEpoch = r.producerEpoch
	v.TimeoutMillis = r.timeoutMs
	v.State = r.state
	v.LastUpdateTimestamp = r.lastUpdate
	v.StartTimestamp = r.start
	switch {
	case r.state == kmsg.TransactionStateEmpty:
		if len(r.partitions) > 0 {
			return nil, fmt.Errorf("transaction in state Empty with %d partitions", len(r.partitions))
		}
		v.Topics = nil
	default:
		v.Topics = groupByTopic(r.partitions)
	}
	return v.AppendTo(nil), nil
}

func groupByTopic(parts map[topicPartition]struct{}) []kmsg.TxnMetadataValueTopic {
	byTopic := map[string][]int32{}
	for p := range parts {
		byTopic[p.topic] = append(byTopic[p.topic], p.partition)
	}
	topics := make([]string, 0, len(byTopic))
	for t := range byTopic {
		topics = append(topics, t)
	}
	sort.Strings(topics)
	out := make([]kmsg.TxnMetadataValueTopic, 0, len(topics))
	for _, t := range topics {
		ids := byTopic[t]
		sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
		out = append(out, kmsg.TxnMetadataValueTopic{Topic: t, Partitions: ids})
	}
	return out
}

// parseKey is TransactionLog.readTxnRecordKey: only key version 0 exists in 2.4.
func parseKey(b []byte) (string, error) {
	if len(b) < 2 {
		return "", errors.New("key shorter than its version")
	}
	if v := int16(binary.BigEndian.Uint16(b)); v != keyVersion {
		return "", fmt.Errorf("unknown transaction log key version %d", v)
	}
	var k kmsg.TxnMetadataKey
	if err := k.ReadFrom(b); err != nil {
		return "", err
	}
	return k.TransactionalID, nil
}

// parseValue is TransactionLog.readTxnRecordValue for a non-null value: only value version 0
// exists in 2.4; the partitions are read for every state but Empty.
func parseValue(b []byte) (txnRecord, error) {
	if len(b) < 2 {
		return txnRecord{}, errors.New("value shorter than its version")
	}
	if v := int16(binary.BigEndian.Uint16(b)); v != valueVersion {
		return txnRecord{}, fmt.Errorf("unknown transaction log value version %d", v)
	}
	var v kmsg.TxnMetadataValue
	if err := v.ReadFrom(b); err != nil {
		return txnRecord{}, err
	}
	if v.State < kmsg.TransactionStateEmpty || v.State > kmsg.TransactionStatePrepareEpochFence {
		return txnRecord{}, fmt.Errorf("unknown transaction state byte %d", v.State)
	}
	r := txnRecord{
		producerID: v.ProducerID, producerEpoch: v.ProducerEpoch, timeoutMs: v.TimeoutMillis,
		state: v.State, partitions: map[topicPartition]struct{}{},
		lastUpdate: v.LastUpdateTimestamp, start: v.StartTimestamp,
	}
	if v.State != kmsg.TransactionStateEmpty {
		for _, t := range v.Topics {
			for _, p := range t.Partitions {
				r.partitions[topicPartition{t.Topic, p}] = struct{}{}
			}
		}
	}
	return r, nil
}

// encodeBatch builds one magic-2 record batch of records at timestamp ts (ms): base offset 0
// (the log assigns offsets), no producer, uncompressed, CRC-32C over attributes..end.
func encodeBatch(ts int64, records []kv) []byte {
	var recs []byte
	for i, r := range records {
		rec := kmsg.Record{OffsetDelta: int32(i), Key: r.key, Value: r.value}
		body := rec.AppendTo(nil)
		rec.Length = int32(len(body) - 1) // the zero Length took one varint byte
		recs = rec.AppendTo(recs)
	}
	b := kmsg.RecordBatch{
		PartitionLeaderEpoch: -1,
		Magic:                2,
		LastOffsetDelta:      int32(len(records) - 1),
		FirstTimestamp:       ts,
		MaxTimestamp:         ts,
		ProducerID:           -1,
		ProducerEpoch:        -1,
		FirstSequence:        -1,
		NumRecords:           int32(len(records)),
		Records:              recs,
	}
	out := b.AppendTo(nil)
	binary.BigEndian.PutUint32(out[8:], uint32(len(out)-12))
	binary.BigEndian.PutUint32(out[17:], crc32.Checksum(out[21:], castagnoli))
	return out
}

// Batch attributes the loader looks at.
const (
	attrCompressionMask = 0x07
	attrControl         = 0x20
)

// decodedBatch is one batch's records (a nil value is a tombstone).
type decodedBatch struct {
	nextOffset int64
	control    bool
	records    []kv
}

// decodeBatches splits raw log bytes into batches and their records. A trailing partial batch
// is left out. Batches isrbroker cannot read (magic < 2, compressed: TransactionLog never
// writes them) are returned without records in skipped.
func decodeBatches(raw []byte) (batches []decodedBatch, skipped []error, err error) {
	for len(raw) >= 12 {
		size := int(int32(binary.BigEndian.Uint32(raw[8:]))) + 12
		if size < 61 {
			return batches, skipped, fmt.Errorf("bad batch length %d", size)
		}
		if size > len(raw) {
			break
		}
		var b kmsg.RecordBatch
		if err := b.ReadFrom(raw[:size]); err != nil {
			return batches, skipped, fmt.Errorf("decoding batch: %w", err)
		}
		if b.LastOffsetDelta < 0 {
			return batches, skipped, fmt.Errorf("batch at %d: last offset delta %d", b.FirstOffset, b.LastOffsetDelta)
		}
		raw = raw[size:]
		db := decodedBatch{nextOffset: b.FirstOffset + int64(b.LastOffsetDelta) + 1}
		if b.Magic != 2 || b.Attributes&attrCompressionMask != 0 {
			skipped = append(skipped, fmt.Errorf("batch at %d: magic %d, attributes %#x", b.FirstOffset, b.Magic, b.Attributes))
			batches = append(batches, db)
			continue
		}
		db.control = b.Attributes&attrControl != 0
		recs := b.Records
		for i := int32(0); i < b.NumRecords && len(recs) > 0; i++ {
			l, n := binary.Varint(recs)
			if n <= 0 || l < 0 || int64(n)+l > int64(len(recs)) {
				return batches, skipped, fmt.Errorf("batch at %d: bad record length", b.FirstOffset)
			}
			var r kmsg.Record
			if err := r.ReadFrom(recs[:n+int(l)]); err != nil {
				return batches, skipped, fmt.Errorf("batch at %d: decoding record: %w", b.FirstOffset, err)
			}
			recs = recs[n+int(l):]
			db.records = append(db.records, kv{key: r.Key, value: r.Value})
		}
		batches = append(batches, db)
	}
	return batches, skipped, nil
}
