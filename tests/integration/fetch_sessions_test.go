package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/isrbroker/isrbroker/tests/cluster"
)

// Issue 32 (KIP-227): a follower replicates through an incremental fetch session with its
// leader. Two brokers, 8 partitions all led by broker 1 with broker 2 following: once broker 2
// replicates, broker 1 holds its session (NumIncrementalFetchSessions >= 1, all 8 partitions
// cached); acks=all produces keep succeeding (the follower's incremental fetches move the HW)
// and the ISR stays [1,2]; a consumer (kgo: sessions on by default) reads every record back.
func TestFollowerAndConsumerFetchSessions(t *testing.T) {
	c := cluster.Start(t, cluster.Options{Brokers: 2})
	const topic = "sessions"
	const partitions = 8
	assignment := map[int32][]int32{}
	for p := int32(0); p < partitions; p++ {
		assignment[p] = []int32{1, 2}
	}
	c.CreateTopicWithAssignment(topic, assignment, nil)
	cl := c.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	produce := func(from, to int) {
		for i := from; i < to; i++ {
			r := &kgo.Record{Topic: topic, Partition: int32(i % partitions), Value: []byte(fmt.Sprintf("v-%03d", i))}
			if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
				t.Fatalf("produce %d: %v", i, err)
			}
		}
	}
	produce(0, 4*partitions)
	cluster.WaitFor(t, 30*time.Second, func() (bool, string) {
		n, err := c.Broker(1).MetricSum("kafka_server_fetchsessioncache_numincrementalfetchsessions")
		if err != nil {
			return false, err.Error()
		}
		cached, err := c.Broker(1).MetricSum("kafka_server_fetchsessioncache_numincrementalfetchpartitionscached")
		if err != nil {
			return false, err.Error()
		}
		return n >= 1 && cached >= partitions, fmt.Sprintf("broker 1: %v sessions, %v partitions cached; want the follower's session of %d", n, cached, partitions)
	})
	produce(4*partitions, 8*partitions)
	for p := int32(0); p < partitions; p++ {
		st, err := c.ZK.PartitionState(topic, p)
		if err != nil {
			t.Fatal(err)
		}
		if !cluster.SameMembers(st.ISR, []int32{1, 2}) {
			t.Fatalf("%s-%d: ISR %v, want [1 2]", topic, p, st.ISR)
		}
	}
	consumer := c.Client(kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	seen := map[string]bool{}
	for len(seen) < 8*partitions && ctx.Err() == nil {
		consumer.PollFetches(ctx).EachRecord(func(r *kgo.Record) { seen[string(r.Value)] = true })
	}
	if len(seen) != 8*partitions {
		t.Fatalf("consumed %d distinct records, want %d", len(seen), 8*partitions)
	}
}
