package acl

import (
	"reflect"
	"testing"
)

func lit(t ResourceType, name string) Resource {
	return Resource{Type: t, Name: name, Pattern: PatternLiteral}
}

func allow(principal, host string, op Operation) Entry {
	return Entry{Principal: principal, Host: host, Operation: op, Permission: Allow}
}

func deny(principal, host string, op Operation) Entry {
	return Entry{Principal: principal, Host: host, Operation: op, Permission: Deny}
}

// The decision of Kafka 2.4's AclAuthorizer (docs/acls.md), case by case.
func TestAuthorizeDecision(t *testing.T) {
	a := New(Config{SuperUsers: []string{"User:admin"}})
	a.SetACLs(lit(ResourceTopic, "foo"), []Entry{
		allow("User:alice", "*", OpRead),
		allow("User:carol", "*", OpAll),
		deny("User:carol", "*", OpRead),
		allow("User:dave", "10.0.0.1", OpWrite),
		allow("User:erin", "0:0:0:0:0:0:0:1", OpWrite),
		allow("User:frank", "*", OpAlterConfigs),
	})
	a.SetACLs(lit(ResourceTopic, "*"), []Entry{allow("User:gina", "*", OpDescribe)})
	a.SetACLs(Resource{Type: ResourceTopic, Name: "p", Pattern: PatternPrefixed}, []Entry{allow("User:hank", "*", OpWrite)})
	a.SetACLs(lit(ResourceTopic, "walled"), []Entry{deny("User:*", "*", OpAll), allow("User:alice", "*", OpRead)})
	a.SetACLs(lit(ResourceGroup, "foo"), []Entry{allow("User:ivan", "*", OpRead)})

	cases := []struct {
		name      string
		principal string
		host      string
		op        Operation
		typ       ResourceType
		res       string
		want      bool
	}{
		{"super user without any ACL", "User:admin", "1.2.3.4", OpDelete, ResourceTopic, "nothing-here", true},
		{"ALLOW Read grants Read", "User:alice", "1.2.3.4", OpRead, ResourceTopic, "foo", true},
		{"... not Write", "User:alice", "1.2.3.4", OpWrite, ResourceTopic, "foo", false},
		{"... and implies Describe", "User:alice", "1.2.3.4", OpDescribe, ResourceTopic, "foo", true},
		{"another user has nothing", "User:bob", "1.2.3.4", OpRead, ResourceTopic, "foo", false},
		{"DENY Read wins over ALLOW All", "User:carol", "1.2.3.4", OpRead, ResourceTopic, "foo", false},
		{"... but does not deny Describe (ALLOW-only implication)", "User:carol", "1.2.3.4", OpDescribe, ResourceTopic, "foo", true},
		{"ALLOW All grants Write", "User:carol", "1.2.3.4", OpWrite, ResourceTopic, "foo", true},
		{"a host-bound ACL from its host", "User:dave", "10.0.0.1", OpWrite, ResourceTopic, "foo", true},
		{"... from another host", "User:dave", "10.0.0.2", OpWrite, ResourceTopic, "foo", false},
		{"IPv6 host as Go writes it", "User:erin", "::1", OpWrite, ResourceTopic, "foo", true},
		{"AlterConfigs implies DescribeConfigs", "User:frank", "1.2.3.4", OpDescribeConfigs, ResourceTopic, "foo", true},
		{"... not Describe", "User:frank", "1.2.3.4", OpDescribe, ResourceTopic, "foo", false},
		{"LITERAL * covers every topic", "User:gina", "1.2.3.4", OpDescribe, ResourceTopic, "anything", true},
		{"PREFIXED p covers p-1", "User:hank", "1.2.3.4", OpWrite, ResourceTopic, "p-1", true},
		{"PREFIXED p does not cover q", "User:hank", "1.2.3.4", OpWrite, ResourceTopic, "q", false},
		{"DENY User:* on All walls everyone", "User:alice", "1.2.3.4", OpRead, ResourceTopic, "walled", false},
		{"a Group ACL is not a Topic ACL", "User:ivan", "1.2.3.4", OpRead, ResourceTopic, "foo", false},
		{"the Group ACL itself", "User:ivan", "1.2.3.4", OpRead, ResourceGroup, "foo", true},
		{"no ACL on the resource: denied by default", "User:alice", "1.2.3.4", OpRead, ResourceGroup, "other", false},
	}
	for _, c := range cases {
		if got := a.Authorize(c.principal, c.host, c.op, c.typ, c.res); got != c.want {
			t.Errorf("%s: Authorize(%s, %s, %v, %v:%s) = %v, want %v", c.name, c.principal, c.host, c.op, c.typ, c.res, got, c.want)
		}
	}
}

func TestAllowEveryoneIfNoACLFound(t *testing.T) {
	a := New(Config{AllowEveryoneIfNoACLFound: true})
	if !a.Authorize("User:x", "1.1.1.1", OpWrite, ResourceTopic, "free") {
		t.Fatal("a resource without ACLs is closed with allow.everyone.if.no.acl.found=true")
	}
	a.SetACLs(lit(ResourceTopic, "owned"), []Entry{allow("User:owner", "*", OpWrite)})
	if a.Authorize("User:x", "1.1.1.1", OpWrite, ResourceTopic, "owned") {
		t.Fatal("a resource with ACLs is open to others with allow.everyone.if.no.acl.found=true")
	}
	a.SetACLs(lit(ResourceTopic, "owned"), nil)
	if !a.Authorize("User:x", "1.1.1.1", OpWrite, ResourceTopic, "owned") {
		t.Fatal("removing a resource's last ACL did not open it again")
	}
}

// KIP-430's bitfields: every supported operation without an authorizer (Kafka's values), the
// granted ones with it.
func TestAuthorizedOperations(t *testing.T) {
	for typ, want := range map[ResourceType]int32{ResourceTopic: 3576, ResourceGroup: 328, ResourceCluster: 8096, ResourceTransactionalID: 272, ResourceDelegationToken: 256} {
		if got := AuthorizedOperations(nil, "User:x", "1.1.1.1", typ, "r"); got != want {
			t.Errorf("%v without an authorizer: %d, want %d", typ, got, want)
		}
	}
	a := New(Config{})
	a.SetACLs(lit(ResourceTopic, "t"), []Entry{allow("User:x", "*", OpRead)})
	if got, want := AuthorizedOperations(a, "User:x", "1.1.1.1", ResourceTopic, "t"), int32(1<<OpRead|1<<OpDescribe); got != want {
		t.Errorf("Read granted: bits %b, want %b (Read and the Describe it implies)", got, want)
	}
}

func TestFilters(t *testing.T) {
	a := New(Config{})
	foo, star := lit(ResourceTopic, "foo"), lit(ResourceTopic, "*")
	pfo := Resource{Type: ResourceTopic, Name: "fo", Pattern: PatternPrefixed}
	pfoo := Resource{Type: ResourceTopic, Name: "foo", Pattern: PatternPrefixed}
	pfoox := Resource{Type: ResourceTopic, Name: "foox", Pattern: PatternPrefixed}
	gfoo := lit(ResourceGroup, "foo")
	for _, r := range []Resource{foo, star, pfo, pfoo, pfoox, gfoo} {
		a.SetACLs(r, []Entry{allow("User:alice", "*", OpRead), deny("User:bob", "*", OpRead)})
	}
	name := "foo"
	resources := func(f Filter) []Resource {
		seen := map[Resource]bool{}
		var out []Resource
		for _, b := range a.Bindings(f) {
			if !seen[b.Resource] {
				seen[b.Resource] = true
				out = append(out, b.Resource)
			}
		}
		return out
	}
	anyEntry := EntryFilter{Operation: OpAny, Permission: PermissionAny}
	cases := []struct {
		name string
		f    Filter
		want []Resource
	}{
		{"MATCH: what applies to topic foo", Filter{ResourceFilter{ResourceTopic, &name, PatternMatch}, anyEntry}, []Resource{star, foo, pfo, pfoo}},
		{"ANY: every pattern type named exactly foo", Filter{ResourceFilter{ResourceTopic, &name, PatternAny}, anyEntry}, []Resource{foo, pfoo}},
		{"LITERAL foo", Filter{ResourceFilter{ResourceTopic, &name, PatternLiteral}, anyEntry}, []Resource{foo}},
		{"any resource type named foo", Filter{ResourceFilter{ResourceAny, &name, PatternLiteral}, anyEntry}, []Resource{foo, gfoo}},
		{"every topic pattern", Filter{ResourceFilter{ResourceTopic, nil, PatternAny}, anyEntry}, []Resource{star, foo, pfo, pfoo, pfoox}},
	}
	for _, c := range cases {
		if got := resources(c.f); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
	bob := "User:bob"
	got := a.Bindings(Filter{ResourceFilter{ResourceTopic, &name, PatternLiteral}, EntryFilter{Principal: &bob, Operation: OpAny, Permission: Deny}})
	if len(got) != 1 || got[0].Entry != deny("User:bob", "*", OpRead) {
		t.Errorf("entry filter on principal and permission: %+v", got)
	}
	if got := a.Bindings(Filter{ResourceFilter{ResourceTopic, &name, PatternLiteral}, EntryFilter{Operation: OpWrite, Permission: PermissionAny}}); len(got) != 0 {
		t.Errorf("entry filter on an operation no ACL names: %+v", got)
	}
}

func TestValidateBinding(t *testing.T) {
	ok := Binding{Resource: lit(ResourceTopic, "t"), Entry: allow("User:a", "*", OpRead)}
	if err := ok.Validate(); err != nil {
		t.Fatalf("valid binding refused: %v", err)
	}
	bad := map[string]Binding{
		"cluster named otherwise": {Resource: lit(ResourceCluster, "c"), Entry: allow("User:a", "*", OpAlter)},
		"Read on the cluster":     {Resource: lit(ResourceCluster, ClusterName), Entry: allow("User:a", "*", OpRead)},
		"empty name":              {Resource: lit(ResourceTopic, ""), Entry: allow("User:a", "*", OpRead)},
		"principal without type":  {Resource: lit(ResourceTopic, "t"), Entry: allow("alice", "*", OpRead)},
		"MATCH pattern":           {Resource: Resource{Type: ResourceTopic, Name: "t", Pattern: PatternMatch}, Entry: allow("User:a", "*", OpRead)},
		"permission ANY":          {Resource: lit(ResourceTopic, "t"), Entry: Entry{Principal: "User:a", Host: "*", Operation: OpRead, Permission: PermissionAny}},
		"resource type ANY":       {Resource: lit(ResourceAny, "t"), Entry: allow("User:a", "*", OpRead)},
		"empty host":              {Resource: lit(ResourceTopic, "t"), Entry: allow("User:a", "", OpRead)},
	}
	for name, b := range bad {
		if err := b.Validate(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestParsing(t *testing.T) {
	su, err := ParseSuperUsers(" User:admin; User:CN=b1,O=Acme ;")
	if err != nil || !reflect.DeepEqual(su, []string{"User:admin", "User:CN=b1,O=Acme"}) {
		t.Fatalf("super.users: %v %v", su, err)
	}
	if _, err := ParseSuperUsers("admin"); err == nil {
		t.Fatal("a super user without a principal type accepted")
	}
	for s, want := range map[string]Operation{"Read": OpRead, "IDEMPOTENT_WRITE": OpIdempotentWrite, "describe-configs": OpDescribeConfigs, "all": OpAll} {
		if got, err := ParseOperation(s); err != nil || got != want {
			t.Errorf("ParseOperation(%q) = %v %v, want %v", s, got, err, want)
		}
	}
	if _, err := ParseOperation("Any"); err == nil {
		t.Error("ANY accepted as an ACL's operation")
	}
	if r, err := ParseResourceType("transactionalid"); err != nil || r != ResourceTransactionalID {
		t.Errorf("ParseResourceType: %v %v", r, err)
	}
	for in, want := range map[string]string{"::1": "0:0:0:0:0:0:0:1", "[fe80::1:0:0:ab]": "fe80:0:0:0:1:0:0:ab", "::ffff:10.1.2.3": "10.1.2.3", "10.1.2.3": "10.1.2.3", "*": "*"} {
		if got := NormalizeHost(in); got != want {
			t.Errorf("NormalizeHost(%q) = %q, want %q", in, got, want)
		}
	}
}
