package logstore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"testing"
)

// trec is one record to encode with its own timestamp delta and offset delta.
type trec struct {
	tsDelta, delta int64
	key, value     []byte // nil key: null
}

// timedBatch encodes rs (compressed with codec, as codecBatch) in a v2 batch whose base and
// max timestamps are baseTs and maxTs, with the given attributes on top of the codec.
func timedBatch(t *testing.T, codec int, attrs int16, baseTs, maxTs int64, rs []trec) []byte {
	t.Helper()
	var recs []byte
	for _, r := range rs {
		var b []byte
		b = append(b, 0)
		b = appendVarint(b, r.tsDelta)
		b = appendVarint(b, r.delta)
		if r.key == nil {
			b = appendVarint(b, -1)
		} else {
			b = appendVarint(b, int64(len(r.key)))
			b = append(b, r.key...)
		}
		b = appendVarint(b, int64(len(r.value)))
		b = append(b, r.value...)
		b = appendVarint(b, 0)
		recs = appendVarint(recs, int64(len(b)))
		recs = append(recs, b...)
	}
	attr := int16(codec) | attrs
	if codec == codecSnappy+100 {
		attr = codecSnappy | attrs
	}
	b := rawBatch(compressWith(t, codec, recs), attr, int32(len(rs)), int32(len(rs)-1))
	binary.BigEndian.PutUint64(b[offBaseTimestamp:], uint64(baseTs))
	binary.BigEndian.PutUint64(b[offMaxTimestamp:], uint64(maxTs))
	resealCRC(b)
	return b
}

// keyed returns n records with keys, values "value" and offset deltas 0..n-1, timestamps
// baseTs+i.
func keyed(n int) []trec {
	rs := make([]trec, n)
	for i := range rs {
		rs[i] = trec{tsDelta: int64(i), delta: int64(i), key: []byte{'k', byte('0' + i)}, value: []byte("value")}
	}
	return rs
}

var testTP = TopicPartition{Topic: "t", Partition: 0}

// TestAppendAsLeaderNamesTheBadRecord: a batch refused because of its record k reports k
// (RecordError.BatchIndex, Kafka's index in the batch) with Kafka 2.4's exception message and
// the error code's sentinel, for every codec, and appends nothing.
func TestAppendAsLeaderNamesTheBadRecord(t *testing.T) {
	clock := newFakeClock()
	now := clock.Now().UnixMilli()
	const k = 3
	for _, c := range allCodecs {
		compressed := c.codec != codecNone
		t.Run(c.name, func(t *testing.T) {
			keyless := keyed(6)
			keyless[k].key = nil

			late := keyed(6)
			late[k].tsDelta = 5000 // now+5000 with a 1000 ms limit

			gap := keyed(6)
			gap[k].delta = 7

			lat := keyed(2)

			inner := "record batch"
			if compressed {
				inner = "compressed record batch"
			}
			cases := []struct {
				name    string
				compact bool
				batch   []byte
				want    error
				index   int32
				msg     string
			}{
				{"null key on a compacted topic", true, timedBatch(t, c.codec, 0, now, now+5, keyless), ErrInvalidRecord, k,
					"Compacted topic cannot accept message without key in topic partition t-0."},
				{"timestamp out of range", false, timedBatch(t, c.codec, 0, now, now+5000, late), ErrInvalidTimestamp, k,
					fmt.Sprintf("Timestamp %d of message with offset %d is out of range. The timestamp should be within [%d, %d]", now+5000, k, now-1000, now+1000)},
				{"offsets not incremental", false, timedBatch(t, c.codec, 0, now, now+5, gap), ErrInvalidRecord, k,
					fmt.Sprintf("Inner record DefaultRecord(offset=7, timestamp=%d, key=2 bytes, value=5 bytes) inside the %s does not have incremental offsets, expected offset is %d in topic partition t-0.", now+k, inner, k)},
				{"LogAppendTime from a producer", false, timedBatch(t, c.codec, attrTimestampType, now, now+1, lat), ErrInvalidTimestamp, 0,
					fmt.Sprintf("Invalid timestamp type in message DefaultRecord(offset=0, timestamp=%d, key=2 bytes, value=5 bytes). Producer should not set timestamp type to LogAppendTime.", now+1)},
			}
			for _, tc := range cases {
				t.Run(tc.name, func(t *testing.T) {
					cfg := testConfig()
					cfg.TimestampDiffLimited, cfg.TimestampDiffMaxMs = true, 1000
					if tc.compact {
						cfg.CleanupPolicy = PolicyCompact
					}
					l := newTestLog(t, cfg, clock)
					_, err := l.AppendAsLeader(tc.batch, 1)
					var re *RecordError
					if !errors.As(err, &re) || !errors.Is(err, tc.want) {
						t.Fatalf("err %v, want a RecordError of %v", err, tc.want)
					}
					if re.BatchIndex != tc.index || re.Batch != 0 {
						t.Fatalf("batch %d record %d, want batch 0 record %d", re.Batch, re.BatchIndex, tc.index)
					}
					if got := re.Message(testTP); got != tc.msg {
						t.Fatalf("message\n %q, want\n %q", got, tc.msg)
					}
					if l.LogEndOffset() != 0 {
						t.Fatalf("LEO %d after a refused append", l.LogEndOffset())
					}
				})
			}
		})
	}
}

// TestRecordErrorsInKafkasOrder: the checks of one record run in LogValidator's order (key,
// timestamp range, LogAppendTime, offsets), the first record that fails is the one named,
// and the batch's own failures name none: "records still remaining" is found on reading the
// last record, before it is validated, and a record that does not parse fails the batch.
func TestRecordErrorsInKafkasOrder(t *testing.T) {
	clock := newFakeClock()
	now := clock.Now().UnixMilli()
	cfg := testConfig()
	cfg.CleanupPolicy = PolicyCompact
	cfg.TimestampDiffLimited, cfg.TimestampDiffMaxMs = true, 1000

	both := keyed(4)
	both[2].key, both[2].tsDelta, both[2].delta = nil, 9000, 9 // key first
	lateAndGap := keyed(4)
	lateAndGap[1].tsDelta, lateAndGap[1].delta = 9000, 9 // timestamp before offsets
	twoBad := keyed(4)
	twoBad[1].delta, twoBad[3].key = 5, nil // the first bad record
	latLate := keyed(2)                     // a LogAppendTime batch: records take maxTimestamp, range first

	trailingKeyless := keyed(2)
	trailingKeyless[1].key = nil
	trailing := timedBatch(t, codecNone, 0, now, now+1, trailingKeyless)
	trailing = rawBatch(append(append([]byte(nil), trailing[batchHeaderSize:]...), encodeRecords([]rec{{value: []byte("x")}})...), 0, 2, 1)
	binary.BigEndian.PutUint64(trailing[offBaseTimestamp:], uint64(now))
	resealCRC(trailing)

	truncated := timedBatch(t, codecNone, 0, now, now+3, keyed(4))
	truncated = rawBatch(truncated[batchHeaderSize:len(truncated)-3], 0, 4, 3)
	binary.BigEndian.PutUint64(truncated[offBaseTimestamp:], uint64(now))
	resealCRC(truncated)

	// Record 1 has no key, record 3 is cut short: Kafka validates an uncompressed batch's
	// records as it reads them (record 1 named), but reads a compressed one's all first (the
	// batch fails, no record named).
	keylessThenCut := keyed(4)
	keylessThenCut[1].key = nil
	cut := timedBatch(t, codecNone, 0, now, now+3, keylessThenCut)
	cutRecs := cut[batchHeaderSize : len(cut)-3]
	cutPlain := rawBatch(cutRecs, 0, 4, 3)
	cutGzip := rawBatch(compressWith(t, codecGzip, cutRecs), codecGzip, 4, 3)
	for _, b := range [][]byte{cutPlain, cutGzip} {
		binary.BigEndian.PutUint64(b[offBaseTimestamp:], uint64(now))
		resealCRC(b)
	}

	cases := []struct {
		name  string
		batch []byte
		want  error
		index int32 // -1: the batch fails without a RecordError
	}{
		{"uncompressed: null key before a later cut record", cutPlain, ErrInvalidRecord, 1},
		{"compressed: a cut record anywhere before any record is named", cutGzip, ErrInvalidRecord, -1},
		{"null key before timestamp and offset", timedBatch(t, codecNone, 0, now, now+9000, both), ErrInvalidRecord, 2},
		{"timestamp before offset", timedBatch(t, codecGzip, 0, now, now+9000, lateAndGap), ErrInvalidTimestamp, 1},
		{"first bad record named", timedBatch(t, codecLz4, 0, now, now+3, twoBad), ErrInvalidRecord, 1},
		{"LogAppendTime batch: range on maxTimestamp first", timedBatch(t, codecNone, attrTimestampType, now, now+5000, latLate), ErrInvalidTimestamp, 0},
		{"records still remaining before the last record's key", trailing, ErrInvalidRecord, -1},
		{"truncated record", truncated, ErrInvalidRecord, -1},
		{"control batch", rawBatch(encodeRecords(seqRecords(1, 1)), attrControl, 1, 0), ErrInvalidRecord, -1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l := newTestLog(t, cfg, clock)
			_, err := l.AppendAsLeader(tc.batch, 1)
			if !errors.Is(err, tc.want) {
				t.Fatalf("err %v, want %v", err, tc.want)
			}
			var re *RecordError
			switch named := errors.As(err, &re); {
			case tc.index < 0 && named:
				t.Fatalf("batch failure %v names record %d", err, re.BatchIndex)
			case tc.index >= 0 && !named:
				t.Fatalf("err %v names no record, want %d", err, tc.index)
			case named && re.BatchIndex != tc.index:
				t.Fatalf("record %d named (%v), want %d", re.BatchIndex, err, tc.index)
			}
		})
	}
	// The LogAppendTime batch's message is the range check's, on the batch's maxTimestamp.
	l := newTestLog(t, cfg, clock)
	_, err := l.AppendAsLeader(timedBatch(t, codecNone, attrTimestampType, now, now+5000, latLate), 1)
	var re *RecordError
	if !errors.As(err, &re) {
		t.Fatal(err)
	}
	want := fmt.Sprintf("Timestamp %d of message with offset 0 is out of range. The timestamp should be within [%d, %d]", now+5000, now-1000, now+1000)
	if got := re.Message(testTP); got != want {
		t.Fatalf("message %q, want %q", got, want)
	}
}

// TestRecordErrorIndexIsInItsBatch: with several batches (an append that is not a produce)
// the index counts from 0 in each batch, and Batch says which batch.
func TestRecordErrorIndexIsInItsBatch(t *testing.T) {
	clock := newFakeClock()
	now := clock.Now().UnixMilli()
	cfg := testConfig()
	cfg.CleanupPolicy = PolicyCompact
	second := keyed(3)
	second[1].key = nil
	records := append(timedBatch(t, codecNone, 0, now, now+2, keyed(3)), timedBatch(t, codecNone, 0, now, now+2, second)...)
	_, err := newTestLog(t, cfg, clock).AppendAsLeader(records, 1)
	var re *RecordError
	if !errors.As(err, &re) || re.Batch != 1 || re.BatchIndex != 1 {
		t.Fatalf("err %v (%+v), want batch 1 record 1", err, re)
	}
}
