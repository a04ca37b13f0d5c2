package replicamanager

import (
	"encoding/binary"
	"hash/crc32"
	"math"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TestProduceRefusesBatchClaimingMoreRecordsThanItHolds: a 72-byte batch (one real record)
// whose header claims 2^31-1 records is answered INVALID_RECORD, as Kafka's LogValidator
// answers it, and neither the LEO nor the HW moves; the partition then takes a good batch at
// the offset it would have taken before.
func TestProduceRefusesBatchClaimingMoreRecordsThanItHolds(t *testing.T) {
	e := newEnv(t, 1, 1)
	e.leaderAndIsr(t, 1, 0, []int32{1}, []int32{1})
	if r := waitResult(t, e.produce(t, -1, 3, time.Second), time.Second); r.ErrorCode != 0 {
		t.Fatalf("produce: %+v", r)
	}
	huge := makeBatch(1, "abcd")
	if len(huge) != 72 {
		t.Fatalf("batch of %d bytes, want 72", len(huge))
	}
	binary.BigEndian.PutUint32(huge[23:], math.MaxInt32-1) // lastOffsetDelta
	binary.BigEndian.PutUint32(huge[57:], math.MaxInt32)   // recordCount
	binary.BigEndian.PutUint32(huge[17:], crc32.Checksum(huge[21:], crc32.MakeTable(crc32.Castagnoli)))

	ch := make(chan ProduceResult, 1)
	e.rm.Requests().AppendRecords(time.Second, -1, map[TopicPartition][]byte{tp0(): huge}, func(m map[TopicPartition]ProduceResult) { ch <- m[tp0()] })
	if r := waitResult(t, ch, time.Second); r.ErrorCode != kerr.InvalidRecord.Code {
		t.Fatalf("error %d (%v), want INVALID_RECORD", r.ErrorCode, kerr.ErrorForCode(r.ErrorCode))
	}
	p := e.rm.getPartition(tp0())
	if leo, hw := p.log.LogEndOffset(), p.HighWatermark(); leo != 3 || hw != 3 {
		t.Fatalf("LEO %d HW %d after the refused batch, want 3 and 3", leo, hw)
	}
	if r := waitResult(t, e.produce(t, -1, 2, time.Second), time.Second); r.ErrorCode != 0 || r.BaseOffset != 3 {
		t.Fatalf("produce after the refused batch: %+v", r)
	}
}
