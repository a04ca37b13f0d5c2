package replicamanager

import (
	"slices"
	"testing"
	"time"
)

// The leadership listener hears leaders and followers of each LeaderAndIsr and the partitions of
// a StopReplica; ReadLocal reads the local log whatever the role, up to the LEO.
func TestLeadershipListenerAndReadLocal(t *testing.T) {
	e := newEnv(t, 1, 1)
	var leaders, followers [][]TopicPartition
	e.rm.SetLeadershipListener(func(l, f []TopicPartition) {
		leaders, followers = append(leaders, l), append(followers, f)
	})
	e.leaderAndIsr(t, 1, 1, []int32{1, 2}, []int32{1})
	if len(leaders) != 1 || !slices.Equal(leaders[0], []TopicPartition{tp0()}) || len(followers[0]) != 0 {
		t.Fatalf("after becoming leader: leaders %v followers %v", leaders, followers)
	}
	if r := waitResult(t, e.produce(t, 1, 3, time.Second), 5*time.Second); r.ErrorCode != 0 {
		t.Fatalf("produce: %d", r.ErrorCode)
	}
	read, err := e.rm.Requests().ReadLocal(tp0(), 0, 1)
	if err != nil || read.LogEndOffset != 3 || read.LogStartOffset != 0 || len(read.Records) == 0 {
		t.Fatalf("ReadLocal as leader: %+v %v", read, err)
	}
	e.leaderAndIsr(t, 2, 2, []int32{1, 2}, []int32{2})
	if len(followers) != 2 || !slices.Equal(followers[1], []TopicPartition{tp0()}) || len(leaders[1]) != 0 {
		t.Fatalf("after becoming follower: leaders %v followers %v", leaders, followers)
	}
	// A follower's log is still readable (a leader-to-be loads it).
	if read, err = e.rm.Requests().ReadLocal(tp0(), 1, 1<<20); err != nil || read.LogEndOffset != 3 || len(read.Records) == 0 {
		t.Fatalf("ReadLocal as follower: %+v %v", read, err)
	}
	if read, err = e.rm.Requests().ReadLocal(tp0(), 3, 1<<20); err != nil || len(read.Records) != 0 {
		t.Fatalf("ReadLocal at the LEO: %+v %v", read, err)
	}
	e.rm.Requests().StopReplicas(StopReplicaRequest{ControllerID: 1, ControllerEpoch: 1, BrokerEpoch: -1, Partitions: []TopicPartition{tp0()}})
	if len(followers) != 3 || !slices.Equal(followers[2], []TopicPartition{tp0()}) {
		t.Fatalf("after StopReplica: followers %v", followers)
	}
	if _, err := e.rm.Requests().ReadLocal(TopicPartition{Topic: "none"}, 0, 1); err == nil {
		t.Fatalf("ReadLocal of a partition not hosted: no error")
	}
}
