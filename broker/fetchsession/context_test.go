package fetchsession

import (
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TestIncrementalAnswersOnlyChangedPartitions: after a full fetch of four partitions answered
// with HW 10, LSO 10 and log start 0, an incremental answer carries exactly the partitions whose
// read returned records, an error, or another HW, LSO or log start offset.
func TestIncrementalAnswersOnlyChangedPartitions(t *testing.T) {
	same := PartitionResult{HighWatermark: 10, LastStableOffset: 10}
	for _, k := range []struct {
		name   string
		change PartitionResult
		want   bool
	}{
		{"nothing new", same, false},
		{"records", PartitionResult{HighWatermark: 10, LastStableOffset: 10, RecordBytes: 70}, true},
		{"HW", PartitionResult{HighWatermark: 11, LastStableOffset: 10}, true},
		{"LSO", PartitionResult{HighWatermark: 10, LastStableOffset: 11}, true},
		{"log start", PartitionResult{HighWatermark: 10, LastStableOffset: 10, LogStartOffset: 4}, true},
		{"error", PartitionResult{ErrorCode: kerr.NotLeaderForPartition.Code, HighWatermark: 10, LastStableOffset: 10}, true},
	} {
		t.Run(k.name, func(t *testing.T) {
			c := NewCache(10, MinEvictionAge, nil)
			id := create(t, c, t0, false, 4)
			x := c.NewContext(t0, id, 1, nil, nil, false)
			if got := len(x.Partitions()); got != 4 {
				t.Fatalf("incremental fetch reads %d partitions, want the session's 4", got)
			}
			res := []PartitionResult{same, k.change, same, same}
			sid, code, keep := x.Respond(t0, res)
			if sid != id || code != 0 || !reflect.DeepEqual(keep, []bool{false, k.want, false, false}) {
				t.Fatalf("Respond = %d, %d, %v", sid, code, keep)
			}
			// The answer is recorded: the same read again is no change, except after an error
			// (its cached HW is -1, so the partition is sent again once the error is gone) or
			// records (records always go out).
			// (Answered partitions move to the back: results go by partition, not position.)
			byTP := func(x *Context, r map[TopicPartition]PartitionResult) ([]PartitionResult, int) {
				out, at := make([]PartitionResult, len(x.Partitions())), -1
				for i, p := range x.Partitions() {
					if v, ok := r[p.TopicPartition]; ok {
						out[i], at = v, i
					} else {
						out[i] = same
					}
				}
				return out, at
			}
			x = c.NewContext(t0, id, 2, nil, nil, false)
			res, at := byTP(x, map[TopicPartition]PartitionResult{tp("t", 1): k.change})
			_, _, keep = x.Respond(t0, res)
			again := k.change.ErrorCode != 0 || k.change.RecordBytes > 0
			if keep[at] != again {
				t.Fatalf("second identical read: kept %v, want %v", keep[at], again)
			}
			if k.change.ErrorCode != 0 {
				x = c.NewContext(t0, id, 3, nil, nil, false)
				res, at = byTP(x, map[TopicPartition]PartitionResult{tp("t", 1): same})
				if _, _, keep = x.Respond(t0, res); !keep[at] {
					t.Fatal("partition not sent again after its error went away")
				}
			}
		})
	}
}

// TestIncrementalUpdatesAndForgottenTopics: a partition sent again updates its cached request
// in place, a new one joins at the back, forgotten_topics_data removes one; forgetting the
// last partitions closes the session and answers the fetch sessionless.
func TestIncrementalUpdatesAndForgottenTopics(t *testing.T) {
	c := NewCache(10, MinEvictionAge, nil)
	x := c.NewContext(t0, 0, InitialEpoch, []PartitionFetch{pf("a", 0, 0), pf("a", 1, 0), pf("b", 0, 0)}, nil, true)
	id, _, _ := x.Respond(t0, unchanged(3))
	moved := pf("a", 1, 42)
	moved.MaxBytes, moved.LogStartOffset, moved.CurrentLeaderEpoch = 100, 7, 4
	x = c.NewContext(t0, id, 1, []PartitionFetch{moved, pf("c", 0, 5)}, []TopicPartition{tp("b", 0), tp("zz", 9)}, true)
	want := []PartitionFetch{pf("a", 0, 0), moved, pf("c", 0, 5)}
	if x.Kind() != Incremental || !reflect.DeepEqual(x.Partitions(), want) {
		t.Fatalf("kind %v partitions %v, want %v", x.Kind(), x.Partitions(), want)
	}
	// c-0 is new (nothing cached): any answer of it goes out.
	if _, _, keep := x.Respond(t0, unchanged(3)); !reflect.DeepEqual(keep, []bool{false, false, true}) {
		t.Fatalf("keep %v", keep)
	}
	if c.TotalPartitions() != 3 {
		t.Fatalf("cached partitions %d, want 3", c.TotalPartitions())
	}
	// Answered partitions move to the back: c-0 was answered, so the order is unchanged; now a-0.
	x = c.NewContext(t0, id, 2, nil, nil, true)
	x.Respond(t0, []PartitionResult{{HighWatermark: 11, LastStableOffset: 11}, unchanged(1)[0], unchanged(1)[0]})
	x = c.NewContext(t0, id, 3, nil, nil, true)
	if got := x.Partitions(); got[0].TopicPartition != tp("a", 1) || got[2].TopicPartition != tp("a", 0) {
		t.Fatalf("order after answering a-0: %v", got)
	}
	x.Respond(t0, unchanged(3))
	x = c.NewContext(t0, id, 4, []PartitionFetch{pf("d", 0, 1)}, []TopicPartition{tp("a", 0), tp("a", 1), tp("c", 0), tp("d", 0)}, true)
	if x.Kind() != Sessionless || c.get(id) != nil || c.TotalPartitions() != 0 {
		t.Fatalf("session emptied: kind %v, session kept %v, %d partitions cached", x.Kind(), c.get(id) != nil, c.TotalPartitions())
	}
	if got := x.Partitions(); !reflect.DeepEqual(got, []PartitionFetch{pf("d", 0, 1)}) {
		t.Fatalf("sessionless partitions %v", got)
	}
	if sid, _, keep := x.Respond(t0, unchanged(1)); sid != 0 || !keep[0] {
		t.Fatalf("sessionless answer %d %v", sid, keep)
	}
}

// TestIncrementalDuplicateRequest: a second request of the session's epoch arriving while the
// first is being read makes the first answer INVALID_FETCH_SESSION_EPOCH (Kafka's check that the
// epoch did not change between the context and the answer).
func TestIncrementalDuplicateRequest(t *testing.T) {
	c := NewCache(10, MinEvictionAge, nil)
	id := create(t, c, t0, false, 2)
	first := c.NewContext(t0, id, 1, nil, nil, false)
	second := c.NewContext(t0, id, 2, nil, nil, false)
	if sid, code, keep := first.Respond(t0, unchanged(2)); sid != id || code != kerr.InvalidFetchSessionEpoch.Code || keep != nil {
		t.Fatalf("first answer %d %d %v", sid, code, keep)
	}
	if _, code, _ := second.Respond(t0, unchanged(2)); code != 0 {
		t.Fatalf("second answer error %d", code)
	}
	if x := c.NewContext(t0, id, 3, nil, nil, false); x.Kind() != Incremental {
		t.Fatalf("epoch 3: %v", x.Kind())
	}
}
