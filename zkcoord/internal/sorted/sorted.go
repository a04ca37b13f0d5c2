// Package sorted returns the broker ids, partitions and topics of zkcoord's maps in a
// stable order, so that requests, znode writes and logs are deterministic. It owns no state.
package sorted

import (
	"cmp"
	"slices"

	"github.com/isrbroker/isrbroker/logstore/record"
)

// Int32s returns a sorted copy of s.
func Int32s(s []int32) []int32 {
	out := slices.Clone(s)
	slices.Sort(out)
	return out
}

// Keys returns the keys of m, sorted.
func Keys[K cmp.Ordered, V any](m map[K]V) []K {
	out := make([]K, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// TPs sorts s by topic, then partition, in place.
func TPs(s []record.TopicPartition) {
	slices.SortFunc(s, func(a, b record.TopicPartition) int {
		if c := cmp.Compare(a.Topic, b.Topic); c != 0 {
			return c
		}
		return cmp.Compare(a.Partition, b.Partition)
	})
}

// TPKeys returns the keys of m sorted by topic, then partition.
func TPKeys[V any](m map[record.TopicPartition]V) []record.TopicPartition {
	out := make([]record.TopicPartition, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	TPs(out)
	return out
}
