package controller

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/isrbroker/isrbroker/zkcoord/zkdata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestS9_K3_ElectionFailoverAndFencing: one of three controllers wins /controller with
// /controller_epoch 1; when its session expires another wins epoch 2, and a write fenced by
// the old epoch's zkVersion fails with ErrControllerMoved.
func TestS9_K3_ElectionFailoverAndFencing(t *testing.T) {
	h := newHarness(t)
	for id := int32(1); id <= 3; id++ {
		h.register(id)
	}
	for id := int32(1); id <= 3; id++ {
		h.startController(id)
	}
	h.until("one active controller", func() bool { return h.active() != -1 })
	first := h.active()
	n := 0
	for _, ct := range h.ctl {
		if ct.IsActive() {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d active controllers", n)
	}
	old := h.ctl[first]
	if old.ctx.epoch != 1 {
		t.Fatalf("controller epoch %d, want 1", old.ctx.epoch)
	}
	oldVersion := old.ctx.epochZkVersion
	h.kill(first)
	h.until("a new controller", func() bool { a := h.active(); return a != -1 && a != first })
	next := h.ctl[h.active()]
	if next.ctx.epoch != 2 || next.ctx.epochZkVersion == oldVersion {
		t.Fatalf("new controller epoch %d (zkVersion %d), want 2 (not %d)", next.ctx.epoch, next.ctx.epochZkVersion, oldVersion)
	}
	// A zombie acting with the old epoch's zkVersion is fenced.
	zombie := New(next.conn, Config{BrokerID: first, Log: testLog(t)})
	zombie.ctx.epochZkVersion = oldVersion
	if _, err := zombie.zk.fencedMulti(&zk.CreateRequest{Path: "/zombie"}); !errors.Is(err, ErrControllerMoved) {
		t.Fatalf("fenced write with a stale epoch: %v", err)
	}
	if h.exists("/zombie") {
		t.Fatal("the fenced write happened")
	}
	h.checkTransitions()
}

// TestNewTopicBatchesOneRequestPerBroker: a new topic's partitions go New → Online (leader =
// first replica, ISR = the live replicas, leader epoch 0), each broker gets one LeaderAndIsr
// naming all its partitions with isNew, and the replicas are Online.
func TestNewTopicBatchesOneRequestPerBroker(t *testing.T) {
	h, ct := newActiveHarness(t, 3)
	h.until("senders idle", func() bool { return len(h.net.requests(1, false)) > 0 })
	h.net.resetAll()
	h.createTopic("t", map[int32][]int32{0: {1, 2, 3}, 1: {2, 3, 1}, 2: {3, 1, 2}}, nil)
	h.until("partitions online", func() bool { return h.state("t", 2) != nil })
	for p, leader := range []int32{1, 2, 3} {
		st := h.state("t", int32(p))
		if st.Leader != leader || st.LeaderEpoch != 0 || len(st.ISR) != 3 || st.ControllerEpoch != 1 {
			t.Fatalf("partition %d state %+v", p, st)
		}
		tp := TopicPartition{Topic: "t", Partition: int32(p)}
		if s := ct.psm.state(tp); s != OnlinePartition {
			t.Fatalf("partition %d in %v", p, s)
		}
		for _, r := range []int32{1, 2, 3} {
			if s := ct.rsm.state(tp, r); s != OnlineReplica {
				t.Fatalf("replica %d of partition %d in %v", r, p, s)
			}
		}
	}
	for id := int32(1); id <= 3; id++ {
		h.until("requests", func() bool { return len(leaderAndIsrs(h.net.requests(id, false))) > 0 })
		lis := leaderAndIsrs(h.net.requests(id, false))
		if len(lis) != 1 || len(lis[0].TopicStates) != 1 || len(lis[0].TopicStates[0].PartitionStates) != 3 {
			t.Fatalf("broker %d: %d LeaderAndIsr requests (want one with the 3 partitions): %+v", id, len(lis), lis)
		}
		for _, p := range lis[0].TopicStates[0].PartitionStates {
			if !p.IsNew || p.ZKVersion != 0 {
				t.Fatalf("broker %d: partition %+v not isNew/zkVersion 0", id, p)
			}
		}
	}
	h.checkTransitions()
}

// TestS9_K6_BrokerFailureElectsFromISR: a dead leader is replaced by the next live ISR
// member with the leader epoch bumped and the dead broker out of the ISR; with no live ISR
// member the partition goes offline (leader -1, the ISR keeps a member) unless the topic
// enables unclean election, which picks a live replica outside the ISR.
func TestS9_K6_BrokerFailureElectsFromISR(t *testing.T) {
	h, ct := newActiveHarness(t, 3)
	h.createTopic("clean", map[int32][]int32{0: {2, 3, 1}}, nil)
	h.createTopic("dirty", map[int32][]int32{0: {2, 3}}, map[string]string{"unclean.leader.election.enable": "true"})
	h.createTopic("strict", map[int32][]int32{0: {2, 3}}, nil)
	h.until("online", func() bool {
		return h.state("clean", 0) != nil && h.state("dirty", 0) != nil && h.state("strict", 0) != nil
	})

	// Take broker 3 out of the ISR of "dirty" and "strict", as its leader would.
	for _, topic := range []string{"dirty", "strict"} {
		st := h.state(topic, 0)
		h.write(zkdata.PartitionStatePath(topic, 0), zkdata.EncodeState(st.Leader, st.LeaderEpoch, []int32{2}, st.ControllerEpoch))
		tp := TopicPartition{Topic: topic, Partition: 0}
		h.until("cache refreshed", func() bool {
			if err := ct.zk.loadState(tp); err != nil {
				t.Fatal(err)
			}
			return len(ct.ctx.states[tp].isr) == 1
		})
	}

	h.kill(2)
	h.until("elections", func() bool {
		return h.state("clean", 0).Leader == 3 && h.state("dirty", 0).Leader == 3 && h.state("strict", 0).Leader == -1
	})
	if st := h.state("clean", 0); st.LeaderEpoch != 1 || !slices.Equal(st.ISR, []int32{3, 1}) {
		t.Fatalf("clean: %+v, want leader 3, epoch 1, ISR [3 1]", st)
	}
	if st := h.state("dirty", 0); st.LeaderEpoch != 1 || !slices.Equal(st.ISR, []int32{3}) {
		t.Fatalf("dirty (unclean): %+v, want leader 3, ISR [3]", st)
	}
	if st := h.state("strict", 0); st.LeaderEpoch != 1 || !slices.Equal(st.ISR, []int32{2}) {
		t.Fatalf("strict: %+v, want leader -1 and the ISR kept at [2]", st)
	}
	tp := func(topic string) TopicPartition { return TopicPartition{Topic: topic, Partition: 0} }
	if s := ct.psm.state(tp("strict")); s != OfflinePartition {
		t.Fatalf("strict partition in %v, want OfflinePartition", s)
	}
	if s := ct.psm.state(tp("clean")); s != OnlinePartition {
		t.Fatalf("clean partition in %v", s)
	}
	if s := ct.rsm.state(tp("clean"), 2); s != OfflineReplica {
		t.Fatalf("replica on the dead broker in %v", s)
	}
	if got := ct.mUnclean.Count(); got != 1 {
		t.Fatalf("UncleanLeaderElectionsPerSec count %d, want 1", got)
	}

	// Broker 2 returns: its replicas go online and get LeaderAndIsr.
	h.net.resetAll()
	h.register(2)
	h.until("LeaderAndIsr to the returning broker", func() bool { return len(leaderAndIsrs(h.net.requests(2, false))) > 0 })
	if s := ct.rsm.state(tp("clean"), 2); s != OnlineReplica {
		t.Fatalf("replica on the returned broker in %v", s)
	}
	h.until("strict elected again", func() bool { return h.state("strict", 0).Leader == 2 })
	h.checkTransitions()
}

// TestS22_TopicDeletionWaitsForOfflineReplica: a topic with a replica on a dead broker is
// ineligible for deletion (znodes kept, replica ReplicaDeletionIneligible) until the broker
// returns; its live replicas get StopReplica(delete=true) at once, the returning broker's on
// its startup, and the znodes go away once both answered.
func TestS22_TopicDeletionWaitsForOfflineReplica(t *testing.T) {
	h, ct := newActiveHarness(t, 3)
	h.createTopic("doomed", map[int32][]int32{0: {2, 3}}, map[string]string{"retention.ms": "1000"})
	h.until("online", func() bool { return h.state("doomed", 0) != nil })
	h.kill(3)
	tp := TopicPartition{Topic: "doomed", Partition: 0}
	h.until("replica offline", func() bool { return ct.rsm.state(tp, 3) == OfflineReplica })
	h.net.resetAll()
	h.write(zkdata.DeleteTopicPath("doomed"), nil)
	// Broker 2 answers StopReplica(delete=true); the replica on the dead broker 3 is ineligible
	// (then reset to OfflineReplica for the retry once no answer is awaited).
	h.until("live replica deleted", func() bool { return ct.rsm.state(tp, 2) == ReplicaDeletionSuccessful })
	if s := ct.rsm.state(tp, 3); s != ReplicaDeletionIneligible && s != OfflineReplica {
		t.Fatalf("replica on the dead broker in %v, want ReplicaDeletionIneligible or OfflineReplica", s)
	}
	if !h.exists(zkdata.TopicPath("doomed")) || !h.exists(zkdata.TopicConfigPath("doomed")) {
		t.Fatal("topic znodes removed while a replica's broker is offline")
	}
	h.until("StopReplica(delete) to the live replica", func() bool {
		for _, s := range stopReplicas(h.net.requests(2, false)) {
			if s.DeletePartitions {
				return true
			}
		}
		return false
	})
	// UpdateMetadata names the topic with leader -2.
	h.until("UpdateMetadata with LeaderDuringDelete", func() bool {
		for _, r := range h.net.requests(1, false) {
			if um, ok := r.(*kmsg.UpdateMetadataRequest); ok {
				for _, ts := range um.TopicStates {
					for _, p := range ts.PartitionStates {
						if ts.Topic == "doomed" && p.Leader == zkdata.LeaderDuringDelete {
							return true
						}
					}
				}
			}
		}
		return false
	})
	h.register(3)
	h.until("topic deleted", func() bool {
		return !h.exists(zkdata.TopicPath("doomed")) && !h.exists(zkdata.TopicConfigPath("doomed")) && !h.exists(zkdata.DeleteTopicPath("doomed"))
	})
	if ct.psm.state(tp) != NonExistentPartition || ct.rsm.state(tp, 3) != NonExistentReplica {
		t.Fatalf("after deletion: partition %v, replica %v", ct.psm.state(tp), ct.rsm.state(tp, 3))
	}
	if len(ct.rsm.states) != 0 || len(ct.psm.states) != 0 {
		t.Fatalf("states left after deletion: %v %v", ct.psm.states, ct.rsm.states)
	}
	h.checkTransitions()
}

// TestK7_ControlledShutdown: the shutting-down broker's leaderships move to another ISR member
// and it leaves the ISRs it follows in (StopReplica(delete=false) to it, replica Offline); a
// partition without another ISR member is reported as remaining; a stale broker epoch is
// refused.
func TestK7_ControlledShutdown(t *testing.T) {
	h, ct := newActiveHarness(t, 3)
	h.createTopic("s", map[int32][]int32{0: {2, 3}, 1: {3, 2}, 2: {2}}, nil)
	h.until("online", func() bool { return h.state("s", 2) != nil })
	h.step()
	h.net.resetAll()
	epoch := ct.ctx.live[2].Epoch

	res := make(chan error, 1)
	var remaining []TopicPartition
	go func() {
		var err error
		remaining, err = ct.ControlledShutdown(context.Background(), 2, epoch-1)
		res <- err
	}()
	h.until("answer", func() bool { return len(res) == 1 })
	if err := <-res; !errors.Is(err, ErrStaleBrokerEpoch) {
		t.Fatalf("stale epoch: %v", err)
	}
	go func() {
		var err error
		remaining, err = ct.ControlledShutdown(context.Background(), 2, epoch)
		res <- err
	}()
	h.until("answer", func() bool { return len(res) == 1 })
	if err := <-res; err != nil || len(remaining) != 0 {
		t.Fatalf("controlled shutdown: %v, remaining %v (an RF=1 partition is not acted on)", err, remaining)
	}
	if st := h.state("s", 0); st.Leader != 3 || !slices.Equal(st.ISR, []int32{3}) || st.LeaderEpoch != 1 {
		t.Fatalf("led partition: %+v, want leader 3, ISR [3], epoch 1", st)
	}
	if st := h.state("s", 1); st.Leader != 3 || !slices.Equal(st.ISR, []int32{3}) || st.LeaderEpoch != 1 {
		t.Fatalf("followed partition: %+v, want leader 3, ISR [3], epoch 1", st)
	}
	if s := ct.rsm.state(TopicPartition{Topic: "s", Partition: 1}, 2); s != OfflineReplica {
		t.Fatalf("followed replica in %v, want OfflineReplica", s)
	}
	h.until("StopReplica(delete=false) to broker 2", func() bool {
		for _, s := range stopReplicas(h.net.requests(2, false)) {
			if !s.DeletePartitions && len(s.Topics) == 1 && slices.Equal(s.Topics[0].Partitions, []int32{1}) {
				return true
			}
		}
		return false
	})
	h.checkTransitions()
}

// TestStaleControllerEpochAnswerResigns: a broker answering STALE_CONTROLLER_EPOCH makes the
// controller resign and run for election again.
func TestStaleControllerEpochAnswerResigns(t *testing.T) {
	h := newHarness(t)
	h.register(1)
	h.net.code = kerr.StaleControllerEpoch.Code
	ct := h.startController(1)
	h.until("re-elected with a higher epoch", func() bool { return ct.IsActive() && ct.ctx.epoch >= 2 })
}

// TestBouncedBrokerKeepsItsFetchers: a broker that is killed and registers again before the
// controller handles the change is "bounced" (same id, larger epoch): a failure followed by a
// startup. The failure's StopReplica(delete=false) for its replicas must reach it before the
// startup's LeaderAndIsr, as in Kafka, where each state-machine step sends its own batch. Sent
// after the LeaderAndIsr (one batch holding both), it stopped the fetchers the LeaderAndIsr had
// just started, and the broker never rejoined the ISR (fault row 11, double failover).
func TestBouncedBrokerKeepsItsFetchers(t *testing.T) {
	h := newHarness(t)
	for id := int32(1); id <= 3; id++ {
		h.register(id)
	}
	ct := h.startController(1)
	h.until("active", ct.IsActive)
	h.createTopic("bounce", map[int32][]int32{0: {2, 3, 1}, 1: {3, 1, 2}}, nil)
	h.until("online", func() bool { return h.state("bounce", 0) != nil && h.state("bounce", 1) != nil })
	h.step()

	// Broker 2 dies and registers again before the controller looks.
	h.net.resetAll()
	h.conn[2].Close()
	h.register(2)
	h.until("LeaderAndIsr to the bounced broker", func() bool { return len(leaderAndIsrs(h.net.requests(2, false))) > 0 })
	// The senders deliver asynchronously: wait until broker 2's requests stop arriving.
	var reqs []kmsg.Request
	quiet := time.Now()
	h.until("the bounced broker's requests delivered", func() bool {
		if cur := h.net.requests(2, false); len(cur) != len(reqs) {
			reqs, quiet = cur, time.Now()
		}
		return time.Since(quiet) > 300*time.Millisecond
	})
	lastLeaderAndIsr := -1
	for i, r := range reqs {
		if _, ok := r.(*kmsg.LeaderAndISRRequest); ok {
			lastLeaderAndIsr = i
		}
	}
	for i, r := range reqs[lastLeaderAndIsr+1:] {
		if s, ok := r.(*kmsg.StopReplicaRequest); ok && !s.DeletePartitions {
			t.Fatalf("request %d to the bounced broker is a StopReplica(delete=false) after its LeaderAndIsr: it stops the fetchers the LeaderAndIsr started (requests: %d)", lastLeaderAndIsr+1+i, len(reqs))
		}
	}
	h.checkTransitions()
}
