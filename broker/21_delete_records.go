package broker

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/isrbroker/isrbroker/broker/security/acl"
	rm "github.com/isrbroker/isrbroker/replicamanager"
)

// DeleteRecords: v0-2 (v2 flexible). Deletes the records below an offset (KIP-107,
// docs/delete-records.md).
//
// Behavior:
//   - A partition the metadata cache does not know → UNKNOWN_TOPIC_OR_PARTITION; a partition
//     not led here → NOT_LEADER_FOR_PARTITION; an internal topic (__consumer_offsets) →
//     INVALID_TOPIC_EXCEPTION; a topic whose cleanup.policy lacks delete → POLICY_VIOLATION.
//   - offset -1 means the HW; an offset above the HW or below -1 → OFFSET_OUT_OF_RANGE.
//   - The leader raises its log start offset (reads below it get OFFSET_OUT_OF_RANGE; the
//     segments wholly below it go at the next retention pass) and writes
//     log-start-offset-checkpoint at once. The answer then waits (delayed delete records) until
//     the partition's low watermark — the smallest log start offset of the leader and of the
//     followers on live brokers, which learn the leader's from their fetches — reaches the
//     offset, or timeout_ms → REQUEST_TIMED_OUT for that partition. low_watermark is the
//     low watermark reached.
//   - A partition listed twice is deleted once; every entry gets the answer.
//
// Deviations: Kafka writes log-start-offset-checkpoint only every
// log.flush.start.offset.checkpoint.interval.ms; isrbroker writes it at once (also on the
// followers when they raise theirs), so an unclean restart keeps the new log start.

func init() { regKey(kmsg.DeleteRecords, 0, 2, handleDeleteRecords) }

// RecordsDeleter is the replica manager's DeleteRecords path (*replicamanager.Requests).
type RecordsDeleter interface {
	DeleteRecords(timeout time.Duration, parts []rm.DeleteRecordsPartition, done func([]rm.DeleteRecordsResult))
}

func handleDeleteRecords(s *Server, r *request, kreq kmsg.Request) {
	req := kreq.(*kmsg.DeleteRecordsRequest)
	codes := map[rm.TopicPartition]int16{} // answered before the replica manager
	lows := map[rm.TopicPartition]int64{}  // low watermarks from the replica manager
	var parts []rm.DeleteRecordsPartition  // one per distinct known partition
	deleter := s.deps.RecordsDeleter
	snap := s.cache.Snapshot()
	deletable := s.authz.topicCheck(r, acl.OpDelete) // DELETE on the topic (docs/acls.md)
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			k := tp(t.Topic, p.Partition)
			if _, seen := codes[k]; seen {
				continue
			}
			switch _, known := snap.Partition(t.Topic, p.Partition); {
			case !deletable(t.Topic):
				codes[k] = kerr.TopicAuthorizationFailed.Code
			case !known:
				codes[k] = kerr.UnknownTopicOrPartition.Code
			case deleter == nil:
				codes[k] = kerr.UnknownServerError.Code
			default:
				codes[k] = -1 // pending
				parts = append(parts, rm.DeleteRecordsPartition{TopicPartition: k, Offset: p.Offset})
			}
		}
	}
	answer := func() {
		resp := req.ResponseKind().(*kmsg.DeleteRecordsResponse)
		for _, t := range req.Topics {
			rt := kmsg.NewDeleteRecordsResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				k := tp(t.Topic, p.Partition)
				rp := kmsg.NewDeleteRecordsResponseTopicPartition()
				rp.Partition, rp.ErrorCode, rp.LowWatermark = p.Partition, codes[k], -1
				if lw, ok := lows[k]; ok && rp.ErrorCode == 0 {
					rp.LowWatermark = lw
				}
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		r.respond(resp)
	}
	if len(parts) == 0 {
		answer()
		return
	}
	timeout := time.Duration(max(req.TimeoutMillis, 0)) * time.Millisecond
	// The leader checkpoints the new log start offsets (disk I/O): off the connection's loop.
	if !s.goHandler(r.log(), func() {
		deleter.DeleteRecords(timeout, parts, func(results []rm.DeleteRecordsResult) {
			for _, res := range results {
				codes[res.TopicPartition], lows[res.TopicPartition] = res.ErrorCode, res.LowWatermark
			}
			answer()
		})
	}) {
		for _, p := range parts {
			codes[p.TopicPartition] = kerr.RequestTimedOut.Code
		}
		answer()
	}
}
