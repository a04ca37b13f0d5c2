package integration

import (
	"context"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/isrbroker/isrbroker/tests/cluster"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Topic deletion while a replica's broker is down (Kafka 2.4's TopicDeletionManager): the live
// replicas' logs are deleted at once, but the topic stays marked for deletion, with its znodes,
// until the offline broker is back; then that broker's log is deleted too and the deletion
// completes. Completing at once would leave the offline broker's log on its disk for good.
func TestS22_TopicDeletionWaitsForOfflineReplica(t *testing.T) {
	c := cluster.Start(t, cluster.Options{Brokers: 3})
	const topic = "doomed"
	c.CreateTopic(topic, 2, 3)
	c.WaitMetadataLeaders(topic, 2, 30*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for p := int32(0); p < 2; p++ {
		st, err := c.ZK.PartitionState(topic, p)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Broker(st.Leader).ProduceOnce(ctx, topic, p, -1, 5*time.Second, []byte("kept until deleted")); err != nil {
			t.Fatalf("produce to partition %d: %v", p, err)
		}
	}

	const away = int32(3)
	if code := c.Broker(away).Terminate(); code != 0 {
		t.Fatalf("broker %d exited with %d", away, code)
	}
	c.WaitUnregistered(30*time.Second, away)
	resp, err := c.Admin().DeleteTopics(ctx, topic)
	if err != nil || resp[topic].Err != nil {
		t.Fatalf("DeleteTopics: %v %v", err, resp[topic].Err)
	}
	for _, id := range []int32{1, 2} {
		for p := int32(0); p < 2; p++ {
			c.Broker(id).WaitPartitionDirGone(topic, p, 30*time.Second)
		}
	}
	// Broker 3 holds a replica: the topic stays marked for deletion, its log untouched.
	for _, path := range []string{"/brokers/topics/" + topic, "/admin/delete_topics/" + topic} {
		if !c.ZK.Exists(path) {
			t.Fatalf("%s removed while broker %d, holding a replica, is down", path, away)
		}
	}
	for p := int32(0); p < 2; p++ {
		if _, err := os.Stat(c.Broker(away).PartitionDir(topic, p)); err != nil {
			t.Fatalf("broker %d's log of partition %d: %v", away, p, err)
		}
	}

	c.Broker(away).Start()
	c.WaitRegistered(away)
	for p := int32(0); p < 2; p++ {
		c.Broker(away).WaitPartitionDirGone(topic, p, 30*time.Second)
	}
	cluster.WaitFor(t, 30*time.Second, func() (bool, string) {
		for _, path := range []string{"/brokers/topics/" + topic, "/admin/delete_topics/" + topic} {
			if c.ZK.Exists(path) {
				return false, path + " still exists after every replica was deleted"
			}
		}
		return true, ""
	})
	// The name is free again.
	c.CreateTopic(topic, 1, 3)
	c.WaitMetadataLeaders(topic, 1, 30*time.Second)
}

// A broker killed (kill -9) just before a topic's deletion never answers its
// StopReplica(delete=true): the deletion waits for it (Kafka's TopicDeletionManager deletes a
// topic only when every replica confirmed), through its session's expiry, and completes when
// it is back and has deleted its log. The topic re-created under the same name, led by that
// broker, then starts empty: had the deletion completed without it, its old log would be
// reused and a consumer of the new topic would read the old topic's records.
func TestTopicDeletionWaitsForKilledReplica(t *testing.T) {
	c := cluster.Start(t, cluster.Options{Brokers: 3})
	ctl, _ := c.ZK.WaitController(30 * time.Second)
	var victim, other int32 = -1, -1
	for _, id := range c.IDs() {
		switch {
		case id == ctl:
		case victim < 0:
			victim = id
		default:
			other = id
		}
	}
	const topic = "reborn"
	assignment := map[int32][]int32{0: {victim, other}}
	c.CreateTopicWithAssignment(topic, assignment, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for i := 0; i < 3; i++ {
		if _, err := c.Broker(victim).ProduceOnce(ctx, topic, 0, -1, 5*time.Second, []byte(fmt.Sprintf("old-%d", i))); err != nil {
			t.Fatalf("produce old record %d: %v", i, err)
		}
	}

	c.Broker(victim).Kill() // its session lives on until the timeout: the controller still sees it live
	resp, err := c.Admin().DeleteTopics(ctx, topic)
	if err != nil || resp[topic].Err != nil {
		t.Fatalf("DeleteTopics: %v %v", err, resp[topic].Err)
	}
	c.Broker(other).WaitPartitionDirGone(topic, 0, 30*time.Second)
	c.WaitUnregistered(30*time.Second, victim)
	for _, path := range []string{"/brokers/topics/" + topic, "/admin/delete_topics/" + topic} {
		if !c.ZK.Exists(path) {
			t.Fatalf("%s removed while broker %d, killed before it answered StopReplica(delete=true), is down", path, victim)
		}
	}
	if _, err := os.Stat(c.Broker(victim).PartitionDir(topic, 0)); err != nil {
		t.Fatalf("broker %d's log of the deleted topic: %v", victim, err)
	}

	c.Broker(victim).Start()
	c.WaitRegistered(victim)
	c.Broker(victim).WaitPartitionDirGone(topic, 0, 30*time.Second)
	cluster.WaitFor(t, 30*time.Second, func() (bool, string) {
		for _, path := range []string{"/brokers/topics/" + topic, "/admin/delete_topics/" + topic} {
			if c.ZK.Exists(path) {
				return false, path + " still exists after every replica was deleted"
			}
		}
		return true, ""
	})

	// Re-created with the same replicas, the killed broker leading: no old record is served.
	c.CreateTopicWithAssignment(topic, assignment, nil)
	if _, err := c.Broker(victim).ProduceOnce(ctx, topic, 0, -1, 5*time.Second, []byte("new-0")); err != nil {
		t.Fatalf("produce to the re-created topic: %v", err)
	}
	cons := c.Client(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	var got []string
	for seen := false; !seen; {
		fs := cons.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %v from the re-created topic, never new-0: %v", got, err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			got = append(got, fmt.Sprintf("%s@%d", r.Value, r.Offset))
			seen = seen || string(r.Value) == "new-0"
		})
	}
	if !slices.Equal(got, []string{"new-0@0"}) {
		t.Fatalf("the re-created topic served %v, want only new-0@0 (the old topic's records must be gone)", got)
	}
}
