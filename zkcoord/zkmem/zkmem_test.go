package zkmem

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

func recv(t *testing.T, ch <-chan zk.Event) zk.Event {
	t.Helper()
	select {
	case ev := <-ch:
		return ev
	case <-time.After(5 * time.Second):
		t.Fatal("no watch event")
		return zk.Event{}
	}
}

func noEvent(t *testing.T, ch <-chan zk.Event) {
	t.Helper()
	select {
	case ev := <-ch:
		t.Fatalf("unexpected watch event %+v", ev)
	default:
	}
}

func TestCreateSetDeleteVersions(t *testing.T) {
	c := NewServer().Connect(nil)
	defer c.Close()
	if _, err := c.Create("/a/b", nil, 0); !errors.Is(err, zk.ErrNoNode) {
		t.Fatalf("create without parent: %v", err)
	}
	if _, err := c.Create("/a", []byte("x"), 0); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Create("/a", nil, 0); !errors.Is(err, zk.ErrNodeExists) {
		t.Fatalf("second create: %v", err)
	}
	_, st, _ := c.Get("/a")
	if st.Version != 0 || st.Czxid == 0 {
		t.Fatalf("stat after create: %+v", st)
	}
	if _, err := c.Set("/a", []byte("y"), 1); !errors.Is(err, zk.ErrBadVersion) {
		t.Fatalf("set with wrong version: %v", err)
	}
	st2, err := c.Set("/a", []byte("y"), 0)
	if err != nil || st2.Version != 1 || st2.Czxid != st.Czxid {
		t.Fatalf("set: %+v %v", st2, err)
	}
	if _, err := c.Create("/a/b", nil, 0); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete("/a", -1); !errors.Is(err, zk.ErrNotEmpty) {
		t.Fatalf("delete with children: %v", err)
	}
	if err := c.Delete("/a/b", 3); !errors.Is(err, zk.ErrBadVersion) {
		t.Fatalf("delete with wrong version: %v", err)
	}
	if err := c.Delete("/a/b", 0); err != nil {
		t.Fatal(err)
	}
}

func TestSequentialNames(t *testing.T) {
	c := NewServer().Connect(nil)
	defer c.Close()
	c.Create("/n", nil, 0)
	p1, _ := c.Create("/n/x_", nil, zk.FlagSequence)
	c.Create("/n/other", nil, 0)
	p2, _ := c.Create("/n/x_", nil, zk.FlagSequence)
	if p1 != "/n/x_0000000000" || p2 != "/n/x_0000000002" {
		t.Fatalf("sequential names %q %q (the parent's cversion, as in ZooKeeper)", p1, p2)
	}
}

func TestWatchesAreOneShot(t *testing.T) {
	s := NewServer()
	c := s.Connect(nil)
	defer c.Close()
	ok, _, ew, _ := c.ExistsW("/w")
	if ok {
		t.Fatal("exists")
	}
	c.Create("/w", nil, 0)
	if ev := recv(t, ew); ev.Type != zk.EventNodeCreated || ev.Path != "/w" {
		t.Fatalf("exists watch: %+v", ev)
	}
	_, cw, _ := c.ChildrenW("/w")
	_, _, dw, _ := c.GetW("/w")
	c.Set("/w", []byte("1"), -1)
	if ev := recv(t, dw); ev.Type != zk.EventNodeDataChanged {
		t.Fatalf("data watch: %+v", ev)
	}
	noEvent(t, cw)
	c.Create("/w/k", nil, 0)
	if ev := recv(t, cw); ev.Type != zk.EventNodeChildrenChanged {
		t.Fatalf("children watch: %+v", ev)
	}
	c.Create("/w/k2", nil, 0) // the children watch fired already: nothing more
	if _, open := <-cw; open {
		t.Fatal("children watch delivered twice")
	}
}

func TestExpireDeletesEphemeralsAndEndsWatches(t *testing.T) {
	s := NewServer()
	states := make(chan zk.State, 8)
	a := s.Connect(func(st zk.State) { states <- st })
	b := s.Connect(nil)
	defer a.Close()
	defer b.Close()
	if st := <-states; st != zk.StateHasSession {
		t.Fatalf("first state %v", st)
	}
	old := a.SessionID()
	if _, err := a.Create("/e", nil, zk.FlagEphemeral); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Create("/e/c", nil, 0); !errors.Is(err, zk.ErrNoChildrenForEphemerals) {
		t.Fatalf("child of an ephemeral: %v", err)
	}
	_, st, _ := b.Get("/e")
	if st.EphemeralOwner != old {
		t.Fatalf("owner %x, want %x", st.EphemeralOwner, old)
	}
	_, _, bw, _ := b.ExistsW("/e")
	_, aw, _ := a.ChildrenW("/")
	s.Expire(a)
	if ev := recv(t, bw); ev.Type != zk.EventNodeDeleted {
		t.Fatalf("other session's watch: %+v", ev)
	}
	if ev := recv(t, aw); ev.Type != zk.EventNotWatching {
		t.Fatalf("expired session's watch: %+v", ev)
	}
	if st1, st2 := <-states, <-states; st1 != zk.StateExpired || st2 != zk.StateHasSession {
		t.Fatalf("states %v %v", st1, st2)
	}
	if a.SessionID() == old {
		t.Fatal("same session id after expiry")
	}
}

func TestMultiIsAtomic(t *testing.T) {
	c := NewServer().Connect(nil)
	defer c.Close()
	c.Create("/epoch", []byte("1"), 0)
	_, _, w, _ := c.ExistsW("/x")
	res, err := c.Multi(
		&zk.CheckVersionRequest{Path: "/epoch", Version: 0},
		&zk.CreateRequest{Path: "/x"},
		&zk.SetDataRequest{Path: "/missing", Version: -1},
		&zk.CreateRequest{Path: "/y"})
	if !errors.Is(err, zk.ErrNoNode) {
		t.Fatalf("err %v", err)
	}
	got := []error{res[0].Error, res[1].Error, res[2].Error, res[3].Error}
	want := []error{nil, nil, zk.ErrNoNode, ErrRuntimeInconsistency}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("results %v, want %v", got, want)
	}
	if ok, _, _ := c.Exists("/x"); ok {
		t.Fatal("a failed multi left /x behind")
	}
	noEvent(t, w)
	res, err = c.Multi(&zk.CheckVersionRequest{Path: "/epoch", Version: 0},
		&zk.CreateRequest{Path: "/x"}, &zk.SetDataRequest{Path: "/epoch", Data: []byte("2"), Version: 0})
	if err != nil || res[1].String != "/x" || res[2].Stat.Version != 1 {
		t.Fatalf("multi: %+v %v", res, err)
	}
	recv(t, w)
	if _, err := c.Multi(&zk.CheckVersionRequest{Path: "/epoch", Version: 0}); !errors.Is(err, zk.ErrBadVersion) {
		t.Fatalf("stale check: %v", err)
	}
}

func TestClosedSessionFails(t *testing.T) {
	s := NewServer()
	c := s.Connect(nil)
	c.Create("/e", nil, zk.FlagEphemeral)
	c.Close()
	if _, _, err := c.Get("/"); !errors.Is(err, zk.ErrClosing) {
		t.Fatalf("get after close: %v", err)
	}
	if _, ok := s.Dump()["/e"]; ok {
		t.Fatal("ephemeral of a closed session survived")
	}
}
