package admin

import (
	"errors"
	"fmt"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/isrbroker/isrbroker/broker/security/acl"
	"github.com/isrbroker/isrbroker/zkcoord/zkclient"
	"github.com/isrbroker/isrbroker/zkcoord/zkdata"
)

// The ACL znodes' read and write side (Kafka 2.4's AclAuthorizer over ZkAclStore and the ACL
// change stores; docs/acls.md, zkcoord/zkdata/acl.go for the znodes), shared by the broker
// (zkcoord/agent's ACLStore loads through it and follows the change notifications; CreateAcls
// and DeleteAcls write through it) and `isrbroker acls --authorizer-properties`,
// as Kafka's kafka-acls.sh writes through its own AclAuthorizer: a write here is announced by a
// change notification, so every broker's cache follows.

const (
	// aclUpdateRetries and aclUpdateBackoff are Kafka's: a conditional ACL write retries up to
	// 10 times with a random 100–150 ms pause when another writer got there first.
	aclUpdateRetries = 10
	aclUpdateBackoff = 100 * time.Millisecond
)

// ACLStore reads and writes the ACL znodes over one ZooKeeper session.
type ACLStore struct {
	conn zkclient.Conn
}

// NewACLStore returns the store over conn.
func NewACLStore(conn zkclient.Conn) *ACLStore { return &ACLStore{conn: conn} }

// UndecodableACLs is an ACL znode whose data is not Kafka's JSON, or names an unknown operation
// or permission: the broker logs and skips it, as Kafka does.
type UndecodableACLs struct {
	Path string
	Err  error
}

func (e *UndecodableACLs) Error() string { return e.Path + ": " + e.Err.Error() }
func (e *UndecodableACLs) Unwrap() error { return e.Err }

// Patterns lists every resource pattern with an ACL znode (LITERAL ones first, each store in
// the order of zkdata.ACLResourceTypes), as Kafka's AclAuthorizer.loadCache walks them. A znode
// of an unknown resource type is not listed.
func (s *ACLStore) Patterns() ([]acl.Resource, error) {
	var out []acl.Resource
	for _, pattern := range []string{zkdata.PatternLiteral, zkdata.PatternPrefixed} {
		store, _ := zkdata.ACLStorePath(pattern)
		for _, typ := range zkdata.ACLResourceTypes {
			names, err := s.conn.Children(store + "/" + typ)
			if errors.Is(err, zk.ErrNoNode) {
				continue
			}
			if err != nil {
				return nil, err
			}
			for _, name := range names {
				r, err := ResourceOf(zkdata.ACLChange{ResourceType: typ, Name: name, PatternType: pattern})
				if err != nil {
					continue
				}
				out = append(out, r)
			}
		}
	}
	return out, nil
}

// Bindings returns every stored ACL the filter matches, sorted (acl.SortBindings). An
// undecodable znode is an error here: an operator tool reports it rather than hiding it.
func (s *ACLStore) Bindings(f acl.Filter) ([]acl.Binding, error) {
	patterns, err := s.Patterns()
	if err != nil {
		return nil, err
	}
	var out []acl.Binding
	for _, r := range patterns {
		if !f.Resource.Matches(r) {
			continue
		}
		entries, _, err := s.Read(r)
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			if f.Entry.Matches(e) {
				out = append(out, acl.Binding{Resource: r, Entry: e})
			}
		}
	}
	return acl.SortBindings(out), nil
}

// Read returns the stored ACLs of one resource pattern and the znode's version (-1 when it does
// not exist). Undecodable data is an *UndecodableACLs (with the version).
func (s *ACLStore) Read(r acl.Resource) ([]acl.Entry, int32, error) {
	path, err := zkdata.ACLPath(r.Pattern.String(), r.Type.String(), r.Name)
	if err != nil {
		return nil, -1, err
	}
	data, st, err := s.conn.Get(path)
	if errors.Is(err, zk.ErrNoNode) {
		return nil, -1, nil
	}
	if err != nil {
		return nil, -1, err
	}
	stored, err := zkdata.DecodeACLs(data)
	if err != nil {
		return nil, st.Version, &UndecodableACLs{Path: path, Err: err}
	}
	entries, err := entriesFromZK(stored)
	if err != nil {
		return nil, st.Version, &UndecodableACLs{Path: path, Err: err}
	}
	return entries, st.Version, nil
}

// Update replaces the ACLs of resource r by change(current), as Kafka's updateResourceAcls: a
// conditional create or set on the znode's version (retried when another writer changed it
// meanwhile), the znode deleted when no entry is left, then a change notification for the
// brokers. It returns the entries now stored; an unchanged set writes nothing.
func (s *ACLStore) Update(r acl.Resource, change func(current []acl.Entry) []acl.Entry) ([]acl.Entry, error) {
	path, err := zkdata.ACLPath(r.Pattern.String(), r.Type.String(), r.Name)
	if err != nil {
		return nil, err
	}
	for attempt := 0; ; attempt++ {
		cur, version, err := s.Read(r)
		if err != nil {
			return nil, err
		}
		next := dedupEntries(change(cur))
		if sameEntries(cur, next) {
			return next, nil
		}
		switch {
		case len(next) == 0:
			err = s.conn.Delete(path, version)
		case version < 0:
			if err = zkclient.CreateRecursive(s.conn, parentPath(path)); err == nil {
				_, err = s.conn.Create(path, zkdata.EncodeACLs(entriesToZK(next)), 0)
			}
		default:
			_, err = s.conn.Set(path, zkdata.EncodeACLs(entriesToZK(next)), version)
		}
		if errors.Is(err, zk.ErrBadVersion) || errors.Is(err, zk.ErrNodeExists) || (len(next) == 0 && errors.Is(err, zk.ErrNoNode)) {
			if attempt+1 >= aclUpdateRetries {
				return nil, fmt.Errorf("zkcoord: ACLs of %v changed concurrently %d times; giving up", r, aclUpdateRetries)
			}
			time.Sleep(aclUpdateBackoff + time.Duration(attempt%3)*25*time.Millisecond) // Kafka's 100-150 ms back-off between conditional retries
			continue
		}
		if err != nil {
			return nil, err
		}
		change := zkdata.ACLChange{ResourceType: r.Type.String(), Name: r.Name, PatternType: r.Pattern.String()}
		seqPath := zkdata.ACLChangeSequential(change.PatternType)
		if err := zkclient.CreateRecursive(s.conn, parentPath(seqPath+"x")); err != nil {
			return nil, err
		}
		if _, err := s.conn.Create(seqPath, zkdata.EncodeACLChange(change), zk.FlagSequence); err != nil {
			return nil, fmt.Errorf("zkcoord: ACLs of %v written, but the change notification failed: %w", r, err)
		}
		return next, nil
	}
}

// ResourceOf is the resource pattern a change notification (or a znode path's parts) names:
// a known resource type, LITERAL or PREFIXED.
func ResourceOf(c zkdata.ACLChange) (acl.Resource, error) {
	typ, err := acl.ParseResourceType(c.ResourceType)
	if err != nil {
		return acl.Resource{}, err
	}
	pt, err := acl.ParsePatternType(c.PatternType)
	if err != nil || (pt != acl.PatternLiteral && pt != acl.PatternPrefixed) {
		return acl.Resource{}, fmt.Errorf("zkcoord: ACL pattern type %q", c.PatternType)
	}
	return acl.Resource{Type: typ, Name: c.Name, Pattern: pt}, nil
}

func entriesFromZK(stored []zkdata.ACLEntry) ([]acl.Entry, error) {
	out := make([]acl.Entry, 0, len(stored))
	for _, e := range stored {
		op, err := acl.ParseOperation(e.Operation)
		if err != nil {
			return nil, err
		}
		perm, err := acl.ParsePermission(e.PermissionType)
		if err != nil {
			return nil, err
		}
		out = append(out, acl.Entry{Principal: e.Principal, Host: e.Host, Operation: op, Permission: perm})
	}
	return out, nil
}

func entriesToZK(entries []acl.Entry) []zkdata.ACLEntry {
	out := make([]zkdata.ACLEntry, 0, len(entries))
	for _, e := range entries {
		out = append(out, zkdata.ACLEntry{Principal: e.Principal, PermissionType: e.Permission.String(), Operation: e.Operation.String(), Host: e.Host})
	}
	return out
}

// dedupEntries keeps the first of equal entries (an ACL set is a set, as Kafka's).
func dedupEntries(es []acl.Entry) []acl.Entry {
	seen := make(map[acl.Entry]bool, len(es))
	out := es[:0:0]
	for _, e := range es {
		if !seen[e] {
			seen[e] = true
			out = append(out, e)
		}
	}
	return out
}

func sameEntries(a, b []acl.Entry) bool {
	if len(a) != len(b) {
		return false
	}
	set := make(map[acl.Entry]bool, len(a))
	for _, e := range a {
		set[e] = true
	}
	for _, e := range b {
		if !set[e] {
			return false
		}
	}
	return true
}

func parentPath(p string) string {
	for i := len(p) - 1; i > 0; i-- {
		if p[i] == '/' {
			return p[:i]
		}
	}
	return "/"
}
