package integration

import (
	"context"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/isrbroker/isrbroker/tests/cluster"
)

// Issue 4 item 2: partition reassignment with `isrbroker reassign-partitions` through the
// built binary.

const reassignTimeout = 90 * time.Second

// TestReassignPartitionUnderLoad ("Done when" 1): an RF=3 partition moves from [1,2,3] to
// [2,3,4] on a 4-broker cluster while a producer writes with acks=all. --verify reports
// success, ZooKeeper shows [2,3,4] as assignment and ISR, broker 1 no longer has the
// partition's directory, and every acknowledged record is consumed (S6, S11, S22).
func TestReassignPartitionUnderLoad(t *testing.T) {
	c := cluster.Start(t, cluster.Options{Brokers: 4})
	const topic = "moving"
	c.CreateTopicWithAssignment(topic, map[int32][]int32{0: {1, 2, 3}}, map[string]string{"min.insync.replicas": "2"})
	waitFullISR(t, c, topic, map[int32][]int32{0: {1, 2, 3}}, 30*time.Second)

	// A default client: acks=all, idempotent, retries; about 2500 records/s.
	w := startAckProducer(t, c.Client(), topic, ackProducerOptions{})
	cluster.WaitFor(t, time.Minute, func() (bool, string) {
		n := w.count()
		return n >= 2000, fmt.Sprintf("%d acknowledged", n)
	})

	plan := cluster.WriteReassignmentFile(t, topic, map[int32][]int32{0: {2, 3, 4}})
	r := c.Reassign("--execute", "--reassignment-json-file", plan)
	if r.ExitCode != 0 || !strings.Contains(r.Stdout, "Successfully started reassignment of partitions.") ||
		!strings.Contains(r.Stdout, `{"topic":"moving","partition":0,"replicas":[1,2,3]`) {
		t.Fatalf("execute: exit %d\n%s%s", r.ExitCode, r.Stdout, r.Stderr)
	}
	atExecute := w.count()
	out := c.WaitReassignmentVerified(plan, reassignTimeout)
	if !strings.Contains(out, "Reassignment of partition moving-0 completed successfully") {
		t.Fatalf("verify output %q", out)
	}
	a, err := c.ZK.TopicAssignment(topic)
	if err != nil || !reflect.DeepEqual(a[0], []int32{2, 3, 4}) {
		t.Fatalf("assignment after reassignment: %v %v", a, err)
	}
	st, err := c.ZK.PartitionState(topic, 0)
	if err != nil || !cluster.SameMembers(st.ISR, []int32{2, 3, 4}) || st.Leader == 1 {
		t.Fatalf("state after reassignment: %+v %v", st, err)
	}
	if c.ZK.Exists(cluster.ReassignmentPath) {
		t.Fatal("/admin/reassign_partitions still exists")
	}
	c.Broker(1).WaitPartitionDirGone(topic, 0, 30*time.Second)
	for _, id := range []int32{2, 3, 4} {
		if _, err := os.Stat(c.Broker(id).PartitionDir(topic, 0)); err != nil {
			t.Fatalf("broker %d has no partition dir: %v", id, err)
		}
	}
	// The producer keeps working against the new leader.
	cluster.WaitFor(t, time.Minute, func() (bool, string) {
		n := w.count()
		return n >= atExecute+3000, fmt.Sprintf("%d acknowledged since --execute", n-atExecute)
	})
	want, _ := w.stop(t)
	t.Logf("final state %+v", st)
	checkAcksPresent(t, readAll(t, c, topic, 1), want)
}

// checkAcksPresent: every acknowledged record is consumed exactly once, at its offset.
func checkAcksPresent(t *testing.T, got map[int32][]*kgo.Record, want []acked) {
	t.Helper()
	type where struct {
		p   int32
		off int64
	}
	seen := map[string][]where{}
	for p, rs := range got {
		for _, r := range rs {
			seen[string(r.Value)] = append(seen[string(r.Value)], where{p, r.Offset})
		}
	}
	bad := 0
	for _, a := range want {
		w := seen[string(a.Value)]
		if len(w) != 1 || w[0].p != a.Partition || w[0].off != a.Offset {
			if bad < 10 {
				t.Errorf("acknowledged %q at %d/%d: consumed at %v", a.Value, a.Partition, a.Offset, w)
			}
			bad++
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d acknowledged records missing or misplaced", bad, len(want))
	}
}

// TestReassignIncreasesReplicationFactor ("Done when" 2): an RF=1 topic with data gets
// replicas on brokers 2 and 3 through a reassignment file; the new replicas join the ISR
// and hold the data.
func TestReassignIncreasesReplicationFactor(t *testing.T) {
	c := cluster.Start(t, cluster.Options{Brokers: 3})
	const topic = "grow"
	c.CreateTopicWithAssignment(topic, map[int32][]int32{0: {1}}, nil)
	cl := c.Client(kgo.DefaultProduceTopic(topic))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var recs []*kgo.Record
	for i := 0; i < 500; i++ {
		recs = append(recs, &kgo.Record{Value: []byte(fmt.Sprintf("g-%04d", i))})
	}
	res := cl.ProduceSync(ctx, recs...)
	if err := res.FirstErr(); err != nil {
		t.Fatal(err)
	}
	var want []acked
	for i, r := range res {
		want = append(want, acked{Seq: i, Value: r.Record.Value, Partition: r.Record.Partition, Offset: r.Record.Offset})
	}

	plan := cluster.WriteReassignmentFile(t, topic, map[int32][]int32{0: {1, 2, 3}})
	if r := c.Reassign("--execute", "--reassignment-json-file", plan, "--throttle", "50000000"); r.ExitCode != 0 {
		t.Fatalf("execute: exit %d\n%s%s", r.ExitCode, r.Stdout, r.Stderr)
	}
	out := c.WaitReassignmentVerified(plan, reassignTimeout)
	if !strings.Contains(out, "Reassignment of partition grow-0 completed successfully") || !strings.Contains(out, "Throttle was removed.") {
		t.Fatalf("verify output %q", out)
	}
	a, err := c.ZK.TopicAssignment(topic)
	if err != nil || !reflect.DeepEqual(a[0], []int32{1, 2, 3}) {
		t.Fatalf("assignment %v %v", a, err)
	}
	st, err := c.ZK.PartitionState(topic, 0)
	if err != nil || !cluster.SameMembers(st.ISR, []int32{1, 2, 3}) || st.Leader != 1 {
		t.Fatalf("state %+v %v: the new replicas did not join the ISR", st, err)
	}
	// The new replicas hold the data: their LEO on disk reaches the leader's.
	for _, id := range []int32{2, 3} {
		cluster.WaitFor(t, 30*time.Second, func() (bool, string) {
			leo, err := cluster.LogEndOffsetOnDisk(c.Broker(id).PartitionDir(topic, 0))
			return err == nil && leo >= 500, fmt.Sprintf("broker %d LEO %d (%v)", id, leo, err)
		})
	}
	// Broker 1 can go now: the data survives on the new replicas.
	c.Broker(1).Kill()
	checkAcksPresent(t, readAll(t, c, topic, 1), want)
}
