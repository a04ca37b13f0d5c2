package controller

import (
	"context"
	"slices"
	"testing"

	"github.com/isrbroker/isrbroker/zkcoord/zkdata"
)

// shrinkIsr writes topic-0's ISR as its leader would and refreshes the controller's cache.
func shrinkIsr(t *testing.T, h *harness, ct *Controller, topic string, isr []int32) {
	t.Helper()
	st := h.state(topic, 0)
	h.write(zkdata.PartitionStatePath(topic, 0), zkdata.EncodeState(st.Leader, st.LeaderEpoch, isr, st.ControllerEpoch))
	tp := TopicPartition{Topic: topic, Partition: 0}
	h.until("cache refreshed", func() bool {
		if err := ct.zk.loadState(tp); err != nil {
			t.Fatal(err)
		}
		return slices.Equal(ct.ctx.states[tp].isr, isr)
	})
}

// electAsync runs ElectLeaders as a request handler would, while the harness steps the
// controller goroutine's events.
func electAsync(t *testing.T, h *harness, ct *Controller, tps []TopicPartition, unclean bool) map[TopicPartition]ElectionResult {
	t.Helper()
	type res struct {
		r   map[TopicPartition]ElectionResult
		err error
	}
	ch := make(chan res, 1)
	go func() {
		r, err := ct.ElectLeaders(context.Background(), tps, unclean)
		ch <- res{r, err}
	}()
	var got res
	h.until("election answered", func() bool {
		select {
		case got = <-ch:
			return true
		default:
			return false
		}
	})
	if got.err != nil {
		t.Fatal(got.err)
	}
	return got.r
}

func TestElectLeadersPreferred(t *testing.T) {
	h, ct := newActiveHarness(t, 3)
	h.createTopic("p", map[int32][]int32{0: {1, 2, 3}, 1: {2, 3}}, nil)
	h.until("online", func() bool { return h.state("p", 0) != nil && h.state("p", 1) != nil })
	// Move p-0's leadership off its preferred replica, as a restart of broker 1 would.
	st := h.state("p", 0)
	h.write(zkdata.PartitionStatePath("p", 0), zkdata.EncodeState(2, st.LeaderEpoch+1, []int32{2, 3}, st.ControllerEpoch))
	tp0, tp1 := TopicPartition{Topic: "p", Partition: 0}, TopicPartition{Topic: "p", Partition: 1}
	unknown := TopicPartition{Topic: "p", Partition: 9}

	got := electAsync(t, h, ct, []TopicPartition{tp0, tp1, unknown}, false)
	if got[tp0].Err != ElectionPreferredNotAvail || got[tp1].Err != ElectionNotNeeded || got[unknown].Err != ElectionUnknownPartition {
		t.Fatalf("preferred replica outside the ISR: %+v", got)
	}
	// Broker 1 back in the ISR: elected.
	h.write(zkdata.PartitionStatePath("p", 0), zkdata.EncodeState(2, st.LeaderEpoch+1, []int32{2, 3, 1}, st.ControllerEpoch))
	got = electAsync(t, h, ct, []TopicPartition{tp0}, false)
	if got[tp0] != (ElectionResult{Err: ElectionOK, Leader: 1}) || h.state("p", 0).Leader != 1 {
		t.Fatalf("preferred election: %+v, state %+v", got, h.state("p", 0))
	}
	// nil = every partition: nothing to do.
	got = electAsync(t, h, ct, nil, false)
	if len(got) != 2 || got[tp0].Err != ElectionNotNeeded || got[tp1].Err != ElectionNotNeeded {
		t.Fatalf("second election: %+v", got)
	}
	if ct.mUnclean.Count() != 0 {
		t.Fatal("a preferred election counted as unclean")
	}
	h.checkTransitions()
}

func TestElectLeadersUnclean(t *testing.T) {
	h, ct := newActiveHarness(t, 3)
	h.createTopic("u", map[int32][]int32{0: {2, 3}}, nil)
	h.createTopic("live", map[int32][]int32{0: {1, 3}}, nil)
	h.until("online", func() bool { return h.state("u", 0) != nil && h.state("live", 0) != nil })
	shrinkIsr(t, h, ct, "u", []int32{2})
	h.kill(2)
	h.until("offline", func() bool { return h.state("u", 0).Leader == -1 })
	u, live := TopicPartition{Topic: "u", Partition: 0}, TopicPartition{Topic: "live", Partition: 0}

	// A preferred election cannot bring it back; the unclean one elects broker 3 although
	// the topic does not allow unclean elections.
	if got := electAsync(t, h, ct, []TopicPartition{u}, false); got[u].Err != ElectionPreferredNotAvail {
		t.Fatalf("preferred on an offline partition: %+v", got)
	}
	got := electAsync(t, h, ct, []TopicPartition{u, live}, true)
	if got[u] != (ElectionResult{Err: ElectionOK, Leader: 3}) || got[live].Err != ElectionNotNeeded {
		t.Fatalf("unclean election: %+v", got)
	}
	if st := h.state("u", 0); st.Leader != 3 || !slices.Equal(st.ISR, []int32{3}) {
		t.Fatalf("state after unclean election %+v", st)
	}
	if ct.mUnclean.Count() != 1 {
		t.Fatalf("UncleanLeaderElectionsPerSec count %d, want 1", ct.mUnclean.Count())
	}
	// Nothing live at all: ELIGIBLE_LEADERS_NOT_AVAILABLE.
	h.kill(3)
	h.until("offline again", func() bool { return h.state("u", 0).Leader == -1 })
	if got := electAsync(t, h, ct, []TopicPartition{u}, true); got[u].Err != ElectionEligibleNotAvail {
		t.Fatalf("no live replica: %+v", got)
	}
	h.checkTransitions()
}

func TestUncleanEnabledDynamically(t *testing.T) {
	h, ct := newActiveHarness(t, 3)
	h.createTopic("a", map[int32][]int32{0: {2, 3}}, nil)
	h.createTopic("b", map[int32][]int32{0: {2, 3}}, nil)
	h.until("online", func() bool { return h.state("a", 0) != nil && h.state("b", 0) != nil })
	shrinkIsr(t, h, ct, "a", []int32{2})
	shrinkIsr(t, h, ct, "b", []int32{2})
	h.kill(2)
	h.until("offline", func() bool { return h.state("a", 0).Leader == -1 && h.state("b", 0).Leader == -1 })

	// Topic override: only topic a.
	h.write(zkdata.TopicConfigPath("a"), zkdata.EncodeConfig(map[string]string{"unclean.leader.election.enable": "true"}))
	ct.EnableUncleanElection("a")
	h.until("a elected", func() bool { return h.state("a", 0).Leader == 3 })
	if h.state("b", 0).Leader != -1 || ct.mUnclean.Count() != 1 {
		t.Fatalf("b %+v, unclean count %d", h.state("b", 0), ct.mUnclean.Count())
	}
	// The cluster-wide broker default: every topic without an override.
	h.write(zkdata.BrokerEntityConfigPath(zkdata.DefaultBrokerEntity), zkdata.EncodeConfig(map[string]string{"unclean.leader.election.enable": "true"}))
	ct.EnableUncleanElection("")
	h.until("b elected", func() bool { return h.state("b", 0).Leader == 3 })
	if ct.mUnclean.Count() != 2 {
		t.Fatalf("unclean count %d, want 2", ct.mUnclean.Count())
	}
	h.checkTransitions()
}
