package txncoord

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/isrbroker/isrbroker/broker/security/acl"
)

// AddOffsetsToTxn: v0-1, Kafka 2.4's range (docs/transactions.md §4).
//
// Behavior (KafkaApis.handleAddOffsetsToTxnRequest):
//   - WRITE on the transactional id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED), READ on the group
//     (GROUP_AUTHORIZATION_FAILED).
//   - The group's __consumer_offsets partition (the group coordinator's PartitionFor) is added
//     to the transaction as AddPartitionsToTxn adds a partition, with its errors.
//
// Deviations: none.

func init() { register(kmsg.AddOffsetsToTxn, 0, 1, handleAddOffsetsToTxn) }

func handleAddOffsetsToTxn(c *Coordinator, r *Request, kreq kmsg.Request, respond func(kmsg.Response)) {
	req := kreq.(*kmsg.AddOffsetsToTxnRequest)
	answer := func(code int16) {
		resp := req.ResponseKind().(*kmsg.AddOffsetsToTxnResponse)
		resp.ErrorCode = code
		respond(resp)
	}
	switch {
	case !r.allowed(acl.OpWrite, acl.ResourceTransactionalID, req.TransactionalID):
		answer(errTransactionalIDAuthFailed)
		return
	case !r.allowed(acl.OpRead, acl.ResourceGroup, req.Group):
		answer(errGroupAuthFailed)
		return
	}
	p := int32(0)
	if c.groups != nil {
		p = c.groups.PartitionFor(req.Group)
	}
	c.AddPartitions(req.TransactionalID, req.ProducerID, req.ProducerEpoch, []topicPartition{{"__consumer_offsets", p}}, answer)
}
