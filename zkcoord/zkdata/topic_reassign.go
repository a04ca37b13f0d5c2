package zkdata

import (
	"encoding/json"
	"fmt"
	"strconv"
)

// ReplicaAssignment is one partition's entry of a version 2 topic znode (KIP-455, Kafka
// 2.4's ReplicaAssignment): Replicas is the full replica set RS; while a reassignment runs,
// Adding (AR = RS − original replicas) and Removing (RR = RS − target replicas) are non-empty
// (docs/kafka-facts.md, "KIP-455 reassignments").
type ReplicaAssignment struct {
	Replicas []int32
	Adding   []int32
	Removing []int32
}

// EncodeTopicFull writes /brokers/topics/<t> version 2 with the "adding_replicas" and
// "removing_replicas" maps holding only the partitions being reassigned (Kafka's
// TopicZNode.encode).
func EncodeTopicFull(assignment map[int32]ReplicaAssignment) []byte {
	z := topicZNode{Version: 2, Partitions: map[string][]int32{}, AddingReplicas: map[string][]int32{}, RemovingReplicas: map[string][]int32{}}
	for p, a := range assignment {
		k := strconv.Itoa(int(p))
		r := a.Replicas
		if r == nil {
			r = []int32{}
		}
		z.Partitions[k] = r
		if len(a.Adding) > 0 {
			z.AddingReplicas[k] = a.Adding
		}
		if len(a.Removing) > 0 {
			z.RemovingReplicas[k] = a.Removing
		}
	}
	b, _ := json.Marshal(z)
	return b
}

// DecodeTopicFull reads /brokers/topics/<t> of any version (version 1 has no adding/removing
// maps); adding or removing replicas of a partition that is not listed are an error.
func DecodeTopicFull(topic string, data []byte) (map[int32]ReplicaAssignment, error) {
	var z topicZNode
	if err := json.Unmarshal(data, &z); err != nil {
		return nil, fmt.Errorf("zkcoord: topic %s znode: %w", topic, err)
	}
	out := make(map[int32]ReplicaAssignment, len(z.Partitions))
	parse := func(ps string) (int32, error) {
		p, err := strconv.ParseInt(ps, 10, 32)
		if err != nil || p < 0 {
			return 0, fmt.Errorf("zkcoord: topic %s: bad partition %q", topic, ps)
		}
		return int32(p), nil
	}
	for ps, r := range z.Partitions {
		p, err := parse(ps)
		if err != nil {
			return nil, err
		}
		out[p] = ReplicaAssignment{Replicas: r}
	}
	for _, m := range []struct {
		entries map[string][]int32
		set     func(*ReplicaAssignment, []int32)
	}{
		{z.AddingReplicas, func(a *ReplicaAssignment, r []int32) { a.Adding = r }},
		{z.RemovingReplicas, func(a *ReplicaAssignment, r []int32) { a.Removing = r }},
	} {
		for ps, r := range m.entries {
			p, err := parse(ps)
			if err != nil {
				return nil, err
			}
			a, ok := out[p]
			if !ok {
				return nil, fmt.Errorf("zkcoord: topic %s: adding/removing replicas for unknown partition %d", topic, p)
			}
			m.set(&a, r)
			out[p] = a
		}
	}
	return out, nil
}
