package controller

import (
	"slices"

	"github.com/isrbroker/isrbroker/zkcoord/internal/sorted"
)

// ReplicaState is a replica's state in the replica state machine (Kafka 2.4's
// ReplicaStateMachine).
type ReplicaState int8

const (
	// NonExistentReplica: not assigned, or deleted.
	NonExistentReplica ReplicaState = iota
	// NewReplica: added by a reassignment; it may only become a follower.
	NewReplica
	// OnlineReplica: assigned and on a live broker; it may lead or follow.
	OnlineReplica
	// OfflineReplica: its broker died, or it was stopped (controlled shutdown, reassignment).
	OfflineReplica
	// ReplicaDeletionStarted: StopReplica(delete=true) was sent.
	ReplicaDeletionStarted
	// ReplicaDeletionSuccessful: its broker answered StopReplica(delete=true) without an error.
	ReplicaDeletionSuccessful
	// ReplicaDeletionIneligible: its deletion failed (its broker is offline, died before
	// answering, or answered an error); retried when the deletion resumes.
	ReplicaDeletionIneligible
)

func (s ReplicaState) String() string {
	return [...]string{"NonExistentReplica", "NewReplica", "OnlineReplica", "OfflineReplica",
		"ReplicaDeletionStarted", "ReplicaDeletionSuccessful", "ReplicaDeletionIneligible"}[s]
}

// validPreviousReplicaStates is Kafka's ReplicaState.validPreviousStates.
var validPreviousReplicaStates = map[ReplicaState][]ReplicaState{
	NewReplica:                {NonExistentReplica},
	OnlineReplica:             {NewReplica, OnlineReplica, OfflineReplica, ReplicaDeletionIneligible},
	OfflineReplica:            {NewReplica, OnlineReplica, OfflineReplica, ReplicaDeletionIneligible},
	ReplicaDeletionStarted:    {OfflineReplica},
	ReplicaDeletionSuccessful: {ReplicaDeletionStarted},
	ReplicaDeletionIneligible: {OfflineReplica, ReplicaDeletionStarted},
	NonExistentReplica:        {ReplicaDeletionSuccessful},
}

func validReplicaTransition(from, to ReplicaState) bool {
	return slices.Contains(validPreviousReplicaStates[to], from)
}

// partitionReplica is one replica (Kafka's PartitionAndReplica).
type partitionReplica struct {
	tp      TopicPartition
	replica int32
}

// replicaStateMachine keeps every replica's ReplicaState. handleStateChanges performs Kafka's
// requests for a transition:
//   - → NewReplica: LeaderAndIsr (isNew) to the replica when the partition has a state;
//   - NewReplica → OnlineReplica: nothing (the partition's creation sends the LeaderAndIsr);
//   - other → OnlineReplica: LeaderAndIsr to the replica when the partition has a state;
//   - → OfflineReplica: StopReplica(delete=false) to the replica, and the replicas leave the
//     ISR in one compare-and-set per partition with the leader epoch bumped (LeaderAndIsr to the
//     partition's other live replicas);
//   - → ReplicaDeletionStarted: StopReplica(delete=true);
//   - deletion outcomes and NonExistentReplica: no request.
//
// Invalid transitions are logged and skipped, as in Kafka, and counted in invalid.
type replicaStateMachine struct {
	ct      *Controller
	states  map[partitionReplica]ReplicaState
	invalid int
	// fresh names partitions whose cached states the caller has just read from ZooKeeper (and
	// written since), so the next OfflineReplica transition does not read them again.
	fresh map[TopicPartition]bool
}

func newReplicaStateMachine(ct *Controller) *replicaStateMachine {
	return &replicaStateMachine{ct: ct, states: map[partitionReplica]ReplicaState{}}
}

func (m *replicaStateMachine) reset() { m.states = map[partitionReplica]ReplicaState{} }

func (m *replicaStateMachine) state(tp TopicPartition, replica int32) ReplicaState {
	return m.states[partitionReplica{tp, replica}]
}

// initPartition sets the states of tp's replicas from liveness, without transitions
// (initializeReplicaState): live → Online; otherwise Offline, or ReplicaDeletionIneligible
// when the topic is queued for deletion.
func (m *replicaStateMachine) initPartition(tp TopicPartition) {
	for _, r := range m.ct.ctx.replicas(tp) {
		switch {
		case m.ct.ctx.isLive(r):
			m.states[partitionReplica{tp, r}] = OnlineReplica
		case m.ct.deletion.isQueued(tp.Topic):
			m.states[partitionReplica{tp, r}] = ReplicaDeletionIneligible
		default:
			m.states[partitionReplica{tp, r}] = OfflineReplica
		}
	}
}

// startup initializes every replica's state and moves the live replicas of partitions with
// a state (topics queued for deletion excepted) Online → Online, which sends them LeaderAndIsr.
func (m *replicaStateMachine) startup(b *requestBatch) {
	var online []partitionReplica
	for _, tp := range m.ct.ctx.partitions() {
		m.initPartition(tp)
		if _, ok := m.ct.ctx.states[tp]; !ok || m.ct.deletion.isQueued(tp.Topic) {
			continue
		}
		for _, r := range m.ct.ctx.liveReplicas(tp) {
			online = append(online, partitionReplica{tp, r})
		}
	}
	m.handleStateChanges(online, OnlineReplica, b)
}

// transitionOnly moves replicas to target without requests and returns those whose
// transition was valid.
func (m *replicaStateMachine) transitionOnly(replicas []partitionReplica, target ReplicaState) []partitionReplica {
	var ok []partitionReplica
	for _, pr := range replicas {
		cur := m.states[pr]
		if !validReplicaTransition(cur, target) {
			m.invalid++
			m.ct.stateChangeLog().WithField("topic", pr.tp.Topic).WithField("partition", pr.tp.Partition).WithField("replica", pr.replica).
				WithField("from", cur).WithField("to", target).Error("invalid replica state transition; skipped")
			continue
		}
		if target == NonExistentReplica {
			delete(m.states, pr)
		} else {
			m.states[pr] = target
		}
		ok = append(ok, pr)
	}
	return ok
}

// handleStateChanges moves replicas to target and queues the transition's requests in b.
func (m *replicaStateMachine) handleStateChanges(replicas []partitionReplica, target ReplicaState, b *requestBatch) error {
	ct := m.ct
	fromNew := map[partitionReplica]bool{}
	for _, pr := range replicas {
		fromNew[pr] = m.states[pr] == NewReplica
	}
	valid := m.transitionOnly(replicas, target)
	switch target {
	case NewReplica, OnlineReplica:
		for _, pr := range valid {
			if _, ok := ct.ctx.states[pr.tp]; ok && (target == NewReplica || !fromNew[pr]) {
				b.addLeaderAndIsr([]int32{pr.replica}, pr.tp, target == NewReplica)
			}
		}
	case OfflineReplica:
		byPartition := map[TopicPartition][]int32{}
		for _, pr := range valid {
			b.stopReplica([]int32{pr.replica}, pr.tp, false)
			byPartition[pr.tp] = append(byPartition[pr.tp], pr.replica)
		}
		tps := sorted.TPKeys(byPartition)
		remove := func(tp TopicPartition, cur leaderIsr) (leaderIsr, bool, bool) {
			next, changed := removeFromIsr(byPartition[tp], cur)
			return next, changed, false
		}
		others := func(tp TopicPartition) []int32 {
			return slices.DeleteFunc(ct.ctx.liveReplicas(tp), func(r int32) bool { return slices.Contains(byPartition[tp], r) })
		}
		// The states are read afresh, as Kafka's doRemoveReplicasFromIsr does: a leader may
		// have put the replica back into its ISR since the cached state (its ISR change
		// notification not yet processed), and a removal decided on the cache would then
		// write nothing and leave the stopped replica in the ISR.
		var stale []TopicPartition
		for _, tp := range tps {
			if !m.fresh[tp] {
				stale = append(stale, tp)
			}
		}
		m.fresh = nil
		if err := ct.zk.loadStates(stale); err != nil {
			return err
		}
		var withState []TopicPartition
		for _, tp := range tps {
			if _, ok := ct.ctx.states[tp]; ok {
				withState = append(withState, tp)
			}
		}
		return ct.psm.elect(withState, b, remove, others)
	case ReplicaDeletionStarted:
		for _, pr := range valid {
			b.stopReplica([]int32{pr.replica}, pr.tp, true)
		}
	}
	return nil
}

// failDeletion marks replicas of topics queued for deletion ineligible (their broker is
// offline or answered an error; Kafka's failReplicaDeletion): Started ones directly, others
// through Offline.
func (m *replicaStateMachine) failDeletion(replicas []partitionReplica) {
	for _, pr := range replicas {
		switch m.states[pr] {
		case ReplicaDeletionIneligible:
		case ReplicaDeletionStarted:
			m.transitionOnly([]partitionReplica{pr}, ReplicaDeletionIneligible)
		default:
			m.transitionOnly(m.transitionOnly([]partitionReplica{pr}, OfflineReplica), ReplicaDeletionIneligible)
		}
	}
}

// forgetPartition drops tp's replicas.
func (m *replicaStateMachine) forgetPartition(tp TopicPartition) {
	for pr := range m.states {
		if pr.tp == tp {
			delete(m.states, pr)
		}
	}
}
