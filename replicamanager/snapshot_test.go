package replicamanager

import (
	"slices"
	"testing"
	"time"

	"github.com/isrbroker/isrbroker/replicamanager/replevents"
)

// The local view of the replication page (docs/replication-page.md): the leader's snapshot shows
// its HW, LEO, ISR and each follower's LEO and lag clock (S5b, S6, S10), and the ISR shrink and
// the role change are recorded as events with their epochs.
func TestSnapshotShowsLagClockAndRecordsIsrShrink(t *testing.T) {
	e := newEnv(t, 1, 1)
	e.leaderAndIsr(t, 1, 3, []int32{1, 2, 3}, []int32{1, 2, 3})
	waitResult(t, e.produce(t, 1, 2, time.Second), time.Second)
	e.followerFetch(t, 2, 2)
	e.followerFetch(t, 3, 1)
	e.clock.Advance(11 * time.Second) // past replica.lag.time.max.ms (10 s default)
	e.followerFetch(t, 2, 2)
	e.rm.tasks.maybeShrinkIsr()

	s := e.rm.Requests().Snapshot(0)
	if s.BrokerID != 1 || s.ReplicaLagTimeMaxMs != 10000 || len(s.Partitions) != 1 {
		t.Fatalf("snapshot %+v", s)
	}
	p := s.Partitions[0]
	if p.Role != RoleLeader || p.Leader != 1 || p.LeaderEpoch != 3 || p.LogEndOffset != 2 || p.HighWatermark != 2 ||
		!slices.Equal(p.Replicas, []int32{1, 2, 3}) || !slices.Equal(p.ISR, []int32{1, 2}) || p.MinISR != 1 {
		t.Fatalf("partition %+v", p)
	}
	if len(p.Followers) != 2 {
		t.Fatalf("followers %+v", p.Followers)
	}
	f2, f3 := p.Followers[0], p.Followers[1]
	if f2.Broker != 2 || !f2.InISR || f2.LogEndOffset != 2 || f2.LastCaughtUpAgoMs != 0 {
		t.Errorf("follower 2 %+v: caught up just now, in the ISR", f2)
	}
	if f3.Broker != 3 || f3.InISR || f3.LogEndOffset != 1 || f3.LastCaughtUpAgoMs < 10000 {
		t.Errorf("follower 3 %+v: out of the ISR, LEO 1, last caught up more than lag max ago", f3)
	}

	kinds := map[replevents.Kind]replevents.Event{}
	for _, ev := range s.Events {
		kinds[ev.Kind] = ev
	}
	if ev, ok := kinds[replevents.BecomeLeader]; !ok || ev.LeaderEpoch != 3 || ev.Topic != "t" || ev.Broker != 1 {
		t.Errorf("BecomeLeader event %+v (events %+v)", ev, s.Events)
	}
	if ev, ok := kinds[replevents.IsrShrink]; !ok || !slices.Equal(ev.Changed, []int32{3}) || !slices.Equal(ev.ISR, []int32{1, 2}) || ev.LeaderEpoch != 3 {
		t.Errorf("IsrShrink event %+v (events %+v)", ev, s.Events)
	}
	last := s.Events[len(s.Events)-1].Seq
	if more := e.rm.Requests().Snapshot(last).Events; len(more) != 0 {
		t.Errorf("events after seq %d: %+v", last, more)
	}
}
