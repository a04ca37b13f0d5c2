package acl

import (
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// Config is the authorizer's part of server.properties.
type Config struct {
	// SuperUsers are principals allowed everything (super.users, e.g. "User:admin").
	SuperUsers []string
	// AllowEveryoneIfNoACLFound: a resource without any matching ACL is open to all
	// (allow.everyone.if.no.acl.found, default false).
	AllowEveryoneIfNoACLFound bool
}

// ParseSuperUsers reads super.users: principals separated by ';' (Kafka splits on ';' because
// a certificate's DN holds ','), blanks around each ignored.
func ParseSuperUsers(s string) ([]string, error) {
	var out []string
	for _, p := range strings.Split(s, ";") {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		if _, _, err := ParsePrincipal(p); err != nil {
			return nil, fmt.Errorf("super.users: %w", err)
		}
		out = append(out, p)
	}
	return out, nil
}

// Authorizer is one broker's ACL cache and Kafka's AclAuthorizer decision over it. The cache is
// filled by its owner (zkcoord loads /kafka-acl and follows the change notifications) through
// SetACLs; Authorize and the filters read it. Safe for concurrent use.
type Authorizer struct {
	superUsers   map[string]bool
	allowIfNoACL bool

	mu   sync.RWMutex
	acls map[Resource][]Entry // by pattern; an empty set is never kept
}

// New returns an authorizer with no ACLs.
func New(cfg Config) *Authorizer {
	a := &Authorizer{superUsers: map[string]bool{}, allowIfNoACL: cfg.AllowEveryoneIfNoACLFound, acls: map[Resource][]Entry{}}
	for _, p := range cfg.SuperUsers {
		a.superUsers[p] = true
	}
	return a
}

// SetACLs replaces the entries of one resource pattern (none removes it), as a reload of its
// znode does.
func (a *Authorizer) SetACLs(r Resource, entries []Entry) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(entries) == 0 {
		delete(a.acls, r)
		return
	}
	a.acls[r] = append([]Entry(nil), entries...)
}

// ACLs returns the entries of one resource pattern.
func (a *Authorizer) ACLs(r Resource) []Entry {
	a.mu.RLock()
	defer a.mu.RUnlock()
	return append([]Entry(nil), a.acls[r]...)
}

// IsSuperUser reports whether principal is in super.users.
func (a *Authorizer) IsSuperUser(principal string) bool { return a.superUsers[principal] }

// Authorize decides whether principal, connected from host (an IP address; NormalizeHost), may
// perform op on the LITERAL resource typ:name (requests always name literal resources). Kafka
// 2.4's AclAuthorizer.authorizeAction (docs/acls.md):
//  1. a super user may do anything;
//  2. the candidate ACLs are those of LITERAL "*", LITERAL name and every PREFIXED pattern that
//     is a prefix of name, of the same resource type;
//  3. no candidate: allow.everyone.if.no.acl.found decides;
//  4. a DENY matching the principal (or User:*), the host (or *) and op (or All) denies;
//  5. an ALLOW for op, or for an operation that implies it, allows: Describe is implied by
//     Read, Write, Delete and Alter, DescribeConfigs by AlterConfigs, and All implies every
//     operation. Implication is ALLOW-only: a DENY on Read does not deny Describe;
//  6. otherwise denied.
func (a *Authorizer) Authorize(principal, host string, op Operation, typ ResourceType, name string) bool {
	if a.superUsers[principal] {
		return true
	}
	host = NormalizeHost(host)
	a.mu.RLock()
	defer a.mu.RUnlock()
	candidates := a.matchingLocked(typ, name)
	if len(candidates) == 0 {
		return a.allowIfNoACL
	}
	if matchingEntry(candidates, principal, host, op, Deny) {
		return false
	}
	for _, o := range impliedBy(op) {
		if matchingEntry(candidates, principal, host, o, Allow) {
			return true
		}
	}
	return false
}

// AuthorizedOperations is KIP-430's bitfield of the operations of typ's supported set that
// principal may perform on typ:name (bit 1<<code): what Metadata v8+ and DescribeGroups v3+
// answer when asked. authorizer nil (no authorizer configured) allows every supported one.
func AuthorizedOperations(a *Authorizer, principal, host string, typ ResourceType, name string) int32 {
	var bits int32
	for _, op := range supportedOps[typ] {
		if a == nil || a.Authorize(principal, host, op, typ, name) {
			bits |= 1 << uint(op)
		}
	}
	return bits
}

// impliedBy lists op and the operations whose ALLOW grants it.
func impliedBy(op Operation) []Operation {
	switch op {
	case OpDescribe:
		return []Operation{OpDescribe, OpRead, OpWrite, OpDelete, OpAlter}
	case OpDescribeConfigs:
		return []Operation{OpDescribeConfigs, OpAlterConfigs}
	}
	return []Operation{op}
}

// matchingLocked returns the entries of every pattern that matches the literal typ:name.
func (a *Authorizer) matchingLocked(typ ResourceType, name string) []Entry {
	var out []Entry
	out = append(out, a.acls[Resource{Type: typ, Name: WildcardResource, Pattern: PatternLiteral}]...)
	if name != WildcardResource {
		out = append(out, a.acls[Resource{Type: typ, Name: name, Pattern: PatternLiteral}]...)
	}
	for r, es := range a.acls {
		if r.Type == typ && r.Pattern == PatternPrefixed && strings.HasPrefix(name, r.Name) {
			out = append(out, es...)
		}
	}
	return out
}

// matchingEntry is Kafka's matchingAclExists.
func matchingEntry(es []Entry, principal, host string, op Operation, perm Permission) bool {
	for _, e := range es {
		if e.Permission == perm &&
			(e.Principal == principal || e.Principal == WildcardPrincipal) &&
			(e.Operation == op || e.Operation == OpAll) &&
			(e.Host == host || e.Host == WildcardHost) {
			return true
		}
	}
	return false
}

// Bindings returns every ACL the filter matches, sorted by resource and then entry (the order
// DescribeAcls answers in is not specified by Kafka; sorted keeps answers stable).
func (a *Authorizer) Bindings(f Filter) []Binding {
	a.mu.RLock()
	var out []Binding
	for r, es := range a.acls {
		if !f.Resource.Matches(r) {
			continue
		}
		for _, e := range es {
			if f.Entry.Matches(e) {
				out = append(out, Binding{Resource: r, Entry: e})
			}
		}
	}
	a.mu.RUnlock()
	return SortBindings(out)
}

// SortBindings sorts bs in place by resource pattern, then entry, and returns it.
func SortBindings(bs []Binding) []Binding {
	sort.Slice(bs, func(i, j int) bool { return bindingLess(bs[i], bs[j]) })
	return bs
}

func bindingLess(x, y Binding) bool {
	rx, ry := x.Resource, y.Resource
	if rx.Type != ry.Type {
		return rx.Type < ry.Type
	}
	if rx.Pattern != ry.Pattern {
		return rx.Pattern < ry.Pattern
	}
	if rx.Name != ry.Name {
		return rx.Name < ry.Name
	}
	ex, ey := x.Entry, y.Entry
	if ex.Principal != ey.Principal {
		return ex.Principal < ey.Principal
	}
	if ex.Host != ey.Host {
		return ex.Host < ey.Host
	}
	if ex.Operation != ey.Operation {
		return ex.Operation < ey.Operation
	}
	return ex.Permission < ey.Permission
}

// NormalizeHost writes an IP address as Java's InetAddress.getHostAddress does, the form
// Kafka's ACLs hold: IPv4 dotted (also for an IPv4-mapped IPv6 address), IPv6 as eight groups
// of lower-case hex without leading zeros and without "::" compression ("0:0:0:0:0:0:0:1", where
// Go writes "::1"). Anything that is not an IP address (the wildcard, a host name) is returned
// as it is.
func NormalizeHost(h string) string {
	ip := net.ParseIP(strings.Trim(h, "[]"))
	if ip == nil {
		return h
	}
	if v4 := ip.To4(); v4 != nil {
		return v4.String()
	}
	var b strings.Builder
	for i := 0; i < 16; i += 2 {
		if i > 0 {
			b.WriteByte(':')
		}
		b.WriteString(strconv.FormatUint(uint64(ip[i])<<8|uint64(ip[i+1]), 16))
	}
	return b.String()
}
