package broker

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/isrbroker/isrbroker/broker/security/acl"
)

// CreateAcls: v0-1, as Kafka 2.4 (docs/acls.md).
//
// Behavior:
//   - No authorizer: every creation SECURITY_DISABLED. The caller needs ALTER on the
//     cluster, else every creation CLUSTER_AUTHORIZATION_FAILED.
//   - Each creation (v0: LITERAL) is validated as Kafka does (a known resource type, LITERAL
//     or PREFIXED, a non-empty name, kafka-cluster for the cluster, a principal Type:name, an
//     operation the type supports, Allow or Deny), else INVALID_REQUEST with the reason;
//     then written to ZooKeeper (the resource pattern's znode and a change notification)
//     and the cache. An IP host is stored as Java writes it (::1 -> 0:0:0:0:0:0:0:1), so
//     the ACL matches the addresses the broker sees.
//
// Deviations: none known.

func init() { regKey(kmsg.CreateACLs, 0, 1, handleCreateACLs) }

func handleCreateACLs(s *Server, r *request, kreq kmsg.Request) {
	req := kreq.(*kmsg.CreateACLsRequest)
	resp := req.ResponseKind().(*kmsg.CreateACLsResponse)
	result := func(code int16, msg string) {
		res := kmsg.NewCreateACLsResponseResult()
		res.ErrorCode = code
		if msg != "" {
			res.ErrorMessage = &msg
		}
		resp.Results = append(resp.Results, res)
	}
	if code, msg := aclAPIRefusal(s, r, acl.OpAlter); code != 0 {
		for range req.Creations {
			result(code, msg)
		}
		r.respond(resp)
		return
	}
	creations := req.Creations
	if !s.goHandler(r.log(), func() {
		for _, c := range creations {
			pattern := acl.PatternType(c.ResourcePatternType)
			if req.Version == 0 {
				pattern = acl.PatternLiteral
			}
			b := acl.Binding{
				Resource: acl.Resource{Type: acl.ResourceType(c.ResourceType), Name: c.ResourceName, Pattern: pattern},
				Entry:    acl.Entry{Principal: c.Principal, Host: acl.NormalizeHost(c.Host), Operation: acl.Operation(c.Operation), Permission: acl.Permission(c.PermissionType)},
			}
			if err := b.Validate(); err != nil {
				result(kerr.InvalidRequest.Code, err.Error())
				continue
			}
			if _, err := s.deps.ACLs.UpdateACLs(b.Resource, func(cur []acl.Entry) []acl.Entry { return append(cur, b.Entry) }); err != nil {
				r.log().WithField("resource", b.Resource.String()).WithError(err).Warn("creating an ACL failed")
				result(kerr.UnknownServerError.Code, err.Error())
				continue
			}
			r.log().WithFields(map[string]any{"resource": b.Resource.String(), "principal": b.Entry.Principal,
				"operation": b.Entry.Operation.String(), "permission": b.Entry.Permission.String(), "host": b.Entry.Host}).Info("ACL created")
			result(0, "")
		}
		r.respond(resp)
	}) {
		for range req.Creations {
			result(kerr.RequestTimedOut.Code, "")
		}
		r.respond(resp)
	}
}
