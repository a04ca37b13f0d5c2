package broker

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/isrbroker/isrbroker/zkcoord"
)

// maxRequestPartitions bounds the partitions one CreateTopics or CreatePartitions request
// may create, summed over its topics (with validate_only too: Kafka 2.4 computes the
// assignment of a validated topic all the same). Kafka 2.4 has no bound; one topic is
// bounded by zkcoord.MaxTopicPartitions, and without a bound per request a request listing
// many such topics would still have the controller create millions of partitions, each a
// state znode, a LeaderAndIsr entry and a log (with its files) per replica
// (docs/compatibility.md, "Partition counts").
const maxRequestPartitions = zkcoord.MaxTopicPartitions

// partitionBudget is what is left of one request's maxRequestPartitions; topics take from
// it in request order.
type partitionBudget struct{ left int64 }

func newPartitionBudget() *partitionBudget { return &partitionBudget{left: maxRequestPartitions} }

// take accounts for a topic that would get total partitions, n of them new; a topic above
// the per-topic limit, or taking the request over its budget, gets INVALID_PARTITIONS naming
// the limit (and takes nothing).
func (b *partitionBudget) take(topic string, total, n int64) (int16, string) {
	if total > zkcoord.MaxTopicPartitions {
		return kerr.InvalidPartitions.Code, fmt.Sprintf("%d partitions for topic %s is above isrbroker's limit of %d partitions per topic.", total, topic, zkcoord.MaxTopicPartitions)
	}
	if n > b.left {
		return kerr.InvalidPartitions.Code, fmt.Sprintf("%d new partitions for topic %s would take the request above isrbroker's limit of %d new partitions per request.", n, topic, maxRequestPartitions)
	}
	b.left -= max(n, 0)
	return 0, ""
}

// refund gives back what a topic took when creating it failed after all.
func (b *partitionBudget) refund(n int64) { b.left += max(n, 0) }
