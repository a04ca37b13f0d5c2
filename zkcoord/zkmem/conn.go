package zkmem

import (
	"sort"

	"github.com/go-zookeeper/zk"
)

// Conn is one client session of a Server.
type Conn struct {
	srv       *Server
	id        int64 // guarded by srv.mu
	closed    bool  // guarded by srv.mu
	done      chan struct{}
	states    chan zk.State
	onSession func(zk.State)
}

func (c *Conn) deliverStates() {
	for {
		select {
		case st := <-c.states:
			if c.onSession != nil {
				c.onSession(st)
			}
		case <-c.done:
			return
		}
	}
}

// lock takes the server lock; it fails once the session is closed.
func (c *Conn) lock() error {
	c.srv.mu.Lock()
	if c.closed {
		c.srv.mu.Unlock()
		return zk.ErrClosing
	}
	return nil
}

func (c *Conn) addWatch(kind watchKind, path string) <-chan zk.Event {
	w := &watch{kind: kind, path: path, sess: c.id, ch: make(chan zk.Event, 1)}
	c.srv.watches = append(c.srv.watches, w)
	return w.ch
}

func (c *Conn) Get(path string) ([]byte, *zk.Stat, error) {
	data, st, _, err := c.get(path, false)
	return data, st, err
}

func (c *Conn) GetW(path string) ([]byte, *zk.Stat, <-chan zk.Event, error) {
	return c.get(path, true)
}

func (c *Conn) get(path string, w bool) ([]byte, *zk.Stat, <-chan zk.Event, error) {
	if err := c.lock(); err != nil {
		return nil, nil, nil, err
	}
	defer c.srv.mu.Unlock()
	n, ok := c.srv.nodes[path]
	if !ok {
		return nil, nil, nil, zk.ErrNoNode
	}
	st := n.stat
	var ch <-chan zk.Event
	if w {
		ch = c.addWatch(watchData, path)
	}
	return append([]byte(nil), n.data...), &st, ch, nil
}

func (c *Conn) Exists(path string) (bool, *zk.Stat, error) {
	ok, st, _, err := c.exists(path, false)
	return ok, st, err
}

func (c *Conn) ExistsW(path string) (bool, *zk.Stat, <-chan zk.Event, error) {
	return c.exists(path, true)
}

func (c *Conn) exists(path string, w bool) (bool, *zk.Stat, <-chan zk.Event, error) {
	if err := c.lock(); err != nil {
		return false, nil, nil, err
	}
	defer c.srv.mu.Unlock()
	n, ok := c.srv.nodes[path]
	var ch <-chan zk.Event
	if w {
		kind := watchExists
		if ok {
			kind = watchData
		}
		ch = c.addWatch(kind, path)
	}
	if !ok {
		return false, nil, ch, nil
	}
	st := n.stat
	return true, &st, ch, nil
}

func (c *Conn) Children(path string) ([]string, error) {
	out, _, err := c.children(path, false)
	return out, err
}

func (c *Conn) ChildrenW(path string) ([]string, <-chan zk.Event, error) {
	return c.children(path, true)
}

func (c *Conn) children(path string, w bool) ([]string, <-chan zk.Event, error) {
	if err := c.lock(); err != nil {
		return nil, nil, err
	}
	defer c.srv.mu.Unlock()
	n, ok := c.srv.nodes[path]
	if !ok {
		return nil, nil, zk.ErrNoNode
	}
	out := make([]string, 0, len(n.children))
	for name := range n.children {
		out = append(out, name)
	}
	sort.Strings(out)
	var ch <-chan zk.Event
	if w {
		ch = c.addWatch(watchChildren, path)
	}
	return out, ch, nil
}

func (c *Conn) Create(path string, data []byte, flags int32) (string, error) {
	if err := c.lock(); err != nil {
		return "", err
	}
	defer c.srv.mu.Unlock()
	out, evs, err := c.srv.createLocked(c.id, path, data, flags)
	if err == nil {
		c.srv.fireLocked(evs)
	}
	return out, err
}

func (c *Conn) Set(path string, data []byte, version int32) (*zk.Stat, error) {
	if err := c.lock(); err != nil {
		return nil, err
	}
	defer c.srv.mu.Unlock()
	st, evs, err := c.srv.setLocked(path, data, version)
	if err == nil {
		c.srv.fireLocked(evs)
	}
	return st, err
}

func (c *Conn) Delete(path string, version int32) error {
	if err := c.lock(); err != nil {
		return err
	}
	defer c.srv.mu.Unlock()
	if err := c.srv.checkDeleteLocked(path, version); err != nil {
		return err
	}
	c.srv.zxid++
	c.srv.fireLocked(c.srv.deleteLocked(path))
	return nil
}

// Multi applies ops atomically: on the first failure the tree is restored and no watch
// fires; the results then hold nil for the ops before the failing one, its error, and
// ErrRuntimeInconsistency for the ops after it.
func (c *Conn) Multi(ops ...any) ([]zk.MultiResponse, error) {
	if err := c.lock(); err != nil {
		return nil, err
	}
	defer c.srv.mu.Unlock()
	s := c.srv
	saved := make(map[string]*node, len(s.nodes))
	for p, n := range s.nodes {
		saved[p] = n.clone()
	}
	savedZxid := s.zxid
	res := make([]zk.MultiResponse, len(ops))
	var evs []fired
	for i, op := range ops {
		var err error
		var more []fired
		switch o := op.(type) {
		case *zk.CreateRequest:
			res[i].String, more, err = s.createLocked(c.id, o.Path, o.Data, o.Flags)
		case *zk.SetDataRequest:
			res[i].Stat, more, err = s.setLocked(o.Path, o.Data, o.Version)
		case *zk.DeleteRequest:
			if err = s.checkDeleteLocked(o.Path, o.Version); err == nil {
				s.zxid++
				more = s.deleteLocked(o.Path)
			}
		case *zk.CheckVersionRequest:
			n, ok := s.nodes[o.Path]
			switch {
			case !ok:
				err = zk.ErrNoNode
			case o.Version != -1 && n.stat.Version != o.Version:
				err = zk.ErrBadVersion
			}
		default:
			err = zk.ErrBadArguments
		}
		if err != nil {
			s.nodes, s.zxid = saved, savedZxid
			for j := range res {
				res[j] = zk.MultiResponse{}
				if j > i {
					res[j].Error = ErrRuntimeInconsistency
				}
			}
			res[i].Error = err
			return res, err
		}
		evs = append(evs, more...)
	}
	s.fireLocked(evs)
	return res, nil
}

func (c *Conn) SessionID() int64 {
	c.srv.mu.Lock()
	defer c.srv.mu.Unlock()
	return c.id
}

func (c *Conn) Done() <-chan struct{} { return c.done }

// Close ends the session: its ephemerals are deleted and its watches end.
func (c *Conn) Close() {
	c.srv.mu.Lock()
	if c.closed {
		c.srv.mu.Unlock()
		return
	}
	c.srv.endSessionLocked(c)
	c.closed = true
	close(c.done)
	c.srv.mu.Unlock()
}
