package broker

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	rm "github.com/isrbroker/isrbroker/replicamanager"
)

// refusingReplicas is fakeReplicas whose appends to the partitions in refuse answer the given
// result, as the replica manager answers a batch its log refused because of one record.
type refusingReplicas struct {
	*fakeReplicas
	refuse map[rm.TopicPartition]rm.ProduceResult
}

func (r *refusingReplicas) AppendRecords(timeout time.Duration, acks int16, entries map[rm.TopicPartition][]byte, done func(map[rm.TopicPartition]rm.ProduceResult)) {
	rest := make(map[rm.TopicPartition][]byte, len(entries))
	out := make(map[rm.TopicPartition]rm.ProduceResult, len(entries))
	for k, b := range entries {
		if res, ok := r.refuse[k]; ok {
			out[k] = res
		} else {
			rest[k] = b
		}
	}
	r.fakeReplicas.AppendRecords(timeout, acks, rest, func(m map[rm.TopicPartition]rm.ProduceResult) {
		for k, v := range m {
			out[k] = v
		}
		done(out)
	})
}

const compactedMsg = "Compacted topic cannot accept message without key in topic partition bad-0."

// startRefusingServer serves topics "bad" (its partition 0 refuses every batch, naming record
// 3) and "good".
func startRefusingServer(t *testing.T) *testEnv {
	t.Helper()
	e := startServerWith(t, nil, func(_ *fakeAdmin, d *Deps) {
		d.Replicas = &refusingReplicas{fakeReplicas: d.Replicas.(*fakeReplicas), refuse: map[rm.TopicPartition]rm.ProduceResult{
			tp("bad", 0): {ErrorCode: kerr.InvalidRecord.Code, BaseOffset: -1, LogAppendTime: -1, LogStartOffset: -1,
				RecordErrors: []rm.RecordError{{BatchIndex: 3}}, ErrorMessage: compactedMsg},
		}}
	})
	e.createTopic("bad", 1)
	e.createTopic("good", 1)
	return e
}

// TestProduceV8RecordErrors: Produce v8 answers a partition refused because of one record with
// record_errors (its batch_index, a null message) and error_message, as Kafka 2.4 does; a
// partition refused as a whole and a good one carry neither; v7 has no such fields.
func TestProduceV8RecordErrors(t *testing.T) {
	e := startRefusingServer(t)
	c := dial(t, e.addr)
	good := makeBatch(5, []byte("v"))

	resp := roundTrip[*kmsg.ProduceResponse](t, c, produceReq(8, 1, "bad", 0, good))
	if resp.Version != 8 {
		t.Fatalf("answered at v%d", resp.Version)
	}
	rp := resp.Topics[0].Partitions[0]
	if rp.ErrorCode != kerr.InvalidRecord.Code {
		t.Fatalf("error %d, want INVALID_RECORD", rp.ErrorCode)
	}
	if len(rp.ErrorRecords) != 1 || rp.ErrorRecords[0].RelativeOffset != 3 || rp.ErrorRecords[0].ErrorMessage != nil {
		t.Fatalf("record_errors %+v, want [{batch_index 3, null}]", rp.ErrorRecords)
	}
	if rp.ErrorMessage == nil || *rp.ErrorMessage != compactedMsg {
		t.Fatalf("error_message %v, want %q", rp.ErrorMessage, compactedMsg)
	}

	for name, req := range map[string]*kmsg.ProduceRequest{
		"refused as a whole (two batches)": produceReq(8, 1, "good", 0, append(append([]byte(nil), good...), good...)),
		"appended":                         produceReq(8, 1, "good", 0, good),
	} {
		rp := roundTrip[*kmsg.ProduceResponse](t, c, req).Topics[0].Partitions[0]
		if rp.ErrorRecords != nil || rp.ErrorMessage != nil {
			t.Fatalf("%s: record_errors %+v error_message %v, want none", name, rp.ErrorRecords, rp.ErrorMessage)
		}
	}

	// v7 encodes neither field: the same refusal decodes with the error code only.
	v7 := roundTrip[*kmsg.ProduceResponse](t, c, produceReq(7, 1, "bad", 0, good)).Topics[0].Partitions[0]
	if v7.ErrorCode != kerr.InvalidRecord.Code || v7.ErrorRecords != nil || v7.ErrorMessage != nil {
		t.Fatalf("v7: %+v", v7)
	}
}

// TestKgoProducesAtV8: a stock franz-go client negotiates Produce v8 with the server, reads the
// v8 fields, and its producer appends to a good partition and fails a record of the refused
// one with INVALID_RECORD (not retried).
func TestKgoProducesAtV8(t *testing.T) {
	e := startRefusingServer(t)
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.addr), kgo.DisableIdempotentWrite(), kgo.RecordRetries(3))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	req := produceReq(100, 1, "bad", 0, makeBatch(5, []byte("v"))) // kgo sets the highest version both serve
	kresp, err := cl.Request(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if req.Version != 8 {
		t.Fatalf("kgo produced at v%d, want 8", req.Version)
	}
	rp := kresp.(*kmsg.ProduceResponse).Topics[0].Partitions[0]
	if len(rp.ErrorRecords) != 1 || rp.ErrorRecords[0].RelativeOffset != 3 || rp.ErrorMessage == nil || *rp.ErrorMessage != compactedMsg {
		t.Fatalf("kgo read record_errors %+v error_message %v", rp.ErrorRecords, rp.ErrorMessage)
	}

	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "good", Value: []byte("a")}).FirstErr(); err != nil {
		t.Fatalf("produce to a good partition: %v", err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "bad", Value: []byte("a")}).FirstErr(); !errors.Is(err, kerr.InvalidRecord) {
		t.Fatalf("produce to the refusing partition: %v, want INVALID_RECORD", err)
	}
	if n := e.reps.appendCount(); n < 1 {
		t.Fatalf("%d appends reached the replica manager", n)
	}
}
