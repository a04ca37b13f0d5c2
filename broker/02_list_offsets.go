package broker

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/isrbroker/isrbroker/broker/security/acl"
	rm "github.com/isrbroker/isrbroker/replicamanager"
)

// ListOffsets: v1-6 (v6 flexible).
//
// Behavior:
//   - timestamp -2 = earliest (log start offset), -1 = latest (HW for consumers, LEO for
//     replica_id >= 0), otherwise the first offset whose timestamp is >= the given one, found
//     by the replica manager through the time index.
//   - v1+ answer timestamp and offset; v4+ the leader epoch. current_leader_epoch (v4+) is passed down
//     for fencing (FENCED/UNKNOWN_LEADER_EPOCH).
//   - A partition listed twice (v1+) → INVALID_REQUEST for it, as Kafka.
//   - replica_id -2 (Kafka's DebuggingConsumerId) is answered by any local replica, follower
//     included, with its LEO as latest (AnyReplicaOffsetLister; `reassign-partitions --verify`
//     reads an adding replica's progress this way).
//
// Deviations: v0 is not advertised: its max_num_offsets and its timestamp lookup by segment
// modification time (a list of segment base offsets) are not served (docs/compatibility.md).

func init() { regKey(kmsg.ListOffsets, 1, 6, handleListOffsets) }

// AnyReplicaOffsetLister answers ListOffsets for the debugging replica id from a follower too;
// *replicamanager.Requests implements it.
type AnyReplicaOffsetLister interface {
	ListOffsetsAnyReplica(parts []rm.ListOffsetsPartition) []rm.ListOffsetsResult
}

func handleListOffsets(s *Server, r *request, kreq kmsg.Request) {
	req := kreq.(*kmsg.ListOffsetsRequest)
	resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)

	seen := make(map[rm.TopicPartition]int)
	var parts []rm.ListOffsetsPartition
	describe := s.authz.topicCheck(r, acl.OpDescribe) // DESCRIBE on the topic (docs/acls.md)
	var results []rm.ListOffsetsResult
	for i := range req.Topics {
		t := &req.Topics[i]
		if !describe(t.Topic) {
			for j := range t.Partitions {
				k := tp(t.Topic, t.Partitions[j].Partition)
				if seen[k]++; seen[k] == 1 {
					results = append(results, rm.ListOffsetsResult{TopicPartition: k, ErrorCode: kerr.TopicAuthorizationFailed.Code})
				}
			}
			continue
		}
		for j := range t.Partitions {
			p := &t.Partitions[j]
			k := tp(t.Topic, p.Partition)
			seen[k]++
			lp := rm.ListOffsetsPartition{TopicPartition: k, Timestamp: p.Timestamp, CurrentLeaderEpoch: p.CurrentLeaderEpoch}
			if req.Version < 4 {
				lp.CurrentLeaderEpoch = -1
			}
			if seen[k] == 1 {
				parts = append(parts, lp)
			}
		}
	}
	switch dbg := s.deps.AnyReplicaOffsets; {
	case len(parts) == 0:
	case req.ReplicaID == rm.DebuggingReplicaID && dbg != nil:
		results = append(results, dbg.ListOffsetsAnyReplica(parts)...)
	default:
		results = append(results, s.deps.Replicas.ListOffsets(req.ReplicaID, req.IsolationLevel, parts)...)
	}
	byTP := make(map[rm.TopicPartition]rm.ListOffsetsResult, len(results))
	for _, res := range results {
		byTP[res.TopicPartition] = res
	}
	resp.Topics = make([]kmsg.ListOffsetsResponseTopic, 0, len(req.Topics))
	for i := range req.Topics {
		t := &req.Topics[i]
		rt := kmsg.NewListOffsetsResponseTopic()
		rt.Topic = t.Topic
		for j := range t.Partitions {
			p := &t.Partitions[j]
			k := tp(t.Topic, p.Partition)
			rp := kmsg.NewListOffsetsResponseTopicPartition()
			rp.Partition = p.Partition
			rp.Timestamp, rp.Offset, rp.LeaderEpoch = -1, -1, -1
			res, ok := byTP[k]
			switch {
			case seen[k] > 1 && req.Version >= 1:
				rp.ErrorCode = kerr.InvalidRequest.Code
			case !ok:
				rp.ErrorCode = kerr.UnknownServerError.Code
			default:
				rp.ErrorCode = res.ErrorCode
				if res.ErrorCode == 0 {
					rp.Timestamp, rp.Offset, rp.LeaderEpoch = res.Timestamp, res.Offset, res.LeaderEpoch
					if req.Version == 0 && res.Offset >= 0 {
						rp.OldStyleOffsets = []int64{res.Offset}
					}
				}
			}
			if req.Version == 0 && rp.OldStyleOffsets == nil {
				rp.OldStyleOffsets = []int64{}
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	r.respond(resp)
}
