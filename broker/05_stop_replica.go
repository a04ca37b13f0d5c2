package broker

import (
	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/isrbroker/isrbroker/broker/security/acl"
	rm "github.com/isrbroker/isrbroker/replicamanager"
)

// StopReplica: v0-2 (v2 flexible). Controller → broker (S22: broker offline, replica moved,
// topic deleted).
//
// Behavior:
//   - v0 lists (topic, partition) pairs, v1+ topics with partition lists; broker epoch
//     from v1 (-1 before). delete_partitions applies to the whole request.
//   - The replica manager fences the controller and broker epochs and stops fetchers (and
//     deletes logs when asked); its codes are answered per partition in request order.
//
// Deviations: v3+ (per-partition leader epoch and delete flag, KIP-570) is not served.

func init() { regKey(kmsg.StopReplica, 0, 2, handleStopReplica) }

func handleStopReplica(s *Server, r *request, kreq kmsg.Request) {
	req := kreq.(*kmsg.StopReplicaRequest)
	in := rm.StopReplicaRequest{
		ControllerID:     req.ControllerID,
		ControllerEpoch:  req.ControllerEpoch,
		BrokerEpoch:      -1,
		DeletePartitions: req.DeletePartitions,
	}
	if req.Version >= 1 {
		in.BrokerEpoch = req.BrokerEpoch
	}
	for i := range req.Topics {
		t := &req.Topics[i]
		if req.Version == 0 {
			in.Partitions = append(in.Partitions, tp(t.Topic, t.Partition))
			continue
		}
		for _, p := range t.Partitions {
			in.Partitions = append(in.Partitions, tp(t.Topic, p))
		}
	}
	r.log().WithFields(logrus.Fields{"controllerId": req.ControllerID, "controllerEpoch": req.ControllerEpoch, "partitions": len(in.Partitions), "delete": req.DeletePartitions}).Debug("StopReplica")

	// Only a principal with CLUSTER_ACTION on the cluster (the controller's broker) may send
	// it (docs/acls.md); the others change nothing.
	var out rm.StopReplicaResult
	if !s.authz.deniedCluster(r, acl.OpClusterAction) {
		out = s.deps.Replicas.StopReplicas(in)
	} else {
		out.ErrorCode = kerr.ClusterAuthorizationFailed.Code
	}

	resp := req.ResponseKind().(*kmsg.StopReplicaResponse)
	resp.ErrorCode = out.ErrorCode
	for _, p := range in.Partitions {
		rp := kmsg.NewStopReplicaResponsePartition()
		rp.Topic, rp.Partition = p.Topic, p.Partition
		if code, ok := out.Partitions[p]; ok {
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
