package zkcoord

import (
	"context"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	"github.com/isrbroker/isrbroker/zkcoord/zkdata"

	"github.com/rcrowley/go-metrics"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func waitState(t *testing.T, c *Coordinator, topic string, p int32, what string, ok func(PartitionState) bool) PartitionState {
	t.Helper()
	var ps PartitionState
	waitFor(t, 15*time.Second, what, func() bool {
		var err error
		ps, err = c.Reader.PartitionState(topic, p)
		return err == nil && ok(ps)
	})
	return ps
}

// TestBrokerFailureAndReturn: a dead broker's RF=1 partitions go offline (leader -1, ISR
// keeps it, leader_epoch+1) and come back when it returns; an RF=2 partition elects the
// live ISR member; unclean election picks a non-ISR replica only when enabled.
func TestS9_K6_BrokerFailureElectsFromISRUncleanOnlyWhenEnabled(t *testing.T) {
	tc := startCluster(t, 2)
	c1, c2, cfg1 := tc.coord[1], tc.coord[2], tc.cfgs[1]
	fb1, fb2 := tc.fbs[1], tc.fbs[2]
	createTopics(t, c1,
		TopicSpec{Name: "one", Assignment: map[int32][]int32{0: {2}, 1: {1}}},
		TopicSpec{Name: "two", Assignment: map[int32][]int32{0: {2, 1}}},
		TopicSpec{Name: "unclean", Assignment: map[int32][]int32{0: {2, 1}}, Configs: map[string]string{"unclean.leader.election.enable": "true"}},
	)
	waitState(t, c1, "one", 0, "one/0 online", func(ps PartitionState) bool { return ps.Leader == 2 })
	waitState(t, c1, "two", 0, "two/0 online", func(ps PartitionState) bool { return reflect.DeepEqual(ps.ISR, []int32{2, 1}) })
	u := waitState(t, c1, "unclean", 0, "unclean/0 online", func(ps PartitionState) bool { return ps.Leader == 2 })
	// The leader of unclean/0 shrinks its ISR to itself (K3 CAS).
	if _, err := c2.IsrWriter.UpdateLeaderAndIsr("unclean", 0, 2, u.LeaderEpoch, []int32{2}, u.ControllerEpoch, u.ZkVersion); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "broker 2 got LeaderAndIsr", func() bool {
		return fb2.find(func(r kmsg.Request) bool { _, ok := r.(*kmsg.LeaderAndISRRequest); return ok }) != nil
	})

	c2.Close() // broker 2 dies (its session closes)

	one := waitState(t, c1, "one", 0, "one/0 offline", func(ps PartitionState) bool { return ps.Leader == -1 })
	if one.LeaderEpoch != 1 || !reflect.DeepEqual(one.ISR, []int32{2}) || one.ControllerEpoch != 1 {
		t.Fatalf("one/0 %+v", one)
	}
	two := waitState(t, c1, "two", 0, "two/0 re-elected", func(ps PartitionState) bool { return ps.Leader == 1 })
	if two.LeaderEpoch != 1 || !reflect.DeepEqual(two.ISR, []int32{1}) {
		t.Fatalf("two/0 %+v", two)
	}
	un := waitState(t, c1, "unclean", 0, "unclean/0 unclean election", func(ps PartitionState) bool { return ps.Leader == 1 })
	if !reflect.DeepEqual(un.ISR, []int32{1}) || un.LeaderEpoch != u.LeaderEpoch+1 {
		t.Fatalf("unclean/0 %+v", un)
	}
	// The controller counts the election after its ZooKeeper write, which waitState may see first.
	waitFor(t, 5*time.Second, "UncleanLeaderElectionsPerSec 1", func() bool {
		return cfg1.Registry.Get("kafka.controller:type=ControllerStats,name=UncleanLeaderElectionsPerSec").(metrics.Meter).Count() == 1
	})
	waitFor(t, 5*time.Second, "OfflinePartitionsCount 1", func() bool {
		return cfg1.Registry.Get("kafka.controller:type=KafkaController,name=OfflinePartitionsCount").(metrics.Gauge).Value() == 1
	})
	// Broker 1 learns it leads two/0 at epoch 1.
	waitFor(t, 10*time.Second, "LeaderAndIsr two/0 epoch 1", func() bool {
		return fb1.find(func(r kmsg.Request) bool {
			l, ok := r.(*kmsg.LeaderAndISRRequest)
			if !ok {
				return false
			}
			for _, ts := range l.TopicStates {
				for _, p := range ts.PartitionStates {
					if ts.Topic == "two" && p.Leader == 1 && p.LeaderEpoch == 1 && !p.IsNew {
						return true
					}
				}
			}
			return false
		}) != nil
	})

	// Broker 2 returns: one/0 comes back with leader 2 at leader epoch 2.
	var epochs atomic.Int64
	cfg2 := testConfig(t, tc.srv.Addr, 2, fb2.port())
	cfg2.OnBrokerEpoch = func(e int64) { epochs.Store(e) }
	registerT(t, cfg2)
	if epochs.Load() == 0 {
		t.Fatal("OnBrokerEpoch not called")
	}
	back := waitState(t, c1, "one", 0, "one/0 back", func(ps PartitionState) bool { return ps.Leader == 2 })
	if back.LeaderEpoch != 2 || !reflect.DeepEqual(back.ISR, []int32{2}) {
		t.Fatalf("one/0 %+v", back)
	}
	// two/0 keeps leader 1: broker 2 rejoins the ISR through the leader, not the controller.
	if ps, _ := c1.Reader.PartitionState("two", 0); ps.Leader != 1 || ps.LeaderEpoch != 1 {
		t.Fatalf("two/0 changed: %+v", ps)
	}
	waitFor(t, 5*time.Second, "OfflinePartitionsCount 0", func() bool {
		return cfg1.Registry.Get("kafka.controller:type=KafkaController,name=OfflinePartitionsCount").(metrics.Gauge).Value() == 0
	})
}

func TestDeleteTopic(t *testing.T) {
	s := startZK(t)
	fb := newFakeBroker(t)
	c := connectT(t, testConfig(t, s.Addr, 1, fb.port()))
	mustStart(t, c)
	ctx := context.Background()
	if _, err := c.Admin.CreateTopic(ctx, TopicSpec{Name: "gone", NumPartitions: 2, ReplicationFactor: 1}, false); err != nil {
		t.Fatal(err)
	}
	waitState(t, c, "gone", 1, "online", func(ps PartitionState) bool { return ps.Leader == 1 })
	if err := c.Admin.DeleteTopic(ctx, "gone"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "znodes deleted", func() bool {
		a, _, _ := c.zk.Exists(zkdata.TopicPath("gone"))
		b, _, _ := c.zk.Exists(zkdata.TopicConfigPath("gone"))
		d, _, _ := c.zk.Exists(zkdata.DeleteTopicPath("gone"))
		return !a && !b && !d
	})
	waitFor(t, 10*time.Second, "StopReplica delete=true", func() bool {
		return fb.find(func(r kmsg.Request) bool {
			sr, ok := r.(*kmsg.StopReplicaRequest)
			return ok && sr.DeletePartitions && len(sr.Topics) == 1 && sr.Topics[0].Topic == "gone" && len(sr.Topics[0].Partitions) == 2
		}) != nil
	})
	if fb.find(func(r kmsg.Request) bool {
		um, ok := r.(*kmsg.UpdateMetadataRequest)
		return ok && len(um.TopicStates) == 1 && um.TopicStates[0].Topic == "gone" && um.TopicStates[0].PartitionStates[0].Leader == -2
	}) == nil {
		t.Fatal("no UpdateMetadata with leader -2")
	}
	// The name can be reused.
	if _, err := c.Admin.CreateTopic(ctx, TopicSpec{Name: "gone", NumPartitions: 1, ReplicationFactor: 1}, false); err != nil {
		t.Fatal(err)
	}
	waitState(t, c, "gone", 0, "recreated", func(ps PartitionState) bool { return ps.Leader == 1 && ps.LeaderEpoch == 0 })
}

// TestSessionExpiryReregisters: after the session expires the broker registers again with a
// new broker epoch and wins the controller election with the next controller epoch.
func TestSessionExpiryReregisters(t *testing.T) {
	s := startZK(t)
	raw := rawZK(t, s.Addr)
	fb := newFakeBroker(t)
	d := &cuttableDialer{}
	cfg := testConfig(t, s.Addr, 9, fb.port())
	cfg.SessionTimeout = 2 * time.Second
	cfg.dialer = d.dial
	var epochs atomic.Int64
	cfg.OnBrokerEpoch = func(e int64) { epochs.Store(e) }
	c := connectT(t, cfg)
	first := mustStart(t, c)
	waitFor(t, 10*time.Second, "controller", c.IsController)

	d.setCut(true)
	waitFor(t, 15*time.Second, "registration expired", func() bool {
		ok, _, err := raw.Exists("/brokers/ids/9")
		return err == nil && !ok
	})
	d.setCut(false)
	waitFor(t, 20*time.Second, "re-registered", func() bool {
		_, st, err := raw.Get("/brokers/ids/9")
		return err == nil && st.Czxid != first && epochs.Load() == st.Czxid
	})
	waitFor(t, 20*time.Second, "controller again", func() bool {
		e, _, _ := c.Reader.ControllerEpoch()
		// Usually 2; a controller event in flight when the session expired can cost one
		// more election (it is fenced, so that is harmless).
		return c.IsController() && e >= 2
	})
}
