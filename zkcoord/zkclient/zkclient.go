// Package zkclient is the small ZooKeeper interface (Conn) that the controller, the
// broker-side agents and the admin API of zkcoord use, and its implementation over a real
// ZooKeeper session (Client): chroot handling, the retry of requests while the connection is
// lost (Kafka's retryRequestUntilConnected) and the forwarding of session state changes. It
// owns the session; zkcoord/zkmem implements the same interface in memory for unit tests.
package zkclient

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
	metrics "github.com/rcrowley/go-metrics"
	"github.com/sirupsen/logrus"
)

// Conn is what zkcoord needs from ZooKeeper. Paths are chroot-relative. Multi takes
// *zk.CreateRequest, *zk.SetDataRequest, *zk.DeleteRequest and *zk.CheckVersionRequest
// with chroot-relative paths; when it fails, the results carry each op's error (nil for
// the ops before the failing one) and the returned error is the first failing op's. After
// Close, calls fail and Done is closed.
type Conn interface {
	Get(path string) ([]byte, *zk.Stat, error)
	GetW(path string) ([]byte, *zk.Stat, <-chan zk.Event, error)
	Exists(path string) (bool, *zk.Stat, error)
	ExistsW(path string) (bool, *zk.Stat, <-chan zk.Event, error)
	Children(path string) ([]string, error)
	ChildrenW(path string) ([]string, <-chan zk.Event, error)
	Create(path string, data []byte, flags int32) (string, error)
	Set(path string, data []byte, version int32) (*zk.Stat, error)
	Delete(path string, version int32) error
	Multi(ops ...any) ([]zk.MultiResponse, error)
	// SessionID is the current session (the owner of the ephemerals this client creates).
	SessionID() int64
	// Done is closed by Close.
	Done() <-chan struct{}
	Close()
}

// CreateRecursive creates path and its missing parents (persistent, no data), tolerating
// existing nodes.
func CreateRecursive(c Conn, path string) error {
	cur := ""
	for _, part := range strings.Split(strings.Trim(path, "/"), "/") {
		cur += "/" + part
		if _, err := c.Create(cur, nil, 0); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return err
		}
	}
	return nil
}

// ParseConnect splits zookeeper.connect "h:p[,h:p][/chroot]" into servers and chroot.
func ParseConnect(s string) (servers []string, chroot string, err error) {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '/'); i >= 0 {
		chroot = strings.TrimRight(s[i:], "/")
		s = s[:i]
	}
	for _, h := range strings.Split(s, ",") {
		if h = strings.TrimSpace(h); h != "" {
			servers = append(servers, h)
		}
	}
	if len(servers) == 0 {
		return nil, "", fmt.Errorf("zkcoord: zookeeper.connect %q names no server", s)
	}
	return servers, chroot, nil
}

// ErrNoSession means no ZooKeeper session could be established within the connection
// timeout (ZooKeeper down or unreachable).
var ErrNoSession = errors.New("zkcoord: no ZooKeeper session")

// Options configure Dial.
type Options struct {
	Servers        []string
	Chroot         string
	SessionTimeout time.Duration
	Dialer         zk.Dialer // nil: net.DialTimeout
	Log            logrus.FieldLogger
	// OnSession receives every session state change. It runs on go-zookeeper's connection
	// goroutine and must only enqueue, so session handling never blocks the client
	// (KAFKA-8532).
	OnSession func(zk.State)
	// Registry receives the session meters (metrics.go); nil: none.
	Registry metrics.Registry
}

// Client is a Conn over a real ZooKeeper session.
type Client struct {
	conn    *zk.Conn
	chroot  string
	timeout time.Duration
	done    chan struct{}
	once    sync.Once
}

var _ Conn = (*Client)(nil)

// Dial starts connecting; the session is established asynchronously (OnSession reports it).
func Dial(o Options) (*Client, error) {
	if o.Dialer == nil {
		o.Dialer = net.DialTimeout
	}
	if o.Log == nil {
		o.Log = logrus.StandardLogger()
	}
	onSession := o.OnSession
	mark := sessionMeters(o.Registry)
	conn, _, err := zk.Connect(o.Servers, o.SessionTimeout, zk.WithDialer(o.Dialer),
		zk.WithHostProvider(&nameHostProvider{}), // names resolved at each dial (hostprovider.go)
		zk.WithLogger(Logger{o.Log}), zk.WithLogInfo(false),
		zk.WithEventCallback(func(ev zk.Event) {
			if ev.Type != zk.EventSession {
				return
			}
			mark(ev.State)
			if onSession != nil {
				onSession(ev.State)
			}
		}))
	if err != nil {
		return nil, err
	}
	return &Client{conn: conn, chroot: o.Chroot, timeout: o.SessionTimeout, done: make(chan struct{})}, nil
}

// EnsureChroot creates the chroot and its parents when missing.
func (c *Client) EnsureChroot() error {
	if c.chroot == "" {
		return nil
	}
	cur := ""
	for _, part := range strings.Split(strings.Trim(c.chroot, "/"), "/") {
		cur += "/" + part
		err := c.retry(func() error {
			_, err := c.conn.Create(cur, nil, 0, zk.WorldACL(zk.PermAll))
			return err
		})
		if err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return fmt.Errorf("zkcoord: create chroot %s: %w", c.chroot, err)
		}
	}
	return nil
}

// retry runs op again while the connection is lost (Kafka's retryRequestUntilConnected),
// for at most the session timeout.
func (c *Client) retry(op func() error) error {
	deadline := time.Now().Add(c.timeout)
	for {
		err := op()
		if !errors.Is(err, zk.ErrConnectionClosed) && !errors.Is(err, zk.ErrNoServer) {
			return err
		}
		if time.Now().After(deadline) {
			return err
		}
		select {
		case <-c.done:
			return err
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (c *Client) p(path string) string { return c.chroot + path }

func (c *Client) Get(path string) (data []byte, st *zk.Stat, err error) {
	err = c.retry(func() error { data, st, err = c.conn.Get(c.p(path)); return err })
	return
}

func (c *Client) GetW(path string) (data []byte, st *zk.Stat, ch <-chan zk.Event, err error) {
	err = c.retry(func() error { data, st, ch, err = c.conn.GetW(c.p(path)); return err })
	return
}

func (c *Client) Exists(path string) (ok bool, st *zk.Stat, err error) {
	err = c.retry(func() error { ok, st, err = c.conn.Exists(c.p(path)); return err })
	return
}

func (c *Client) ExistsW(path string) (ok bool, st *zk.Stat, ch <-chan zk.Event, err error) {
	err = c.retry(func() error { ok, st, ch, err = c.conn.ExistsW(c.p(path)); return err })
	return
}

func (c *Client) Children(path string) (out []string, err error) {
	err = c.retry(func() error { out, _, err = c.conn.Children(c.p(path)); return err })
	return
}

func (c *Client) ChildrenW(path string) (out []string, ch <-chan zk.Event, err error) {
	err = c.retry(func() error { out, _, ch, err = c.conn.ChildrenW(c.p(path)); return err })
	return
}

func (c *Client) Create(path string, data []byte, flags int32) (string, error) {
	var out string
	err := c.retry(func() error {
		var err error
		out, err = c.conn.Create(c.p(path), data, flags, zk.WorldACL(zk.PermAll))
		return err
	})
	return strings.TrimPrefix(out, c.chroot), err
}

func (c *Client) Set(path string, data []byte, version int32) (st *zk.Stat, err error) {
	err = c.retry(func() error { st, err = c.conn.Set(c.p(path), data, version); return err })
	return
}

func (c *Client) Delete(path string, version int32) error {
	return c.retry(func() error { return c.conn.Delete(c.p(path), version) })
}

// Multi prefixes the ops' paths with the chroot (on copies) and runs them in one multi.
func (c *Client) Multi(ops ...any) (res []zk.MultiResponse, err error) {
	all := make([]any, 0, len(ops))
	for _, op := range ops {
		switch o := op.(type) {
		case *zk.CreateRequest:
			cp := *o
			cp.Path = c.p(o.Path)
			if cp.Acl == nil {
				cp.Acl = zk.WorldACL(zk.PermAll)
			}
			all = append(all, &cp)
		case *zk.SetDataRequest:
			cp := *o
			cp.Path = c.p(o.Path)
			all = append(all, &cp)
		case *zk.DeleteRequest:
			cp := *o
			cp.Path = c.p(o.Path)
			all = append(all, &cp)
		case *zk.CheckVersionRequest:
			cp := *o
			cp.Path = c.p(o.Path)
			all = append(all, &cp)
		default:
			return nil, fmt.Errorf("zkcoord: unknown multi op %T", op)
		}
	}
	err = c.retry(func() error { res, err = c.conn.Multi(all...); return err })
	return res, err
}

func (c *Client) SessionID() int64      { return c.conn.SessionID() }
func (c *Client) Done() <-chan struct{} { return c.done }

// Close ends the session, so the client's ephemerals vanish.
func (c *Client) Close() {
	c.once.Do(func() {
		close(c.done)
		c.conn.Close()
	})
}

// Logger routes go-zookeeper's messages to logrus at debug level.
type Logger struct{ L logrus.FieldLogger }

func (z Logger) Printf(format string, a ...interface{}) {
	z.L.WithField("component", "zookeeper").Debugf(format, a...)
}
