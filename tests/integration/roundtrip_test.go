package integration

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/isrbroker/isrbroker/tests/cluster"
)

// produceAll produces n records with a default kgo client and returns them as acknowledged, in
// the order the promises fired (kgo fires them in order per partition).
func produceAll(t *testing.T, cl *kgo.Client, topic string, n int, key, value func(i int) []byte) []acked {
	t.Helper()
	var (
		mu   sync.Mutex
		out  = make([]acked, 0, n)
		errs []error
		wg   sync.WaitGroup
	)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for i := 0; i < n; i++ {
		wg.Add(1)
		seq := i
		cl.Produce(ctx, &kgo.Record{Topic: topic, Key: key(i), Value: value(i)}, func(r *kgo.Record, err error) {
			defer wg.Done()
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
				return
			}
			out = append(out, acked{Seq: seq, Key: r.Key, Value: r.Value, Partition: r.Partition, Offset: r.Offset})
		})
	}
	wg.Wait()
	if len(errs) > 0 {
		t.Fatalf("%d of %d produces failed; first: %v", len(errs), n, errs[0])
	}
	return out
}

// Issue 6, first "done when": a topic with 6 partitions and RF=1 is spread over the 3 brokers;
// 10,000 records produced with a default franz-go client are consumed back identical, with
// per-partition order kept (S1: ordered log, sequential offsets).
func TestSixPartitionsRF1OverThreeBrokers_10000RecordsRoundTrip(t *testing.T) {
	c := cluster.Start(t, cluster.Options{Brokers: 3})
	const topic, partitions, n = "roundtrip", 6, 10000

	assignment := c.CreateTopic(topic, partitions, 1)
	perBroker := map[int32]int{}
	for p, replicas := range assignment {
		if len(replicas) != 1 {
			t.Fatalf("partition %d replicas %v, want exactly one (RF=1)", p, replicas)
		}
		perBroker[replicas[0]]++
	}
	for _, id := range c.IDs() {
		if perBroker[id] != 2 {
			t.Errorf("broker %d holds %d partitions, want 2 (6 partitions spread over 3 brokers): %v", id, perBroker[id], assignment)
		}
	}

	cl := c.Client()
	produced := produceAll(t, cl, topic, n,
		func(i int) []byte { return []byte(fmt.Sprintf("key-%05d", i)) },
		func(i int) []byte { return []byte(fmt.Sprintf("value-%05d-%s", i, "payload-0123456789abcdef")) })
	used := map[int32]int{}
	for _, a := range produced {
		used[a.Partition]++
	}
	if len(used) != partitions {
		t.Errorf("records landed in %d partitions, want all %d: %v", len(used), partitions, used)
	}

	got := readAll(t, c, topic, partitions)
	checkPartitionLogs(t, got, produced)
}
