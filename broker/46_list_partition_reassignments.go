package broker

import (
	"context"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/isrbroker/isrbroker/broker/security/acl"
	"github.com/isrbroker/isrbroker/zkcoord"
)

// ListPartitionReassignments: v0 (flexible). KIP-455.
//
// Behavior:
//   - Only the active controller answers (else NOT_CONTROLLER for the request), from its
//     in-memory state (Kafka's processListPartitionReassignments) through Reassigner.
//   - topics null = every partition being reassigned; otherwise the listed partitions that
//     are being reassigned (others, known or not, are left out without an error).
//   - Per partition: replicas = all replicas (target first, then the original ones that
//     are leaving), adding_replicas, removing_replicas.
//   - A controller that does not answer within timeout_ms (at least 5 s) → REQUEST_TIMED_OUT.
//
// Deviations: no authorization (no ACLs).

func init() { regKey(kmsg.ListPartitionReassignments, 0, 0, handleListPartitionReassignments) }

func handleListPartitionReassignments(s *Server, r *request, kreq kmsg.Request) {
	req := kreq.(*kmsg.ListPartitionReassignmentsRequest)
	resp := req.ResponseKind().(*kmsg.ListPartitionReassignmentsResponse)
	if s.authz.deniedCluster(r, acl.OpDescribe) { // docs/acls.md
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		r.respond(resp)
		return
	}
	ra := s.deps.Reassignments
	if ra == nil {
		resp.ErrorCode = kerr.NotController.Code
		r.respond(resp)
		return
	}
	var tps []zkcoord.TopicPartition
	if req.Topics != nil {
		tps = []zkcoord.TopicPartition{}
		for _, t := range req.Topics {
			for _, p := range t.Partitions {
				tps = append(tps, zkcoord.TopicPartition{Topic: t.Topic, Partition: p})
			}
		}
	}
	if !s.goHandler(r.log(), func() {
		ctx, cancel := context.WithTimeout(s.ctx, reassignTimeout(req.TimeoutMillis))
		defer cancel()
		ongoing, err := ra.ListPartitionReassignments(ctx, tps)
		if err != nil {
			resp.ErrorCode = reassignTopLevelCode(err)
			msg := err.Error()
			resp.ErrorMessage = &msg
			r.respond(resp)
			return
		}
		byTopic := map[string][]kmsg.ListPartitionReassignmentsResponseTopicPartition{}
		for tp, o := range ongoing {
			p := kmsg.NewListPartitionReassignmentsResponseTopicPartition()
			p.Partition = tp.Partition
			p.Replicas, p.AddingReplicas, p.RemovingReplicas = nonNil(o.Replicas), nonNil(o.Adding), nonNil(o.Removing)
			byTopic[tp.Topic] = append(byTopic[tp.Topic], p)
		}
		for _, topic := range sortedKeys(byTopic) {
			t := kmsg.NewListPartitionReassignmentsResponseTopic()
			t.Topic, t.Partitions = topic, byTopic[topic]
			sort.Slice(t.Partitions, func(i, j int) bool { return t.Partitions[i].Partition < t.Partitions[j].Partition })
			resp.Topics = append(resp.Topics, t)
		}
		r.respond(resp)
	}) {
		resp.ErrorCode = kerr.RequestTimedOut.Code
		r.respond(resp)
	}
}
