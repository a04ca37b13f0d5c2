package integration

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/isrbroker/isrbroker/fetcher"
	"github.com/isrbroker/isrbroker/tests/cluster"
)

// fetchersToward keeps the PartitionCount samples of the fetchers toward leader (clientId
// ReplicaFetcherThread-<fetcherId>-<leader>).
func fetchersToward(counts map[string]float64, leader int32) map[string]float64 {
	out := map[string]float64{}
	suffix := fmt.Sprintf("-%d", leader)
	for cid, v := range counts {
		if strings.HasPrefix(cid, "ReplicaFetcherThread-") && strings.HasSuffix(cid, suffix) {
			out[cid] = v
		}
	}
	return out
}

func sortedKeys(m map[string]float64) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// S15, S16, S23 (issue: "With num.replica.fetchers=2 and 8 partitions led by one broker, the
// follower runs at most 2 fetchers toward it; ... after leadership moves away, idle fetchers are
// shut down (observable)"). Two brokers with num.replica.fetchers=2, a topic with 8 partitions
// all assigned [1,2] (leader 1). Broker 2's /metrics shows at most 2 fetchers toward broker 1,
// with fetcher ids from Kafka's hash formula and PartitionCounts summing to 8. After broker 1's
// controlled shutdown (SIGTERM) moves every leadership to broker 2, broker 2's fetchers toward 1
// are shut down: their gauges disappear and FetcherThreadCount drops to 0.
func TestS15_S23_AtMostNumReplicaFetchersPerLeaderAndIdleShutdown(t *testing.T) {
	c := cluster.Start(t, cluster.Options{
		Brokers:   2,
		Overrides: map[string]string{"num.replica.fetchers": "2"},
	})
	const topic = "fetchers"
	const partitions = 8
	assignment := map[int32][]int32{}
	for p := int32(0); p < partitions; p++ {
		assignment[p] = []int32{1, 2}
	}
	c.CreateTopicWithAssignment(topic, assignment, nil)
	for p := int32(0); p < partitions; p++ {
		st, err := c.ZK.PartitionState(topic, p)
		if err != nil {
			t.Fatal(err)
		}
		if st.Leader != 1 {
			t.Fatalf("%s-%d: leader %d, want 1 (first replica of [1,2])", topic, p, st.Leader)
		}
	}

	// Produce to every partition (acks=all: both replicas have the records when acknowledged).
	cl := c.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := 0; i < 10*partitions; i++ {
		r := &kgo.Record{Topic: topic, Partition: int32(i % partitions), Value: []byte(fmt.Sprintf("v-%03d", i))}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatalf("produce %d: %v", i, err)
		}
	}

	// Expected fetchers on broker 2: Utils.abs(31*hash(topic)+p) % 2 for each partition.
	want := map[string]float64{}
	for p := int32(0); p < partitions; p++ {
		want[fetcher.FetcherThreadName(fetcher.FetcherID(topic, p, 2), 1)]++
	}
	cluster.WaitFor(t, 30*time.Second, func() (bool, string) {
		counts, threads, err := c.Broker(2).FetcherPartitionCounts()
		if err != nil {
			return false, err.Error()
		}
		got := fetchersToward(counts, 1)
		if len(got) > 2 {
			t.Fatalf("broker 2 runs %d fetchers toward broker 1 (%v), num.replica.fetchers=2 allows at most 2", len(got), got)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			return false, fmt.Sprintf("broker 2 fetchers toward 1 = %v, want %v (Java hash formula)", got, want)
		}
		sum := 0.0
		for _, v := range got {
			sum += v
		}
		if sum != partitions {
			return false, fmt.Sprintf("PartitionCount sum = %v, want %d", sum, partitions)
		}
		if threads != float64(len(want)) {
			return false, fmt.Sprintf("FetcherThreadCount = %v, want %d", threads, len(want))
		}
		return true, ""
	})
	t.Logf("broker 2 fetchers toward broker 1: %v", sortedKeys(want))

	// The leader runs no fetchers at all (it follows nobody).
	if counts, threads, err := c.Broker(1).FetcherPartitionCounts(); err != nil || len(counts) != 0 || threads != 0 {
		t.Fatalf("broker 1 fetchers = %v, FetcherThreadCount = %v (err %v), want none", counts, threads, err)
	}

	// Controlled shutdown of broker 1 (K7) moves every leadership to broker 2, whose fetchers
	// toward 1 then have no partitions and are shut down after that LeaderAndIsr (S23).
	if code := c.Broker(1).Terminate(); code != 0 {
		t.Fatalf("broker 1 exited with %d after SIGTERM, want 0", code)
	}
	cluster.WaitFor(t, 30*time.Second, func() (bool, string) {
		for p := int32(0); p < partitions; p++ {
			st, err := c.ZK.PartitionState(topic, p)
			if err != nil {
				return false, err.Error()
			}
			if st.Leader != 2 {
				return false, fmt.Sprintf("%s-%d: leader %d, want 2", topic, p, st.Leader)
			}
		}
		return true, ""
	})
	cluster.WaitFor(t, 30*time.Second, func() (bool, string) {
		counts, threads, err := c.Broker(2).FetcherPartitionCounts()
		if err != nil {
			return false, err.Error()
		}
		if got := fetchersToward(counts, 1); len(got) != 0 {
			return false, fmt.Sprintf("broker 2 still runs fetchers toward broker 1: %v", got)
		}
		if threads != 0 {
			return false, fmt.Sprintf("FetcherThreadCount = %v, want 0", threads)
		}
		return true, ""
	})
}
