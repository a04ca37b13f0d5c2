package kproto

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Partitions arriving interleaved end up under one entry per topic, topics in first-seen order
// and partitions in arrival order; every entry is made by newTopic exactly once.
func TestByTopicGroupsInterleavedPartitions(t *testing.T) {
	req := kmsg.NewPtrStopReplicaRequest()
	made := map[string]int{}
	topics := NewByTopic(&req.Topics, func(topic string) kmsg.StopReplicaRequestTopic {
		made[topic]++
		return kmsg.StopReplicaRequestTopic{Topic: topic}
	})
	in := []struct {
		topic string
		p     int32
	}{{"b", 3}, {"a", 0}, {"b", 1}, {"c", 7}, {"a", 2}, {"b", 0}}
	for _, x := range in {
		rt := topics.Topic(x.topic)
		rt.Partitions = append(rt.Partitions, x.p)
	}
	got := fmt.Sprint(req.Topics)
	want := fmt.Sprint([]kmsg.StopReplicaRequestTopic{
		{Topic: "b", Partitions: []int32{3, 1, 0}},
		{Topic: "a", Partitions: []int32{0, 2}},
		{Topic: "c", Partitions: []int32{7}},
	})
	if got != want {
		t.Fatalf("topics = %s, want %s", got, want)
	}
	for topic, n := range made {
		if n != 1 {
			t.Errorf("newTopic(%q) called %d times", topic, n)
		}
	}
}
