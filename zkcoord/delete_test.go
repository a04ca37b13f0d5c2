package zkcoord

import (
	"context"
	"testing"
	"time"

	"github.com/isrbroker/isrbroker/zkcoord/zkdata"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Topic deletion with a replica on an offline broker (Kafka's TopicDeletionManager): the
// deletion is ineligible while broker 2 is away, so the topic stays queued with its znodes
// kept and its partitions get no election; when broker 2 registers it gets
// StopReplica(delete=true) (and no LeaderAndIsr for the topic), and only then are the znodes
// removed. Deleting at once would leave broker 2's log behind, to come back as a replica.
func TestS22_DeleteTopicWaitsForOfflineReplica(t *testing.T) {
	s := startZK(t)
	fb1 := newFakeBroker(t)
	c1 := connectT(t, testConfig(t, s.Addr, 1, fb1.port()))
	mustStart(t, c1)
	waitFor(t, 10*time.Second, "controller", c1.IsController)
	gone := newFakeBroker(t)
	c2 := connectT(t, testConfig(t, s.Addr, 2, gone.port()))
	mustStart(t, c2)
	ctx := context.Background()
	if _, err := c1.Admin.CreateTopic(ctx, TopicSpec{Name: "doomed", Assignment: map[int32][]int32{0: {1, 2}}}, false); err != nil {
		t.Fatal(err)
	}
	waitState(t, c1, "doomed", 0, "online", func(ps PartitionState) bool { return ps.Leader == 1 && len(ps.ISR) == 2 })
	c2.Close() // broker 2 goes away (its session closes)
	waitState(t, c1, "doomed", 0, "ISR without broker 2", func(ps PartitionState) bool { return len(ps.ISR) == 1 })
	if err := c1.Admin.DeleteTopic(ctx, "doomed"); err != nil {
		t.Fatal(err)
	}
	stopReplicaFor := func(fb *fakeBroker) func() bool {
		return func() bool {
			return fb.find(func(r kmsg.Request) bool {
				sr, ok := r.(*kmsg.StopReplicaRequest)
				return ok && sr.DeletePartitions && len(sr.Topics) == 1 && sr.Topics[0].Topic == "doomed"
			}) != nil
		}
	}
	waitFor(t, 10*time.Second, "StopReplica(delete) to the live replica 1", stopReplicaFor(fb1))
	// The controller handled the request; broker 2 is offline, so the topic stays queued.
	for _, path := range []string{zkdata.TopicPath("doomed"), zkdata.DeleteTopicPath("doomed")} {
		if ok, _, err := c1.zk.Exists(path); err != nil || !ok {
			t.Fatalf("%s removed (err %v) while replica 2 is offline: the deletion must wait for it", path, err)
		}
	}
	if _, err := c1.Admin.CreateTopic(ctx, TopicSpec{Name: "doomed", NumPartitions: 1, ReplicationFactor: 1}, false); err == nil {
		t.Fatal("a topic queued for deletion was created again")
	}

	fb2 := newFakeBroker(t)
	c2 = connectT(t, testConfig(t, s.Addr, 2, fb2.port()))
	mustStart(t, c2)
	waitFor(t, 10*time.Second, "StopReplica(delete) to the returning replica 2", stopReplicaFor(fb2))
	waitFor(t, 10*time.Second, "znodes removed once every replica was deleted", func() bool {
		a, _, _ := c1.zk.Exists(zkdata.TopicPath("doomed"))
		d, _, _ := c1.zk.Exists(zkdata.DeleteTopicPath("doomed"))
		return !a && !d
	})
	if r := fb2.find(func(r kmsg.Request) bool {
		lr, ok := r.(*kmsg.LeaderAndISRRequest)
		if !ok {
			return false
		}
		for _, ts := range lr.TopicStates {
			if ts.Topic == "doomed" {
				return true
			}
		}
		return false
	}); r != nil {
		t.Fatal("the returning broker got a LeaderAndIsr for a topic queued for deletion")
	}
}
