package broker

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/isrbroker/isrbroker/broker/security/acl"
)

// DeleteAcls: v0-1, as Kafka 2.4 (docs/acls.md).
//
// Behavior:
//   - No authorizer: every filter SECURITY_DISABLED. The caller needs ALTER on the cluster,
//     else every filter CLUSTER_AUTHORIZATION_FAILED.
//   - Each filter (v0: LITERAL) removes every binding it matches (ANY, MATCH, LITERAL,
//     PREFIXED as Kafka's AclBindingFilter) from ZooKeeper and the cache, and answers them.
//
// Deviations: none known.

func init() { regKey(kmsg.DeleteACLs, 0, 1, handleDeleteACLs) }

func handleDeleteACLs(s *Server, r *request, kreq kmsg.Request) {
	req := kreq.(*kmsg.DeleteACLsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteACLsResponse)
	result := func(code int16, msg string) *kmsg.DeleteACLsResponseResult {
		res := kmsg.NewDeleteACLsResponseResult()
		res.ErrorCode = code
		if msg != "" {
			res.ErrorMessage = &msg
		}
		resp.Results = append(resp.Results, res)
		return &resp.Results[len(resp.Results)-1]
	}
	if code, msg := aclAPIRefusal(s, r, acl.OpAlter); code != 0 {
		for range req.Filters {
			result(code, msg)
		}
		r.respond(resp)
		return
	}
	filters := req.Filters
	if !s.goHandler(r.log(), func() {
		for _, kf := range filters {
			pattern := acl.PatternType(kf.ResourcePatternType)
			if req.Version == 0 {
				pattern = acl.PatternLiteral
			}
			f, msg := aclFilter(acl.ResourceType(kf.ResourceType), kf.ResourceName, pattern, kf.Principal, kf.Host, acl.Operation(kf.Operation), acl.Permission(kf.PermissionType))
			if msg != "" {
				result(kerr.InvalidRequest.Code, msg)
				continue
			}
			res := result(0, "")
			byResource := map[acl.Resource]bool{}
			for _, b := range s.deps.ACLs.Authorizer().Bindings(f) {
				byResource[b.Resource] = true
			}
			for _, b := range sortedResources(byResource) {
				var removed []acl.Entry
				_, err := s.deps.ACLs.UpdateACLs(b, func(cur []acl.Entry) []acl.Entry {
					removed = removed[:0]
					kept := cur[:0:0]
					for _, e := range cur {
						if f.Entry.Matches(e) {
							removed = append(removed, e)
						} else {
							kept = append(kept, e)
						}
					}
					return kept
				})
				code, emsg := int16(0), ""
				if err != nil {
					code, emsg = kerr.UnknownServerError.Code, err.Error()
					r.log().WithField("resource", b.String()).WithError(err).Warn("deleting ACLs failed")
				}
				for _, e := range removed {
					m := kmsg.NewDeleteACLsResponseResultMatchingACL()
					m.ErrorCode = code
					if emsg != "" {
						m.ErrorMessage = &emsg
					}
					m.ResourceType, m.ResourceName, m.ResourcePatternType = kmsg.ACLResourceType(b.Type), b.Name, kmsg.ACLResourcePatternType(b.Pattern)
					m.Principal, m.Host = e.Principal, e.Host
					m.Operation, m.PermissionType = kmsg.ACLOperation(e.Operation), kmsg.ACLPermissionType(e.Permission)
					res.MatchingACLs = append(res.MatchingACLs, m)
				}
				if err == nil && len(removed) > 0 {
					r.log().WithField("resource", b.String()).WithField("count", len(removed)).Info("ACLs deleted")
				}
			}
		}
		r.respond(resp)
	}) {
		for range req.Filters {
			result(kerr.RequestTimedOut.Code, "")
		}
		r.respond(resp)
	}
}

// sortedResources returns the set's resource patterns in a stable order.
func sortedResources(set map[acl.Resource]bool) []acl.Resource {
	var bs []acl.Binding
	for r := range set {
		bs = append(bs, acl.Binding{Resource: r})
	}
	out := make([]acl.Resource, 0, len(bs))
	for _, b := range acl.SortBindings(bs) {
		out = append(out, b.Resource)
	}
	return out
}
