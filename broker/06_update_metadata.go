package broker

import (
	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/isrbroker/isrbroker/broker/security/acl"
)

// UpdateMetadata: v0-6 (v6 flexible). Controller → every broker.
//
// Behavior:
//   - The controller and broker epochs are checked first by the replica manager
//     (CheckControllerEpoch, K3/KIP-380; broker epoch -1 before v5); a stale request is
//     answered with its code and changes nothing.
//   - Otherwise the metadata cache takes it: live brokers (with their endpoints per
//     listener; v0 has a single PLAINTEXT host/port, v1–2 name listeners by security
//     protocol) and controller id are replaced, partition states upserted, and partitions
//     with leader -2 (topic deleted) removed.
//   - The partitions marked deleted go to the group coordinator, which removes their
//     committed offsets from every group (KafkaApis.handleUpdateMetadataRequest,
//     GroupCoordinator.handleDeletedPartitions; docs/groups.md §6), before the answer.
//
// Deviations: v7+ (topic ids, KRaft) is not served.

func init() { regKey(kmsg.UpdateMetadata, 0, 6, handleUpdateMetadata) }

func handleUpdateMetadata(s *Server, r *request, kreq kmsg.Request) {
	req := kreq.(*kmsg.UpdateMetadataRequest)
	resp := req.ResponseKind().(*kmsg.UpdateMetadataResponse)
	brokerEpoch := int64(-1)
	if req.Version >= 5 {
		brokerEpoch = req.BrokerEpoch
	}
	if s.authz.deniedCluster(r, acl.OpClusterAction) { // docs/acls.md
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		r.respond(resp)
		return
	}
	log := r.log().WithFields(logrus.Fields{"controllerId": req.ControllerID, "controllerEpoch": req.ControllerEpoch})
	if code := s.deps.Replicas.CheckControllerEpoch(req.ControllerID, req.ControllerEpoch, brokerEpoch); code != 0 {
		log.WithField("error", kerr.ErrorForCode(code)).Info("rejecting UpdateMetadata")
		resp.ErrorCode = code
		r.respond(resp)
		return
	}
	if deleted := s.cache.Update(req); len(deleted) > 0 && s.groups != nil {
		s.groups.HandleDeletedPartitions(deleted)
	}
	log.WithField("liveBrokers", len(req.LiveBrokers)).Debug("metadata cache updated")
	r.respond(resp)
}
