package txncoord

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/isrbroker/isrbroker/broker/security/acl"
)

// InitProducerId: v0-2 (v2 flexible), Kafka 2.4's range (docs/transactions.md §4).
//
// Behavior (KafkaApis.handleInitProducerIdRequest, TransactionCoordinator.handleInitProducerId):
//   - A transactional id needs WRITE on it (TRANSACTIONAL_ID_AUTHORIZATION_FAILED), a null one
//     IDEMPOTENT_WRITE on the cluster (CLUSTER_AUTHORIZATION_FAILED).
//   - The rest is Coordinator.InitProducerID: INVALID_REQUEST (""), INVALID_TRANSACTION_TIMEOUT,
//     CONCURRENT_TRANSACTIONS (a transition pending or completing, or a fenced Ongoing
//     transaction being aborted), COORDINATOR_LOAD_IN_PROGRESS, NOT_COORDINATOR, the mapped
//     append errors. An error answers producer id -1, epoch -1.
//
// Deviations: none. Not registered in the broker yet: the broker's own handler
// (broker/22_init_producer_id.go) serves the null transactional id meanwhile.

func init() { register(kmsg.InitProducerID, 0, 2, handleInitProducerID) }

func handleInitProducerID(c *Coordinator, r *Request, kreq kmsg.Request, respond func(kmsg.Response)) {
	req := kreq.(*kmsg.InitProducerIDRequest)
	answer := func(res InitResult) {
		resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
		resp.ErrorCode, resp.ProducerID, resp.ProducerEpoch = res.ErrorCode, res.ProducerID, res.ProducerEpoch
		respond(resp)
	}
	if req.TransactionalID != nil {
		if !r.allowed(acl.OpWrite, acl.ResourceTransactionalID, *req.TransactionalID) {
			answer(initError(errTransactionalIDAuthFailed))
			return
		}
	} else if !r.allowed(acl.OpIdempotentWrite, acl.ResourceCluster, acl.ClusterName) {
		answer(initError(errClusterAuthFailed))
		return
	}
	c.InitProducerID(req.TransactionalID, req.TransactionTimeoutMillis, answer)
}
