package broker

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/isrbroker/isrbroker/broker/security/acl"
	"github.com/isrbroker/isrbroker/zkcoord"
)

// CreatePartitions: v0-1 (Kafka 2.4's range; KafkaApis.handleCreatePartitionsRequest and
// AdminManager.createPartitions, docs/kafka-facts.md "CreatePartitions").
//
// Behavior:
//   - Only the active controller serves it: any other broker answers NOT_CONTROLLER for
//     every topic.
//   - Per topic: listed twice → INVALID_REQUEST; queued for deletion →
//     INVALID_TOPIC_EXCEPTION; unknown → UNKNOWN_TOPIC_OR_PARTITION; a reassignment of one of
//     its partitions in progress → REASSIGNMENT_IN_PROGRESS; count not above the current
//     count → INVALID_PARTITIONS.
//   - An explicit assignment gives the new partitions (current count, current count + 1, …)
//     in order; a wrong number of assignments, a replica count other than the topic's
//     replication factor, a duplicate or an unknown broker → INVALID_REPLICA_ASSIGNMENT.
//     Without one the new partitions are assigned like at creation, continuing after the
//     existing ones (zkcoord admin AddPartitions, the one write path, also used by
//     `isrbroker topics --alter --partitions --zookeeper`).
//   - A count above zkcoord.MaxTopicPartitions, or new partitions taking the request above
//     maxRequestPartitions, → INVALID_PARTITIONS naming the limit (partition_limits.go;
//     Kafka 2.4 has no limit).
//   - validate_only checks and writes nothing.
//   - Otherwise the answer waits until this broker's metadata cache shows a leader for every
//     new partition, or timeout_ms → REQUEST_TIMED_OUT; timeout_ms <= 0 answers
//     REQUEST_TIMED_OUT at once for the topics that were grown (Kafka 2.4's AdminManager).
//
// Deviations: no ACLs (TOPIC_AUTHORIZATION_FAILED is never answered).

func init() { regKey(kmsg.CreatePartitions, 0, 1, handleCreatePartitions) }

// PartitionAdder is what CreatePartitions needs from the coordinator (Deps.Partitions);
// zkcoord/admin's Reader and Admin with the coordinator's IsController implement it.
type PartitionAdder interface {
	IsController() bool
	AddPartitions(ctx context.Context, topic string, numPartitions int32, newAssignment map[int32][]int32, validateOnly bool) (map[int32][]int32, error)
	TopicAssignment(topic string) (map[int32][]int32, error)
	TopicsMarkedForDeletion() ([]string, error)
	ReassignmentInProgress() ([]zkcoord.PartitionReassignment, bool, error)
}

func handleCreatePartitions(s *Server, r *request, kreq kmsg.Request) {
	req := kreq.(*kmsg.CreatePartitionsRequest)
	if !s.goHandler(r.log(), func() { createPartitions(s, r, req) }) {
		r.respond(createPartitionsFailAll(req, kerr.RequestTimedOut.Code))
	}
}

func createPartitionsFailAll(req *kmsg.CreatePartitionsRequest, code int16) *kmsg.CreatePartitionsResponse {
	resp := req.ResponseKind().(*kmsg.CreatePartitionsResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewCreatePartitionsResponseTopic()
		rt.Topic, rt.ErrorCode = t.Topic, code
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

func createPartitions(s *Server, r *request, req *kmsg.CreatePartitionsRequest) {
	pa := s.deps.Partitions
	if pa == nil || !pa.IsController() {
		r.respond(createPartitionsFailAll(req, kerr.NotController.Code))
		return
	}
	resp := req.ResponseKind().(*kmsg.CreatePartitionsResponse)
	count := map[string]int{}
	for _, t := range req.Topics {
		count[t.Topic]++
	}
	deleting, derr := pa.TopicsMarkedForDeletion()
	reassigning, _, rerr := pa.ReassignmentInProgress()
	deadline := time.Now().Add(time.Duration(max(req.TimeoutMillis, 0)) * time.Millisecond)
	wctx, wcancel := context.WithTimeout(s.ctx, adminWriteTimeout)
	defer wcancel()

	budget := newPartitionBudget()
	grown := map[string]int32{} // topic → new partition count, waiting for leaders
	for i := range req.Topics {
		t := &req.Topics[i]
		rt := kmsg.NewCreatePartitionsResponseTopic()
		rt.Topic = t.Topic
		setErr := func(code int16, msg string) {
			rt.ErrorCode = code
			if msg != "" {
				rt.ErrorMessage = &msg
			}
		}
		switch {
		case count[t.Topic] > 1:
			setErr(kerr.InvalidRequest.Code, "Duplicate topic in request.")
		case !s.authz.authorized(r, acl.OpAlter, acl.ResourceTopic, t.Topic): // docs/acls.md
			setErr(kerr.TopicAuthorizationFailed.Code, "")
		case derr != nil || rerr != nil:
			code, msg := adminErrorCode(firstErr(derr, rerr))
			setErr(code, msg)
		case slices.Contains(deleting, t.Topic):
			setErr(kerr.InvalidTopicException.Code, "The topic is queued for deletion.")
		case slices.ContainsFunc(reassigning, func(p zkcoord.PartitionReassignment) bool { return p.Topic == t.Topic }):
			setErr(kerr.ReassignmentInProgress.Code, fmt.Sprintf("A partition reassignment is in progress for the topic '%s'.", t.Topic))
		default:
			code, msg := addPartitions(wctx, pa, t, req.ValidateOnly, budget)
			setErr(code, msg)
			l := r.log().WithFields(logrus.Fields{"topic": t.Topic, "count": t.Count, "validateOnly": req.ValidateOnly})
			if code != 0 {
				l.WithField("error", msg).Info("create partitions failed")
			} else if !req.ValidateOnly {
				grown[t.Topic] = t.Count
				l.Info("created partitions")
			}
		}
		resp.Topics = append(resp.Topics, rt)
	}

	if len(grown) > 0 {
		if req.TimeoutMillis > 0 {
			ctx, cancel := context.WithDeadline(s.ctx, deadline)
			_ = s.cache.WaitFor(ctx, func(snap *MetadataSnapshot) bool { return len(topicsWithoutLeaders(snap, grown)) == 0 })
			cancel()
		}
		pending := topicsWithoutLeaders(s.cache.Snapshot(), grown)
		for i := range resp.Topics {
			if pending[resp.Topics[i].Topic] {
				resp.Topics[i].ErrorCode = kerr.RequestTimedOut.Code
				m := "partitions created; not all of them have a leader yet"
				resp.Topics[i].ErrorMessage = &m
			}
		}
	}
	r.respond(resp)
}

// addPartitions grows one topic through the admin; the explicit assignment's entries are
// the new partitions in order.
func addPartitions(ctx context.Context, pa PartitionAdder, t *kmsg.CreatePartitionsRequestTopic, validateOnly bool, budget *partitionBudget) (int16, string) {
	cur, err := pa.TopicAssignment(t.Topic)
	if err != nil {
		return adminErrorCode(err)
	}
	if t.Count > int32(len(cur)) { // else INVALID_PARTITIONS below, as Kafka
		if code, msg := budget.take(t.Topic, int64(t.Count), int64(t.Count)-int64(len(cur))); code != 0 {
			return code, msg
		}
	}
	var assign map[int32][]int32
	if t.Assignment != nil && t.Count > int32(len(cur)) { // else INVALID_PARTITIONS first, as Kafka
		if int32(len(t.Assignment)) != t.Count-int32(len(cur)) {
			return kerr.InvalidReplicaAssignment.Code, fmt.Sprintf("Increasing the number of partitions by %d but %d assignments provided.", t.Count-int32(len(cur)), len(t.Assignment))
		}
		assign = make(map[int32][]int32, len(t.Assignment))
		for i, a := range t.Assignment {
			assign[int32(len(cur)+i)] = slices.Clone(a.Replicas)
		}
	}
	if _, err = pa.AddPartitions(ctx, t.Topic, t.Count, assign, validateOnly); err != nil && t.Count > int32(len(cur)) {
		budget.refund(int64(t.Count) - int64(len(cur)))
	}
	return adminErrorCode(err)
}

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}
