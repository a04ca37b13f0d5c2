package replicamanager

import (
	"encoding/binary"
	"hash/crc32"
	"math"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// keyedBatch builds a v2 batch of n records with keys, but a null key at index nullKey (-1:
// none), as a producer sends it.
func keyedBatch(n, nullKey int) []byte {
	var recs []byte
	for i := 0; i < n; i++ {
		var r []byte
		r = append(r, 0)                     // attributes
		r = binary.AppendVarint(r, 0)        // timestamp delta
		r = binary.AppendVarint(r, int64(i)) // offset delta
		if i == nullKey {
			r = binary.AppendVarint(r, -1)
		} else {
			r = binary.AppendVarint(r, 1)
			r = append(r, byte('a'+i))
		}
		r = binary.AppendVarint(r, 1)
		r = append(r, 'v')
		r = binary.AppendVarint(r, 0) // headers
		recs = binary.AppendVarint(recs, int64(len(r)))
		recs = append(recs, r...)
	}
	b := makeBatch(1, "")[:61]
	b = append(b[:61:61], recs...)
	binary.BigEndian.PutUint32(b[8:], uint32(len(b)-12))
	binary.BigEndian.PutUint32(b[23:], uint32(n-1))
	binary.BigEndian.PutUint32(b[57:], uint32(n))
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
	return b
}

// TestProduceResultNamesTheBadRecord: a batch the log refuses because of its record k answers,
// as Kafka 2.4's appendToLocalLog does for a RecordValidationException, the error code,
// record_errors [{k, null}] and the exception's message as error_message; a batch refused as
// a whole (its header claims records it does not hold) carries neither.
func TestProduceResultNamesTheBadRecord(t *testing.T) {
	e := newEnv(t, 1, 1)
	e.coord.configs["t"] = map[string]string{"cleanup.policy": "compact"}
	e.leaderAndIsr(t, 1, 0, []int32{1}, []int32{1})
	produce := func(b []byte) ProduceResult {
		ch := make(chan ProduceResult, 1)
		e.rm.Requests().AppendRecords(time.Second, -1, map[TopicPartition][]byte{tp0(): b}, func(m map[TopicPartition]ProduceResult) { ch <- m[tp0()] })
		return waitResult(t, ch, time.Second)
	}
	r := produce(keyedBatch(5, 3))
	if r.ErrorCode != kerr.InvalidRecord.Code {
		t.Fatalf("error %d (%v), want INVALID_RECORD", r.ErrorCode, kerr.ErrorForCode(r.ErrorCode))
	}
	if len(r.RecordErrors) != 1 || r.RecordErrors[0] != (RecordError{BatchIndex: 3}) {
		t.Fatalf("record errors %+v, want [{3 null}]", r.RecordErrors)
	}
	if want := "Compacted topic cannot accept message without key in topic partition t-0."; r.ErrorMessage != want {
		t.Fatalf("error message %q, want %q", r.ErrorMessage, want)
	}
	if r.BaseOffset != -1 || e.rm.getPartition(tp0()).log.LogEndOffset() != 0 {
		t.Fatalf("base offset %d, LEO %d after a refused batch", r.BaseOffset, e.rm.getPartition(tp0()).log.LogEndOffset())
	}

	huge := keyedBatch(1, -1)
	binary.BigEndian.PutUint32(huge[23:], math.MaxInt32-1)
	binary.BigEndian.PutUint32(huge[57:], math.MaxInt32)
	binary.BigEndian.PutUint32(huge[17:], crc32.Checksum(huge[21:], crc32.MakeTable(crc32.Castagnoli)))
	if r := produce(huge); r.ErrorCode != kerr.InvalidRecord.Code || r.RecordErrors != nil || r.ErrorMessage != "" {
		t.Fatalf("batch refused as a whole: %+v, want INVALID_RECORD with no record errors and no message", r)
	}
	if r := produce(keyedBatch(5, -1)); r.ErrorCode != 0 || r.RecordErrors != nil || r.ErrorMessage != "" || r.BaseOffset != 0 {
		t.Fatalf("good batch: %+v", r)
	}
}
