package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/go-zookeeper/zk"
	"github.com/isrbroker/isrbroker/zkcoord/zkdata"
)

// TestFencedBatchIsolatesFailingGroups: groups are written in fenced multis of at most
// maxBatchOps ops; a group that fails (BADVERSION, NODEEXISTS) is found by retrying in halves
// and gets its own error while every other group is written; a stale epoch zkVersion fences
// the whole batch (K3).
func TestFencedBatchIsolatesFailingGroups(t *testing.T) {
	h, ct := newActiveHarness(t, 1)
	admin := h.srv.Connect(nil)
	t.Cleanup(admin.Close)
	const n = 2*maxBatchOps + 17
	if _, err := admin.Create("/batch", nil, 0); err != nil {
		t.Fatal(err)
	}
	// Two nodes exist already: their create groups must fail alone.
	for _, i := range []int{5, n - 3} {
		if _, err := admin.Create(fmt.Sprintf("/batch/%d", i), nil, 0); err != nil {
			t.Fatal(err)
		}
	}
	groups := make([][]any, n)
	for i := range groups {
		groups[i] = []any{&zk.CreateRequest{Path: fmt.Sprintf("/batch/%d", i), Data: []byte("x")}}
	}
	res, err := ct.zk.fencedBatch(groups)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		data, _, gerr := admin.Get(fmt.Sprintf("/batch/%d", i))
		switch {
		case i == 5 || i == n-3:
			if !errors.Is(r.err, zk.ErrNodeExists) || string(data) != "" {
				t.Fatalf("group %d: err %v data %q, want NODEEXISTS and the old node", i, r.err, data)
			}
		case r.err != nil || gerr != nil || string(data) != "x" || len(r.res) != 1:
			t.Fatalf("group %d: err %v, read %q %v, %d responses", i, r.err, data, gerr, len(r.res))
		}
	}
	// A compare-and-set group with a stale version fails alone too.
	sets := [][]any{
		{&zk.SetDataRequest{Path: "/batch/1", Data: []byte("y"), Version: 0}},
		{&zk.SetDataRequest{Path: "/batch/2", Data: []byte("y"), Version: 7}},
		{&zk.SetDataRequest{Path: "/batch/3", Data: []byte("y"), Version: 0}},
	}
	res, err = ct.zk.fencedBatch(sets)
	if err != nil || res[0].err != nil || !errors.Is(res[1].err, zk.ErrBadVersion) || res[2].err != nil {
		t.Fatalf("sets: %v %+v", err, res)
	}
	if res[0].res[0].Stat == nil || res[0].res[0].Stat.Version != 1 {
		t.Fatalf("set response %+v, want the new zkVersion 1", res[0].res)
	}
	// Fenced: a stale /controller_epoch zkVersion writes nothing.
	ct.ctx.epochZkVersion--
	defer func() { ct.ctx.epochZkVersion++ }()
	if _, err := ct.zk.fencedBatch([][]any{{&zk.CreateRequest{Path: "/batch/fenced"}}}); !errors.Is(err, ErrControllerMoved) {
		t.Fatalf("stale epoch: %v, want ErrControllerMoved", err)
	}
	if ok, _, _ := admin.Exists("/batch/fenced"); ok {
		t.Fatal("a fenced batch wrote")
	}
}

// TestK7_DeadBrokerLeavesIsrItRejoinedUnseen: after a controlled shutdown took broker 3 out of
// an ISR, its new leader put it back (broker 3 followed until it exited) and the controller
// has not seen that ISR change yet. When broker 3 dies the controller reads the states afresh
// (Kafka's doRemoveReplicasFromIsr) and removes it: no ISR keeps naming the stopped broker.
func TestK7_DeadBrokerLeavesIsrItRejoinedUnseen(t *testing.T) {
	h, ct := newActiveHarness(t, 3)
	h.createTopic("t", map[int32][]int32{0: {1, 2, 3}, 1: {2, 3, 1}}, nil)
	h.until("online", func() bool { return h.state("t", 0) != nil && h.state("t", 1) != nil })
	h.step()
	res := make(chan error, 1)
	go func() {
		_, err := ct.ControlledShutdown(context.Background(), 3, ct.ctx.live[3].Epoch)
		res <- err
	}()
	h.until("answer", func() bool { return len(res) == 1 })
	if err := <-res; err != nil {
		t.Fatal(err)
	}
	for p := int32(0); p < 2; p++ {
		if st := h.state("t", p); slices.Contains(st.ISR, 3) {
			t.Fatalf("partition %d after controlled shutdown: %+v", p, st)
		}
	}
	// The leaders re-add broker 3 behind the controller's back (no ISR change notification).
	for p := int32(0); p < 2; p++ {
		st := h.state("t", p)
		h.write(zkdata.PartitionStatePath("t", p), zkdata.EncodeState(st.Leader, st.LeaderEpoch, append(slices.Clone(st.ISR), 3), st.ControllerEpoch))
	}
	h.kill(3)
	h.until("broker 3 out of every ISR", func() bool {
		return !slices.Contains(h.state("t", 0).ISR, 3) && !slices.Contains(h.state("t", 1).ISR, 3)
	})
}
