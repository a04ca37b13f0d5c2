package broker

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/isrbroker/isrbroker/broker/security/acl"
	"github.com/isrbroker/isrbroker/zkcoord"
)

// AlterPartitionReassignments: v0 (flexible). KIP-455 (docs/kafka-facts.md, "KIP-455
// reassignments").
//
// Behavior:
//   - Only the active controller answers; any other broker answers NOT_CONTROLLER for the
//     whole request (kadm retries against the controller). The request runs on the
//     controller's event goroutine through Reassigner (*zkcoord.Coordinator).
//   - replicas = the target replica set: the controller adds the new replicas, waits for the
//     target to be in the ISR, moves leadership if needed and deletes the removed replicas.
//     A new target for a partition already moving replaces it (replicas of the old target
//     not in the new one are stopped and deleted). replicas null = cancel: the original
//     replicas are restored (the adding replicas are stopped and their logs deleted, the
//     leader moves back if it was an adding replica; the original order is not kept, as in
//     Kafka). A reassignment by API removes the partition from /admin/reassign_partitions.
//   - Per-partition errors as Kafka 2.4: INVALID_REPLICA_ASSIGNMENT (empty list, duplicate or
//     negative id, an adding replica that is not a live broker), NO_REASSIGNMENT_IN_PROGRESS
//     (cancel of a partition not being reassigned), UNKNOWN_TOPIC_OR_PARTITION (no such
//     partition, or its topic is being deleted); the error_message names the partition.
//     A partition listed twice counts once (the last entry, as Kafka's map). A controller
//     that does not answer within timeout_ms (at least 5 s) → REQUEST_TIMED_OUT for the request.
//
// Deviations: no authorization (no ACLs).

func init() { regKey(kmsg.AlterPartitionAssignments, 0, 0, handleAlterPartitionReassignments) }

// Reassigner is the controller side of the KIP-455 requests; *zkcoord.Coordinator
// implements it.
type Reassigner interface {
	AlterPartitionReassignments(ctx context.Context, targets map[zkcoord.TopicPartition][]int32) (map[zkcoord.TopicPartition]error, error)
	ListPartitionReassignments(ctx context.Context, tps []zkcoord.TopicPartition) (map[zkcoord.TopicPartition]zkcoord.OngoingReassignment, error)
}

// reassignTimeout bounds the wait for the controller: the request's timeout_ms, at least 5 s.
func reassignTimeout(ms int32) time.Duration {
	return max(time.Duration(ms)*time.Millisecond, 5*time.Second)
}

// reassignTopLevelCode maps a whole-request failure to its error code.
func reassignTopLevelCode(err error) int16 {
	switch {
	case errors.Is(err, zkcoord.ErrNotController):
		return kerr.NotController.Code
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return kerr.RequestTimedOut.Code
	}
	return kerr.UnknownServerError.Code
}

func handleAlterPartitionReassignments(s *Server, r *request, kreq kmsg.Request) {
	req := kreq.(*kmsg.AlterPartitionAssignmentsRequest)
	resp := req.ResponseKind().(*kmsg.AlterPartitionAssignmentsResponse)
	if s.authz.deniedCluster(r, acl.OpAlter) { // docs/acls.md
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
	targets := map[zkcoord.TopicPartition][]int32{}
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			targets[zkcoord.TopicPartition{Topic: t.Topic, Partition: p.Partition}] = p.Replicas // nil = cancel
		}
	}
	if !s.goHandler(r.log(), func() {
		ctx, cancel := context.WithTimeout(s.ctx, reassignTimeout(req.TimeoutMillis))
		defer cancel()
		results, err := ra.AlterPartitionReassignments(ctx, targets)
		if err != nil {
			resp.ErrorCode = reassignTopLevelCode(err)
			msg := err.Error()
			resp.ErrorMessage = &msg
			r.log().WithError(err).Info("AlterPartitionReassignments refused")
			r.respond(resp)
			return
		}
		byTopic := map[string][]kmsg.AlterPartitionAssignmentsResponseTopicPartition{}
		for tp, perr := range results {
			p := kmsg.NewAlterPartitionAssignmentsResponseTopicPartition()
			p.Partition = tp.Partition
			p.ErrorCode, p.ErrorMessage = reassignPartitionError(tp, perr)
			byTopic[tp.Topic] = append(byTopic[tp.Topic], p)
		}
		for _, topic := range sortedKeys(byTopic) {
			t := kmsg.NewAlterPartitionAssignmentsResponseTopic()
			t.Topic, t.Partitions = topic, byTopic[topic]
			sort.Slice(t.Partitions, func(i, j int) bool { return t.Partitions[i].Partition < t.Partitions[j].Partition })
			resp.Topics = append(resp.Topics, t)
		}
		r.log().WithFields(logrus.Fields{"partitions": len(targets)}).Info("AlterPartitionReassignments processed")
		r.respond(resp)
	}) {
		resp.ErrorCode = kerr.RequestTimedOut.Code
		r.respond(resp)
	}
}

// reassignPartitionError maps one partition's outcome to Kafka's code and message.
func reassignPartitionError(tp zkcoord.TopicPartition, err error) (int16, *string) {
	if err == nil {
		return 0, nil
	}
	var code int16
	var why string
	switch {
	case errors.Is(err, zkcoord.ErrInvalidReassignment):
		code, why = kerr.InvalidReplicaAssignment.Code, "invalid replica list (empty, a duplicate or negative id, or a new replica that is not a live broker)"
	case errors.Is(err, zkcoord.ErrNoReassignmentInProgress):
		code, why = kerr.NoReassignmentInProgress.Code, "no reassignment is in progress to cancel"
	case errors.Is(err, zkcoord.ErrUnknownPartition):
		code, why = kerr.UnknownTopicOrPartition.Code, "the partition does not exist"
	case errors.Is(err, zkcoord.ErrNotController), errors.Is(err, zkcoord.ErrControllerMoved):
		code, why = kerr.NotController.Code, "the controller moved"
	default:
		code, why = kerr.UnknownServerError.Code, err.Error()
	}
	msg := fmt.Sprintf("%s-%d: %s", tp.Topic, tp.Partition, why)
	return code, &msg
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
