// Package zkmem is an in-memory ZooKeeper double for unit tests: a Server holding a znode
// tree, and sessions (Conn, implementing zkcoord/zkclient.Conn) with one-shot data, exists
// and children watches, ephemeral znodes, sequential znodes, versions and czxids, atomic
// multi, and session expiry. It follows ZooKeeper's semantics where zkcoord depends on them;
// it has no ACLs, no chroot and no network, and it never loses a connection (only whole
// sessions expire).
package zkmem

import (
	"errors"
	"fmt"
	"maps"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/isrbroker/isrbroker/zkcoord/zkclient"
)

// ErrRuntimeInconsistency is the result of the ops after the failing one in a failed multi
// (ZooKeeper's RUNTIMEINCONSISTENCY).
var ErrRuntimeInconsistency = errors.New("zkmem: runtime inconsistency (an earlier op of the multi failed)")

type node struct {
	data     []byte
	stat     zk.Stat
	children map[string]struct{}
}

func (n *node) clone() *node {
	c := *n
	c.children = maps.Clone(n.children)
	return &c
}

type watchKind int

const (
	watchData   watchKind = iota // GetW, or ExistsW on an existing node
	watchExists                  // ExistsW on a missing node
	watchChildren
)

type watch struct {
	kind watchKind
	path string
	sess int64
	ch   chan zk.Event
}

// Server is one in-memory ZooKeeper ensemble. All methods are safe for concurrent use.
type Server struct {
	mu       sync.Mutex
	nodes    map[string]*node
	zxid     int64
	nextSess int64
	sessions map[int64]*Conn
	watches  []*watch
}

// NewServer returns a server holding only "/".
func NewServer() *Server {
	return &Server{
		nodes:    map[string]*node{"/": {children: map[string]struct{}{}}},
		nextSess: 0x1000,
		sessions: map[int64]*Conn{},
	}
}

// Connect opens a session. onSession (may be nil) receives StateHasSession now and the
// session changes Expire causes, on a goroutine of its own, in order.
func (s *Server) Connect(onSession func(zk.State)) *Conn {
	c := &Conn{srv: s, done: make(chan struct{}), states: make(chan zk.State, 64), onSession: onSession}
	s.mu.Lock()
	s.nextSess++
	c.id = s.nextSess
	s.sessions[c.id] = c
	s.mu.Unlock()
	go c.deliverStates()
	c.states <- zk.StateHasSession
	return c
}

// Expire expires c's session as ZooKeeper does after a session timeout: its ephemerals are
// deleted (firing watches), its watches end with EventNotWatching, and c reports
// StateExpired. Like go-zookeeper, c then gets a new session (StateHasSession).
func (s *Server) Expire(c *Conn) {
	s.mu.Lock()
	if c.closed {
		s.mu.Unlock()
		return
	}
	s.endSessionLocked(c)
	s.nextSess++
	c.id = s.nextSess
	s.sessions[c.id] = c
	s.mu.Unlock()
	c.states <- zk.StateExpired
	c.states <- zk.StateHasSession
}

// endSessionLocked deletes the session's ephemerals and ends its watches.
func (s *Server) endSessionLocked(c *Conn) {
	delete(s.sessions, c.id)
	var eph []string
	for p, n := range s.nodes {
		if n.stat.EphemeralOwner == c.id {
			eph = append(eph, p)
		}
	}
	sort.Strings(eph)
	var fire []fired
	for _, p := range eph {
		s.zxid++
		fire = append(fire, s.deleteLocked(p)...)
	}
	kept := s.watches[:0]
	for _, w := range s.watches {
		if w.sess == c.id {
			w.ch <- zk.Event{Type: zk.EventNotWatching, State: zk.StateDisconnected, Path: w.path, Err: zk.ErrSessionExpired}
			close(w.ch)
			continue
		}
		kept = append(kept, w)
	}
	s.watches = kept
	s.fireLocked(fire)
}

// Dump returns every znode path with its data (tests, debugging).
func (s *Server) Dump() map[string][]byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string][]byte, len(s.nodes))
	for p, n := range s.nodes {
		out[p] = append([]byte(nil), n.data...)
	}
	return out
}

func parent(p string) (string, string) {
	i := strings.LastIndexByte(p, '/')
	if i == 0 {
		return "/", p[1:]
	}
	return p[:i], p[i+1:]
}

func validPath(p string) error {
	if p == "" || p[0] != '/' || (len(p) > 1 && strings.HasSuffix(p, "/")) || strings.Contains(p, "//") {
		return fmt.Errorf("zkmem: invalid path %q", p)
	}
	return nil
}

// fired is one watch event to deliver after a successful write.
type fired struct {
	path  string
	typ   zk.EventType
	kinds []watchKind
}

func (s *Server) fireLocked(evs []fired) {
	for _, ev := range evs {
		kept := s.watches[:0]
		for _, w := range s.watches {
			match := w.path == ev.path
			if match {
				hit := false
				for _, k := range ev.kinds {
					hit = hit || k == w.kind
				}
				match = hit
			}
			if match {
				w.ch <- zk.Event{Type: ev.typ, State: zk.StateHasSession, Path: ev.path}
				close(w.ch)
				continue
			}
			kept = append(kept, w)
		}
		s.watches = kept
	}
}

func (s *Server) createLocked(sess int64, path string, data []byte, flags int32) (string, []fired, error) {
	if err := validPath(path); err != nil || path == "/" {
		return "", nil, zk.ErrBadArguments
	}
	par, _ := parent(path)
	pn, ok := s.nodes[par]
	if !ok {
		return "", nil, zk.ErrNoNode
	}
	if pn.stat.EphemeralOwner != 0 {
		return "", nil, zk.ErrNoChildrenForEphemerals
	}
	if flags&zk.FlagSequence != 0 {
		path = fmt.Sprintf("%s%010d", path, pn.stat.Cversion)
	}
	if _, ok := s.nodes[path]; ok {
		return "", nil, zk.ErrNodeExists
	}
	s.zxid++
	now := time.Now().UnixMilli()
	n := &node{data: append([]byte(nil), data...), children: map[string]struct{}{}}
	n.stat = zk.Stat{Czxid: s.zxid, Mzxid: s.zxid, Pzxid: s.zxid, Ctime: now, Mtime: now, DataLength: int32(len(data))}
	if flags&zk.FlagEphemeral != 0 {
		n.stat.EphemeralOwner = sess
	}
	s.nodes[path] = n
	_, name := parent(path)
	pn.children[name] = struct{}{}
	pn.stat.Cversion++
	pn.stat.NumChildren = int32(len(pn.children))
	pn.stat.Pzxid = s.zxid
	return path, []fired{
		{path: path, typ: zk.EventNodeCreated, kinds: []watchKind{watchExists}},
		{path: par, typ: zk.EventNodeChildrenChanged, kinds: []watchKind{watchChildren}},
	}, nil
}

func (s *Server) setLocked(path string, data []byte, version int32) (*zk.Stat, []fired, error) {
	n, ok := s.nodes[path]
	if !ok {
		return nil, nil, zk.ErrNoNode
	}
	if version != -1 && version != n.stat.Version {
		return nil, nil, zk.ErrBadVersion
	}
	s.zxid++
	n.data = append([]byte(nil), data...)
	n.stat.Version++
	n.stat.Mzxid = s.zxid
	n.stat.Mtime = time.Now().UnixMilli()
	n.stat.DataLength = int32(len(data))
	st := n.stat
	return &st, []fired{{path: path, typ: zk.EventNodeDataChanged, kinds: []watchKind{watchData}}}, nil
}

func (s *Server) checkDeleteLocked(path string, version int32) error {
	n, ok := s.nodes[path]
	if !ok || path == "/" {
		return zk.ErrNoNode
	}
	if version != -1 && version != n.stat.Version {
		return zk.ErrBadVersion
	}
	if len(n.children) > 0 {
		return zk.ErrNotEmpty
	}
	return nil
}

// deleteLocked removes path (checked by the caller) and returns the watch events.
func (s *Server) deleteLocked(path string) []fired {
	delete(s.nodes, path)
	par, name := parent(path)
	if pn, ok := s.nodes[par]; ok {
		delete(pn.children, name)
		pn.stat.Cversion++
		pn.stat.NumChildren = int32(len(pn.children))
		pn.stat.Pzxid = s.zxid
	}
	return []fired{
		{path: path, typ: zk.EventNodeDeleted, kinds: []watchKind{watchData, watchChildren}},
		{path: par, typ: zk.EventNodeChildrenChanged, kinds: []watchKind{watchChildren}},
	}
}

var _ zkclient.Conn = (*Conn)(nil)
