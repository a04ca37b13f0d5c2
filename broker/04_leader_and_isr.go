package broker

import (
	"net"
	"strconv"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/isrbroker/isrbroker/broker/security/acl"
	rm "github.com/isrbroker/isrbroker/replicamanager"
)

// LeaderAndIsr: v0-4 (v4 flexible). Controller → broker (S9, S14).
//
// Behavior:
//   - v0-1 carry flat partition states, v2+ states grouped by topic; both become an
//     rm.LeaderAndIsrRequest (broker epoch -1 before v2, which the replica manager accepts).
//     live_leaders become id → "host:port".
//   - The replica manager does all fencing (STALE_CONTROLLER_EPOCH, STALE_BROKER_EPOCH for
//     the whole request, K3; per partition the leader epoch) and makeLeaders/makeFollowers;
//     its codes are answered per partition in request order.
//
// Deviations: v5+ (topic ids, KRaft type) are not served.

func init() { regKey(kmsg.LeaderAndISR, 0, 4, handleLeaderAndIsr) }

func handleLeaderAndIsr(s *Server, r *request, kreq kmsg.Request) {
	req := kreq.(*kmsg.LeaderAndISRRequest)
	in := rm.LeaderAndIsrRequest{
		ControllerID:    req.ControllerID,
		ControllerEpoch: req.ControllerEpoch,
		BrokerEpoch:     -1,
		LiveLeaders:     make(map[int32]string, len(req.LiveLeaders)),
	}
	if req.Version >= 2 {
		in.BrokerEpoch = req.BrokerEpoch
	}
	add := func(topic string, p *kmsg.LeaderAndISRRequestTopicPartition) {
		in.Partitions = append(in.Partitions, rm.PartitionState{
			TopicPartition:  tp(topic, p.Partition),
			ControllerEpoch: p.ControllerEpoch,
			Leader:          p.Leader,
			LeaderEpoch:     p.LeaderEpoch,
			ISR:             p.ISR,
			ZkVersion:       p.ZKVersion,
			Replicas:        p.Replicas,
			IsNew:           p.IsNew,
		})
	}
	for i := range req.PartitionStates {
		add(req.PartitionStates[i].Topic, &req.PartitionStates[i])
	}
	for i := range req.TopicStates {
		ts := &req.TopicStates[i]
		for j := range ts.PartitionStates {
			add(ts.Topic, &ts.PartitionStates[j])
		}
	}
	for _, l := range req.LiveLeaders {
		in.LiveLeaders[l.BrokerID] = net.JoinHostPort(l.Host, strconv.Itoa(int(l.Port)))
	}
	r.log().WithFields(logrus.Fields{"controllerId": req.ControllerID, "controllerEpoch": req.ControllerEpoch, "partitions": len(in.Partitions)}).Debug("LeaderAndIsr")

	// Only a principal with CLUSTER_ACTION on the cluster (the controller's broker) may send
	// it (docs/acls.md); the others change nothing.
	var out rm.LeaderAndIsrResult
	if !s.authz.deniedCluster(r, acl.OpClusterAction) {
		out = s.deps.Replicas.BecomeLeaderOrFollower(in)
	} else {
		out.ErrorCode = kerr.ClusterAuthorizationFailed.Code
	}

	resp := req.ResponseKind().(*kmsg.LeaderAndISRResponse)
	resp.ErrorCode = out.ErrorCode
	for _, ps := range in.Partitions {
		rp := kmsg.NewLeaderAndISRResponseTopicPartition()
		rp.Topic, rp.Partition = ps.Topic, ps.Partition
		if code, ok := out.Partitions[ps.TopicPartition]; ok {
			rp.ErrorCode = code
		} else if out.ErrorCode != 0 {
			rp.ErrorCode = out.ErrorCode
		} else {
			rp.ErrorCode = kerr.UnknownServerError.Code
		}
		resp.Partitions = append(resp.Partitions, rp)
	}
	r.respond(resp)
}
