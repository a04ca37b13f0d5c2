package broker

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/isrbroker/isrbroker/broker/security/acl"
	rm "github.com/isrbroker/isrbroker/replicamanager"
)

// OffsetForLeaderEpoch: v0-3 (K1, KIP-101/KIP-279).
//
// Behavior:
//   - Followers (Truncating state) and consumers (KIP-320) ask for the end offset of a
//     leader epoch; the replica manager answers from the leader-epoch cache with the
//     largest epoch <= the requested one and its end offset (v1+ returns the epoch).
//   - replica_id is in the request from v3; before v3 it is -2 (Kafka's debugging replica
//     id, which Kafka uses for those versions). current_leader_epoch (v2+, else -1) fences.
//
// Deviations: v4 (flexible) is not advertised.

func init() { regKey(kmsg.OffsetForLeaderEpoch, 0, 3, handleOffsetForLeaderEpoch) }

func handleOffsetForLeaderEpoch(s *Server, r *request, kreq kmsg.Request) {
	req := kreq.(*kmsg.OffsetForLeaderEpochRequest)
	replicaID := int32(-2)
	if req.Version >= 3 {
		replicaID = req.ReplicaID
	}
	var parts []rm.EpochEndOffsetRequest
	var results []rm.EpochEndOffsetResult
	// Authorization (docs/acls.md): CLUSTER_ACTION on the cluster (a follower) allows every
	// partition, else DESCRIBE on each topic.
	describe := s.authz.topicCheck(r, acl.OpDescribe)
	if s.authz.authorizedCluster(r, acl.OpClusterAction) {
		describe = func(string) bool { return true }
	}
	for i := range req.Topics {
		t := &req.Topics[i]
		if !describe(t.Topic) {
			for _, p := range t.Partitions {
				results = append(results, rm.EpochEndOffsetResult{TopicPartition: tp(t.Topic, p.Partition), ErrorCode: kerr.TopicAuthorizationFailed.Code, LeaderEpoch: -1, EndOffset: -1})
			}
			continue
		}
		for _, p := range t.Partitions {
			e := rm.EpochEndOffsetRequest{TopicPartition: tp(t.Topic, p.Partition), CurrentLeaderEpoch: p.CurrentLeaderEpoch, LeaderEpoch: p.LeaderEpoch}
			if req.Version < 2 {
				e.CurrentLeaderEpoch = -1
			}
			parts = append(parts, e)
		}
	}
	if len(parts) > 0 {
		results = append(results, s.deps.Replicas.LastOffsetForLeaderEpoch(replicaID, parts)...)
	}
	byTP := make(map[rm.TopicPartition]rm.EpochEndOffsetResult, len(results))
	for _, res := range results {
		byTP[res.TopicPartition] = res
	}
	resp := req.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
	for i := range req.Topics {
		t := &req.Topics[i]
		rt := kmsg.NewOffsetForLeaderEpochResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
			rp.Partition = p.Partition
			if res, ok := byTP[tp(t.Topic, p.Partition)]; ok {
				rp.ErrorCode, rp.LeaderEpoch, rp.EndOffset = res.ErrorCode, res.LeaderEpoch, res.EndOffset
			} else {
				rp.ErrorCode, rp.LeaderEpoch, rp.EndOffset = kerr.UnknownServerError.Code, -1, -1
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	r.respond(resp)
}
