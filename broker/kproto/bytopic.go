package kproto

// ByTopic builds the topic level of a request whose partitions nest under their topic (Fetch,
// ListOffsets, OffsetForLeaderEpoch, LeaderAndIsr, UpdateMetadata, StopReplica): one entry per
// topic, in the order topics are first seen, whatever order the partitions come in.
//
//	topics := kproto.NewByTopic(&req.Topics, func(topic string) kmsg.FetchRequestTopic {
//		rt := kmsg.NewFetchRequestTopic()
//		rt.Topic = topic
//		return rt
//	})
//	rt := topics.Topic(tp.Topic)
//	rt.Partitions = append(rt.Partitions, rp)
type ByTopic[T any] struct {
	topics   *[]T
	newTopic func(topic string) T
	index    map[string]int
}

// NewByTopic returns a ByTopic appending to *topics; newTopic makes the entry of a topic not
// seen yet. Entries already in *topics are not indexed: start from an empty slice.
func NewByTopic[T any](topics *[]T, newTopic func(topic string) T) *ByTopic[T] {
	return &ByTopic[T]{topics: topics, newTopic: newTopic, index: make(map[string]int)}
}

// Topic returns topic's entry, appending it first when topic is new. The pointer is valid until
// the next call (appending may move the slice).
func (b *ByTopic[T]) Topic(topic string) *T {
	i, ok := b.index[topic]
	if !ok {
		i = len(*b.topics)
		b.index[topic] = i
		*b.topics = append(*b.topics, b.newTopic(topic))
	}
	return &(*b.topics)[i]
}
