package txncoord

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/isrbroker/isrbroker/broker/security/acl"
)

// EndTxn: v0-1, Kafka 2.4's range (docs/transactions.md §4).
//
// Behavior (KafkaApis.handleEndTxnRequest, TransactionCoordinator.handleEndTransaction):
//   - WRITE on the transactional id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED).
//   - Coordinator.EndTxn: INVALID_REQUEST, INVALID_PRODUCER_ID_MAPPING, INVALID_PRODUCER_EPOCH
//     (an older epoch only), CONCURRENT_TRANSACTIONS (a transition pending, or the same result
//     still completing), INVALID_TXN_STATE (Empty, or the other result), NONE for a retry of a
//     completed result, COORDINATOR_LOAD_IN_PROGRESS, NOT_COORDINATOR, the mapped append
//     errors. An Ongoing transaction is answered once its PrepareCommit/PrepareAbort record is
//     in the ISR; the markers follow.
//
// Deviations: none.

func init() { register(kmsg.EndTxn, 0, 1, handleEndTxn) }

func handleEndTxn(c *Coordinator, r *Request, kreq kmsg.Request, respond func(kmsg.Response)) {
	req := kreq.(*kmsg.EndTxnRequest)
	answer := func(code int16) {
		resp := req.ResponseKind().(*kmsg.EndTxnResponse)
		resp.ErrorCode = code
		respond(resp)
	}
	if !r.allowed(acl.OpWrite, acl.ResourceTransactionalID, req.TransactionalID) {
		answer(errTransactionalIDAuthFailed)
		return
	}
	c.EndTxn(req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit, answer)
}
