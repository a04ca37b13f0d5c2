package controller

import (
	"fmt"
	"slices"
	"sync"
	"testing"
)

// roleLog records Config.OnRoleChange calls per broker.
type roleLog struct {
	mu  sync.Mutex
	got map[int32][]string
}

func (r *roleLog) hook(id int32) func(bool, int32) {
	return func(active bool, epoch int32) {
		r.mu.Lock()
		defer r.mu.Unlock()
		what := "resigned"
		if active {
			what = "elected"
		}
		r.got[id] = append(r.got[id], fmt.Sprintf("%s@%d", what, epoch))
	}
}

func (r *roleLog) of(id int32) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.got[id])
}

// The controller's own elected/resigned hook (the replication page's controller events,
// docs/replication-page.md): the winner is told its epoch once, the loser nothing; a failover
// tells the old controller it resigned at its epoch and the new one it won the next; a session
// expiry resigns.
func TestS9_RoleChangeHook(t *testing.T) {
	h := newHarness(t)
	roles := &roleLog{got: map[int32][]string{}}
	h.cfg = func(id int32, c *Config) { c.OnRoleChange = roles.hook(id) }
	h.register(1)
	h.register(2)
	h.startController(1)
	h.startController(2)
	h.until("one active controller", func() bool { return h.active() != -1 })
	first := h.active()
	second := int32(3) - first
	if got := roles.of(first); !slices.Equal(got, []string{"elected@1"}) {
		t.Fatalf("controller %d was told %v, want [elected@1]", first, got)
	}
	if got := roles.of(second); len(got) != 0 {
		t.Fatalf("broker %d, not elected, was told %v", second, got)
	}

	h.kill(first)
	h.until("the failover", func() bool { return h.active() == second })
	if got := roles.of(first); !slices.Equal(got, []string{"elected@1", "resigned@1"}) {
		t.Errorf("old controller %d was told %v, want [elected@1 resigned@1]", first, got)
	}
	if got := roles.of(second); !slices.Equal(got, []string{"elected@2"}) {
		t.Fatalf("new controller %d was told %v, want [elected@2]", second, got)
	}

	h.ctl[second].Expire()
	h.until("the resignation", func() bool { return !h.ctl[second].IsActive() })
	if got := roles.of(second); !slices.Equal(got, []string{"elected@2", "resigned@2"}) {
		t.Errorf("expired controller %d was told %v, want [elected@2 resigned@2]", second, got)
	}
}
