package broker

import (
	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/isrbroker/isrbroker/broker/security/acl"
)

// AlterConfigs: v0-1 (Kafka 2.4's range).
//
// Behavior (AdminManager.alterConfigs; docs/kafka-facts.md §11):
//   - The request's entries REPLACE the resource's whole dynamic config: a key not listed is
//     removed from /config/topics/<t> or /config/brokers/<id|<default>>.
//   - TOPIC: the topic must exist (UNKNOWN_TOPIC_OR_PARTITION); an unknown key, an
//     unsupported non-default value or min.compaction.lag.ms > max.compaction.lag.ms →
//     INVALID_CONFIG naming the key; so does a value that does not type or validate
//     ("Invalid value ... for configuration <key>: ...").
//   - BROKER: "" is the cluster default, else this broker's id (another id →
//     INVALID_REQUEST); a key that cannot be updated dynamically (KIP-226 read-only) →
//     INVALID_REQUEST "Cannot update these configs dynamically: Set(...)"; a per-broker key
//     at the cluster default → INVALID_REQUEST.
//   - validate_only checks everything and writes nothing. A resource listed twice →
//     INVALID_REQUEST for each of its entries. A null value → INVALID_REQUEST.
//
// Deviations: a bad value is INVALID_CONFIG, as issue 12 asks (Kafka 2.4: INVALID_REQUEST
// "Invalid config value for resource ..."). A topic that does not exist is UNKNOWN_TOPIC_OR_PARTITION (Kafka 2.4:
// UNKNOWN_SERVER_ERROR from AdminOperationException). A broker key no Kafka table declares
// is refused with INVALID_CONFIG (Kafka stores custom keys for plug-ins) and dynamic
// passwords are refused (no password.encoder.secret); the reconfiguration checks of Kafka's
// reconfigurable components (thread pool sizes, ...) are not made; BROKER_LOGGER →
// INVALID_REQUEST.

func init() { regKey(kmsg.AlterConfigs, 0, 1, handleAlterConfigs) }

func handleAlterConfigs(s *Server, r *request, kreq kmsg.Request) {
	req := kreq.(*kmsg.AlterConfigsRequest)
	if !s.goHandler(r.log(), func() { r.respond(alterConfigs(s, r, req)) }) {
		resp := req.ResponseKind().(*kmsg.AlterConfigsResponse)
		for _, res := range req.Resources {
			rr := kmsg.NewAlterConfigsResponseResource()
			rr.ResourceType, rr.ResourceName, rr.ErrorCode = res.ResourceType, res.ResourceName, kerr.RequestTimedOut.Code
			resp.Resources = append(resp.Resources, rr)
		}
		r.respond(resp)
	}
}

func alterConfigs(s *Server, r *request, req *kmsg.AlterConfigsRequest) *kmsg.AlterConfigsResponse {
	log := r.log()
	resp := req.ResponseKind().(*kmsg.AlterConfigsResponse)
	count := map[resourceKey]int{}
	for _, res := range req.Resources {
		count[resourceKey{res.ResourceType, res.ResourceName}]++
	}
	for i := range req.Resources {
		res := &req.Resources[i]
		rr := kmsg.NewAlterConfigsResponseResource()
		rr.ResourceType, rr.ResourceName = res.ResourceType, res.ResourceName
		err := s.authz.configAuth(r, res.ResourceType, res.ResourceName, acl.OpAlterConfigs)
		switch {
		case err != nil: // not authorized
		case count[resourceKey{res.ResourceType, res.ResourceName}] > 1:
			err = invalidRequest("Error due to duplicate resource " + resourceString(res.ResourceType, res.ResourceName))
		default:
			err = s.alterConfigResource(res.ResourceType, res.ResourceName, req.ValidateOnly, func(map[string]string) (map[string]string, error) {
				next := make(map[string]string, len(res.Configs))
				for _, c := range res.Configs {
					if c.Value == nil {
						return nil, invalidRequest("Null value not supported for config " + c.Name)
					}
					next[c.Name] = *c.Value
				}
				return next, nil
			})
		}
		fields := logrus.Fields{"resource": resourceString(res.ResourceType, res.ResourceName), "validateOnly": req.ValidateOnly}
		if err != nil {
			code, msg := configErrorCode(err)
			rr.ErrorCode, rr.ErrorMessage = code, &msg
			log.WithFields(fields).WithError(err).Info("alter configs refused")
		} else if !req.ValidateOnly {
			log.WithFields(fields).Info("replaced dynamic configs")
		}
		resp.Resources = append(resp.Resources, rr)
	}
	return resp
}
