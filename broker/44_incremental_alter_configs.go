package broker

import (
	"strings"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/isrbroker/isrbroker/broker/security/acl"
)

// IncrementalAlterConfigs: v0-1 (v1 flexible; Kafka 2.4's range). KIP-339.
//
// Behavior (AdminManager.incrementalAlterConfigs; docs/kafka-facts.md §11):
//   - Each resource's operations apply in order to its current dynamic config: SET sets a
//     key, DELETE removes it, APPEND adds comma-separated entries to a list key, SUBTRACT
//     removes one occurrence of each entry; APPEND/SUBTRACT of a key that is not a list →
//     INVALID_REQUEST; of an unknown key → INVALID_CONFIG.
//   - A key named twice in one resource → INVALID_REQUEST "Error due to duplicate config
//     keys : ..."; a resource listed twice → INVALID_REQUEST for each of its entries.
//   - The resulting config is validated as a whole exactly as AlterConfigs (33) does, and
//     written with one compare-and-set unless validate_only.
//
// Deviations: APPEND/SUBTRACT on a key not set starts from the key's default (Kafka 2.4
// fails with UNKNOWN_SERVER_ERROR; later versions do the same as isrbroker); BROKER_LOGGER →
// INVALID_REQUEST; the deviations of AlterConfigs (33).

func init() { regKey(kmsg.IncrementalAlterConfigs, 0, 1, handleIncrementalAlterConfigs) }

func handleIncrementalAlterConfigs(s *Server, r *request, kreq kmsg.Request) {
	req := kreq.(*kmsg.IncrementalAlterConfigsRequest)
	if !s.goHandler(r.log(), func() { r.respond(incrementalAlterConfigs(s, r, req)) }) {
		resp := req.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
		for _, res := range req.Resources {
			rr := kmsg.NewIncrementalAlterConfigsResponseResource()
			rr.ResourceType, rr.ResourceName, rr.ErrorCode = res.ResourceType, res.ResourceName, kerr.RequestTimedOut.Code
			resp.Resources = append(resp.Resources, rr)
		}
		r.respond(resp)
	}
}

func incrementalAlterConfigs(s *Server, r *request, req *kmsg.IncrementalAlterConfigsRequest) *kmsg.IncrementalAlterConfigsResponse {
	log := r.log()
	resp := req.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
	count := map[resourceKey]int{}
	for _, res := range req.Resources {
		count[resourceKey{res.ResourceType, res.ResourceName}]++
	}
	for i := range req.Resources {
		res := &req.Resources[i]
		rr := kmsg.NewIncrementalAlterConfigsResponseResource()
		rr.ResourceType, rr.ResourceName = res.ResourceType, res.ResourceName
		names := make([]string, 0, len(res.Configs))
		for _, c := range res.Configs {
			names = append(names, c.Name)
		}
		err := s.authz.configAuth(r, res.ResourceType, res.ResourceName, acl.OpAlterConfigs)
		switch {
		case err != nil: // not authorized
		case count[resourceKey{res.ResourceType, res.ResourceName}] > 1:
			err = invalidRequest("Error due to duplicate resource " + resourceString(res.ResourceType, res.ResourceName))
		case len(duplicateNames(names)) > 0:
			err = invalidRequest("Error due to duplicate config keys : " + strings.Join(duplicateNames(names), ","))
		default:
			err = s.alterConfigResource(res.ResourceType, res.ResourceName, req.ValidateOnly, incrementalChange(res.ResourceType, res.Configs))
		}
		fields := logrus.Fields{"resource": resourceString(res.ResourceType, res.ResourceName), "validateOnly": req.ValidateOnly}
		if err != nil {
			code, msg := configErrorCode(err)
			rr.ErrorCode, rr.ErrorMessage = code, &msg
			log.WithFields(fields).WithError(err).Info("incremental alter configs refused")
		} else if !req.ValidateOnly {
			log.WithFields(fields).Info("altered dynamic configs")
		}
		resp.Resources = append(resp.Resources, rr)
	}
	return resp
}
