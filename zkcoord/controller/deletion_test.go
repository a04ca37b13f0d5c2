package controller

import (
	"slices"
	"testing"

	"github.com/isrbroker/isrbroker/zkcoord/zkdata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// deletedPartitions returns the partitions of topic named by the StopReplica(delete=true)
// requests in reqs.
func deletedPartitions(reqs []kmsg.Request, topic string) []int32 {
	var out []int32
	for _, s := range stopReplicas(reqs) {
		if !s.DeletePartitions {
			continue
		}
		for _, t := range s.Topics {
			if t.Topic == topic {
				for _, p := range t.Partitions {
					if !slices.Contains(out, p) {
						out = append(out, p)
					}
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

// topicZnodesGone reports whether topic's znodes (assignment, config, deletion request) are
// all removed.
func topicZnodesGone(h *harness, topic string) bool {
	return !h.exists(zkdata.TopicPath(topic)) && !h.exists(zkdata.TopicConfigPath(topic)) && !h.exists(zkdata.DeleteTopicPath(topic))
}

// requireTopicZnodes fails the test when one of topic's znodes is gone.
func requireTopicZnodes(t *testing.T, h *harness, topic, why string) {
	t.Helper()
	for _, p := range []string{zkdata.TopicPath(topic), zkdata.TopicConfigPath(topic), zkdata.DeleteTopicPath(topic)} {
		if !h.exists(p) {
			t.Fatalf("%s removed %s", p, why)
		}
	}
}

// TestTopicDeletionWaitsForEveryStopReplicaAnswer: a live broker that does not answer
// StopReplica(delete=true) (it crashed, its session not yet expired) keeps the topic queued:
// its replicas stay ReplicaDeletionStarted and the znodes stay. Once its session ends they are
// ineligible, and the deletion still waits; when it registers again it gets
// StopReplica(delete=true) for its replicas, answers, and only then the topic is deleted.
// Deleting on the queued request left the crashed broker's log to be reused by a topic
// re-created under the same name.
func TestTopicDeletionWaitsForEveryStopReplicaAnswer(t *testing.T) {
	h, ct := newActiveHarness(t, 3)
	h.createTopic("doomed", map[int32][]int32{0: {2, 3}, 1: {3, 2}}, map[string]string{"retention.ms": "1000"})
	h.until("online", func() bool { return h.state("doomed", 0) != nil && h.state("doomed", 1) != nil })
	h.step()
	tp0, tp1 := TopicPartition{Topic: "doomed", Partition: 0}, TopicPartition{Topic: "doomed", Partition: 1}

	h.net.hold(3, true) // broker 3 crashed; its session has not expired yet
	h.net.resetAll()
	h.write(zkdata.DeleteTopicPath("doomed"), nil)
	h.until("broker 2 answered StopReplica(delete=true)", func() bool {
		done := ct.rsm.state(tp0, 2) == ReplicaDeletionSuccessful && ct.rsm.state(tp1, 2) == ReplicaDeletionSuccessful
		return slices.Equal(deletedPartitions(h.net.requests(2, false), "doomed"), []int32{0, 1}) && (done || topicZnodesGone(h, "doomed"))
	})
	requireTopicZnodes(t, h, "doomed", "before broker 3 answered StopReplica(delete=true)")
	for _, tp := range []TopicPartition{tp0, tp1} {
		if s := ct.rsm.state(tp, 3); s != ReplicaDeletionStarted {
			t.Fatalf("%v on broker 3 (no answer yet) in %v, want ReplicaDeletionStarted", tp, s)
		}
	}

	// Its session expires: the replicas are ineligible, the deletion waits for it.
	h.kill(3)
	h.until("broker 3's replicas ineligible", func() bool {
		_, live := ct.ctx.live[3]
		s0, s1 := ct.rsm.state(tp0, 3), ct.rsm.state(tp1, 3)
		return !live && s0 != ReplicaDeletionStarted && s1 != ReplicaDeletionStarted
	})
	for _, tp := range []TopicPartition{tp0, tp1} {
		if s := ct.rsm.state(tp, 3); s != ReplicaDeletionIneligible && s != OfflineReplica {
			t.Fatalf("%v on the dead broker 3 in %v, want ReplicaDeletionIneligible or OfflineReplica (reset for the retry)", tp, s)
		}
	}
	requireTopicZnodes(t, h, "doomed", "while broker 3, holding replicas, is down")

	// It comes back: StopReplica(delete=true) for both of its replicas, then the deletion completes.
	h.net.hold(3, false)
	h.net.resetAll()
	h.register(3)
	h.until("topic deleted", func() bool { return topicZnodesGone(h, "doomed") })
	if got := deletedPartitions(h.net.requests(3, false), "doomed"); !slices.Equal(got, []int32{0, 1}) {
		t.Fatalf("broker 3 got StopReplica(delete=true) for partitions %v on startup, want [0 1]", got)
	}
	if len(ct.rsm.states) != 0 || len(ct.psm.states) != 0 || ct.deletion.isQueued("doomed") {
		t.Fatalf("states left after deletion: %v %v", ct.psm.states, ct.rsm.states)
	}
	h.checkTransitions()
}

// TestTopicDeletionRetriesReplicaThatFailed: a StopReplica(delete=true) answer with an error
// for one partition makes that replica ReplicaDeletionIneligible and the topic stays queued
// (znodes kept) while every other replica is deleted. When the broker starts again (its
// error gone) the replica gets StopReplica(delete=true) again and the deletion completes. A
// request-level error fails every partition of the request the same way.
func TestTopicDeletionRetriesReplicaThatFailed(t *testing.T) {
	h, ct := newActiveHarness(t, 3)
	h.createTopic("doomed", map[int32][]int32{0: {2, 3}, 1: {3, 2}}, map[string]string{"retention.ms": "1000"})
	h.until("online", func() bool { return h.state("doomed", 0) != nil && h.state("doomed", 1) != nil })
	h.step()
	tp0, tp1 := TopicPartition{Topic: "doomed", Partition: 0}, TopicPartition{Topic: "doomed", Partition: 1}

	h.net.failStop(3, tp1, kerr.KafkaStorageError.Code) // broker 3 cannot delete doomed-1's log
	h.net.resetAll()
	h.write(zkdata.DeleteTopicPath("doomed"), nil)
	h.until("every answer processed", func() bool {
		if topicZnodesGone(h, "doomed") {
			return true
		}
		for _, pr := range []partitionReplica{{tp0, 2}, {tp0, 3}, {tp1, 2}} {
			if ct.rsm.state(pr.tp, pr.replica) != ReplicaDeletionSuccessful {
				return false
			}
		}
		s := ct.rsm.state(tp1, 3)
		return s == ReplicaDeletionIneligible || s == OfflineReplica
	})
	requireTopicZnodes(t, h, "doomed", "although broker 3 failed to delete doomed-1")
	if !ct.deletion.isQueued("doomed") {
		t.Fatal("topic no longer queued for deletion after a failed replica deletion")
	}

	// Broker 3 restarts with its disk fixed: doomed-1 gets StopReplica(delete=true) again.
	h.net.failStop(3, tp1, 0)
	h.net.resetAll()
	h.conn[3].Close()
	h.register(3)
	h.until("topic deleted", func() bool { return topicZnodesGone(h, "doomed") })
	if got := deletedPartitions(h.net.requests(3, false), "doomed"); !slices.Contains(got, 1) {
		t.Fatalf("broker 3 got StopReplica(delete=true) for %v after its restart, want doomed-1 retried", got)
	}
	if got := deletedPartitions(h.net.requests(2, false), "doomed"); len(got) != 0 {
		t.Fatalf("broker 2, whose replicas were deleted, got StopReplica(delete=true) again for %v", got)
	}
	h.checkTransitions()

	// A request-level error fails every partition of the request.
	h.createTopic("doomed2", map[int32][]int32{0: {2}, 1: {2}}, map[string]string{"retention.ms": "1000"})
	h.until("online", func() bool { return h.state("doomed2", 0) != nil && h.state("doomed2", 1) != nil })
	h.step()
	h.net.mu.Lock()
	h.net.code = kerr.StaleBrokerEpoch.Code
	h.net.mu.Unlock()
	h.write(zkdata.DeleteTopicPath("doomed2"), nil)
	a0, a1 := TopicPartition{Topic: "doomed2", Partition: 0}, TopicPartition{Topic: "doomed2", Partition: 1}
	h.until("request-level error processed", func() bool {
		s0, s1 := ct.rsm.state(a0, 2), ct.rsm.state(a1, 2)
		return (s0 == ReplicaDeletionIneligible || s0 == OfflineReplica) && (s1 == ReplicaDeletionIneligible || s1 == OfflineReplica)
	})
	requireTopicZnodes(t, h, "doomed2", "although broker 2 answered StopReplica with an error")
	h.net.mu.Lock()
	h.net.code = 0
	h.net.mu.Unlock()
	h.conn[2].Close()
	h.register(2)
	h.until("doomed2 deleted", func() bool {
		return !h.exists(zkdata.TopicPath("doomed2")) && !h.exists(zkdata.DeleteTopicPath("doomed2"))
	})
	h.checkTransitions()
}
