package controller

import (
	"slices"
	"testing"

	"github.com/isrbroker/isrbroker/zkcoord/zkdata"
)

// TestReassignmentMovesReplicas runs a reassignment [1 2] → [2 3] through its steps: the
// assignment becomes OAR+RAR, the new replica 3 is NewReplica with an isNew LeaderAndIsr;
// once the leader adds 3 to the ISR, 1 goes OfflineReplica (StopReplica(delete=false), out of
// the ISR), then is deleted (StopReplica(delete=true), NonExistentReplica), the assignment
// becomes RAR and the request znode is deleted.
func TestReassignmentMovesReplicas(t *testing.T) {
	h, ct := newActiveHarness(t, 3)
	h.createTopic("r", map[int32][]int32{0: {1, 2}}, nil)
	h.until("online", func() bool { return h.state("r", 0) != nil })
	h.net.resetAll()
	tp := TopicPartition{Topic: "r", Partition: 0}
	h.write(zkdata.PathReassignPartitions, zkdata.EncodeReassignment([]zkdata.PartitionReassignment{{Topic: "r", Partition: 0, Replicas: []int32{2, 3}}}))
	h.until("new replica started", func() bool { return ct.rsm.state(tp, 3) == NewReplica })
	if got := ct.ctx.replicas(tp); !slices.Equal(got, []int32{2, 3, 1}) {
		t.Fatalf("assignment during the move %v, want OAR+RAR [2 3 1]", got)
	}
	h.until("isNew LeaderAndIsr to the new replica", func() bool {
		for _, l := range leaderAndIsrs(h.net.requests(3, false)) {
			for _, ts := range l.TopicStates {
				for _, p := range ts.PartitionStates {
					if p.IsNew && slices.Equal(p.Replicas, []int32{2, 3, 1}) {
						return true
					}
				}
			}
		}
		return false
	})
	st := h.state("r", 0)
	if st.LeaderEpoch != 1 || st.Leader != 1 {
		t.Fatalf("state after step 2: %+v, want leader 1 epoch 1", st)
	}
	// The leader adds 3 to the ISR (as its follower caught up).
	h.write(zkdata.PartitionStatePath("r", 0), zkdata.EncodeState(1, st.LeaderEpoch, []int32{1, 2, 3}, st.ControllerEpoch))
	h.until("reassignment complete", func() bool { return !h.exists(zkdata.PathReassignPartitions) })
	st = h.state("r", 0)
	if st.Leader != 2 || !slices.Equal(st.ISR, []int32{2, 3}) {
		t.Fatalf("state after the move: %+v, want leader 2 (first target replica in the ISR), ISR [2 3]", st)
	}
	if got := ct.ctx.replicas(tp); !slices.Equal(got, []int32{2, 3}) {
		t.Fatalf("assignment %v", got)
	}
	if s := ct.rsm.state(tp, 1); s != NonExistentReplica {
		t.Fatalf("removed replica in %v", s)
	}
	for _, id := range []int32{2, 3} {
		if s := ct.rsm.state(tp, id); s != OnlineReplica {
			t.Fatalf("target replica %d in %v", id, s)
		}
	}
	h.until("StopReplica false then true to broker 1", func() bool {
		var flags []bool
		for _, s := range stopReplicas(h.net.requests(1, false)) {
			flags = append(flags, s.DeletePartitions)
		}
		return slices.Equal(flags, []bool{false, true})
	})
	h.checkTransitions()
}

// TestPreferredElectionRequest: /admin/preferred_replica_election moves leadership back to the
// preferred replica when it is live and in the ISR, leaves other partitions alone, and the
// znode is deleted.
func TestPreferredElectionRequest(t *testing.T) {
	h, _ := newActiveHarness(t, 2)
	h.createTopic("p", map[int32][]int32{0: {1, 2}, 1: {2, 1}}, nil)
	h.until("online", func() bool { return h.state("p", 1) != nil })
	// Partition 0 is led by 2 (as after a failure of 1); partition 1's preferred replica is
	// not in its ISR.
	h.write(zkdata.PartitionStatePath("p", 0), zkdata.EncodeState(2, 3, []int32{2, 1}, 1))
	h.write(zkdata.PartitionStatePath("p", 1), zkdata.EncodeState(1, 3, []int32{1}, 1))
	h.write(zkdata.PathPreferredReplicaElection, zkdata.EncodePreferredElection([]TopicPartition{{Topic: "p", Partition: 0}, {Topic: "p", Partition: 1}, {Topic: "nope", Partition: 0}}))
	h.until("request processed", func() bool { return !h.exists(zkdata.PathPreferredReplicaElection) })
	if st := h.state("p", 0); st.Leader != 1 || st.LeaderEpoch != 4 || !slices.Equal(st.ISR, []int32{2, 1}) {
		t.Fatalf("p/0 %+v, want leader 1, epoch 4, ISR kept", st)
	}
	if st := h.state("p", 1); st.Leader != 1 || st.LeaderEpoch != 3 {
		t.Fatalf("p/1 %+v: elected although its preferred replica is not in the ISR", st)
	}
	h.checkTransitions()
}

// TestK7_AutoRebalanceMovesLeadersBackAboveThreshold: the leader imbalance check elects the
// preferred replicas of a broker whose share of partitions it does not lead exceeds
// leader.imbalance.per.broker.percentage, and leaves a broker below it alone.
func TestK7_AutoRebalanceMovesLeadersBackAboveThreshold(t *testing.T) {
	h := newHarness(t)
	h.cfg = func(_ int32, c *Config) {
		c.AutoLeaderRebalance = true
		c.LeaderImbalancePerBrokerPercentage = 40
	}
	for id := int32(1); id <= 2; id++ {
		h.register(id)
	}
	ct := h.startController(1)
	h.until("active", ct.IsActive)
	// Broker 1 is preferred for a0..a1 and leads neither (100% > 40%); broker 2 is preferred
	// for b0..b2 and leads two of them (33% <= 40%).
	h.createTopic("a", map[int32][]int32{0: {1, 2}, 1: {1, 2}}, nil)
	h.createTopic("b", map[int32][]int32{0: {2, 1}, 1: {2, 1}, 2: {2, 1}}, nil)
	h.until("online", func() bool { return h.state("a", 1) != nil && h.state("b", 2) != nil })
	for p := int32(0); p < 2; p++ {
		h.write(zkdata.PartitionStatePath("a", p), zkdata.EncodeState(2, 1, []int32{2, 1}, 1))
	}
	h.write(zkdata.PartitionStatePath("b", 0), zkdata.EncodeState(1, 1, []int32{1, 2}, 1))
	for _, tp := range []TopicPartition{{Topic: "a", Partition: 0}, {Topic: "a", Partition: 1}, {Topic: "b", Partition: 0}} {
		if err := ct.zk.loadState(tp); err != nil {
			t.Fatal(err)
		}
	}
	if err := ct.preferred.processAutoRebalance(ct.ctx.epoch); err != nil {
		t.Fatal(err)
	}
	for p := int32(0); p < 2; p++ {
		if st := h.state("a", p); st.Leader != 1 || st.LeaderEpoch != 2 {
			t.Fatalf("a/%d %+v, want its preferred leader 1", p, st)
		}
	}
	if st := h.state("b", 0); st.Leader != 1 {
		t.Fatalf("b/0 %+v moved although broker 2's imbalance is below the threshold", st)
	}
	if err := ct.preferred.processAutoRebalance(ct.ctx.epoch - 1); err != nil {
		t.Fatal(err) // a timer of an earlier controllership: ignored
	}
	h.checkTransitions()
}
