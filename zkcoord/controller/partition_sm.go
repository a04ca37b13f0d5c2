package controller

import (
	"errors"
	"slices"

	"github.com/go-zookeeper/zk"
	"github.com/isrbroker/isrbroker/zkcoord/zkdata"
)

// PartitionState is a partition's state in the partition state machine (Kafka 2.4's
// PartitionStateMachine).
type PartitionState int8

const (
	// NonExistentPartition: never created, or deleted.
	NonExistentPartition PartitionState = iota
	// NewPartition: assigned, without a state znode (no leader yet).
	NewPartition
	// OnlinePartition: has a live leader.
	OnlinePartition
	// OfflinePartition: has a state znode but its leader is not live.
	OfflinePartition
)

func (s PartitionState) String() string {
	return [...]string{"NonExistentPartition", "NewPartition", "OnlinePartition", "OfflinePartition"}[s]
}

// validPreviousPartitionStates is Kafka's PartitionState.validPreviousStates.
var validPreviousPartitionStates = map[PartitionState][]PartitionState{
	NewPartition:         {NonExistentPartition},
	OnlinePartition:      {NewPartition, OnlinePartition, OfflinePartition},
	OfflinePartition:     {NewPartition, OnlinePartition, OfflinePartition},
	NonExistentPartition: {OfflinePartition},
}

// validPartitionTransition reports whether a partition may move from one state to another.
func validPartitionTransition(from, to PartitionState) bool {
	return slices.Contains(validPreviousPartitionStates[to], from)
}

// partitionStateMachine keeps every partition's PartitionState and performs the transitions
// that write the state znode: NewPartition → OnlinePartition creates it (leader and ISR
// initialized) and OnlinePartition/OfflinePartition → OnlinePartition runs a leader election
// with a strategy (election.go), a compare-and-set on the cached zkVersion. An invalid
// transition is logged and skipped, as in Kafka, and counted in invalid.
type partitionStateMachine struct {
	ct      *Controller
	states  map[TopicPartition]PartitionState
	invalid int
}

func newPartitionStateMachine(ct *Controller) *partitionStateMachine {
	return &partitionStateMachine{ct: ct, states: map[TopicPartition]PartitionState{}}
}

func (m *partitionStateMachine) reset() { m.states = map[TopicPartition]PartitionState{} }

func (m *partitionStateMachine) state(tp TopicPartition) PartitionState { return m.states[tp] }

// startup initializes every assigned partition's state from the context
// (initializePartitionState): no state znode → New, live leader → Online, else Offline.
func (m *partitionStateMachine) startup() {
	for _, tp := range m.ct.ctx.partitions() {
		m.initPartition(tp)
	}
}

// initPartition sets tp's state from the cached partition state, without a transition.
func (m *partitionStateMachine) initPartition(tp TopicPartition) {
	st, ok := m.ct.ctx.states[tp]
	switch {
	case !ok:
		m.states[tp] = NewPartition
	case m.ct.ctx.isLive(st.leader):
		m.states[tp] = OnlinePartition
	default:
		m.states[tp] = OfflinePartition
	}
}

// transition moves tp to target when valid; otherwise it logs and returns false.
func (m *partitionStateMachine) transition(tp TopicPartition, target PartitionState) bool {
	cur := m.states[tp]
	if !validPartitionTransition(cur, target) {
		m.logInvalid(tp, cur, target)
		return false
	}
	if target == NonExistentPartition {
		delete(m.states, tp)
	} else {
		m.states[tp] = target
	}
	return true
}

func (m *partitionStateMachine) logInvalid(tp TopicPartition, from, to PartitionState) {
	m.invalid++
	m.ct.stateChangeLog().WithField("topic", tp.Topic).WithField("partition", tp.Partition).WithField("from", from).
		WithField("to", to).Error("invalid partition state transition; skipped")
}

func (m *partitionStateMachine) forget(tp TopicPartition) { delete(m.states, tp) }

// settle moves tp to Online when its leader is live, else Offline (after an election).
func (m *partitionStateMachine) settle(tp TopicPartition) {
	if st, ok := m.ct.ctx.states[tp]; ok && m.ct.ctx.isLive(st.leader) {
		m.transition(tp, OnlinePartition)
	} else if ok {
		m.transition(tp, OfflinePartition)
	}
}

// triggerOnlineStateChange moves New and Offline partitions, and Online partitions whose ISR
// names a dead broker, to OnlinePartition with the offline election, except those of topics
// queued for deletion (triggerOnlinePartitionStateChange).
func (m *partitionStateMachine) triggerOnlineStateChange(b *requestBatch) error {
	ct := m.ct
	var fresh, offline []TopicPartition
	for _, tp := range ct.ctx.partitions() {
		if ct.deletion.isQueued(tp.Topic) {
			continue
		}
		st, ok := ct.ctx.states[tp]
		switch {
		case !ok:
			if m.states[tp] != NewPartition {
				m.initPartition(tp) // its state znode vanished
			}
			fresh = append(fresh, tp)
		case ct.ctx.needsElection(st):
			offline = append(offline, tp)
		}
	}
	if err := m.initializeLeaderAndIsr(fresh, b); err != nil {
		return err
	}
	return m.elect(offline, b, m.offlineStrategy, ct.ctx.liveReplicas)
}

// initializeLeaderAndIsr is NewPartition → OnlinePartition: leader = first live replica in
// assignment order that is not shutting down, ISR = those replicas, leader epoch 0; the state
// znode is created in a fenced multi and the live replicas get LeaderAndIsr with isNew=true.
// Without such a replica the partition stays New.
func (m *partitionStateMachine) initializeLeaderAndIsr(tps []TopicPartition, b *requestBatch) error {
	ct := m.ct
	parentOK := map[string]bool{}
	for _, tp := range tps {
		if m.states[tp] != NewPartition {
			m.logInvalid(tp, m.states[tp], OnlinePartition) // initialization starts from New only
			continue
		}
		live := ct.ctx.liveReplicas(tp)
		// Brokers in controlled shutdown (K7) are neither leader nor in the first ISR.
		eligible := slices.DeleteFunc(slices.Clone(live), func(r int32) bool { return ct.ctx.shuttingDown[r] })
		if len(eligible) == 0 {
			ct.log.WithField("topic", tp.Topic).WithField("partition", tp.Partition).
				WithField("replicas", ct.ctx.replicas(tp)).Warn("no replica of the new partition is alive; it stays offline")
			continue
		}
		st := leaderIsr{leader: eligible[0], leaderEpoch: zkdata.InitialLeaderEpoch, isr: eligible, controllerEpoch: ct.ctx.epoch}
		var ops []any
		if !parentOK[tp.Topic] {
			ok, _, err := ct.conn.Exists(zkdata.TopicPartitionsPath(tp.Topic))
			if err != nil {
				return err
			}
			if !ok {
				ops = append(ops, &zk.CreateRequest{Path: zkdata.TopicPartitionsPath(tp.Topic), Acl: zk.WorldACL(zk.PermAll)})
			}
		}
		ok, _, err := ct.conn.Exists(zkdata.TopicPartitionPath(tp.Topic, tp.Partition))
		if err != nil {
			return err
		}
		if !ok {
			ops = append(ops, &zk.CreateRequest{Path: zkdata.TopicPartitionPath(tp.Topic, tp.Partition), Acl: zk.WorldACL(zk.PermAll)})
		}
		ops = append(ops, &zk.CreateRequest{Path: zkdata.PartitionStatePath(tp.Topic, tp.Partition),
			Data: zkdata.EncodeState(st.leader, st.leaderEpoch, st.isr, st.controllerEpoch), Acl: zk.WorldACL(zk.PermAll)})
		_, err = ct.zk.fencedMulti(ops...)
		if errors.Is(err, ErrControllerMoved) {
			return err
		}
		if errors.Is(err, zk.ErrNodeExists) || errors.Is(err, zk.ErrNoNode) {
			// Written by an earlier controller (or the topic is going away): use ZK's state.
			if err := ct.zk.loadState(tp); err != nil {
				return err
			}
			if _, ok := ct.ctx.states[tp]; ok {
				m.settle(tp)
				b.addLeaderAndIsr(live, tp, false)
			}
			continue
		}
		if err != nil {
			return err
		}
		parentOK[tp.Topic] = true
		st.zkVersion = 0
		ct.ctx.states[tp] = &st
		m.transition(tp, OnlinePartition)
		ct.stateChangeLog().WithField("topic", tp.Topic).WithField("partition", tp.Partition).WithField("leader", st.leader).
			WithField("isr", st.isr).WithField("leaderEpoch", st.leaderEpoch).Info("new partition online")
		b.addLeaderAndIsr(live, tp, true)
	}
	return nil
}

// offlineStrategy is the OfflinePartition election for tp (unclean when the topic allows it).
func (m *partitionStateMachine) offlineStrategy(tp TopicPartition, cur leaderIsr) (leaderIsr, bool, bool) {
	ct := m.ct
	return offlineElection(ct.ctx.replicas(tp), cur, ct.ctx, func() bool { return ct.zk.uncleanAllowed(tp.Topic) })
}

// elect is OnlinePartition/OfflinePartition → OnlinePartition with an election strategy
// (electLeaderForPartitions): the strategy's result is written with a fenced compare-and-set
// on the cached zkVersion; on BADVERSION (the leader changed its ISR meanwhile) the state is
// re-read and recomputed (Kafka's partitionsToRetry loop). A changed state sends LeaderAndIsr
// to recipients(tp) and UpdateMetadata to every live broker. The partition then settles in
// Online (live leader) or Offline.
func (m *partitionStateMachine) elect(tps []TopicPartition, b *requestBatch, strategy electionFunc, recipients func(TopicPartition) []int32) error {
	ct := m.ct
	for _, tp := range tps {
		if !validPartitionTransition(m.states[tp], OnlinePartition) {
			m.logInvalid(tp, m.states[tp], OnlinePartition)
			continue
		}
		for attempt := 0; attempt < 20; attempt++ {
			cur := ct.ctx.states[tp]
			if cur == nil {
				break
			}
			if cur.controllerEpoch > ct.ctx.epoch {
				ct.stateChangeLog().WithField("topic", tp.Topic).WithField("partition", tp.Partition).
					WithField("stateControllerEpoch", cur.controllerEpoch).Warn("partition state written by a newer controller; aborting")
				return ErrControllerMoved
			}
			next, changed, unclean := strategy(tp, *cur)
			if !changed {
				break
			}
			next.controllerEpoch = ct.ctx.epoch
			res, err := ct.zk.fencedMulti(&zk.SetDataRequest{Path: zkdata.PartitionStatePath(tp.Topic, tp.Partition),
				Data: zkdata.EncodeState(next.leader, next.leaderEpoch, next.isr, next.controllerEpoch), Version: cur.zkVersion})
			if errors.Is(err, zk.ErrBadVersion) {
				if err := ct.zk.loadState(tp); err != nil {
					return err
				}
				if s := ct.ctx.states[tp]; s != nil && s.sameData(next) {
					err = nil // our earlier, retried write
					res = []zk.MultiResponse{{Stat: &zk.Stat{Version: s.zkVersion}}}
				} else {
					continue
				}
			}
			if errors.Is(err, zk.ErrNoNode) {
				delete(ct.ctx.states, tp)
				break
			}
			if err != nil {
				return err
			}
			if len(res) > 0 && res[0].Stat != nil {
				next.zkVersion = res[0].Stat.Version
			}
			ct.ctx.states[tp] = &next
			l := ct.stateChangeLog().WithField("topic", tp.Topic).WithField("partition", tp.Partition).WithField("leader", next.leader).
				WithField("isr", next.isr).WithField("leaderEpoch", next.leaderEpoch)
			if unclean {
				ct.mUnclean.Mark(1)
				l.WithField("previousLeader", cur.leader).WithField("previousIsr", cur.isr).
					Warn("unclean leader election: a replica outside the ISR became leader; data loss is possible")
			} else if next.leader == noLeader {
				l.Warn("partition offline: no live in-sync replica")
			} else {
				l.Info("partition state changed")
			}
			b.addLeaderAndIsr(recipients(tp), tp, false)
			break
		}
		m.settle(tp)
	}
	return nil
}
