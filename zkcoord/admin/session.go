package admin

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/rcrowley/go-metrics"
	"github.com/sirupsen/logrus"

	"github.com/isrbroker/isrbroker/zkcoord/internal/queue"
	"github.com/isrbroker/isrbroker/zkcoord/zkclient"
	"github.com/isrbroker/isrbroker/zkcoord/zkdata"
)

// ErrNoCluster means ZooKeeper answered but holds no isrbroker/Kafka cluster at the
// chroot (no /brokers/ids): usually a wrong --zookeeper chroot.
var ErrNoCluster = errors.New("zkcoord: no cluster found (no /brokers/ids znode; wrong chroot?)")

// Session is an operator tool's ZooKeeper session with the admin API over it: only the
// reads and the admin writes, no registration, agents or controller (Connect).
type Session struct {
	Reader *Reader   // set by Connect, never replaced
	Admin  *Admin    // marks topics for deletion whatever the brokers' delete.topic.enable says
	ACLs   *ACLStore // the ACL znodes (docs/acls.md), as Kafka's kafka-acls.sh writes them

	conn     *zkclient.Client
	log      logrus.FieldLogger
	sessQ    *queue.Queue[zk.State]
	firstSes chan struct{}
	done     chan struct{}
	once     sync.Once
	wg       sync.WaitGroup
}

// Connect opens a ZooKeeper session for an operator tool. Unlike the broker's session
// (zkcoord.Connect) it creates nothing (no chroot, persistent paths or cluster id): a tool
// pointed at the wrong ZooKeeper or chroot must not leave a cluster skeleton behind. It
// fails with zkclient.ErrNoSession when no session is established within timeout (each
// connection attempt is bounded by it too), and with ErrNoCluster when the chroot has no
// /brokers/ids. Admin may mark topics for deletion (Kafka's TopicCommand writes
// /admin/delete_topics/<t> whatever the brokers' delete.topic.enable says).
func Connect(ctx context.Context, connect string, timeout time.Duration, log logrus.FieldLogger) (*Session, error) {
	return dial(ctx, connect, timeout, log, true)
}

// ConnectWithoutCluster is Connect without the /brokers/ids check: ACLs may be written before
// the first broker registers, as Kafka's kafka-acls.sh writes them through its own authorizer
// whatever the chroot holds. It still creates nothing until the caller writes.
func ConnectWithoutCluster(ctx context.Context, connect string, timeout time.Duration, log logrus.FieldLogger) (*Session, error) {
	return dial(ctx, connect, timeout, log, false)
}

func dial(ctx context.Context, connect string, timeout time.Duration, log logrus.FieldLogger, requireCluster bool) (*Session, error) {
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	if log == nil {
		l := logrus.New()
		l.SetLevel(logrus.WarnLevel)
		log = l
	}
	servers, chroot, err := zkclient.ParseConnect(connect)
	if err != nil {
		return nil, err
	}
	s := &Session{
		log:      log.WithField("brokerId", int32(-1)),
		sessQ:    queue.New[zk.State](),
		firstSes: make(chan struct{}),
		done:     make(chan struct{}),
	}
	dialer := func(network, address string, t time.Duration) (net.Conn, error) {
		return net.DialTimeout(network, address, min(t, timeout))
	}
	s.conn, err = zkclient.Dial(zkclient.Options{Servers: servers, Chroot: chroot, SessionTimeout: timeout,
		Dialer: dialer, Log: s.log, OnSession: s.sessQ.Put, Registry: metrics.NewRegistry()})
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", zkclient.ErrNoSession, connect, err)
	}
	s.Reader = NewReader(s.conn, s.log)
	s.Admin = New(s.conn, s.Reader, true, s.log)
	s.ACLs = NewACLStore(s.conn)
	s.wg.Add(1)
	go s.sessionLoop()
	tctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	select {
	case <-s.firstSes:
	case <-tctx.Done():
		s.Close()
		return nil, fmt.Errorf("%w with %s within %v", zkclient.ErrNoSession, connect, timeout)
	}
	if !requireCluster {
		return s, nil
	}
	ok, _, err := s.conn.Exists(zkdata.PathBrokerIDs)
	if err != nil {
		s.Close()
		return nil, err
	}
	if !ok {
		s.Close()
		return nil, ErrNoCluster
	}
	return s, nil
}

// sessionLoop consumes the session's state changes: it reports the first session to
// Connect and logs expiries and new sessions (a tool re-registers nothing).
func (s *Session) sessionLoop() {
	defer s.wg.Done()
	first := true
	var last int64
	for {
		st, ok := s.sessQ.Get(s.done)
		if !ok {
			return
		}
		switch st {
		case zk.StateExpired:
			s.log.Warn("ZooKeeper session expired")
		case zk.StateHasSession:
			sid := s.conn.SessionID()
			if first {
				first = false
				last = sid
				close(s.firstSes)
				continue
			}
			if sid == last {
				continue // reconnected within the same session
			}
			last = sid
			s.log.WithField("sessionId", fmt.Sprintf("0x%x", sid)).Info("new ZooKeeper session established")
		}
	}
}

// Close closes the session. It is idempotent and always returns nil.
func (s *Session) Close() error {
	s.once.Do(func() {
		close(s.done)
		s.conn.Close()
		s.wg.Wait()
	})
	return nil
}
