package integration

import (
	"context"
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/isrbroker/isrbroker/tests/cluster"
)

// Issue 4: the brokers enforce the replication throttle that `reassign-partitions --execute
// --throttle` writes (leader/follower.replication.throttled.rate on the brokers,
// leader/follower.replication.throttled.replicas on the topics), for replicas outside the ISR
// only (docs/kafka-facts.md §4, §8).

const (
	throttleRate   = 200_000 // --throttle, bytes/s
	throttleValues = 4000    // records of throttleSize random (incompressible) bytes: ~4 MB
	throttleSize   = 1000
)

// produceRandom writes n records of size random bytes to topic with acks=all and returns the
// payload bytes written.
func produceRandom(t *testing.T, c *cluster.Cluster, topic string, n, size int, seed int64) int64 {
	t.Helper()
	cl := c.Client(kgo.DefaultProduceTopic(topic), kgo.ProducerBatchMaxBytes(1<<20))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rng := rand.New(rand.NewSource(seed))
	var total int64
	for done := 0; done < n; {
		batch := make([]*kgo.Record, 0, 500)
		for ; done < n && len(batch) < cap(batch); done++ {
			v := make([]byte, size)
			rng.Read(v)
			batch = append(batch, &kgo.Record{Value: v})
			total += int64(size)
		}
		if err := cl.ProduceSync(ctx, batch...).FirstErr(); err != nil {
			t.Fatalf("produce to %s: %v", topic, err)
		}
	}
	return total
}

// waitISR waits until topic-0's ISR holds exactly want and returns how long that took from start.
func waitISR(t *testing.T, c *cluster.Cluster, topic string, want []int32, start time.Time, timeout time.Duration) time.Duration {
	t.Helper()
	c.ZK.WaitPartitionState(topic, 0, timeout, func(st cluster.PartitionState) (bool, string) {
		return cluster.SameMembers(st.ISR, want), "waiting for ISR " + sprintInts(want)
	})
	return time.Since(start)
}

func sprintInts(v []int32) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = cluster.Itoa32(x)
	}
	return "[" + strings.Join(s, " ") + "]"
}

// TestReassignmentThrottle: a reassignment with --throttle 200000 copies ~4 MB to the new
// replica no faster than the throttle allows (≥ 60 % of size/rate), while the same data
// without a throttle moves in a few seconds; ISR members of a throttled partition replicate
// at full speed meanwhile; --verify removes the throttle.
func TestReassignmentThrottle(t *testing.T) {
	c := cluster.Start(t, cluster.Options{Brokers: 4})
	c.CreateTopicWithAssignment("fast", map[int32][]int32{0: {3}}, nil)
	c.CreateTopicWithAssignment("slow", map[int32][]int32{0: {1}}, nil)
	fastBytes := produceRandom(t, c, "fast", throttleValues, throttleSize, 1)
	slowBytes := produceRandom(t, c, "slow", throttleValues, throttleSize, 2)
	minThrottled := time.Duration(0.6 * float64(slowBytes) / throttleRate * float64(time.Second))

	// Unthrottled: [3] → [3,4].
	fastPlan := cluster.WriteReassignmentFile(t, "fast", map[int32][]int32{0: {3, 4}})
	start := time.Now()
	if r := c.Reassign("--execute", "--reassignment-json-file", fastPlan); r.ExitCode != 0 {
		t.Fatalf("execute (unthrottled): exit %d\n%s%s", r.ExitCode, r.Stdout, r.Stderr)
	}
	fastElapsed := waitISR(t, c, "fast", []int32{3, 4}, start, time.Minute)
	t.Logf("unthrottled: %d bytes reached the new replica in %v", fastBytes, fastElapsed)
	if fastElapsed >= minThrottled {
		t.Fatalf("the unthrottled reassignment took %v, not faster than the throttled minimum %v", fastElapsed, minThrottled)
	}
	c.WaitReassignmentVerified(fastPlan, time.Minute)

	// A partition whose followers are all in the ISR, with every replica listed as throttled.
	c.CreateTopicWithAssignment("insync", map[int32][]int32{0: {1, 2}}, map[string]string{
		"leader.replication.throttled.replicas":   "*",
		"follower.replication.throttled.replicas": "*",
		"min.insync.replicas":                     "2",
	})
	waitFullISR(t, c, "insync", map[int32][]int32{0: {1, 2}}, 30*time.Second)
	produceRandom(t, c, "insync", 100, throttleSize, 4) // warm up (metadata, producer id)

	// Throttled: [1] → [1,2] at 200 KB/s.
	slowPlan := cluster.WriteReassignmentFile(t, "slow", map[int32][]int32{0: {1, 2}})
	start = time.Now()
	r := c.Reassign("--execute", "--reassignment-json-file", slowPlan, "--throttle", cluster.Itoa32(throttleRate))
	if r.ExitCode != 0 || !strings.Contains(r.Stdout, "The inter-broker throttle limit was set to 200000 B/s") {
		t.Fatalf("execute (throttled): exit %d\n%s%s", r.ExitCode, r.Stdout, r.Stderr)
	}

	// ISR members are never throttled: acks=all (min.insync.replicas=2) to the throttled
	// in-sync partition on the same brokers keeps full speed while the throttle is in force.
	const insyncValues = 2000
	pStart := time.Now()
	insyncBytes := produceRandom(t, c, "insync", insyncValues, throttleSize, 3)
	pElapsed := time.Since(pStart)
	st, err := c.ZK.PartitionState("slow", 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("in-sync throttled partition: %d bytes acknowledged by all replicas in %v (slow ISR then %v)", insyncBytes, pElapsed, st.ISR)
	if cluster.SameMembers(st.ISR, []int32{1, 2}) {
		t.Fatalf("the throttled reassignment finished within %v, before the in-sync check ended: no throttle in force", time.Since(start))
	}
	if limit := time.Duration(0.4 * float64(insyncBytes) / throttleRate * float64(time.Second)); pElapsed >= limit {
		t.Fatalf("acks=all produce of %d bytes to an in-sync throttled partition took %v (≥ %v): ISR traffic was throttled", insyncBytes, pElapsed, limit)
	}
	if st, err := c.ZK.PartitionState("insync", 0); err != nil || !cluster.SameMembers(st.ISR, []int32{1, 2}) {
		t.Fatalf("insync state %+v %v: the in-sync follower dropped out", st, err)
	}
	if _, err := c.Broker(1).MetricSum("kafka_server_leaderreplication_byte_rate"); err != nil {
		t.Fatal(err)
	}

	slowElapsed := waitISR(t, c, "slow", []int32{1, 2}, start, 3*time.Minute)
	t.Logf("throttled at %d B/s: %d bytes reached the new replica in %v (minimum %v)", throttleRate, slowBytes, slowElapsed, minThrottled)
	if slowElapsed < minThrottled {
		t.Fatalf("the throttled reassignment took %v, less than 60%% of size/rate (%v)", slowElapsed, minThrottled)
	}

	out := c.WaitReassignmentVerified(slowPlan, time.Minute)
	if !strings.Contains(out, "Reassignment of partition slow-0 completed successfully") || !strings.Contains(out, "Throttle was removed.") {
		t.Fatalf("verify output %q", out)
	}
	for _, path := range []string{"/config/brokers/1", "/config/brokers/2", "/config/topics/slow"} {
		data, _, err := c.ZK.Get(path)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if strings.Contains(string(data), "replication.throttled") {
			t.Fatalf("%s still holds a throttle after --verify: %s", path, data)
		}
	}
}
