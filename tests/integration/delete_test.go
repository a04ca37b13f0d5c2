package integration

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/isrbroker/isrbroker/tests/cluster"
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
		st, err := c.PartitionState(topic, p)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.ProduceOnce(ctx, st.Leader, topic, p, -1, 5*time.Second, []byte("kept until deleted")); err != nil {
			t.Fatalf("produce to partition %d: %v", p, err)
		}
	}

	const away = int32(3)
	if code := c.Terminate(away); code != 0 {
		t.Fatalf("broker %d exited with %d", away, code)
	}
	c.WaitUnregistered(30*time.Second, away)
	resp, err := c.Admin().DeleteTopics(ctx, topic)
	if err != nil || resp[topic].Err != nil {
		t.Fatalf("DeleteTopics: %v %v", err, resp[topic].Err)
	}
	for _, id := range []int32{1, 2} {
		for p := int32(0); p < 2; p++ {
			c.WaitPartitionDirGone(id, topic, p, 30*time.Second)
		}
	}
	// Broker 3 holds a replica: the topic stays marked for deletion, its log untouched.
	for _, path := range []string{"/brokers/topics/" + topic, "/admin/delete_topics/" + topic} {
		if !c.ZNodeExists(path) {
			t.Fatalf("%s removed while broker %d, holding a replica, is down", path, away)
		}
	}
	for p := int32(0); p < 2; p++ {
		if _, err := os.Stat(c.PartitionDir(away, topic, p)); err != nil {
			t.Fatalf("broker %d's log of partition %d: %v", away, p, err)
		}
	}

	c.StartBroker(away)
	c.WaitRegistered(away)
	for p := int32(0); p < 2; p++ {
		c.WaitPartitionDirGone(away, topic, p, 30*time.Second)
	}
	cluster.WaitFor(t, 30*time.Second, func() (bool, string) {
		for _, path := range []string{"/brokers/topics/" + topic, "/admin/delete_topics/" + topic} {
			if c.ZNodeExists(path) {
				return false, path + " still exists after every replica was deleted"
			}
		}
		return true, ""
	})
	// The name is free again.
	c.CreateTopic(topic, 1, 3)
	c.WaitMetadataLeaders(topic, 1, 30*time.Second)
}
