package broker

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/isrbroker/isrbroker/broker/security/acl"
	"github.com/isrbroker/isrbroker/zkcoord"
)

// ElectLeaders: v0-2 (v0 preferred only, v1 election_type and top-level error_code, v2
// flexible). KIP-460; Kafka 2.4.1's KafkaApis.handleElectReplicaLeader,
// ReplicaManager.electLeaders and DelayedElectLeader (docs/kafka-facts.md, "Leader
// elections requested by an admin (KIP-460)").
//
// Behavior:
//   - The request becomes an event on the active controller's goroutine through
//     LeaderElector (*zkcoord.Coordinator). On any other broker every requested partition
//     (null topics: every partition of this broker's metadata cache) answers NOT_CONTROLLER,
//     the top-level error staying NONE, as Kafka 2.4.1 answers.
//   - election_type 0 (preferred): the head of the assignment is elected when it is live
//     and in the ISR; ELECTION_NOT_NEEDED when it already leads; PREFERRED_LEADER_NOT_AVAILABLE
//     when it cannot be elected.
//   - election_type 1 (unclean): only partitions without a live leader are elected (else
//     ELECTION_NOT_NEEDED): a live ISR member when there is one, else any live replica,
//     whatever the topic's unclean.leader.election.enable; ELIGIBLE_LEADERS_NOT_AVAILABLE when
//     no replica is live. An unclean election counts in
//     kafka.controller:type=ControllerStats,name=UncleanLeaderElectionsPerSec and is logged as
//     a WARN with the new leader, leader epoch and the old ISR.
//   - UNKNOWN_TOPIC_OR_PARTITION for a partition the controller does not know;
//     INVALID_TOPIC_EXCEPTION for a topic queued for deletion; an election_type other than
//     0/1 → INVALID_REQUEST (top-level on v1+).
//   - null topics elects every partition and leaves ELECTION_NOT_NEEDED partitions out of
//     the answer.
//   - The answer waits until this broker's metadata cache shows every elected leader, or
//     timeout_ms → REQUEST_TIMED_OUT for the partitions still waiting (DelayedElectLeader).
//
// Deviations: no ACLs (CLUSTER_AUTHORIZATION_FAILED is never answered).

func init() { regKey(kmsg.ElectLeaders, 0, 2, handleElectLeaders) }

// LeaderElector is the controller side of ElectLeaders; *zkcoord.Coordinator implements it.
type LeaderElector interface {
	ElectLeaders(ctx context.Context, partitions []zkcoord.TopicPartition, unclean bool) (map[zkcoord.TopicPartition]zkcoord.ElectionResult, error)
}

// electLeadersControllerTimeout bounds the wait for the controller's event goroutine.
const electLeadersControllerTimeout = 25 * time.Second

func handleElectLeaders(s *Server, r *request, kreq kmsg.Request) {
	req := kreq.(*kmsg.ElectLeadersRequest)
	if !s.goHandler(r.log(), func() { electLeaders(s, r, req) }) {
		r.respond(electLeadersAnswer(req, electLeadersAll(s, req, kerr.RequestTimedOut.Code)))
	}
}

// electLeadersAll answers code for every requested partition (null: every partition of
// the metadata cache).
func electLeadersAll(s *Server, req *kmsg.ElectLeadersRequest, code int16) map[zkcoord.TopicPartition]int16 {
	out := map[zkcoord.TopicPartition]int16{}
	for _, tp := range electLeadersPartitions(s, req) {
		out[tp] = code
	}
	return out
}

// electLeadersPartitions lists the requested partitions; null topics: every partition of
// this broker's metadata cache (Kafka's metadataCache.getAllPartitions).
func electLeadersPartitions(s *Server, req *kmsg.ElectLeadersRequest) []zkcoord.TopicPartition {
	var out []zkcoord.TopicPartition
	if req.Topics == nil {
		snap := s.cache.Snapshot()
		for _, t := range snap.TopicNames() {
			for p := range snap.Topics[t] {
				out = append(out, zkcoord.TopicPartition{Topic: t, Partition: p})
			}
		}
		return out
	}
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			out = append(out, zkcoord.TopicPartition{Topic: t.Topic, Partition: p})
		}
	}
	return out
}

func electLeaders(s *Server, r *request, req *kmsg.ElectLeadersRequest) {
	unclean := req.Version >= 1 && req.ElectionType == 1
	if req.Version >= 1 && req.ElectionType != 0 && req.ElectionType != 1 {
		resp := req.ResponseKind().(*kmsg.ElectLeadersResponse)
		resp.ErrorCode = kerr.InvalidRequest.Code
		r.respond(resp)
		return
	}
	if s.authz.deniedCluster(r, acl.OpAlter) { // docs/acls.md
		resp := electLeadersAnswer(req, electLeadersAll(s, req, kerr.ClusterAuthorizationFailed.Code))
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		r.respond(resp)
		return
	}
	le := s.deps.Elections
	if le == nil {
		r.respond(electLeadersAnswer(req, electLeadersAll(s, req, kerr.NotController.Code)))
		return
	}
	deadline := time.Now().Add(time.Duration(max(req.TimeoutMillis, 0)) * time.Millisecond)
	var tps []zkcoord.TopicPartition
	if req.Topics != nil {
		tps = electLeadersPartitions(s, req)
	}
	ctx, cancel := context.WithTimeout(s.ctx, electLeadersControllerTimeout)
	results, err := le.ElectLeaders(ctx, tps, unclean)
	cancel()
	log := r.log().WithFields(logrus.Fields{"unclean": unclean, "partitions": len(tps)})
	if err != nil {
		code := kerr.UnknownServerError.Code
		switch {
		case errors.Is(err, zkcoord.ErrNotController):
			code = kerr.NotController.Code
		case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
			code = kerr.RequestTimedOut.Code
		}
		log.WithError(err).Info("leader election refused")
		r.respond(electLeadersAnswer(req, electLeadersAll(s, req, code)))
		return
	}
	codes := make(map[zkcoord.TopicPartition]int16, len(results))
	expected := map[zkcoord.TopicPartition]int32{}
	for tp, res := range results {
		switch res.Err {
		case zkcoord.ElectionOK:
			expected[tp] = res.Leader
		case zkcoord.ElectionNotNeeded:
			if req.Topics != nil {
				codes[tp] = kerr.ElectionNotNeeded.Code
			}
		case zkcoord.ElectionPreferredNotAvail:
			codes[tp] = kerr.PreferredLeaderNotAvailable.Code
		case zkcoord.ElectionEligibleNotAvail:
			codes[tp] = kerr.EligibleLeadersNotAvailable.Code
		case zkcoord.ElectionTopicBeingDeleted:
			codes[tp] = kerr.InvalidTopicException.Code
		default:
			codes[tp] = kerr.UnknownTopicOrPartition.Code
		}
	}
	if len(expected) > 0 {
		wctx, wcancel := context.WithDeadline(s.ctx, deadline)
		_ = s.cache.WaitFor(wctx, func(snap *MetadataSnapshot) bool { return len(leadersNotShown(snap, expected)) == 0 })
		wcancel()
		pending := leadersNotShown(s.cache.Snapshot(), expected)
		for tp := range expected {
			codes[tp] = 0
			if pending[tp] {
				codes[tp] = kerr.RequestTimedOut.Code
			}
		}
	}
	log.WithField("elected", len(expected)).Info("leader election done")
	r.respond(electLeadersAnswer(req, codes))
}

// leadersNotShown returns the partitions of want whose leader in snap is not the expected one.
func leadersNotShown(snap *MetadataSnapshot, want map[zkcoord.TopicPartition]int32) map[zkcoord.TopicPartition]bool {
	out := map[zkcoord.TopicPartition]bool{}
	for tp, leader := range want {
		if pi, ok := snap.Partition(tp.Topic, tp.Partition); !ok || pi.Leader != leader {
			out[tp] = true
		}
	}
	return out
}

// electLeadersAnswer builds the response from per-partition codes, grouped by topic in
// topic and partition order.
func electLeadersAnswer(req *kmsg.ElectLeadersRequest, codes map[zkcoord.TopicPartition]int16) *kmsg.ElectLeadersResponse {
	resp := req.ResponseKind().(*kmsg.ElectLeadersResponse)
	byTopic := map[string][]int32{}
	var order []string
	for _, tp := range sortedTPs(codes) {
		if _, ok := byTopic[tp.Topic]; !ok {
			order = append(order, tp.Topic)
		}
		byTopic[tp.Topic] = append(byTopic[tp.Topic], tp.Partition)
	}
	for _, t := range order {
		rt := kmsg.NewElectLeadersResponseTopic()
		rt.Topic = t
		for _, p := range byTopic[t] {
			rp := kmsg.NewElectLeadersResponseTopicPartition()
			rp.Partition = p
			rp.ErrorCode = codes[zkcoord.TopicPartition{Topic: t, Partition: p}]
			if rp.ErrorCode != 0 {
				if e := kerr.ErrorForCode(rp.ErrorCode); e != nil {
					msg := e.Error()
					rp.ErrorMessage = &msg
				}
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

func sortedTPs(m map[zkcoord.TopicPartition]int16) []zkcoord.TopicPartition {
	out := make([]zkcoord.TopicPartition, 0, len(m))
	for tp := range m {
		out = append(out, tp)
	}
	slices.SortFunc(out, func(a, b zkcoord.TopicPartition) int {
		if c := strings.Compare(a.Topic, b.Topic); c != 0 {
			return c
		}
		return int(a.Partition) - int(b.Partition)
	})
	return out
}
