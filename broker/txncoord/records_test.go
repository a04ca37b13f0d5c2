package txncoord

import (
	"encoding/hex"
	"hash/crc32"
	"reflect"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// unhex decodes a hex string with spaces between the fields.
func unhex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The bytes below are written out field by field from TransactionLog.scala's KeySchema and
// ValueSchema (version 0, docs/transactions.md §2), not produced by the code under test.
func TestRecordFormats(t *testing.T) {
	if got, want := keyBytes("txn"), unhex(t, "0000 0003 74786e"); !reflect.DeepEqual(got, want) {
		t.Fatalf("key: %x, want %x", got, want)
	}
	cases := []struct {
		name string
		rec  txnRecord
		hex  string
	}{
		{"Empty: null partitions, no start", txnRecord{producerID: 5, producerEpoch: 0, timeoutMs: 60000, state: Empty,
			partitions: map[topicPartition]struct{}{}, lastUpdate: 1000, start: -1},
			"0000 0000000000000005 0000 0000ea60 00 ffffffff 00000000000003e8 ffffffffffffffff"},
		{"Ongoing: partitions by topic", txnRecord{producerID: 5, producerEpoch: 2, timeoutMs: 60000, state: Ongoing,
			partitions: map[topicPartition]struct{}{{"t", 3}: {}, {"t", 0}: {}, {"a", 1}: {}}, lastUpdate: 1000, start: 900},
			"0000 0000000000000005 0002 0000ea60 01 00000002" +
				" 0001 61 00000001 00000001" +
				" 0001 74 00000002 00000000 00000003" +
				" 00000000000003e8 0000000000000384"},
		{"PrepareCommit", txnRecord{producerID: 7, producerEpoch: 1, timeoutMs: 10, state: PrepareCommit,
			partitions: map[topicPartition]struct{}{{"t", 0}: {}}, lastUpdate: 2, start: 1},
			"0000 0000000000000007 0001 0000000a 02 00000001 0001 74 00000001 00000000 0000000000000002 0000000000000001"},
		{"CompleteAbort: empty array", txnRecord{producerID: 7, producerEpoch: 1, timeoutMs: 10, state: CompleteAbort,
			partitions: map[topicPartition]struct{}{}, lastUpdate: 3, start: 1},
			"0000 0000000000000007 0001 0000000a 05 00000000 0000000000000003 0000000000000001"},
	}
	for _, c := range cases {
		want := unhex(t, c.hex)
		got, err := valueBytes(c.rec)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s:\n got %x\nwant %x", c.name, got, want)
		}
		back, err := parseValue(want)
		if err != nil {
			t.Fatalf("%s: parse: %v", c.name, err)
		}
		if !reflect.DeepEqual(back, c.rec) {
			t.Fatalf("%s: parsed %+v, want %+v", c.name, back, c.rec)
		}
	}
	id, err := parseKey(unhex(t, "0000 0003 74786e"))
	if err != nil || id != "txn" {
		t.Fatalf("parseKey: %q %v", id, err)
	}
}

func TestRecordFormatErrors(t *testing.T) {
	if _, err := valueBytes(txnRecord{state: Empty, partitions: map[topicPartition]struct{}{{"t", 0}: {}}}); err == nil {
		t.Fatal("Empty with partitions encoded")
	}
	for name, b := range map[string]string{
		"key version 1": "0001 0003 74786e",
		"short key":     "00",
		"truncated key": "0000 0005 74",
	} {
		if _, err := parseKey(unhex(t, b)); err == nil {
			t.Errorf("%s: parsed", name)
		}
	}
	for name, b := range map[string]string{
		"value version 1": "0001 0000000000000005 0000 0000ea60 00 ffffffff 00000000000003e8 ffffffffffffffff 00",
		"state byte 8":    "0000 0000000000000005 0000 0000ea60 08 ffffffff 00000000000003e8 ffffffffffffffff",
		"truncated":       "0000 0000000000000005 0000",
	} {
		if _, err := parseValue(unhex(t, b)); err == nil {
			t.Errorf("%s: parsed", name)
		}
	}
}

// A batch of a record and a tombstone: magic 2, uncompressed, no producer, a correct CRC-32C,
// and it decodes back.
func TestBatchRoundTrip(t *testing.T) {
	v, _ := valueBytes(txnRecord{producerID: 1, state: Empty, lastUpdate: 1, start: -1})
	raw := encodeBatch(42, []kv{{key: keyBytes("a"), value: v}, {key: keyBytes("b")}})
	var b kmsg.RecordBatch
	if err := b.ReadFrom(raw); err != nil {
		t.Fatal(err)
	}
	if b.Magic != 2 || b.NumRecords != 2 || b.Attributes != 0 || b.ProducerID != -1 || b.FirstTimestamp != 42 {
		t.Fatalf("batch header %+v", b)
	}
	if crc := crc32.Checksum(raw[21:], castagnoli); uint32(b.CRC) != crc {
		t.Fatalf("crc %x, want %x", b.CRC, crc)
	}
	batches, skipped, err := decodeBatches(append(raw, raw[:20]...)) // a trailing partial batch is left out
	if err != nil || len(skipped) != 0 || len(batches) != 1 {
		t.Fatalf("decode: %v %v %d", err, skipped, len(batches))
	}
	recs := batches[0].records
	if len(recs) != 2 || !reflect.DeepEqual(recs[0].value, v) || recs[1].value != nil {
		t.Fatalf("records %+v", recs)
	}
}

// The partition of a transactional id is Utils.abs(String.hashCode) % 50 (docs/transactions.md
// §1): "a" hashes to 97, "ab" to 97*31+98 = 3105, and "polygenelubricants" to Integer.MIN_VALUE,
// which Utils.abs maps to 0.
func TestPartitionFor(t *testing.T) {
	cfg := Config{}
	cfg.setDefaults()
	sm := newStateManager(cfg, cfg.Log, nil, nil)
	for id, want := range map[string]int32{"a": 47, "ab": 5, "polygenelubricants": 0} {
		if got := sm.partitionFor(id); got != want {
			t.Errorf("partitionFor(%q) = %d, want %d", id, got, want)
		}
	}
}
