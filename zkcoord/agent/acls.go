package agent

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/isrbroker/isrbroker/broker/security/acl"
	"github.com/isrbroker/isrbroker/zkcoord/zkclient"
	"github.com/isrbroker/isrbroker/zkcoord/zkdata"
	"github.com/sirupsen/logrus"
)

// The ACL store in ZooKeeper (Kafka 2.4's AclAuthorizer over ZkAclStore and the ACL change
// stores; docs/acls.md, zkcoord/zkdata/acl.go for the znodes). Load fills an authorizer's cache
// with every stored ACL; Watch follows both change-notification paths and reloads each resource
// pattern a notification names, so ACLs written by another broker or by a tool take effect
// here; Update changes one pattern's ACLs with a conditional write, then notifies the others.

// ACLSink receives the ACLs of one resource pattern (*acl.Authorizer implements it).
type ACLSink interface {
	SetACLs(r acl.Resource, entries []acl.Entry)
}

const (
	// aclUpdateRetries and aclUpdateBackoff are Kafka's: a conditional ACL write retries up to
	// 10 times with a random 100–150 ms pause when another writer got there first.
	aclUpdateRetries = 10
	aclUpdateBackoff = 100 * time.Millisecond
)

// ACLStore reads and writes ACL znodes over one ZooKeeper session.
type ACLStore struct {
	conn zkclient.Conn
	log  logrus.FieldLogger
	wg   sync.WaitGroup
}

// NewACLStore returns the store over conn.
func NewACLStore(conn zkclient.Conn, log logrus.FieldLogger) *ACLStore {
	return &ACLStore{conn: conn, log: log.WithField("component", "acl-store")}
}

// Load hands every stored ACL to sink, one call per resource pattern. An undecodable znode is
// logged and skipped (as Kafka logs and skips it), so one bad node does not close the cluster.
func (s *ACLStore) Load(sink ACLSink) error {
	for _, pattern := range []string{zkdata.PatternLiteral, zkdata.PatternPrefixed} {
		store, _ := zkdata.ACLStorePath(pattern)
		for _, typ := range zkdata.ACLResourceTypes {
			names, err := s.conn.Children(store + "/" + typ)
			if errors.Is(err, zk.ErrNoNode) {
				continue
			}
			if err != nil {
				return err
			}
			for _, name := range names {
				if err := s.reload(sink, zkdata.ACLChange{ResourceType: typ, Name: name, PatternType: pattern}); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// Read returns the stored ACLs of one resource pattern and the znode's version (-1 when it does
// not exist).
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
		return nil, st.Version, &undecodableACLs{path: path, err: err}
	}
	entries, err := entriesFromZK(stored)
	if err != nil {
		return nil, st.Version, &undecodableACLs{path: path, err: err}
	}
	return entries, st.Version, nil
}

// Update replaces the ACLs of resource r by change(current), as Kafka's updateResourceAcls: a
// conditional create or set on the znode's version (retried when another writer changed it
// meanwhile), the znode deleted when no entry is left, then a change notification for the other
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

// Watch follows /kafka-acl-changes and /kafka-acl-extended-changes until the session's
// connection closes: each new notification reloads the pattern it names into sink;
// notifications older than 15 minutes are purged (Kafka's ZkNodeChangeNotificationListener).
// Notifications present when Watch starts are taken as covered by a Load done before.
func (s *ACLStore) Watch(sink ACLSink) {
	for _, changes := range []string{zkdata.PathACLChanges, zkdata.PathACLExtendedChanges} {
		// The notifications present now are the ones the Load covered: noted before Watch
		// returns, so that a change made right after is not taken for one of them.
		lastSeq, ctimes := int64(-2), map[int64]int64{}
		if _, err := s.followStep(sink, changes, &lastSeq, ctimes); err != nil {
			s.log.WithField("path", changes).WithError(err).Warn("reading ACL change notifications failed; the watcher retries")
			lastSeq = -2
		}
		s.wg.Add(1)
		go s.follow(sink, changes, lastSeq, ctimes)
	}
}

// Close waits for the watchers, which end with the connection.
func (s *ACLStore) Close() { s.wg.Wait() }

// follow is one change path's watcher goroutine; lastSeq -2 means not scanned yet.
func (s *ACLStore) follow(sink ACLSink, changes string, lastSeq int64, ctimes map[int64]int64) {
	defer s.wg.Done()
	done := s.conn.Done()
	for {
		watch, err := s.followStep(sink, changes, &lastSeq, ctimes)
		if err != nil && !isClosed(done) {
			s.log.WithField("path", changes).WithError(err).Warn("processing ACL change notifications failed; retrying")
		}
		var retry <-chan time.Time
		if watch == nil {
			retry = time.After(dynConfigRetry)
		}
		select {
		case <-done:
			return
		case <-watch:
		case <-retry:
		}
	}
}

// followStep processes the notifications above lastSeq, purges the old ones, and returns the
// re-armed children watch.
func (s *ACLStore) followStep(sink ACLSink, changes string, lastSeq *int64, ctimes map[int64]int64) (<-chan zk.Event, error) {
	if err := zkclient.CreateRecursive(s.conn, changes); err != nil {
		return nil, err
	}
	children, watch, err := s.conn.ChildrenW(changes)
	if err != nil {
		return nil, err
	}
	seqs := zkdata.ACLChangeSeqs(children)
	first := *lastSeq == -2
	if first {
		*lastSeq = -1
	}
	for _, seq := range seqs {
		if seq <= *lastSeq {
			continue
		}
		path := zkdata.ACLChangePath(changes, seq)
		data, st, err := s.conn.Get(path)
		if errors.Is(err, zk.ErrNoNode) {
			*lastSeq = seq
			continue
		}
		if err != nil {
			return nil, err
		}
		ctimes[seq] = st.Ctime
		*lastSeq = seq
		if first {
			continue // covered by the Load before Watch
		}
		c, err := zkdata.DecodeACLChange(changes, data)
		if err != nil {
			s.log.WithField("notification", path).WithError(err).Warn("ignoring malformed ACL change notification")
			continue
		}
		if err := s.reload(sink, c); err != nil {
			return nil, err
		}
	}
	cutoff := time.Now().Add(-configChangeExpiry).UnixMilli()
	for seq, ctime := range ctimes {
		if ctime >= cutoff || seq > *lastSeq {
			continue
		}
		if err := s.conn.Delete(zkdata.ACLChangePath(changes, seq), -1); err == nil || errors.Is(err, zk.ErrNoNode) {
			delete(ctimes, seq)
		}
	}
	return watch, nil
}

// reload reads one pattern's znode and hands it to sink (none when the znode is gone).
func (s *ACLStore) reload(sink ACLSink, c zkdata.ACLChange) error {
	r, err := resourceOf(c)
	if err != nil {
		s.log.WithError(err).Warn("ignoring ACLs of an unknown resource or pattern type")
		return nil
	}
	entries, _, err := s.Read(r)
	var bad *undecodableACLs
	if errors.As(err, &bad) {
		s.log.WithField("resource", r.String()).WithError(err).Warn("ignoring an undecodable ACL znode")
		return nil
	}
	if err != nil {
		return err
	}
	sink.SetACLs(r, entries)
	return nil
}

// undecodableACLs: an ACL znode whose data is not Kafka's JSON, or names an unknown operation.
type undecodableACLs struct {
	path string
	err  error
}

func (e *undecodableACLs) Error() string { return e.path + ": " + e.err.Error() }
func (e *undecodableACLs) Unwrap() error { return e.err }

func resourceOf(c zkdata.ACLChange) (acl.Resource, error) {
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
