package broker

import (
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/isrbroker/isrbroker/broker/security/acl"
)

// memACLs is an ACLs over an in-memory store (the real one is zkcoord/agent.ACLStore).
type memACLs struct {
	mu     sync.Mutex
	a      *acl.Authorizer
	writes int
}

func (m *memACLs) Authorizer() *acl.Authorizer { return m.a }

func (m *memACLs) UpdateACLs(r acl.Resource, change func([]acl.Entry) []acl.Entry) ([]acl.Entry, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	next := change(m.a.ACLs(r))
	seen := map[acl.Entry]bool{}
	var dedup []acl.Entry
	for _, e := range next {
		if !seen[e] {
			seen[e] = true
			dedup = append(dedup, e)
		}
	}
	m.a.SetACLs(r, dedup)
	m.writes++
	return dedup, nil
}

func str(s string) *string { return &s }

// The ACL APIs: SECURITY_DISABLED without an authorizer; with one, CreateAcls validates and
// stores, DescribeAcls filters (MATCH finds the literal, the wildcard and the prefix), DeleteAcls
// removes what its filter matches and answers it; a caller without ALTER/DESCRIBE on the
// cluster gets CLUSTER_AUTHORIZATION_FAILED and changes nothing.
func TestACLAPIs(t *testing.T) {
	off := startServer(t, nil)
	c := dial(t, off.addr)
	if resp := roundTrip[*kmsg.DescribeACLsResponse](t, c, &kmsg.DescribeACLsRequest{Version: 1, ResourceType: 1, ResourcePatternType: 1, Operation: 1, PermissionType: 1}); resp.ErrorCode != kerr.SecurityDisabled.Code {
		t.Fatalf("DescribeAcls without an authorizer: %d, want SECURITY_DISABLED", resp.ErrorCode)
	}

	// super.users names the anonymous principal of a PLAINTEXT connection first.
	store := &memACLs{a: acl.New(acl.Config{SuperUsers: []string{AnonymousPrincipal}})}
	e := startServerWith(t, nil, func(_ *fakeAdmin, d *Deps) { d.ACLs = store })
	c = dial(t, e.addr)
	create := func(typ kmsg.ACLResourceType, name string, pattern kmsg.ACLResourcePatternType, principal, host string, op kmsg.ACLOperation, perm kmsg.ACLPermissionType) kmsg.CreateACLsRequestCreation {
		cr := kmsg.NewCreateACLsRequestCreation()
		cr.ResourceType, cr.ResourceName, cr.ResourcePatternType = typ, name, pattern
		cr.Principal, cr.Host, cr.Operation, cr.PermissionType = principal, host, op, perm
		return cr
	}
	cresp := roundTrip[*kmsg.CreateACLsResponse](t, c, &kmsg.CreateACLsRequest{Version: 1, Creations: []kmsg.CreateACLsRequestCreation{
		create(2, "orders", 3, "User:alice", "*", 3, 3),        // Topic orders LITERAL Read Allow
		create(2, "ord", 4, "User:alice", "::1", 4, 3),         // Topic ord PREFIXED Write Allow, IPv6 host
		create(2, "*", 3, "User:bob", "*", 8, 2),               // Topic * Describe Deny
		create(4, "other-cluster", 3, "User:alice", "*", 7, 3), // wrong cluster name
		create(3, "g", 3, "alice", "*", 3, 3),                  // principal without type
		create(4, "kafka-cluster", 3, "User:alice", "*", 3, 3), // Read on the cluster: unsupported
	}})
	wantCodes := []int16{0, 0, 0, kerr.InvalidRequest.Code, kerr.InvalidRequest.Code, kerr.InvalidRequest.Code}
	for i, res := range cresp.Results {
		if res.ErrorCode != wantCodes[i] {
			t.Errorf("creation %d: %d (%v), want %d", i, res.ErrorCode, res.ErrorMessage, wantCodes[i])
		}
	}
	if got := store.a.ACLs(acl.Resource{Type: acl.ResourceTopic, Name: "ord", Pattern: acl.PatternPrefixed}); len(got) != 1 || got[0].Host != "0:0:0:0:0:0:0:1" {
		t.Fatalf("prefixed ACL stored as %+v, want the host in Java's form", got)
	}

	dresp := roundTrip[*kmsg.DescribeACLsResponse](t, c, &kmsg.DescribeACLsRequest{Version: 1, ResourceType: 2, ResourceName: str("orders"), ResourcePatternType: 2, Operation: 1, PermissionType: 1})
	if dresp.ErrorCode != 0 || len(dresp.Resources) != 3 {
		t.Fatalf("DescribeAcls MATCH orders: %d, %d resources %+v, want the literal, the wildcard and the prefix", dresp.ErrorCode, len(dresp.Resources), dresp.Resources)
	}
	v0 := roundTrip[*kmsg.DescribeACLsResponse](t, c, &kmsg.DescribeACLsRequest{Version: 0, ResourceType: 1, Operation: 1, PermissionType: 1})
	for _, r := range v0.Resources {
		if r.ResourceName == "ord" {
			t.Fatal("DescribeAcls v0 answered a PREFIXED pattern (v0 filters are LITERAL)")
		}
	}

	del := kmsg.NewDeleteACLsRequestFilter()
	del.ResourceType, del.ResourcePatternType, del.Principal, del.Operation, del.PermissionType = 2, 1, str("User:alice"), 1, 1
	delResp := roundTrip[*kmsg.DeleteACLsResponse](t, c, &kmsg.DeleteACLsRequest{Version: 1, Filters: []kmsg.DeleteACLsRequestFilter{del}})
	if len(delResp.Results) != 1 || delResp.Results[0].ErrorCode != 0 || len(delResp.Results[0].MatchingACLs) != 2 {
		t.Fatalf("DeleteAcls of alice's topic ACLs: %+v", delResp.Results)
	}
	if len(store.a.ACLs(acl.Resource{Type: acl.ResourceTopic, Name: "orders", Pattern: acl.PatternLiteral})) != 0 ||
		len(store.a.ACLs(acl.Resource{Type: acl.ResourceTopic, Name: "*", Pattern: acl.PatternLiteral})) != 1 {
		t.Fatal("DeleteAcls removed the wrong entries")
	}

	// Without super.users the anonymous caller has no ALTER/DESCRIBE on the cluster.
	locked := &memACLs{a: acl.New(acl.Config{})}
	e2 := startServerWith(t, nil, func(_ *fakeAdmin, d *Deps) { d.ACLs = locked })
	c2 := dial(t, e2.addr)
	if r := roundTrip[*kmsg.CreateACLsResponse](t, c2, &kmsg.CreateACLsRequest{Version: 1, Creations: []kmsg.CreateACLsRequestCreation{create(2, "t", 3, "User:x", "*", 3, 3)}}); r.Results[0].ErrorCode != kerr.ClusterAuthorizationFailed.Code || locked.writes != 0 {
		t.Fatalf("CreateAcls without ALTER on the cluster: %d (writes %d), want CLUSTER_AUTHORIZATION_FAILED and nothing written", r.Results[0].ErrorCode, locked.writes)
	}
	if r := roundTrip[*kmsg.DescribeACLsResponse](t, c2, &kmsg.DescribeACLsRequest{Version: 1, ResourceType: 1, ResourcePatternType: 1, Operation: 1, PermissionType: 1}); r.ErrorCode != kerr.ClusterAuthorizationFailed.Code {
		t.Fatalf("DescribeAcls without DESCRIBE on the cluster: %d", r.ErrorCode)
	}
}
