package acl

import (
	"fmt"
	"strings"
)

// Operation is Kafka's AclOperation (docs/acls.md); the codes are the wire's.
type Operation int8

const (
	OpUnknown         Operation = 0
	OpAny             Operation = 1 // filters only
	OpAll             Operation = 2
	OpRead            Operation = 3
	OpWrite           Operation = 4
	OpCreate          Operation = 5
	OpDelete          Operation = 6
	OpAlter           Operation = 7
	OpDescribe        Operation = 8
	OpClusterAction   Operation = 9
	OpDescribeConfigs Operation = 10
	OpAlterConfigs    Operation = 11
	OpIdempotentWrite Operation = 12
)

var opNames = map[Operation]string{
	OpAll: "All", OpRead: "Read", OpWrite: "Write", OpCreate: "Create", OpDelete: "Delete",
	OpAlter: "Alter", OpDescribe: "Describe", OpClusterAction: "ClusterAction",
	OpDescribeConfigs: "DescribeConfigs", OpAlterConfigs: "AlterConfigs", OpIdempotentWrite: "IdempotentWrite",
	OpAny: "Any", OpUnknown: "Unknown",
}

// String is the operation's name as Kafka writes it in the ACL znodes' JSON ("Read").
func (o Operation) String() string {
	if n, ok := opNames[o]; ok {
		return n
	}
	return fmt.Sprintf("Operation(%d)", int8(o))
}

// ParseOperation reads an operation name as Kafka's ACL JSON and kafka-acls.sh write it
// ("Read", "IdempotentWrite"); case and '_' are ignored, as Kafka's fromString does
// (kafka-acls.sh accepts "describe-configs" too: '-' is ignored as well).
func ParseOperation(s string) (Operation, error) {
	norm := func(s string) string {
		return strings.ToLower(strings.NewReplacer("_", "", "-", "").Replace(s))
	}
	for o, n := range opNames {
		if o != OpUnknown && o != OpAny && norm(n) == norm(s) {
			return o, nil
		}
	}
	return OpUnknown, fmt.Errorf("acl: unknown operation %q", s)
}

// ResourceType is Kafka's ResourceType.
type ResourceType int8

const (
	ResourceUnknown         ResourceType = 0
	ResourceAny             ResourceType = 1 // filters only
	ResourceTopic           ResourceType = 2
	ResourceGroup           ResourceType = 3
	ResourceCluster         ResourceType = 4
	ResourceTransactionalID ResourceType = 5
	ResourceDelegationToken ResourceType = 6
)

// ClusterName is the one cluster resource's name.
const ClusterName = "kafka-cluster"

var resourceNames = map[ResourceType]string{
	ResourceTopic: "Topic", ResourceGroup: "Group", ResourceCluster: "Cluster",
	ResourceTransactionalID: "TransactionalId", ResourceDelegationToken: "DelegationToken",
	ResourceAny: "Any", ResourceUnknown: "Unknown",
}

// String is the type's name as in the ACL znode paths (/kafka-acl/Topic/foo).
func (r ResourceType) String() string {
	if n, ok := resourceNames[r]; ok {
		return n
	}
	return fmt.Sprintf("ResourceType(%d)", int8(r))
}

// ParseResourceType reads a resource type name ("Topic", "TransactionalId"; case ignored).
func ParseResourceType(s string) (ResourceType, error) {
	for r, n := range resourceNames {
		if r != ResourceUnknown && r != ResourceAny && strings.EqualFold(n, s) {
			return r, nil
		}
	}
	return ResourceUnknown, fmt.Errorf("acl: unknown resource type %q", s)
}

// supportedOps is Kafka's ResourceType.supportedOperations: what an ACL on the type may grant
// and what KIP-430's authorized-operations bitfield reports.
var supportedOps = map[ResourceType][]Operation{
	ResourceTopic:           {OpRead, OpWrite, OpCreate, OpDescribe, OpDelete, OpAlter, OpDescribeConfigs, OpAlterConfigs},
	ResourceGroup:           {OpRead, OpDescribe, OpDelete},
	ResourceCluster:         {OpCreate, OpClusterAction, OpDescribeConfigs, OpAlterConfigs, OpIdempotentWrite, OpAlter, OpDescribe},
	ResourceTransactionalID: {OpDescribe, OpWrite},
	ResourceDelegationToken: {OpDescribe},
}

// SupportedOperations lists the operations an ACL on r may name (besides All).
func SupportedOperations(r ResourceType) []Operation { return supportedOps[r] }

// PatternType is Kafka's PatternType.
type PatternType int8

const (
	PatternUnknown  PatternType = 0
	PatternAny      PatternType = 1 // filters: any pattern type, the exact name
	PatternMatch    PatternType = 2 // filters: every pattern that matches the name
	PatternLiteral  PatternType = 3
	PatternPrefixed PatternType = 4
)

var patternNames = map[PatternType]string{
	PatternUnknown: "UNKNOWN", PatternAny: "ANY", PatternMatch: "MATCH", PatternLiteral: "LITERAL", PatternPrefixed: "PREFIXED",
}

func (p PatternType) String() string {
	if n, ok := patternNames[p]; ok {
		return n
	}
	return fmt.Sprintf("PatternType(%d)", int8(p))
}

// ParsePatternType reads "literal", "prefixed", "any", "match" (case ignored).
func ParsePatternType(s string) (PatternType, error) {
	for p, n := range patternNames {
		if p != PatternUnknown && strings.EqualFold(n, s) {
			return p, nil
		}
	}
	return PatternUnknown, fmt.Errorf("acl: unknown pattern type %q", s)
}

// Permission is Kafka's AclPermissionType.
type Permission int8

const (
	PermissionUnknown Permission = 0
	PermissionAny     Permission = 1 // filters only
	Deny              Permission = 2
	Allow             Permission = 3
)

func (p Permission) String() string {
	switch p {
	case Allow:
		return "Allow"
	case Deny:
		return "Deny"
	case PermissionAny:
		return "Any"
	}
	return "Unknown"
}

// ParsePermission reads "Allow" or "Deny" (case ignored).
func ParsePermission(s string) (Permission, error) {
	switch strings.ToLower(s) {
	case "allow":
		return Allow, nil
	case "deny":
		return Deny, nil
	}
	return PermissionUnknown, fmt.Errorf("acl: unknown permission type %q", s)
}

// WildcardResource is the LITERAL name that matches every resource of its type; WildcardPrincipal
// the principal that matches every user; WildcardHost every host.
const (
	WildcardResource  = "*"
	WildcardPrincipal = "User:*"
	WildcardHost      = "*"
)

// Resource is a resource pattern (Kafka's ResourcePattern): what an ACL is attached to.
type Resource struct {
	Type    ResourceType
	Name    string
	Pattern PatternType // LITERAL or PREFIXED
}

func (r Resource) String() string { return fmt.Sprintf("%s:%s:%s", r.Type, r.Pattern, r.Name) }

// Entry is one access control entry (Kafka's AccessControlEntry): who, from where, what, and
// whether it is allowed.
type Entry struct {
	Principal  string // "User:alice", or WildcardPrincipal
	Host       string // an IP address as Java writes it (NormalizeHost), or WildcardHost
	Operation  Operation
	Permission Permission
}

// Binding is an ACL: an entry on a resource pattern (Kafka's AclBinding).
type Binding struct {
	Resource Resource
	Entry    Entry
}

// Validate checks a binding to create as CreateAcls does: a known resource type, LITERAL or
// PREFIXED, a non-empty name ("kafka-cluster" for the cluster), a principal of the form
// Type:name, an operation the type supports (or All), Allow or Deny.
func (b Binding) Validate() error {
	r, e := b.Resource, b.Entry
	if _, ok := supportedOps[r.Type]; !ok {
		return fmt.Errorf("acl: invalid resource type %v", r.Type)
	}
	if r.Pattern != PatternLiteral && r.Pattern != PatternPrefixed {
		return fmt.Errorf("acl: invalid pattern type %v: LITERAL or PREFIXED", r.Pattern)
	}
	if r.Name == "" {
		return fmt.Errorf("acl: resource name must not be empty")
	}
	if r.Type == ResourceCluster && r.Name != ClusterName {
		return fmt.Errorf("acl: the only valid name for the CLUSTER resource is %s", ClusterName)
	}
	if _, _, err := ParsePrincipal(e.Principal); err != nil {
		return err
	}
	if e.Host == "" {
		return fmt.Errorf("acl: host must not be empty (use %q for any host)", WildcardHost)
	}
	if e.Operation != OpAll && !contains(supportedOps[r.Type], e.Operation) {
		return fmt.Errorf("acl: operation %v is not supported by resource type %v", e.Operation, r.Type)
	}
	if e.Permission != Allow && e.Permission != Deny {
		return fmt.Errorf("acl: invalid permission type %v", e.Permission)
	}
	return nil
}

// ParsePrincipal splits "User:alice" into its type and name (Kafka's
// SecurityUtils.parseKafkaPrincipal: the first ':' separates them; both must be non-empty).
func ParsePrincipal(s string) (typ, name string, err error) {
	i := strings.IndexByte(s, ':')
	if i <= 0 || i == len(s)-1 {
		return "", "", fmt.Errorf("acl: principal %q is not of the form <type>:<name> (User:alice)", s)
	}
	return s[:i], s[i+1:], nil
}

func contains(ops []Operation, o Operation) bool {
	for _, x := range ops {
		if x == o {
			return true
		}
	}
	return false
}
