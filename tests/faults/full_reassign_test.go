package faults

import (
	"context"
	"fmt"
	"math/rand"
	"sort"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/isrbroker/isrbroker/tests/cluster"
)

// Row 18 of the full matrix (docs/reliability.md): partition reassignment under process faults.

const (
	reassignFaultsFor   = 600 * time.Second // how long p0 is moved back and forth
	reassignFaultEvery  = 15 * time.Second  // a random broker killed or bounced this often
	reassignMoveLimit   = 120 * time.Second // each move must complete within this
	reassignKilledFor   = 5 * time.Second   // a SIGKILLed broker stays down this long
	reassignPollPeriod  = 200 * time.Millisecond
	reassignRequestWait = 30 * time.Second
)

// Row 18, reassignment under faults: 4 brokers; partition 0 is moved back and forth between
// replicas [1,2,3] and [2,3,4] (AlterPartitionReassignments, KIP-455) for 600 s while every
// 15 s a random broker is SIGKILLed (restarted 5 s later) or bounced (SIGTERM, restart).
// Every move must complete (no reassignment listed, the assignment is the target, its whole
// replica set in the ISR) within 120 s of being asked for; L, D, O, M, R, E, U, S hold.
func TestFault18_ReassignUnderFaults(t *testing.T) {
	fullMatrix(t)
	s := startScenarioWith(t, "18-reassign-under-faults", scenarioOptions{
		Brokers:    4,
		Assignment: map[int32][]int32{0: {1, 2, 3}, 1: {2, 3, 4}, 2: {3, 4, 1}},
	})
	processKeepOutputs(s)
	s.all.waitAcks(t, -1, 1500, time.Minute, "before the first move")
	seed := time.Now().UnixNano()
	rng := rand.New(rand.NewSource(seed))
	targets := [][]int32{{2, 3, 4}, {1, 2, 3}}
	adm := s.c.Admin()

	start := time.Now()
	nextFault := start.Add(reassignFaultEvery)
	down := map[int32]time.Time{} // SIGKILLed brokers and when they come back
	moves, faults := 0, 0
	var worstMove time.Duration
	var moveAt time.Time
	var target []int32
	moving := false
	ask := func() {
		target = targets[moves%2]
		ctx, cancel := context.WithTimeout(context.Background(), reassignRequestWait)
		defer cancel()
		var req kadm.AlterPartitionAssignmentsReq
		req.Assign(s.topic, 0, target)
		// The controller may be the broker just killed: ask until one answers.
		cluster.WaitFor(t, waitLong, func() (bool, string) {
			resp, err := adm.AlterPartitionAssignments(ctx, req)
			if err != nil {
				return false, err.Error()
			}
			if err := resp.Error(); err != nil {
				return false, err.Error()
			}
			return true, ""
		})
		moveAt, moving = time.Now(), true
		t.Logf("move %d: partition 0 to %v", moves+1, target)
	}
	done := func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		listed, err := adm.ListPartitionReassignments(ctx, kadm.TopicsSet{s.topic: {0: {}}})
		if err != nil {
			return false, err.Error()
		}
		if len(listed) > 0 {
			return false, fmt.Sprintf("still listed: %v", listed)
		}
		assign, err := s.c.ZK.TopicAssignment(s.topic)
		if err != nil {
			return false, err.Error()
		}
		st, err := s.c.ZK.PartitionState(s.topic, 0)
		if err != nil {
			return false, err.Error()
		}
		if !cluster.SameMembers(assign[0], target) || st.Leader < 0 || !cluster.SameMembers(st.ISR, target) {
			return false, fmt.Sprintf("replicas %v, leader %d, ISR %v; target %v", assign[0], st.Leader, st.ISR, target)
		}
		return true, ""
	}
	ticker := time.NewTicker(reassignPollPeriod) // pacing of the loop, not synchronisation
	defer ticker.Stop()
	for time.Since(start) < reassignFaultsFor || moving || len(down) > 0 {
		now := time.Now()
		for id, back := range down {
			if now.After(back) {
				s.c.Broker(id).Start()
				delete(down, id)
			}
		}
		if moving {
			if ok, why := done(); ok {
				took := time.Since(moveAt)
				worstMove = max(worstMove, took)
				moves++
				moving = false
				t.Logf("move %d to %v done in %v", moves, target, took.Round(time.Millisecond))
			} else if took := time.Since(moveAt); took > reassignMoveLimit {
				t.Fatalf("move %d to %v not complete %v after it was asked for: %s", moves+1, target, took.Round(time.Second), why)
			}
		}
		if !moving && time.Since(start) < reassignFaultsFor {
			ask()
		}
		if now.After(nextFault) && time.Since(start) < reassignFaultsFor {
			ids := s.c.IDs()
			victim := ids[rng.Intn(len(ids))]
			if _, isDown := down[victim]; !isDown && len(down) == 0 {
				faults++
				if rng.Intn(2) == 0 {
					s.fault(victim, fmt.Sprintf("fault %d: SIGKILL broker %d for %v", faults, victim, reassignKilledFor))
					s.c.Broker(victim).Kill()
					down[victim] = time.Now().Add(reassignKilledFor)
				} else {
					s.fault(victim, fmt.Sprintf("fault %d: bounce broker %d (SIGTERM, restart)", faults, victim))
					if code := s.c.Broker(victim).Terminate(); code != 0 {
						t.Errorf("broker %d exited with code %d after SIGTERM", victim, code)
					}
					s.c.Broker(victim).Start()
				}
			}
			nextFault = now.Add(reassignFaultEvery)
		}
		<-ticker.C
	}
	ids := s.c.IDs()
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	s.c.WaitRegistered(ids...)
	assign, err := s.c.ZK.TopicAssignment(s.topic)
	if err != nil {
		t.Fatal(err)
	}
	s.assignment = assign
	s.waitFullISR(waitLong)
	s.heal(fmt.Sprintf("%d moves under %d faults done", moves, faults))
	s.extra = append(s.extra, fmt.Sprintf("moves=%d faults=%d worst_move=%s seed=%d", moves, faults, fmtDur(worstMove), seed))
	s.finish()
}
