package broker

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/isrbroker/isrbroker/broker/security/acl"
)

// DescribeAcls: v0-1, as Kafka 2.4 (docs/acls.md).
//
// Behavior:
//   - No authorizer: SECURITY_DISABLED. The caller needs DESCRIBE on the cluster, else
//     CLUSTER_AUTHORIZATION_FAILED.
//   - The filter (v0: LITERAL patterns only) selects bindings as Kafka's AclBindingFilter;
//     a filter that cannot match (unknown types) is INVALID_REQUEST. The answer groups the
//     matching entries by resource pattern.

func init() { regKey(kmsg.DescribeACLs, 0, 1, handleDescribeACLs) }

// errNoAuthorizer is Kafka's SecurityDisabledException message.
const errNoAuthorizer = "No Authorizer is configured on the broker"

// aclAPIRefusal is the answer every item of an ACL API request gets before any ACL is read or
// written: SECURITY_DISABLED without an authorizer, CLUSTER_AUTHORIZATION_FAILED without op
// on the cluster; code 0 lets the request through.
func aclAPIRefusal(s *Server, r *request, op acl.Operation) (code int16, msg string) {
	switch {
	case s.deps.ACLs == nil:
		return kerr.SecurityDisabled.Code, errNoAuthorizer
	case !s.authz.authorizedCluster(r, op):
		return kerr.ClusterAuthorizationFailed.Code, ""
	}
	return 0, ""
}

func handleDescribeACLs(s *Server, r *request, kreq kmsg.Request) {
	req := kreq.(*kmsg.DescribeACLsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeACLsResponse)
	fail := func(code int16, msg string) {
		resp.ErrorCode, resp.ErrorMessage = code, &msg
		r.respond(resp)
	}
	if code, msg := aclAPIRefusal(s, r, acl.OpDescribe); code != 0 {
		fail(code, msg)
		return
	}
	pattern := acl.PatternType(req.ResourcePatternType)
	if req.Version == 0 {
		pattern = acl.PatternLiteral
	}
	f, err := aclFilter(acl.ResourceType(req.ResourceType), req.ResourceName, pattern, req.Principal, req.Host, acl.Operation(req.Operation), acl.Permission(req.PermissionType))
	if err != "" {
		fail(kerr.InvalidRequest.Code, err)
		return
	}
	var cur *kmsg.DescribeACLsResponseResource
	for _, b := range s.deps.ACLs.Authorizer().Bindings(f) {
		if cur == nil || acl.ResourceType(cur.ResourceType) != b.Resource.Type || cur.ResourceName != b.Resource.Name || acl.PatternType(cur.ResourcePatternType) != b.Resource.Pattern {
			resp.Resources = append(resp.Resources, kmsg.NewDescribeACLsResponseResource())
			cur = &resp.Resources[len(resp.Resources)-1]
			cur.ResourceType = kmsg.ACLResourceType(b.Resource.Type)
			cur.ResourceName = b.Resource.Name
			cur.ResourcePatternType = kmsg.ACLResourcePatternType(b.Resource.Pattern)
		}
		e := kmsg.NewDescribeACLsResponseResourceACL()
		e.Principal, e.Host = b.Entry.Principal, b.Entry.Host
		e.Operation, e.PermissionType = kmsg.ACLOperation(b.Entry.Operation), kmsg.ACLPermissionType(b.Entry.Permission)
		cur.ACLs = append(cur.ACLs, e)
	}
	r.respond(resp)
}

// aclFilter builds a binding filter from a request's fields; a field outside what a filter may
// hold (an UNKNOWN type, operation or permission) is an error message.
func aclFilter(typ acl.ResourceType, name *string, pattern acl.PatternType, principal, host *string, op acl.Operation, perm acl.Permission) (acl.Filter, string) {
	switch {
	case typ == acl.ResourceUnknown || acl.ResourceType(typ) > acl.ResourceDelegationToken || typ < 0:
		return acl.Filter{}, "unknown resource type in the filter"
	case pattern == acl.PatternUnknown || pattern > acl.PatternPrefixed || pattern < 0:
		return acl.Filter{}, "unknown pattern type in the filter"
	case op == acl.OpUnknown || op > acl.OpIdempotentWrite || op < 0:
		return acl.Filter{}, "unknown operation in the filter"
	case perm == acl.PermissionUnknown || perm > acl.Allow || perm < 0:
		return acl.Filter{}, "unknown permission type in the filter"
	}
	if host != nil {
		h := acl.NormalizeHost(*host)
		host = &h
	}
	return acl.Filter{
		Resource: acl.ResourceFilter{Type: typ, Name: name, Pattern: pattern},
		Entry:    acl.EntryFilter{Principal: principal, Host: host, Operation: op, Permission: perm},
	}, ""
}
