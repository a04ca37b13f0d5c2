package txncoord

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/isrbroker/isrbroker/broker/security/acl"
)

// AddPartitionsToTxn: v0-1, Kafka 2.4's range (docs/transactions.md §4).
//
// Behavior (KafkaApis.handleAddPartitionToTxnRequest,
// TransactionCoordinator.handleAddPartitionsToTransaction):
//   - WRITE on the transactional id, else every partition TRANSACTIONAL_ID_AUTHORIZATION_FAILED.
//   - WRITE on each topic, internal topics never granted: TOPIC_AUTHORIZATION_FAILED; a
//     partition the metadata does not know: UNKNOWN_TOPIC_OR_PARTITION. Any such partition
//     fails the request: the others get OPERATION_NOT_ATTEMPTED and nothing is added.
//   - Otherwise one code for every partition: Coordinator.AddPartitions (INVALID_REQUEST,
//     INVALID_PRODUCER_ID_MAPPING, INVALID_PRODUCER_EPOCH, CONCURRENT_TRANSACTIONS,
//     COORDINATOR_LOAD_IN_PROGRESS, NOT_COORDINATOR, the mapped append errors); partitions
//     already in an Ongoing transaction succeed without a write.
//
// Deviations: none.

func init() { register(kmsg.AddPartitionsToTxn, 0, 1, handleAddPartitionsToTxn) }

// isInternal is Topic.isInternal: the two internal topics of Kafka 2.4.
func isInternal(topic string) bool {
	return topic == TransactionStateTopic || topic == "__consumer_offsets"
}

func handleAddPartitionsToTxn(c *Coordinator, r *Request, kreq kmsg.Request, respond func(kmsg.Response)) {
	req := kreq.(*kmsg.AddPartitionsToTxnRequest)
	codes := map[topicPartition]int16{}
	answer := func(all func(topicPartition) int16) {
		resp := req.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
		seen := map[topicPartition]bool{}
		idx := map[string]int{}
		for _, t := range req.Topics {
			for _, p := range t.Partitions {
				k := topicPartition{t.Topic, p}
				if seen[k] {
					continue
				}
				seen[k] = true
				i, ok := idx[t.Topic]
				if !ok {
					i = len(resp.Topics)
					idx[t.Topic] = i
					resp.Topics = append(resp.Topics, kmsg.AddPartitionsToTxnResponseTopic{Topic: t.Topic})
				}
				resp.Topics[i].Partitions = append(resp.Topics[i].Partitions, kmsg.AddPartitionsToTxnResponseTopicPartition{Partition: p, ErrorCode: all(k)})
			}
		}
		respond(resp)
	}
	if !r.allowed(acl.OpWrite, acl.ResourceTransactionalID, req.TransactionalID) {
		answer(func(topicPartition) int16 { return errTransactionalIDAuthFailed })
		return
	}
	var parts []topicPartition
	failed := false
	for _, t := range req.Topics {
		topicOK := !isInternal(t.Topic) && r.allowed(acl.OpWrite, acl.ResourceTopic, t.Topic)
		for _, p := range t.Partitions {
			k := topicPartition{t.Topic, p}
			switch {
			case !topicOK:
				codes[k], failed = errTopicAuthFailed, true
			case c.meta != nil && !c.meta.HasPartition(t.Topic, p):
				codes[k], failed = errUnknownTopicOrPartition, true
			default:
				parts = append(parts, k)
			}
		}
	}
	if failed {
		answer(func(k topicPartition) int16 {
			if code, ok := codes[k]; ok {
				return code
			}
			return errOperationNotAttempted
		})
		return
	}
	c.AddPartitions(req.TransactionalID, req.ProducerID, req.ProducerEpoch, parts, func(code int16) {
		answer(func(topicPartition) int16 { return code })
	})
}
