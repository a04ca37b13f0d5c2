package broker

import (
	"net"

	"github.com/isrbroker/isrbroker/broker/security/acl"
)

// Authorization (issue 30; docs/acls.md): with an authorizer configured (Deps.ACLs, Kafka's
// authorizer.class.name), every request is checked as KafkaApis checks it, on the resource it
// checks, with its error code; without one everything is allowed and the ACL APIs answer
// SECURITY_DISABLED, as Kafka 2.4.

// AnonymousPrincipal is the principal of an unauthenticated connection (Kafka's
// KafkaPrincipal.ANONYMOUS).
const AnonymousPrincipal = "User:ANONYMOUS"

// ACLs is the authorizer and its store: the cache the decisions read and the ZooKeeper writes
// of CreateAcls and DeleteAcls.
type ACLs interface {
	// Authorizer is the ACL cache and decision; never nil.
	Authorizer() *acl.Authorizer
	// UpdateACLs replaces the ACLs of one resource pattern by change(current), in ZooKeeper
	// first, then in the cache, and returns the entries now stored.
	UpdateACLs(r acl.Resource, change func(current []acl.Entry) []acl.Entry) ([]acl.Entry, error)
}

// peerHost is the connection's client address as Kafka's ACL hosts are written.
func peerHost(a net.Addr) string {
	if a == nil {
		return ""
	}
	host, _, err := net.SplitHostPort(a.String())
	if err != nil {
		return acl.NormalizeHost(a.String())
	}
	return acl.NormalizeHost(host)
}

// principal is who sent r.
func (r *request) principal() string { return *r.c.principal.Load() }

// authorized reports whether r's principal may perform op on the literal resource typ:name.
// No authorizer: always.
func (s *Server) authorized(r *request, op acl.Operation, typ acl.ResourceType, name string) bool {
	if s.deps.ACLs == nil {
		return true
	}
	return s.deps.ACLs.Authorizer().Authorize(r.principal(), r.c.clientHost, op, typ, name)
}

// authorizedCluster is authorized on the cluster resource.
func (s *Server) authorizedCluster(r *request, op acl.Operation) bool {
	return s.authorized(r, op, acl.ResourceCluster, acl.ClusterName)
}

// authorizedOps is KIP-430's bitfield for typ:name (every supported operation without an
// authorizer).
func (s *Server) authorizedOps(r *request, typ acl.ResourceType, name string) int32 {
	var a *acl.Authorizer
	if s.deps.ACLs != nil {
		a = s.deps.ACLs.Authorizer()
	}
	return acl.AuthorizedOperations(a, r.principal(), r.c.clientHost, typ, name)
}
