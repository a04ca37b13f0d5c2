package acl

// Filter selects ACL bindings for DescribeAcls and DeleteAcls (Kafka's AclBindingFilter).
type Filter struct {
	Resource ResourceFilter
	Entry    EntryFilter
}

// ResourceFilter is Kafka's ResourcePatternFilter. Type ResourceAny matches every type; Name
// nil matches every name; Pattern PatternAny matches every pattern type with exactly Name,
// PatternMatch every pattern that would apply to the literal resource Name (the literal name,
// the literal "*" and the PREFIXED patterns that prefix it), LITERAL or PREFIXED only that type.
type ResourceFilter struct {
	Type    ResourceType
	Name    *string
	Pattern PatternType
}

// Matches is ResourcePatternFilter.matches.
func (f ResourceFilter) Matches(r Resource) bool {
	if f.Type != ResourceAny && f.Type != r.Type {
		return false
	}
	if f.Pattern != PatternAny && f.Pattern != PatternMatch && f.Pattern != r.Pattern {
		return false
	}
	if f.Name == nil {
		return true
	}
	if f.Pattern == PatternAny || f.Pattern == r.Pattern {
		return *f.Name == r.Name
	}
	switch r.Pattern { // f.Pattern is MATCH here
	case PatternLiteral:
		return *f.Name == r.Name || r.Name == WildcardResource
	case PatternPrefixed:
		return len(*f.Name) >= len(r.Name) && (*f.Name)[:len(r.Name)] == r.Name
	}
	return false
}

// EntryFilter is Kafka's AccessControlEntryFilter: nil Principal or Host match any; OpAny and
// PermissionAny match any.
type EntryFilter struct {
	Principal  *string
	Host       *string
	Operation  Operation
	Permission Permission
}

// Matches is AccessControlEntryFilter.matches.
func (f EntryFilter) Matches(e Entry) bool {
	return (f.Principal == nil || *f.Principal == e.Principal) &&
		(f.Host == nil || *f.Host == e.Host) &&
		(f.Operation == OpAny || f.Operation == e.Operation) &&
		(f.Permission == PermissionAny || f.Permission == e.Permission)
}
