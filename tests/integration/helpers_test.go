package integration

import (
	"bytes"
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/isrbroker/isrbroker/tests/cluster"
)

// acked is one record whose produce was acknowledged, with where it landed.
type acked struct {
	Seq       int // order of the Produce call
	Key       []byte
	Value     []byte
	Partition int32
	Offset    int64
}

// endOffsets returns topic's end offset (HW) per partition, retrying while leaders move.
func endOffsets(t *testing.T, c *cluster.Cluster, topic string, partitions int32) map[int32]int64 {
	t.Helper()
	var ends map[int32]int64
	cluster.WaitFor(t, 30*time.Second, func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		var err error
		if ends, err = c.EndOffsets(ctx, topic); err != nil {
			return false, fmt.Sprintf("ListEndOffsets(%s): %v", topic, err)
		}
		if int32(len(ends)) != partitions {
			return false, fmt.Sprintf("ListEndOffsets(%s): %d partitions, want %d", topic, len(ends), partitions)
		}
		return true, ""
	})
	return ends
}

// readAll consumes topic from the start with a default kgo consumer until every partition is read
// up to its end offset as listed when readAll starts; it returns the records per partition.
func readAll(t *testing.T, c *cluster.Cluster, topic string, partitions int32) map[int32][]*kgo.Record {
	t.Helper()
	return readAllWith(t, c, topic, partitions)
}

// readAllWith is readAll with the consumer's options extended by opts (kgo.Rack, ...).
func readAllWith(t *testing.T, c *cluster.Cluster, topic string, partitions int32, opts ...kgo.Opt) map[int32][]*kgo.Record {
	t.Helper()
	ends := endOffsets(t, c, topic, partitions)
	out := map[int32][]*kgo.Record{}
	done := func() (bool, string) {
		for p, end := range ends {
			next := int64(0)
			if rs := out[p]; len(rs) > 0 {
				next = rs[len(rs)-1].Offset + 1
			}
			if next < end {
				return false, fmt.Sprintf("partition %d read up to %d of %d", p, next, end)
			}
		}
		return true, ""
	}
	if ok, _ := done(); ok {
		return out
	}
	cl := c.Client(append([]kgo.Opt{kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart())}, opts...)...)
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		fs := cl.PollFetches(ctx)
		cancel()
		fs.EachError(func(topic string, p int32, err error) {
			if err != context.DeadlineExceeded {
				t.Logf("fetch %s-%d: %v", topic, p, err)
			}
		})
		fs.EachRecord(func(r *kgo.Record) { out[r.Partition] = append(out[r.Partition], r) })
		ok, msg := done()
		if ok {
			return out
		}
		if time.Now().After(deadline) {
			t.Fatalf("consuming %s: %s", topic, msg)
		}
	}
}

// checkPartitionLogs checks that the consumed records are exactly the acknowledged ones: per
// partition, offsets 0..n-1 with no gap, each with the acknowledged key and value, in the order
// the producer sent them (per-partition order kept).
func checkPartitionLogs(t *testing.T, got map[int32][]*kgo.Record, want []acked) {
	t.Helper()
	byPart := map[int32][]acked{}
	for _, a := range want {
		byPart[a.Partition] = append(byPart[a.Partition], a)
	}
	total := 0
	for p, as := range byPart {
		sort.Slice(as, func(i, j int) bool { return as[i].Offset < as[j].Offset })
		for i := 1; i < len(as); i++ {
			if as[i].Seq < as[i-1].Seq {
				t.Errorf("partition %d: record seq %d (offset %d) was produced before seq %d (offset %d): order not kept",
					p, as[i].Seq, as[i].Offset, as[i-1].Seq, as[i-1].Offset)
				break
			}
		}
		rs := got[p]
		if len(rs) != len(as) {
			t.Errorf("partition %d: consumed %d records, acknowledged %d", p, len(rs), len(as))
		}
		for i := 0; i < len(rs) && i < len(as); i++ {
			r, a := rs[i], as[i]
			if r.Offset != a.Offset || !bytes.Equal(r.Key, a.Key) || !bytes.Equal(r.Value, a.Value) {
				t.Errorf("partition %d record %d: consumed offset %d key %q value %q, acknowledged offset %d key %q value %q",
					p, i, r.Offset, r.Key, r.Value, a.Offset, a.Key, a.Value)
				break
			}
		}
		total += len(rs)
	}
	for p, rs := range got {
		if _, ok := byPart[p]; !ok && len(rs) > 0 {
			t.Errorf("partition %d: consumed %d records nobody acknowledged", p, len(rs))
		}
	}
	if total != len(want) && !t.Failed() {
		t.Errorf("consumed %d records, acknowledged %d", total, len(want))
	}
}
