package zkcoord

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/isrbroker/isrbroker/zkcoord/zkdata"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// hasLeaderAndIsr reports whether fb received a LeaderAndIsr for topic/0 naming leader at
// leaderEpoch.
func hasLeaderAndIsr(fb *fakeBroker, topic string, leader, leaderEpoch int32) bool {
	return fb.find(func(r kmsg.Request) bool {
		l, ok := r.(*kmsg.LeaderAndISRRequest)
		if !ok {
			return false
		}
		for _, ts := range l.TopicStates {
			for _, p := range ts.PartitionStates {
				if ts.Topic == topic && p.Partition == 0 && p.Leader == leader && p.LeaderEpoch == leaderEpoch {
					return true
				}
			}
		}
		return false
	}) != nil
}

// TestControlledShutdown (K7): the controller moves the leadership of the shutting-down
// broker's replicated partitions to another ISR member with leader_epoch+1, removes it from
// the ISRs it follows in (StopReplica delete=false to it), reports the partitions it still
// leads (no other ISR member), excludes it from later elections and forgets it once its
// registration is gone.
func TestControlledShutdown(t *testing.T) {
	tc := startCluster(t, 3)
	c1, c2, epoch2 := tc.coord[1], tc.coord[2], tc.epochs[2]
	fb1, fb2, fb3 := tc.fbs[1], tc.fbs[2], tc.fbs[3]
	ctx := context.Background()
	createTopics(t, c1,
		TopicSpec{Name: "moved", Assignment: map[int32][]int32{0: {2, 1, 3}}},
		TopicSpec{Name: "followed", Assignment: map[int32][]int32{0: {1, 2}}},
		TopicSpec{Name: "only", Assignment: map[int32][]int32{0: {2, 3}}},
		TopicSpec{Name: "single", Assignment: map[int32][]int32{0: {2}}},
	)
	moved := waitState(t, c1, "moved", 0, "moved/0 online", func(ps PartitionState) bool { return reflect.DeepEqual(ps.ISR, []int32{2, 1, 3}) })
	followed := waitState(t, c1, "followed", 0, "followed/0 online", func(ps PartitionState) bool { return reflect.DeepEqual(ps.ISR, []int32{1, 2}) })
	only := waitState(t, c1, "only", 0, "only/0 online", func(ps PartitionState) bool { return reflect.DeepEqual(ps.ISR, []int32{2, 3}) })
	waitState(t, c1, "single", 0, "single/0 online", func(ps PartitionState) bool { return ps.Leader == 2 })
	// The leader of only/0 shrinks its ISR to itself (K3), and the controller learns it
	// through the ISR change notification (K5).
	if _, err := c2.IsrWriter.UpdateLeaderAndIsr("only", 0, 2, only.LeaderEpoch, []int32{2}, only.ControllerEpoch, only.ZkVersion); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "ISR change notification processed", func() bool {
		ch, err := c1.zk.Children(zkdata.PathIsrChange)
		return err == nil && len(ch) == 0 && c2.IsrWriter.PendingLen() == 0
	})
	only, _ = c1.Reader.PartitionState("only", 0)

	// Errors first: not the controller, unknown broker, stale broker epoch.
	if _, err := c2.ControlledShutdown(ctx, 2, epoch2); !errors.Is(err, ErrNotController) {
		t.Fatalf("non-controller: %v", err)
	}
	if _, err := c1.ControlledShutdown(ctx, 9, -1); !errors.Is(err, ErrBrokerNotAvailable) {
		t.Fatalf("unknown broker: %v", err)
	}
	if _, err := c1.ControlledShutdown(ctx, 2, epoch2-1); !errors.Is(err, ErrStaleBrokerEpoch) {
		t.Fatalf("stale epoch: %v", err)
	}
	if ps, _ := c1.Reader.PartitionState("moved", 0); ps.LeaderEpoch != moved.LeaderEpoch {
		t.Fatalf("a refused request changed moved/0: %+v", ps)
	}

	remaining, err := c1.ControlledShutdown(ctx, 2, epoch2)
	if err != nil {
		t.Fatal(err)
	}
	if want := []TopicPartition{{Topic: "only", Partition: 0}}; !reflect.DeepEqual(remaining, want) {
		t.Fatalf("remaining %v, want %v", remaining, want)
	}
	// The answer comes after the fenced writes: the znodes already show the result.
	ps, _ := c1.Reader.PartitionState("moved", 0)
	if ps.Leader != 1 || ps.LeaderEpoch != moved.LeaderEpoch+1 || !reflect.DeepEqual(ps.ISR, []int32{1, 3}) {
		t.Fatalf("moved/0 after controlled shutdown: %+v (before %+v)", ps, moved)
	}
	ps, _ = c1.Reader.PartitionState("followed", 0)
	if ps.Leader != 1 || ps.LeaderEpoch != followed.LeaderEpoch+1 || !reflect.DeepEqual(ps.ISR, []int32{1}) {
		t.Fatalf("followed/0 after controlled shutdown: %+v (before %+v)", ps, followed)
	}
	if ps, _ = c1.Reader.PartitionState("only", 0); ps.Leader != 2 || ps.LeaderEpoch != only.LeaderEpoch {
		t.Fatalf("only/0 changed: %+v (before %+v)", ps, only)
	}
	if ps, _ = c1.Reader.PartitionState("single", 0); ps.Leader != 2 || ps.LeaderEpoch != 0 {
		t.Fatalf("single/0 changed: %+v", ps)
	}
	// LeaderAndIsr for moved/0 goes to every live replica, the shutting-down one included.
	for _, fb := range []*fakeBroker{fb1, fb2, fb3} {
		waitFor(t, 10*time.Second, "LeaderAndIsr moved/0", func() bool { return hasLeaderAndIsr(fb, "moved", 1, moved.LeaderEpoch+1) })
	}
	waitFor(t, 10*time.Second, "LeaderAndIsr followed/0 to the leader", func() bool {
		return hasLeaderAndIsr(fb1, "followed", 1, followed.LeaderEpoch+1)
	})
	waitFor(t, 10*time.Second, "StopReplica(delete=false) followed/0 to broker 2", func() bool {
		return fb2.find(func(r kmsg.Request) bool {
			sr, ok := r.(*kmsg.StopReplicaRequest)
			return ok && !sr.DeletePartitions && len(sr.Topics) == 1 && sr.Topics[0].Topic == "followed" &&
				reflect.DeepEqual(sr.Topics[0].Partitions, []int32{0})
		}) != nil
	})
	if hasLeaderAndIsr(fb2, "followed", 1, followed.LeaderEpoch+1) {
		t.Fatal("the shutting-down follower got the LeaderAndIsr of its OfflineReplica transition")
	}

	// A retry is harmless and gives the same answer.
	if again, err := c1.ControlledShutdown(ctx, 2, epoch2); err != nil || !reflect.DeepEqual(again, remaining) {
		t.Fatalf("retry: %v %v", again, err)
	}
	// Shutting-down brokers are not elected: a new partition led by assignment by 2 gets 1.
	if _, err := c1.Admin.CreateTopic(ctx, TopicSpec{Name: "new", Assignment: map[int32][]int32{0: {2, 1}}}, false); err != nil {
		t.Fatal(err)
	}
	ps = waitState(t, c1, "new", 0, "new/0 online", func(ps PartitionState) bool { return ps.Leader != -1 })
	if ps.Leader != 1 || !reflect.DeepEqual(ps.ISR, []int32{1}) {
		t.Fatalf("new/0 elected the shutting-down broker: %+v", ps)
	}

	// Broker 2 goes away and comes back: it is electable again.
	c2.Close()
	waitState(t, c1, "only", 0, "only/0 offline", func(ps PartitionState) bool { return ps.Leader == -1 })
	registerT(t, testConfig(t, tc.srv.Addr, 2, fb2.port()))
	waitState(t, c1, "only", 0, "only/0 back on broker 2", func(ps PartitionState) bool { return ps.Leader == 2 })
	if _, err := c1.Admin.CreateTopic(ctx, TopicSpec{Name: "new2", Assignment: map[int32][]int32{0: {2, 1}}}, false); err != nil {
		t.Fatal(err)
	}
	waitState(t, c1, "new2", 0, "new2/0 led by broker 2", func(ps PartitionState) bool { return ps.Leader == 2 })
}

// TestControlledShutdownContext: the caller's context bounds the wait for the controller.
func TestControlledShutdownContext(t *testing.T) {
	c := startCluster(t, 1).coord[1]
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	// Either answer is fine as long as the call returns: the event may win the race.
	if _, err := c.ControlledShutdown(ctx, 1, c.Registrar.BrokerEpoch()); err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
	rem, err := c.ControlledShutdown(context.Background(), 1, c.Registrar.BrokerEpoch())
	if err != nil || len(rem) != 0 {
		t.Fatalf("own shutdown: %v %v", rem, err)
	}
}
