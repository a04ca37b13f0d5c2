package zkcoord

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/isrbroker/isrbroker/zkcoord/zkdata"

	"github.com/go-zookeeper/zk"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// startReassignCluster is startCluster plus a wait until the controller's broker list
// shows all n brokers live.
func startReassignCluster(t *testing.T, n int32) *testCluster {
	t.Helper()
	rc := startCluster(t, n)
	waitFor(t, 10*time.Second, "brokers registered", func() bool {
		bs, err := rc.coord[1].Reader.LiveBrokers()
		return err == nil && len(bs) == int(n)
	})
	return rc
}

// expandIsr writes the ISR the way partition leader `leader` does (K3: same leader epoch).
func expandIsr(t *testing.T, c *Coordinator, topic string, isr []int32) {
	t.Helper()
	for attempt := 0; ; attempt++ {
		ps, err := c.Reader.PartitionState(topic, 0)
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.IsrWriter.UpdateLeaderAndIsr(topic, 0, ps.Leader, ps.LeaderEpoch, isr, ps.ControllerEpoch, ps.ZkVersion)
		if err == nil {
			return
		}
		if attempt > 20 {
			t.Fatalf("ISR expansion of %s: %v", topic, err)
		}
	}
}

// leaderAndIsrFor returns the partition states for topic/0 in fb's LeaderAndIsr requests.
func leaderAndIsrFor(fb *fakeBroker, topic string) []kmsg.LeaderAndISRRequestTopicPartition {
	var out []kmsg.LeaderAndISRRequestTopicPartition
	for _, r := range fb.requests() {
		l, ok := r.(*kmsg.LeaderAndISRRequest)
		if !ok {
			continue
		}
		for _, ts := range l.TopicStates {
			for _, p := range ts.PartitionStates {
				if ts.Topic == topic && p.Partition == 0 {
					out = append(out, p)
				}
			}
		}
	}
	return out
}

// stopReplicasFor returns the DeletePartitions flags of fb's StopReplica requests naming
// topic/0, in order.
func stopReplicasFor(fb *fakeBroker, topic string) []bool {
	var out []bool
	for _, r := range fb.requests() {
		sr, ok := r.(*kmsg.StopReplicaRequest)
		if !ok {
			continue
		}
		for _, tp := range sr.Topics {
			if tp.Topic == topic && slices.Contains(tp.Partitions, 0) {
				out = append(out, sr.DeletePartitions)
			}
		}
	}
	return out
}

func reassignZNodeExists(t *testing.T, c *Coordinator) bool {
	t.Helper()
	_, ok, err := c.Reader.ReassignmentInProgress()
	if err != nil {
		t.Fatal(err)
	}
	return ok
}

// TestReassignmentMovesReplicas runs the ≤2.3 controller procedure for [1,2,3] → [2,3,4]:
// AR = OAR+RAR first, the new replica gets a LeaderAndIsr (isNew) while outside the ISR,
// nothing completes until the leader adds it to the ISR (S6, S11), then leadership moves to
// the first target replica in the ISR, the old replica leaves the ISR and gets
// StopReplica(delete=false) then StopReplica(delete=true) (S22), AR = RAR and the znode is
// deleted.
func TestReassignmentMovesReplicas(t *testing.T) {
	rc := startReassignCluster(t, 4)
	c1 := rc.coord[1]
	ctx := context.Background()
	if _, err := c1.Admin.CreateTopic(ctx, TopicSpec{Name: "r", Assignment: map[int32][]int32{0: {1, 2, 3}}}, false); err != nil {
		t.Fatal(err)
	}
	before := waitState(t, c1, "r", 0, "r/0 online", func(ps PartitionState) bool { return reflect.DeepEqual(ps.ISR, []int32{1, 2, 3}) })

	// The CLI-side validation: dead broker, duplicates, unknown partition.
	for _, bad := range [][]PartitionReassignment{
		{{Topic: "r", Partition: 0, Replicas: []int32{2, 3, 9}}},
		{{Topic: "r", Partition: 0, Replicas: []int32{2, 2, 4}}},
		{{Topic: "r", Partition: 7, Replicas: []int32{2, 3, 4}}},
		{{Topic: "nope", Partition: 0, Replicas: []int32{2, 3, 4}}},
		{{Topic: "r", Partition: 0, Replicas: []int32{2, 3, 4}}, {Topic: "r", Partition: 0, Replicas: []int32{2, 3, 4}}},
		nil,
	} {
		if err := c1.Admin.StartReassignment(ctx, bad); err == nil {
			t.Fatalf("plan %v accepted", bad)
		}
	}
	if reassignZNodeExists(t, c1) {
		t.Fatal("a rejected plan created the znode")
	}

	target := []PartitionReassignment{{Topic: "r", Partition: 0, Replicas: []int32{2, 3, 4}}}
	if err := c1.Admin.StartReassignment(ctx, target); err != nil {
		t.Fatal(err)
	}
	if err := c1.Admin.StartReassignment(ctx, target); !errors.Is(err, ErrReassignmentInProgress) {
		t.Fatalf("second reassignment: %v", err)
	}
	// Steps 1–3.
	waitFor(t, 10*time.Second, "AR = OAR+RAR", func() bool {
		a, err := c1.Reader.TopicAssignment("r")
		return err == nil && reflect.DeepEqual(a[0], []int32{2, 3, 4, 1})
	})
	mid := waitState(t, c1, "r", 0, "epoch bump", func(ps PartitionState) bool { return ps.LeaderEpoch == before.LeaderEpoch+1 })
	if mid.Leader != 1 || !reflect.DeepEqual(mid.ISR, []int32{1, 2, 3}) {
		t.Fatalf("state during reassignment: %+v", mid)
	}
	waitFor(t, 10*time.Second, "LeaderAndIsr (isNew) to the new replica", func() bool {
		for _, p := range leaderAndIsrFor(rc.fbs[4], "r") {
			if p.IsNew && p.Leader == 1 && p.LeaderEpoch == mid.LeaderEpoch && reflect.DeepEqual(p.Replicas, []int32{2, 3, 4, 1}) {
				return true
			}
		}
		return false
	})
	for _, id := range []int32{1, 2, 3} {
		waitFor(t, 10*time.Second, "LeaderAndIsr to OAR", func() bool {
			for _, p := range leaderAndIsrFor(rc.fbs[id], "r") {
				if p.LeaderEpoch == mid.LeaderEpoch && reflect.DeepEqual(p.Replicas, []int32{2, 3, 4, 1}) {
					return true
				}
			}
			return false
		})
	}
	// Step 4: nothing more happens while broker 4 is outside the ISR, even when the ISR
	// changes for another reason (the watch fires and the check fails).
	expandIsr(t, c1, "r", []int32{1, 2, 3})
	// Barrier: the controller handles events in order, so once a topic created after the
	// ISR write is online, the state watch event has been handled.
	if _, err := c1.Admin.CreateTopic(ctx, TopicSpec{Name: "barrier", Assignment: map[int32][]int32{0: {2}}}, false); err != nil {
		t.Fatal(err)
	}
	waitState(t, c1, "barrier", 0, "barrier online", func(ps PartitionState) bool { return ps.Leader == 2 })
	if !reassignZNodeExists(t, c1) || len(stopReplicasFor(rc.fbs[1], "r")) != 0 {
		t.Fatal("reassignment completed before the new replica joined the ISR")
	}
	// The leader adds broker 4 to the ISR (K4): steps 5–12 run.
	expandIsr(t, c1, "r", []int32{1, 2, 3, 4})
	waitFor(t, 10*time.Second, "znode deleted", func() bool { return !reassignZNodeExists(t, c1) })
	a, err := c1.Reader.TopicAssignment("r")
	if err != nil || !reflect.DeepEqual(a[0], []int32{2, 3, 4}) {
		t.Fatalf("final assignment %v %v", a, err)
	}
	ps, _ := c1.Reader.PartitionState("r", 0)
	// Step 7 elected 2 (epoch+1), step 8 removed 1 from the ISR (epoch+1).
	if ps.Leader != 2 || !reflect.DeepEqual(ps.ISR, []int32{2, 3, 4}) || ps.LeaderEpoch != mid.LeaderEpoch+2 {
		t.Fatalf("final state %+v (mid %+v)", ps, mid)
	}
	waitFor(t, 10*time.Second, "StopReplica(false) then StopReplica(true) to broker 1", func() bool {
		return reflect.DeepEqual(stopReplicasFor(rc.fbs[1], "r"), []bool{false, true})
	})
	for _, id := range []int32{2, 3, 4} {
		if n := len(stopReplicasFor(rc.fbs[id], "r")); n != 0 {
			t.Fatalf("broker %d got %d StopReplica", id, n)
		}
		waitFor(t, 10*time.Second, "LeaderAndIsr with the new leader to RAR", func() bool {
			for _, p := range leaderAndIsrFor(rc.fbs[id], "r") {
				if p.Leader == 2 && p.LeaderEpoch == ps.LeaderEpoch && reflect.DeepEqual(p.Replicas, []int32{2, 3, 4}) &&
					reflect.DeepEqual(p.ISR, []int32{2, 3, 4}) {
					return true
				}
			}
			return false
		})
	}
	for _, p := range leaderAndIsrFor(rc.fbs[1], "r") {
		if p.LeaderEpoch > mid.LeaderEpoch {
			t.Fatalf("removed replica got a LeaderAndIsr after the move: %+v", p)
		}
	}
	// Step 12: every broker's metadata shows the new replicas.
	for id, fb := range rc.fbs {
		waitFor(t, 10*time.Second, "UpdateMetadata with RAR", func() bool {
			return fb.find(func(r kmsg.Request) bool {
				um, ok := r.(*kmsg.UpdateMetadataRequest)
				if !ok {
					return false
				}
				for _, ts := range um.TopicStates {
					for _, p := range ts.PartitionStates {
						if ts.Topic == "r" && reflect.DeepEqual(p.Replicas, []int32{2, 3, 4}) && p.Leader == 2 && p.LeaderEpoch == ps.LeaderEpoch {
							return true
						}
					}
				}
				return false
			}) != nil
		})
		_ = id
	}
}

// TestReassignmentIncreasesReplicationFactor: [1] → [1,2,3] is a reassignment; the leader
// keeps leading (epoch bump), nobody gets StopReplica.
func TestReassignmentIncreasesReplicationFactor(t *testing.T) {
	rc := startReassignCluster(t, 3)
	c1 := rc.coord[1]
	ctx := context.Background()
	if _, err := c1.Admin.CreateTopic(ctx, TopicSpec{Name: "rf", Assignment: map[int32][]int32{0: {1}}}, false); err != nil {
		t.Fatal(err)
	}
	waitState(t, c1, "rf", 0, "rf/0 online", func(ps PartitionState) bool { return ps.Leader == 1 })
	if err := c1.Admin.StartReassignment(ctx, []PartitionReassignment{{Topic: "rf", Partition: 0, Replicas: []int32{1, 2, 3}}}); err != nil {
		t.Fatal(err)
	}
	mid := waitState(t, c1, "rf", 0, "epoch bump", func(ps PartitionState) bool { return ps.LeaderEpoch == 1 })
	waitFor(t, 10*time.Second, "new replicas told", func() bool {
		return len(leaderAndIsrFor(rc.fbs[2], "rf")) > 0 && len(leaderAndIsrFor(rc.fbs[3], "rf")) > 0
	})
	expandIsr(t, c1, "rf", []int32{1, 2})
	expandIsr(t, c1, "rf", []int32{1, 2, 3})
	waitFor(t, 10*time.Second, "znode deleted", func() bool { return !reassignZNodeExists(t, c1) })
	a, _ := c1.Reader.TopicAssignment("rf")
	ps, _ := c1.Reader.PartitionState("rf", 0)
	if !reflect.DeepEqual(a[0], []int32{1, 2, 3}) || ps.Leader != 1 || ps.LeaderEpoch != mid.LeaderEpoch+1 || !reflect.DeepEqual(ps.ISR, []int32{1, 2, 3}) {
		t.Fatalf("after RF increase: assignment %v state %+v", a[0], ps)
	}
	for id, fb := range rc.fbs {
		if n := len(stopReplicasFor(fb, "rf")); n != 0 {
			t.Fatalf("broker %d got StopReplica", id)
		}
	}
}

// TestReassignmentInvalidInZNode: a plan written straight to the znode naming a dead broker
// fails: the controller removes it and changes nothing.
func TestReassignmentInvalidInZNode(t *testing.T) {
	rc := startReassignCluster(t, 2)
	c1 := rc.coord[1]
	ctx := context.Background()
	if _, err := c1.Admin.CreateTopic(ctx, TopicSpec{Name: "x", Assignment: map[int32][]int32{0: {1, 2}}}, false); err != nil {
		t.Fatal(err)
	}
	before := waitState(t, c1, "x", 0, "x/0 online", func(ps PartitionState) bool { return len(ps.ISR) == 2 })
	raw := rawZK(t, rc.srv.Addr)
	data := zkdata.EncodeReassignment([]PartitionReassignment{{Topic: "x", Partition: 0, Replicas: []int32{2, 9}}})
	if _, err := raw.Create(zkdata.PathReassignPartitions, data, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "invalid reassignment removed", func() bool { return !reassignZNodeExists(t, c1) })
	a, _ := c1.Reader.TopicAssignment("x")
	ps, _ := c1.Reader.PartitionState("x", 0)
	if !reflect.DeepEqual(a[0], []int32{1, 2}) || ps.LeaderEpoch != before.LeaderEpoch {
		t.Fatalf("a failed reassignment changed the partition: %v %+v", a[0], ps)
	}
	// Garbage in the znode is deleted too.
	if _, err := raw.Create(zkdata.PathReassignPartitions, []byte("{not json"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "undecodable znode removed", func() bool {
		ok, _, err := c1.zk.Exists(zkdata.PathReassignPartitions)
		return err == nil && !ok
	})
}

// TestReassignmentResumesAfterControllerFailover: a reassignment in progress when the
// controller dies is resumed by the next controller (AR in ZK is OAR+RAR).
func TestReassignmentResumesAfterControllerFailover(t *testing.T) {
	rc := startReassignCluster(t, 4)
	c1, c2 := rc.coord[1], rc.coord[2]
	ctx := context.Background()
	if _, err := c1.Admin.CreateTopic(ctx, TopicSpec{Name: "f", Assignment: map[int32][]int32{0: {2, 3}}}, false); err != nil {
		t.Fatal(err)
	}
	waitState(t, c1, "f", 0, "f/0 online", func(ps PartitionState) bool { return len(ps.ISR) == 2 })
	if err := c1.Admin.StartReassignment(ctx, []PartitionReassignment{{Topic: "f", Partition: 0, Replicas: []int32{3, 4}}}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "AR = OAR+RAR", func() bool {
		a, err := c2.Reader.TopicAssignment("f")
		return err == nil && reflect.DeepEqual(a[0], []int32{3, 4, 2})
	})
	mid := waitState(t, c2, "f", 0, "epoch bump", func(ps PartitionState) bool { return ps.LeaderEpoch == 1 })
	c1.Close()
	c2.StartController()
	for _, id := range []int32{3, 4} {
		rc.coord[id].StartController()
	}
	waitFor(t, 20*time.Second, "a new controller", func() bool {
		for _, id := range []int32{2, 3, 4} {
			if rc.coord[id].IsController() {
				return true
			}
		}
		return false
	})
	expandIsr(t, c2, "f", []int32{2, 3, 4})
	waitFor(t, 20*time.Second, "znode deleted", func() bool { return !reassignZNodeExists(t, c2) })
	a, _ := c2.Reader.TopicAssignment("f")
	ps, _ := c2.Reader.PartitionState("f", 0)
	if !reflect.DeepEqual(a[0], []int32{3, 4}) || ps.Leader != 3 || !reflect.DeepEqual(ps.ISR, []int32{3, 4}) || ps.LeaderEpoch <= mid.LeaderEpoch {
		t.Fatalf("after resumed reassignment: %v %+v", a[0], ps)
	}
	waitFor(t, 10*time.Second, "broker 2 deleted", func() bool {
		flags := stopReplicasFor(rc.fbs[2], "f")
		return len(flags) >= 2 && !flags[len(flags)-2] && flags[len(flags)-1]
	})
}
