package admin

import "fmt"

// MaxTopicPartitions bounds the partition count of one topic, at creation and when it
// grows (Kafka 2.4 has no bound: a CreateTopics asking for 2^31-1 partitions makes its
// controller compute that many assignments, even with validate_only). A topic's assignment
// is one znode, /brokers/topics/<t>, and ZooKeeper refuses a request above jute.maxbuffer
// (1 MiB by default) by closing the session's connection; at 10000 partitions the
// assignment of a topic with replication factor 3 and four-digit broker ids is about
// 270 KB, well inside it, and every partition costs the controller a state znode and a
// LeaderAndIsr entry per replica (docs/compatibility.md, "Partition counts").
const MaxTopicPartitions = 10000

// checkPartitionCount refuses a partition count above MaxTopicPartitions, before anything
// is allocated for it.
func checkPartitionCount(topic string, n int64) error {
	if n > MaxTopicPartitions {
		if topic == "" {
			return fmt.Errorf("%w: %d partitions is above isrbroker's limit of %d partitions per topic", ErrInvalidPartitions, n, MaxTopicPartitions)
		}
		return fmt.Errorf("%w: %d partitions for topic %s is above isrbroker's limit of %d partitions per topic", ErrInvalidPartitions, n, topic, MaxTopicPartitions)
	}
	return nil
}
