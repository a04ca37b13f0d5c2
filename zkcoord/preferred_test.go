package zkcoord

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/isrbroker/isrbroker/zkcoord/admin"
	"github.com/isrbroker/isrbroker/zkcoord/zkdata"

	"github.com/go-zookeeper/zk"
	"github.com/rcrowley/go-metrics"
)

// bounce closes broker id's coordinator and registers a new one for it (a failure
// followed by a restart), waiting until the controller has seen the failure through gone.
func (tc *testCluster) bounce(t *testing.T, id int32, gone func() bool) {
	t.Helper()
	tc.coord[id].Close()
	waitFor(t, 15*time.Second, "controller reacting to the failure", gone)
	tc.coord[id], tc.epochs[id] = registerT(t, testConfig(t, tc.srv.Addr, id, tc.fbs[id].port()))
}

// rejoin is the leader adding replica id back to the ISR (K3), as its fetcher would once
// the replica caught up.
func rejoin(t *testing.T, leaderCoord *Coordinator, topic string, id int32) PartitionState {
	t.Helper()
	ps, err := leaderCoord.Reader.PartitionState(topic, 0)
	if err != nil {
		t.Fatal(err)
	}
	isr := append(slices.Clone(ps.ISR), id)
	if _, err := leaderCoord.IsrWriter.UpdateLeaderAndIsr(topic, 0, ps.Leader, ps.LeaderEpoch, isr, ps.ControllerEpoch, ps.ZkVersion); err != nil {
		t.Fatal(err)
	}
	ps.ISR = isr
	return ps
}

func gaugeValue(reg metrics.Registry, name string) int64 {
	if g, ok := reg.Get(name).(metrics.Gauge); ok {
		return g.Value()
	}
	return -1
}

// TestK7_PreferredElection: /admin/preferred_replica_election elects the assignment head
// when it is live and in the ISR (leader_epoch+1, ISR kept, LeaderAndIsr to every live
// replica); partitions whose preferred replica already leads, is not in the ISR or is not
// live keep their state, unknown partitions are skipped; the controller deletes the znode.
// PreferredReplicaImbalanceCount follows.
func TestK7_PreferredElection(t *testing.T) {
	tc := startCluster(t, 3)
	c1, c3, cfg1 := tc.coord[1], tc.coord[3], tc.cfgs[1]
	ctx := context.Background()
	createTopics(t, c1,
		TopicSpec{Name: "moved", Assignment: map[int32][]int32{0: {2, 1, 3}}},
		TopicSpec{Name: "already", Assignment: map[int32][]int32{0: {1, 2, 3}}},
		TopicSpec{Name: "notisr", Assignment: map[int32][]int32{0: {2, 3}}},
	)
	for _, tp := range []string{"moved", "already", "notisr"} {
		waitState(t, c1, tp, 0, tp+" online", func(ps PartitionState) bool { return ps.Leader != -1 })
	}
	waitFor(t, 10*time.Second, "imbalance 0", func() bool {
		return gaugeValue(cfg1.Registry, "kafka.controller:type=KafkaController,name=PreferredReplicaImbalanceCount") == 0
	})

	// Broker 2 fails and returns: moved/0 is led by 1, notisr/0 by 3.
	tc.bounce(t, 2, func() bool {
		ps, err := c1.Reader.PartitionState("notisr", 0)
		return err == nil && ps.Leader == 3
	})
	moved := waitState(t, c1, "moved", 0, "moved/0 led by 1", func(ps PartitionState) bool { return ps.Leader == 1 && !slices.Contains(ps.ISR, 2) })
	waitFor(t, 10*time.Second, "imbalance 2", func() bool {
		return gaugeValue(cfg1.Registry, "kafka.controller:type=KafkaController,name=PreferredReplicaImbalanceCount") == 2
	})
	// The leader of moved/0 takes broker 2 back into the ISR; notisr/0's leader does not.
	moved = rejoin(t, c1, "moved", 2)
	already, _ := c1.Reader.PartitionState("already", 0)
	notisr, _ := c1.Reader.PartitionState("notisr", 0)

	if err := c3.Admin.RequestPreferredElection(ctx, []TopicPartition{
		{Topic: "moved", Partition: 0}, {Topic: "already", Partition: 0}, {Topic: "notisr", Partition: 0},
		{Topic: "nope", Partition: 0}, {Topic: "moved", Partition: 7},
	}); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if err := c3.Reader.WaitPreferredElectionDone(wctx); err != nil {
		t.Fatalf("the controller did not delete the request: %v", err)
	}
	ps, _ := c1.Reader.PartitionState("moved", 0)
	if ps.Leader != 2 || ps.LeaderEpoch != moved.LeaderEpoch+1 || !reflect.DeepEqual(ps.ISR, moved.ISR) || ps.ControllerEpoch != moved.ControllerEpoch {
		t.Fatalf("moved/0 after the election: %+v (before %+v)", ps, moved)
	}
	if ps, _ = c1.Reader.PartitionState("already", 0); ps.LeaderEpoch != already.LeaderEpoch || ps.ZkVersion != already.ZkVersion {
		t.Fatalf("already/0 changed: %+v (before %+v)", ps, already)
	}
	if ps, _ = c1.Reader.PartitionState("notisr", 0); ps.Leader != 3 || ps.ZkVersion != notisr.ZkVersion {
		t.Fatalf("notisr/0 changed: %+v (before %+v)", ps, notisr)
	}
	for _, fb := range []*fakeBroker{tc.fbs[1], tc.fbs[2], tc.fbs[3]} {
		waitFor(t, 10*time.Second, "LeaderAndIsr moved/0 leader 2", func() bool { return hasLeaderAndIsr(fb, "moved", 2, moved.LeaderEpoch+1) })
	}
	waitFor(t, 10*time.Second, "imbalance 1", func() bool {
		return gaugeValue(cfg1.Registry, "kafka.controller:type=KafkaController,name=PreferredReplicaImbalanceCount") == 1
	})

	// Another request works once the first is done; an undecodable one is deleted.
	raw := rawZK(t, tc.srv.Addr)
	if _, err := raw.Create(zkdata.PathPreferredReplicaElection, []byte("garbage"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	wctx2, cancel2 := context.WithTimeout(ctx, 15*time.Second)
	defer cancel2()
	if err := c3.Reader.WaitPreferredElectionDone(wctx2); err != nil {
		t.Fatalf("undecodable request not deleted: %v", err)
	}
	if !c1.IsController() {
		t.Fatal("an undecodable request made the controller resign")
	}
	if ps, _ = c1.Reader.PartitionState("moved", 0); ps.Leader != 2 || ps.LeaderEpoch != moved.LeaderEpoch+1 {
		t.Fatalf("moved/0 changed again: %+v", ps)
	}
}

// TestPreferredElectionRequestPendingAtFailover: a request written while no controller
// runs is processed by the next controller's failover; a second request while one is
// pending is refused.
func TestPreferredElectionRequestPendingAtFailover(t *testing.T) {
	tc := startCluster(t, 3)
	c1, c3 := tc.coord[1], tc.coord[3]
	ctx := context.Background()
	createTopics(t, c1, TopicSpec{Name: "t", Assignment: map[int32][]int32{0: {2, 3}}})
	waitState(t, c1, "t", 0, "t/0 online", func(ps PartitionState) bool { return ps.Leader == 2 && len(ps.ISR) == 2 })
	tc.bounce(t, 2, func() bool {
		ps, err := c1.Reader.PartitionState("t", 0)
		return err == nil && ps.Leader == 3
	})
	before := rejoin(t, c3, "t", 2)
	// The controller (broker 1, no replica of t) goes away; the request waits for the next.
	c1.Close()
	waitFor(t, 10*time.Second, "no controller", func() bool { id, err := c3.Reader.ControllerID(); return err == nil && id == -1 })
	tps := []TopicPartition{{Topic: "t", Partition: 0}}
	if err := c3.Admin.RequestPreferredElection(ctx, tps); err != nil {
		t.Fatal(err)
	}
	if err := c3.Admin.RequestPreferredElection(ctx, tps); !errors.Is(err, admin.ErrPreferredElectionInProgress) {
		t.Fatalf("second request: %v", err)
	}
	if ok, err := c3.Reader.PreferredElectionPending(); err != nil || !ok {
		t.Fatalf("pending: %v %v", ok, err)
	}
	c3.StartController()
	waitFor(t, 10*time.Second, "broker 3 controller", c3.IsController)
	wctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if err := c3.Reader.WaitPreferredElectionDone(wctx); err != nil {
		t.Fatal(err)
	}
	ps, _ := c3.Reader.PartitionState("t", 0)
	if ps.Leader != 2 || ps.LeaderEpoch != before.LeaderEpoch+1 {
		t.Fatalf("t/0 after failover: %+v (before %+v)", ps, before)
	}
	if ok, err := c3.Reader.PreferredElectionPending(); err != nil || ok {
		t.Fatalf("still pending: %v %v", ok, err)
	}
}

// TestK7_AutoLeaderRebalance: with auto.leader.rebalance.enable the controller moves the
// leadership back to a returned preferred replica once it is in the ISR, without any
// request; a preferred replica outside the ISR is left alone. With the feature off nothing
// moves.
func TestK7_AutoLeaderRebalance(t *testing.T) {
	for _, enabled := range []bool{true, false} {
		t.Run(map[bool]string{true: "enabled", false: "disabled"}[enabled], func(t *testing.T) {
			tc := startClusterWith(t, 3, func(id int32, cfg *Config) {
				if id == 1 { // the controller
					cfg.AutoLeaderRebalance = enabled
					cfg.LeaderImbalanceCheckInterval = 200 * time.Millisecond
					cfg.LeaderImbalancePerBrokerPercentage = 10
				}
			})
			c1, cfg1 := tc.coord[1], tc.cfgs[1]
			createTopics(t, c1,
				TopicSpec{Name: "a", Assignment: map[int32][]int32{0: {2, 1, 3}}},
				TopicSpec{Name: "c", Assignment: map[int32][]int32{0: {2, 3}}},
			)
			waitState(t, c1, "a", 0, "a/0 online", func(ps PartitionState) bool { return ps.Leader == 2 })
			waitState(t, c1, "c", 0, "c/0 online", func(ps PartitionState) bool { return ps.Leader == 2 })
			tc.bounce(t, 2, func() bool {
				ps, err := c1.Reader.PartitionState("c", 0)
				return err == nil && ps.Leader == 3
			})
			waitState(t, c1, "a", 0, "a/0 led by 1", func(ps PartitionState) bool { return ps.Leader == 1 })
			a := rejoin(t, c1, "a", 2)
			cst, _ := c1.Reader.PartitionState("c", 0)
			if !enabled {
				// Several checks would have run by now (the first 5 s after failover).
				deadline := time.Now().Add(5*time.Second + time.Second) // the first check runs 5 s after failover
				for time.Now().Before(deadline) {
					if ps, _ := c1.Reader.PartitionState("a", 0); ps.Leader != 1 {
						t.Fatalf("a/0 moved with auto rebalance disabled: %+v", ps)
					}
					time.Sleep(100 * time.Millisecond) // polling interval
				}
				if g := gaugeValue(cfg1.Registry, "kafka.controller:type=KafkaController,name=PreferredReplicaImbalanceCount"); g != 2 {
					t.Fatalf("PreferredReplicaImbalanceCount %d, want 2", g)
				}
				return
			}
			ps := waitState(t, c1, "a", 0, "a/0 back on its preferred replica 2", func(ps PartitionState) bool { return ps.Leader == 2 })
			if ps.LeaderEpoch != a.LeaderEpoch+1 || !reflect.DeepEqual(ps.ISR, a.ISR) {
				t.Fatalf("a/0 after rebalance: %+v (before %+v)", ps, a)
			}
			waitFor(t, 10*time.Second, "LeaderAndIsr a/0 leader 2 to broker 2", func() bool { return hasLeaderAndIsr(tc.fbs[2], "a", 2, a.LeaderEpoch+1) })
			waitFor(t, 10*time.Second, "imbalance 1", func() bool {
				return gaugeValue(cfg1.Registry, "kafka.controller:type=KafkaController,name=PreferredReplicaImbalanceCount") == 1
			})
			if ps, _ := c1.Reader.PartitionState("c", 0); ps.Leader != 3 || ps.ZkVersion != cst.ZkVersion {
				t.Fatalf("c/0 (preferred replica not in the ISR) changed: %+v (before %+v)", ps, cst)
			}
		})
	}
}
