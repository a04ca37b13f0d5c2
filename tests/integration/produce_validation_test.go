package integration

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"
	"math/rand"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/isrbroker/isrbroker/tests/cluster"
)

// Issue 28: the leader validates every record of a produced batch as Kafka 2.4's
// LogValidator does (docs/kafka-facts.md §13).

// TestProduceRefusesMalformedBatches sends, through kmsg Produce v7 requests on a real broker,
// a 72-byte batch claiming 2^31-1 records, a gzip batch over random bytes and a batch with
// compression id 7: each is answered INVALID_RECORD, the partition's end offset (its HW) does
// not move, and the broker then takes a good batch at the offset it would have had.
func TestProduceRefusesMalformedBatches(t *testing.T) {
	c := cluster.Start(t, cluster.Options{Brokers: 1})
	const topic = "produce-validation"
	c.CreateTopicWithAssignment(topic, map[int32][]int32{0: {1}}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl := c.Client(kgo.RequestRetries(0))
	produce := func(records []byte) (kmsg.ProduceResponseTopicPartition, error) {
		req := kmsg.NewPtrProduceRequest()
		req.Version, req.Acks, req.TimeoutMillis = 7, -1, 5000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = records
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := cl.Broker(1).Request(ctx, req)
		if err != nil {
			return kmsg.ProduceResponseTopicPartition{}, err
		}
		return resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0], nil
	}
	now := time.Now().UnixMilli()
	var first kmsg.ProduceResponseTopicPartition
	cluster.WaitFor(t, 20*time.Second, func() (bool, string) {
		var err error
		first, err = produce(cluster.EncodeBatch(0, -1, now, []byte("a"), []byte("b"), []byte("c")))
		return err == nil && first.ErrorCode == 0, fmt.Sprintf("first produce: %v code %d", err, first.ErrorCode)
	})

	reseal := func(b []byte) []byte {
		binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
		return b
	}
	huge := cluster.EncodeBatch(0, -1, now, []byte("abcd"))
	binary.BigEndian.PutUint32(huge[23:], math.MaxInt32-1) // lastOffsetDelta
	binary.BigEndian.PutUint32(huge[57:], math.MaxInt32)   // recordCount
	reseal(huge)
	if len(huge) != 72 {
		t.Fatalf("batch of %d bytes, want 72", len(huge))
	}
	random := make([]byte, 200)
	rand.New(rand.NewSource(1)).Read(random)
	gzipped := cluster.EncodeBatch(0, -1, now, []byte("x"))
	gzipped = reseal(append(gzipped[:61], random...))
	binary.BigEndian.PutUint32(gzipped[8:], uint32(len(gzipped)-12))
	gzipped[22] = 1 // gzip
	reseal(gzipped)
	codec7 := cluster.EncodeBatch(0, -1, now, []byte("x"))
	codec7[22] = 7
	reseal(codec7)

	for _, tc := range []struct {
		name  string
		batch []byte
	}{{"72-byte batch claiming 2^31-1 records", huge}, {"gzip over random bytes", gzipped}, {"compression id 7", codec7}} {
		r, err := produce(tc.batch)
		if err != nil || r.ErrorCode != kerr.InvalidRecord.Code {
			t.Fatalf("%s: error %v code %d (%v), want INVALID_RECORD", tc.name, err, r.ErrorCode, kerr.ErrorForCode(r.ErrorCode))
		}
		end, err := c.EndOffsets(ctx, topic)
		if err != nil || end[0] != first.BaseOffset+3 {
			t.Fatalf("%s: end offset %v (%v), want %d", tc.name, end, err, first.BaseOffset+3)
		}
	}
	r, err := produce(cluster.EncodeBatch(0, -1, now, []byte("d")))
	if err != nil || r.ErrorCode != 0 || r.BaseOffset != first.BaseOffset+3 {
		t.Fatalf("produce after the refused batches: %+v %v, want offset %d", r, err, first.BaseOffset+3)
	}
}
