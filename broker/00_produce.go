package broker

import (
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/isrbroker/isrbroker/broker/security/acl"

	rm "github.com/isrbroker/isrbroker/replicamanager"
)

// Produce: v3-8 (record batch v2 only; docs/compatibility.md).
//
// Behavior:
//   - acks outside {0, 1, -1} → INVALID_REQUIRED_ACKS on every partition, nothing appended.
//   - An invalid topic name, or an internal topic (__consumer_offsets: only the group
//     coordinator writes it) → INVALID_TOPIC_EXCEPTION for its partitions.
//   - Each partition's records must be exactly one magic-2 batch, else INVALID_RECORD (a batch
//     length below the v2 header: CORRUPT_MESSAGE); a zstd batch before v7 →
//     UNSUPPORTED_COMPRESSION_TYPE (Kafka's request-thread check, validateProduceRecords). The
//     log then validates it as Kafka's LogValidator does (logstore/validate.go,
//     docs/kafka-facts.md §13): a bad CRC-32C → CORRUPT_MESSAGE; a record count, record
//     length, offset delta or compression the records do not bear out, a control batch →
//     INVALID_RECORD; records decompressing past the bound → MESSAGE_TOO_LARGE. The batch is
//     stored as received (S1).
//   - v8 (KIP-467): when the log refused the batch because of one of its records (a null key
//     on a compacted topic, a timestamp out of range, a LogAppendTime batch, offsets that are
//     not incremental: Kafka's RecordValidationException), record_errors names it
//     (batch_index, its index in the one batch; batch_index_error_message null) and
//     error_message is Kafka's exception message, as Kafka 2.4's appendToLocalLog answers;
//     every other error, the batch's own included, has no record_errors and a null
//     error_message, as in Kafka 2.4.
//   - The rest goes to the replica manager with timeout_ms; it answers NOT_LEADER_OR_FOLLOWER,
//     UNKNOWN_TOPIC_OR_PARTITION, MESSAGE_TOO_LARGE, NOT_ENOUGH_REPLICAS(_AFTER_APPEND) (K2),
//     REQUEST_TIMED_OUT, INVALID_TIMESTAMP (message.timestamp.*, docs/live-configs.md §4),
//     and parks acks=-1 in the delayed-produce purgatory. The connection's reader does not
//     wait for it; the response keeps its place in order.
//   - log_append_time is the leader's clock for a topic with message.timestamp.type
//     LogAppendTime (the batches are stamped with it), else -1.
//   - acks=0 gets no response; if any partition failed the connection is closed after
//     earlier responses, as Kafka does, so the client notices.
//
// Deviations: transactional produce is not special-cased (the replica manager decides).
// throttle_time_ms is the client quotas' (docs/quotas.md). v9 (flexible) is not advertised
// (Kafka 2.4 serves up to v8). v0-2 (message formats v0/v1) are not served.

func init() { regKey(kmsg.Produce, 3, 8, handleProduce) }

func handleProduce(s *Server, r *request, kreq kmsg.Request) {
	req := kreq.(*kmsg.ProduceRequest)
	results := make(map[rm.TopicPartition]rm.ProduceResult)
	fail := func(t string, p int32, code int16) {
		results[tp(t, p)] = rm.ProduceResult{ErrorCode: code, BaseOffset: -1, LogAppendTime: -1, LogStartOffset: -1}
	}
	entries := make(map[rm.TopicPartition][]byte)
	acksOK := req.Acks == 0 || req.Acks == 1 || req.Acks == -1
	// Authorization (docs/acls.md), as KafkaApis: transactional batches need WRITE on the
	// transactional id, idempotent ones IDEMPOTENT_WRITE on the cluster (else every partition
	// fails), and each topic WRITE.
	requestCode := int16(0)
	if s.deps.ACLs != nil {
		var idem, txn bool
		for i := range req.Topics {
			for j := range req.Topics[i].Partitions {
				a, b := producerKinds(req.Topics[i].Partitions[j].Records)
				idem, txn = idem || a, txn || b
			}
		}
		switch {
		case txn && (req.TransactionID == nil || !s.authz.authorized(r, acl.OpWrite, acl.ResourceTransactionalID, *req.TransactionID)):
			requestCode = kerr.TransactionalIDAuthorizationFailed.Code
		case !txn && idem && !s.authz.authorizedCluster(r, acl.OpIdempotentWrite):
			requestCode = kerr.ClusterAuthorizationFailed.Code
		}
	}
	for i := range req.Topics {
		t := &req.Topics[i]
		for j := range t.Partitions {
			p := &t.Partitions[j]
			switch {
			case !acksOK:
				fail(t.Topic, p.Partition, kerr.InvalidRequiredAcks.Code)
			case requestCode != 0:
				fail(t.Topic, p.Partition, requestCode)
			case !s.authz.authorized(r, acl.OpWrite, acl.ResourceTopic, t.Topic):
				fail(t.Topic, p.Partition, kerr.TopicAuthorizationFailed.Code)
			case !validTopicName(t.Topic), isInternalTopic(t.Topic):
				// Kafka 2.4 refuses client writes to internal topics (only the coordinator
				// appends to __consumer_offsets, through the replica manager).
				fail(t.Topic, p.Partition, kerr.InvalidTopicException.Code)
			default:
				if code, err := validateProduceRecords(req.Version, p.Records); code != 0 {
					r.log().WithFields(logrus.Fields{"topic": t.Topic, "partition": p.Partition}).WithError(err).Debug("rejecting produce")
					fail(t.Topic, p.Partition, code)
					continue
				}
				entries[tp(t.Topic, p.Partition)] = p.Records
			}
		}
	}
	finish := func(appended map[rm.TopicPartition]rm.ProduceResult) {
		for k, v := range appended {
			results[k] = v
		}
		// Client quotas (client_quotas.go): the request's size on the produce quota, its
		// handler time on the request quota unless acks=0 (Kafka exempts those from it).
		throttle := r.recordBandwidth(s.clientQuotas.Produce, float64(r.size), req.Acks == 0)
		if req.Acks == 0 {
			for _, res := range results {
				if res.ErrorCode != 0 {
					r.respondAndClose()
					return
				}
			}
			r.respond(nil)
			return
		}
		resp := produceResponse(req, results)
		resp.ThrottleMillis = throttleMillis(throttle)
		r.respond(resp)
	}
	if len(entries) == 0 {
		finish(nil)
		return
	}
	timeout := time.Duration(max(req.TimeoutMillis, 0)) * time.Millisecond
	s.deps.Replicas.AppendRecords(timeout, req.Acks, entries, func(res map[rm.TopicPartition]rm.ProduceResult) {
		r.safe(func() { finish(res) })
	})
}

func produceResponse(req *kmsg.ProduceRequest, results map[rm.TopicPartition]rm.ProduceResult) *kmsg.ProduceResponse {
	resp := req.ResponseKind().(*kmsg.ProduceResponse)
	resp.Topics = make([]kmsg.ProduceResponseTopic, 0, len(req.Topics))
	for i := range req.Topics {
		t := &req.Topics[i]
		rt := kmsg.NewProduceResponseTopic()
		rt.Topic = t.Topic
		for j := range t.Partitions {
			p := t.Partitions[j].Partition
			rp := kmsg.NewProduceResponseTopicPartition()
			rp.Partition = p
			res, ok := results[tp(t.Topic, p)]
			if !ok {
				res = rm.ProduceResult{ErrorCode: kerr.UnknownServerError.Code, BaseOffset: -1, LogAppendTime: -1, LogStartOffset: -1}
			}
			rp.ErrorCode = res.ErrorCode
			rp.BaseOffset = res.BaseOffset
			rp.LogAppendTime = res.LogAppendTime
			rp.LogStartOffset = res.LogStartOffset
			if req.Version >= 8 {
				for _, re := range res.RecordErrors {
					e := kmsg.NewProduceResponseTopicPartitionErrorRecord()
					e.RelativeOffset = re.BatchIndex // batch_index
					if re.Message != "" {
						e.ErrorMessage = kmsg.StringPtr(re.Message)
					}
					rp.ErrorRecords = append(rp.ErrorRecords, e)
				}
				if res.ErrorMessage != "" {
					rp.ErrorMessage = kmsg.StringPtr(res.ErrorMessage)
				}
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}
