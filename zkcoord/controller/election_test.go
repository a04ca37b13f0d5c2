package controller

import (
	"fmt"
	"slices"
	"testing"
)

// brokers is a liveness for table tests: live ids, and those of them shutting down.
type brokers struct{ live, shutting []int32 }

func (b brokers) isLive(id int32) bool    { return slices.Contains(b.live, id) }
func (b brokers) electable(id int32) bool { return b.isLive(id) && !slices.Contains(b.shutting, id) }

func li(leader, epoch int32, isr ...int32) leaderIsr {
	return leaderIsr{leader: leader, leaderEpoch: epoch, isr: isr}
}

func (s leaderIsr) String() string {
	return fmt.Sprintf("leader %d epoch %d isr %v", s.leader, s.leaderEpoch, s.isr)
}

func same(a, b leaderIsr) bool {
	return a.leader == b.leader && a.leaderEpoch == b.leaderEpoch && slices.Equal(a.isr, b.isr)
}

func TestOfflineElection(t *testing.T) {
	for _, c := range []struct {
		name      string
		replicas  []int32
		cur       leaderIsr
		b         brokers
		unclean   bool
		want      leaderIsr
		changed   bool
		isUnclean bool
	}{
		{"live leader, all live: unchanged", []int32{1, 2, 3}, li(1, 5, 1, 2, 3), brokers{live: []int32{1, 2, 3}}, false, li(1, 5, 1, 2, 3), false, false},
		{"live leader, dead follower leaves the ISR", []int32{1, 2, 3}, li(1, 5, 1, 2, 3), brokers{live: []int32{1, 3}}, false, li(1, 6, 1, 3), true, false},
		{"dead leader: next ISR member in assignment order", []int32{1, 2, 3}, li(1, 5, 3, 1, 2), brokers{live: []int32{2, 3}}, false, li(2, 6, 3, 2), true, false},
		{"dead leader: a shutting-down ISR member is skipped", []int32{1, 2, 3}, li(1, 5, 1, 2, 3), brokers{live: []int32{2, 3}, shutting: []int32{2}}, false, li(3, 6, 2, 3), true, false},
		{"live replica outside the ISR is not elected cleanly", []int32{1, 2}, li(1, 5, 1), brokers{live: []int32{2}}, false, li(-1, 6, 1), true, false},
		{"unclean election picks a live replica outside the ISR", []int32{1, 2}, li(1, 5, 1), brokers{live: []int32{2}}, true, li(2, 6, 2), true, true},
		{"nothing live: leader -1, the old leader stays the ISR", []int32{1, 2, 3}, li(2, 5, 1, 2, 3), brokers{}, true, li(-1, 6, 2), true, false},
		{"nothing live, leader not in ISR: the last member stays", []int32{1, 2, 3}, li(-1, 5, 1, 3), brokers{}, false, li(-1, 6, 3), true, false},
		{"already offline with one member: unchanged", []int32{1, 2}, li(-1, 5, 1), brokers{}, false, li(-1, 5, 1), false, false},
		{"no leader, an ISR member returns", []int32{1, 2}, li(-1, 5, 1), brokers{live: []int32{1}}, false, li(1, 6, 1), true, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			asked := false
			got, changed, unclean := offlineElection(c.replicas, c.cur, c.b, func() bool { asked = true; return c.unclean })
			if !same(got, c.want) || changed != c.changed || unclean != c.isUnclean {
				t.Fatalf("got %v changed=%v unclean=%v, want %v changed=%v unclean=%v", got, changed, unclean, c.want, c.changed, c.isUnclean)
			}
			if asked && c.b.isLive(c.cur.leader) {
				t.Fatal("unclean.leader.election.enable read although the leader is live")
			}
		})
	}
}

func TestControlledShutdownElection(t *testing.T) {
	shutting := func(ids ...int32) func(int32) bool { return func(r int32) bool { return slices.Contains(ids, r) } }
	for _, c := range []struct {
		name     string
		replicas []int32
		cur      leaderIsr
		b        brokers
		shutting func(int32) bool
		want     leaderIsr
		changed  bool
	}{
		{"leader moves to the next live ISR member; shutting-down brokers leave the ISR", []int32{1, 2, 3}, li(1, 4, 1, 2, 3), brokers{live: []int32{1, 2, 3}}, shutting(1), li(2, 5, 2, 3), true},
		{"a live replica outside the ISR is not chosen", []int32{1, 2, 3}, li(1, 4, 1, 3), brokers{live: []int32{1, 2, 3}}, shutting(1), li(3, 5, 3), true},
		{"no other ISR member: unchanged (remaining)", []int32{1, 2}, li(1, 4, 1), brokers{live: []int32{1, 2}}, shutting(1), li(1, 4, 1), false},
		{"leader not shutting down: unchanged", []int32{1, 2}, li(2, 4, 1, 2), brokers{live: []int32{1, 2}}, shutting(1), li(2, 4, 1, 2), false},
		{"two brokers shutting down", []int32{1, 2, 3}, li(1, 4, 1, 2, 3), brokers{live: []int32{1, 2, 3}}, shutting(1, 2), li(3, 5, 3), true},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, changed := controlledShutdownElection(c.replicas, c.cur, c.b, c.shutting)
			if !same(got, c.want) || changed != c.changed {
				t.Fatalf("got %v changed=%v, want %v changed=%v", got, changed, c.want, c.changed)
			}
		})
	}
}

func TestPreferredElection(t *testing.T) {
	for _, c := range []struct {
		name     string
		replicas []int32
		cur      leaderIsr
		b        brokers
		want     leaderIsr
		changed  bool
	}{
		{"preferred replica live and in the ISR leads; ISR kept", []int32{1, 2, 3}, li(2, 3, 2, 1, 3), brokers{live: []int32{1, 2, 3}}, li(1, 4, 2, 1, 3), true},
		{"already leader: unchanged", []int32{1, 2}, li(1, 3, 1, 2), brokers{live: []int32{1, 2}}, li(1, 3, 1, 2), false},
		{"preferred not in the ISR: unchanged", []int32{1, 2}, li(2, 3, 2), brokers{live: []int32{1, 2}}, li(2, 3, 2), false},
		{"preferred not live: unchanged", []int32{1, 2}, li(2, 3, 2, 1), brokers{live: []int32{2}}, li(2, 3, 2, 1), false},
		{"preferred shutting down: unchanged", []int32{1, 2}, li(2, 3, 2, 1), brokers{live: []int32{1, 2}, shutting: []int32{1}}, li(2, 3, 2, 1), false},
		{"no replicas: unchanged", nil, li(2, 3, 2), brokers{live: []int32{2}}, li(2, 3, 2), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, changed := preferredElection(c.replicas, c.cur, c.b)
			if !same(got, c.want) || changed != c.changed {
				t.Fatalf("got %v changed=%v, want %v changed=%v", got, changed, c.want, c.changed)
			}
		})
	}
}

func TestReassignElection(t *testing.T) {
	for _, c := range []struct {
		name    string
		target  []int32
		cur     leaderIsr
		b       brokers
		want    leaderIsr
		changed bool
	}{
		{"live leader in the target: epoch bump only", []int32{2, 3}, li(2, 7, 1, 2, 3), brokers{live: []int32{1, 2, 3}}, li(2, 8, 1, 2, 3), true},
		{"leader not in the target: first target replica live and in the ISR", []int32{3, 4}, li(1, 7, 1, 4, 3), brokers{live: []int32{1, 3, 4}}, li(3, 8, 1, 4, 3), true},
		{"dead leader in the target: another target replica", []int32{1, 4}, li(1, 7, 1, 4), brokers{live: []int32{4}}, li(4, 8, 1, 4), true},
		{"no target replica live and in the ISR: unchanged", []int32{3, 4}, li(1, 7, 1, 3), brokers{live: []int32{1, 4}}, li(1, 7, 1, 3), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, changed := reassignElection(c.target, c.cur, c.b)
			if !same(got, c.want) || changed != c.changed {
				t.Fatalf("got %v changed=%v, want %v changed=%v", got, changed, c.want, c.changed)
			}
		})
	}
}

func TestRemoveFromIsr(t *testing.T) {
	for _, c := range []struct {
		name     string
		replicas []int32
		cur      leaderIsr
		want     leaderIsr
		changed  bool
	}{
		{"follower leaves", []int32{2}, li(1, 3, 1, 2, 3), li(1, 4, 1, 3), true},
		{"leader leaves: leader -1", []int32{1}, li(1, 3, 1, 2), li(-1, 4, 2), true},
		{"several leave at once: one bump", []int32{2, 3}, li(1, 3, 1, 2, 3), li(1, 4, 1), true},
		{"not in the ISR: unchanged", []int32{4}, li(1, 3, 1, 2), li(1, 3, 1, 2), false},
		{"the last member is kept", []int32{1}, li(1, 3, 1), li(1, 3, 1), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, changed := removeFromIsr(c.replicas, c.cur)
			if !same(got, c.want) || changed != c.changed {
				t.Fatalf("got %v changed=%v, want %v changed=%v", got, changed, c.want, c.changed)
			}
		})
	}
}

// TestValidTransitions checks the transition tables against Kafka 2.4's validPreviousStates.
func TestValidTransitions(t *testing.T) {
	P := []PartitionState{NonExistentPartition, NewPartition, OnlinePartition, OfflinePartition}
	wantP := map[[2]PartitionState]bool{
		{NonExistentPartition, NewPartition}: true,
		{NewPartition, OnlinePartition}:      true, {OnlinePartition, OnlinePartition}: true, {OfflinePartition, OnlinePartition}: true,
		{NewPartition, OfflinePartition}: true, {OnlinePartition, OfflinePartition}: true, {OfflinePartition, OfflinePartition}: true,
		{OfflinePartition, NonExistentPartition}: true,
	}
	for _, from := range P {
		for _, to := range P {
			if got := validPartitionTransition(from, to); got != wantP[[2]PartitionState{from, to}] {
				t.Errorf("%v → %v valid=%v", from, to, got)
			}
		}
	}
	R := []ReplicaState{NonExistentReplica, NewReplica, OnlineReplica, OfflineReplica, ReplicaDeletionStarted, ReplicaDeletionSuccessful, ReplicaDeletionIneligible}
	wantR := map[[2]ReplicaState]bool{
		{NonExistentReplica, NewReplica}: true,
		{NewReplica, OnlineReplica}:      true, {OnlineReplica, OnlineReplica}: true, {OfflineReplica, OnlineReplica}: true, {ReplicaDeletionIneligible, OnlineReplica}: true,
		{NewReplica, OfflineReplica}: true, {OnlineReplica, OfflineReplica}: true, {OfflineReplica, OfflineReplica}: true, {ReplicaDeletionIneligible, OfflineReplica}: true,
		{OfflineReplica, ReplicaDeletionStarted}:            true,
		{ReplicaDeletionStarted, ReplicaDeletionSuccessful}: true,
		{OfflineReplica, ReplicaDeletionIneligible}:         true, {ReplicaDeletionStarted, ReplicaDeletionIneligible}: true,
		{ReplicaDeletionSuccessful, NonExistentReplica}: true,
	}
	for _, from := range R {
		for _, to := range R {
			if got := validReplicaTransition(from, to); got != wantR[[2]ReplicaState{from, to}] {
				t.Errorf("%v → %v valid=%v", from, to, got)
			}
		}
	}
}
