package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/isrbroker/isrbroker/tests/cluster"
)

// Issue 10, group coordinator core: with offsets.topic.replication.factor=3,
//   - FindCoordinator while only 1 of 3 brokers is alive answers COORDINATOR_NOT_AVAILABLE and
//     does not create __consumer_offsets (Kafka 2.4's createInternalTopic);
//   - once all 3 are back, a franz-go group consumer consumes a topic and commits (JoinGroup,
//     SyncGroup, Heartbeat, OffsetCommit through the ISR), the committed offsets read back
//     through OffsetFetch, and a second consumer of the same group, started after the first
//     closed, resumes exactly at the committed offsets.
func TestGroupsCore_FindCoordinatorConsumeCommitResume(t *testing.T) {
	c := cluster.Start(t, cluster.Options{Brokers: 3, Overrides: map[string]string{
		"offsets.topic.replication.factor": "3",
		"offsets.topic.num.partitions":     "10",
		"group.initial.rebalance.delay.ms": "0",
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const group, topic, partitions, n = "core-group", "core-topic", 3, 600

	// 1 of 3 alive: no coordinator, and no __consumer_offsets created with fewer replicas.
	c.Broker(2).Terminate()
	c.Broker(3).Terminate()
	cluster.WaitFor(t, 60*time.Second, func() (bool, string) {
		alive, err := cluster.AliveBrokers(ctx, c.Broker(1).Addr)
		return err == nil && alive == 1, fmt.Sprintf("broker 1 lists %d live brokers (%v)", alive, err)
	})
	resp, err := cluster.FindCoordinator(ctx, c.Broker(1).Addr, group)
	if err != nil {
		t.Fatalf("FindCoordinator with 1 of 3 brokers alive: %v", err)
	}
	if resp.ErrorCode != kerr.CoordinatorNotAvailable.Code || resp.NodeID != -1 {
		t.Fatalf("FindCoordinator with 1 of 3 brokers alive: error %d node %d, want COORDINATOR_NOT_AVAILABLE (15) and node -1", resp.ErrorCode, resp.NodeID)
	}
	if c.ZK.Exists("/brokers/topics/__consumer_offsets") {
		t.Fatalf("__consumer_offsets was created while 1 of 3 brokers was alive (offsets.topic.replication.factor=3)")
	}
	c.Broker(2).Start()
	c.Broker(3).Start()
	for _, id := range c.IDs() {
		cluster.WaitFor(t, cluster.StartTimeout, func() (bool, string) {
			alive, err := cluster.AliveBrokers(ctx, c.Broker(id).Addr)
			return err == nil && alive == 3, fmt.Sprintf("broker %d lists %d live brokers (%v)", id, alive, err)
		})
	}

	c.CreateTopic(topic, partitions, 3)
	producer := c.Client(kgo.DefaultProduceTopic(topic))
	produceAll(t, producer, topic, n,
		func(i int) []byte { return []byte(fmt.Sprintf("k%d", i)) },
		func(i int) []byte { return []byte(fmt.Sprintf("v%d", i)) })

	// FindCoordinator now succeeds (the topic is created on the first call).
	cluster.WaitFor(t, 60*time.Second, func() (bool, string) {
		resp, err := cluster.FindCoordinator(ctx, c.Broker(1).Addr, group)
		if err != nil {
			return false, err.Error()
		}
		return resp.ErrorCode == 0 && resp.NodeID >= 1, fmt.Sprintf("error code %d node %d", resp.ErrorCode, resp.NodeID)
	})

	// First consumer: consume at least half, commit what it polled, close (LeaveGroup).
	first := c.Client(kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.DisableAutoCommit(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	consumed := map[int32][]int64{}
	total := 0
	for total < n/2 {
		fs := first.PollRecords(ctx, 50)
		if err := ctx.Err(); err != nil {
			t.Fatalf("first consumer: %d of %d records before the deadline", total, n/2)
		}
		fs.EachError(func(tp string, p int32, err error) { t.Logf("first consumer: %s[%d]: %v", tp, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			consumed[r.Partition] = append(consumed[r.Partition], r.Offset)
			total++
		})
	}
	if err := first.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatalf("first consumer commit: %v", err)
	}
	want := map[int32]int64{}
	for p, offs := range consumed {
		last := offs[len(offs)-1]
		for i, o := range offs {
			if o != offs[0]+int64(i) {
				t.Fatalf("partition %d: offsets not consecutive: %v", p, offs)
			}
		}
		want[p] = last + 1
	}
	first.Close()

	// OffsetFetch (kadm) returns exactly the committed offsets.
	fetched, err := c.Admin().FetchOffsets(ctx, group)
	if err != nil {
		t.Fatalf("FetchOffsets: %v", err)
	}
	for p, off := range want {
		got, ok := fetched.Lookup(topic, p)
		if !ok || got.Err != nil || got.At != off {
			t.Fatalf("partition %d: fetched committed offset %+v, want %d", p, got, off)
		}
	}

	// Second consumer of the same group resumes at the committed offsets and reads the rest.
	second := c.Client(kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.DisableAutoCommit(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	firstSeen := map[int32]int64{}
	rest := 0
	for rest < n-total {
		fs := second.PollRecords(ctx, 100)
		if err := ctx.Err(); err != nil {
			t.Fatalf("second consumer: %d of %d remaining records before the deadline", rest, n-total)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if _, ok := firstSeen[r.Partition]; !ok {
				firstSeen[r.Partition] = r.Offset
			}
			rest++
		})
	}
	ends, err := c.EndOffsets(ctx, topic)
	if err != nil {
		t.Fatalf("end offsets: %v", err)
	}
	for p, off := range want {
		seen, ok := firstSeen[p]
		switch {
		case ok && seen != off:
			t.Errorf("partition %d: second consumer started at %d, want the committed offset %d", p, seen, off)
		case !ok && ends[p] != off:
			t.Errorf("partition %d: second consumer read nothing, but the committed offset %d is below the end offset %d", p, off, ends[p])
		}
	}
	for p, off := range firstSeen {
		if _, ok := want[p]; !ok && off != 0 {
			t.Errorf("partition %d (no commit): second consumer started at %d, want 0", p, off)
		}
	}
	if rest != n-total {
		t.Errorf("second consumer read %d records, want %d (no re-delivery of committed records)", rest, n-total)
	}
}
