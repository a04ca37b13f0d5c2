package controller

import (
	"slices"
	"testing"

	"github.com/go-zookeeper/zk"
	"github.com/isrbroker/isrbroker/zkcoord/zkdata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A log dir event makes the controller query the broker's replicas with LeaderAndIsr, and a
// KAFKA_STORAGE_ERROR answer moves the partition's leadership to another ISR member, takes the
// offline replica out of the ISR, stops it, and lists it as offline in UpdateMetadata; the
// notification is deleted (KIP-112, docs/kafka-facts.md §12).
func TestLogDirEventMovesLeadershipOffTheOfflineReplica(t *testing.T) {
	h, _ := newActiveHarness(t, 3)
	h.createTopic("t", map[int32][]int32{0: {2, 3}, 1: {2, 3}}, nil)
	h.until("t online", func() bool {
		s0, s1 := h.state("t", 0), h.state("t", 1)
		return s0 != nil && s0.Leader == 2 && s1 != nil && s1.Leader == 2
	})
	h.net.resetAll()

	// Broker 2's log dir holding t-0 and t-1 is offline: it answers KAFKA_STORAGE_ERROR.
	h.net.mu.Lock()
	h.net.partCode = map[int32]int16{2: kerr.KafkaStorageError.Code}
	h.net.mu.Unlock()
	c := h.srv.Connect(nil)
	defer c.Close()
	if _, err := c.Create(zkdata.LogDirEventSequential, zkdata.EncodeLogDirEvent(2), zk.FlagSequence); err != nil {
		t.Fatal(err)
	}
	h.until("leadership moved to the other ISR member", func() bool {
		s0, s1 := h.state("t", 0), h.state("t", 1)
		return s0 != nil && s0.Leader == 3 && slices.Equal(s0.ISR, []int32{3}) && s1 != nil && s1.Leader == 3
	})
	h.until("notification deleted", func() bool {
		ch, err := c.Children(zkdata.PathLogDirEvent)
		return err == nil && len(ch) == 0
	})
	h.until("a LeaderAndIsr query and a StopReplica(delete=false) for the offline replica", func() bool {
		reqs2 := h.net.requests(2, false)
		stopped := false
		for _, s := range stopReplicas(reqs2) {
			for _, tt := range s.Topics {
				stopped = stopped || tt.Topic == "t" && slices.Contains(tt.Partitions, 0) && !s.DeletePartitions
			}
		}
		return len(leaderAndIsrs(reqs2)) > 0 && stopped
	})
	h.until("UpdateMetadata lists the offline replica", func() bool {
		for _, r := range h.net.requests(3, false) {
			um, ok := r.(*kmsg.UpdateMetadataRequest)
			if !ok {
				continue
			}
			for _, ts := range um.TopicStates {
				for _, p := range ts.PartitionStates {
					if ts.Topic == "t" && p.Partition == 0 && p.Leader == 3 && slices.Contains(p.OfflineReplicas, 2) {
						return true
					}
				}
			}
		}
		return false
	})
	h.until("broker 3 gets a LeaderAndIsr making it leader of t-0", func() bool {
		for _, l := range leaderAndIsrs(h.net.requests(3, false)) {
			for _, ts := range l.TopicStates {
				for _, p := range ts.PartitionStates {
					if ts.Topic == "t" && p.Partition == 0 && p.Leader == 3 {
						return true
					}
				}
			}
		}
		return false
	})
	h.checkTransitions()
}

// The NONE answers keep a broker's healthy replicas online: only the partitions answered
// KAFKA_STORAGE_ERROR move.
func TestLogDirEventKeepsTheHealthyDirsReplicas(t *testing.T) {
	h, ct := newActiveHarness(t, 3)
	h.createTopic("t", map[int32][]int32{0: {2, 3}, 1: {2, 3}}, nil)
	h.until("t online", func() bool {
		s0, s1 := h.state("t", 0), h.state("t", 1)
		return s0 != nil && s0.Leader == 2 && s1 != nil && s1.Leader == 2
	})
	// As the answer to the query: t-0 offline, t-1 online.
	ct.enqueue(event{kind: evLeaderAndIsrResponse, lair: &lairAnswer{broker: 2,
		offline: []TopicPartition{{Topic: "t", Partition: 0}}, online: []TopicPartition{{Topic: "t", Partition: 1}}}})
	h.until("t-0 moved", func() bool { s := h.state("t", 0); return s != nil && s.Leader == 3 })
	if s := h.state("t", 1); s.Leader != 2 || !slices.Equal(s.ISR, []int32{2, 3}) {
		t.Fatalf("t-1 changed to %+v, want leader 2, ISR [2 3]", s)
	}
	if ct.ctx.isReplicaOnline(2, TopicPartition{Topic: "t", Partition: 0}) || !ct.ctx.isReplicaOnline(2, TopicPartition{Topic: "t", Partition: 1}) {
		t.Fatal("offline replicas not recorded per partition")
	}
	h.checkTransitions()
}
