package agent

import (
	"errors"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/isrbroker/isrbroker/broker/security/acl"
	"github.com/isrbroker/isrbroker/zkcoord/admin"
	"github.com/isrbroker/isrbroker/zkcoord/zkclient"
	"github.com/isrbroker/isrbroker/zkcoord/zkdata"
	"github.com/sirupsen/logrus"
)

// The ACL store in ZooKeeper (Kafka 2.4's AclAuthorizer over ZkAclStore and the ACL change
// stores; docs/acls.md, zkcoord/zkdata/acl.go for the znodes). Load fills an authorizer's cache
// with every stored ACL; Watch follows both change-notification paths and reloads each resource
// pattern a notification names, so ACLs written by another broker or by a tool (`isrbroker
// acls`, Kafka's kafka-acls.sh) take effect here. The reads and the conditional writes (Read,
// Update) are zkcoord/admin's ACLStore, shared with the operator tool.

// ACLSink receives the ACLs of one resource pattern (*acl.Authorizer implements it).
type ACLSink interface {
	SetACLs(r acl.Resource, entries []acl.Entry)
}

// ACLStore reads, writes (admin.ACLStore's Read and Update) and follows the ACL znodes over one
// ZooKeeper session.
type ACLStore struct {
	*admin.ACLStore
	conn zkclient.Conn
	log  logrus.FieldLogger
	wg   sync.WaitGroup
}

// NewACLStore returns the store over conn.
func NewACLStore(conn zkclient.Conn, log logrus.FieldLogger) *ACLStore {
	return &ACLStore{ACLStore: admin.NewACLStore(conn), conn: conn, log: log.WithField("component", "acl-store")}
}

// Load hands every stored ACL to sink, one call per resource pattern. An undecodable znode is
// logged and skipped (as Kafka logs and skips it), so one bad node does not close the cluster.
func (s *ACLStore) Load(sink ACLSink) error {
	patterns, err := s.Patterns()
	if err != nil {
		return err
	}
	for _, r := range patterns {
		if err := s.reload(sink, r); err != nil {
			return err
		}
	}
	return nil
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
		r, err := admin.ResourceOf(c)
		if err != nil {
			s.log.WithError(err).Warn("ignoring ACLs of an unknown resource or pattern type")
			continue
		}
		if err := s.reload(sink, r); err != nil {
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
func (s *ACLStore) reload(sink ACLSink, r acl.Resource) error {
	entries, _, err := s.Read(r)
	var bad *admin.UndecodableACLs
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
