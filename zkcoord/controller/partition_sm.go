package controller

import (
	"errors"
	"slices"
	"strconv"

	"github.com/go-zookeeper/zk"
	"github.com/isrbroker/isrbroker/zkcoord/internal/sorted"
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
// Without such a replica the partition stays New. As in Kafka 1.1+ (createTopicPartitions,
// then createTopicPartitionStatesRaw), the znodes are written in batches: the topics'
// partitions parents first, then one atomic group per partition (its znode when missing and
// its state) in fenced multis of a few hundred ops (fencedBatch).
func (m *partitionStateMachine) initializeLeaderAndIsr(tps []TopicPartition, b *requestBatch) error {
	ct := m.ct
	type pending struct {
		tp   TopicPartition
		st   leaderIsr
		live []int32
	}
	var todo []pending
	offline := 0
	for _, tp := range tps {
		if m.states[tp] != NewPartition {
			m.logInvalid(tp, m.states[tp], OnlinePartition) // initialization starts from New only
			continue
		}
		live := ct.ctx.liveReplicas(tp)
		// Brokers in controlled shutdown (K7) are neither leader nor in the first ISR.
		eligible := slices.DeleteFunc(slices.Clone(live), func(r int32) bool { return ct.ctx.shuttingDown[r] })
		if len(eligible) == 0 {
			if offline == 0 {
				ct.stateChangeLog().WithField("topic", tp.Topic).WithField("partition", tp.Partition).
					WithField("replicas", ct.ctx.replicas(tp)).Warn("no replica of the new partition is alive; it stays offline")
			}
			offline++
			continue
		}
		todo = append(todo, pending{tp: tp, live: live,
			st: leaderIsr{leader: eligible[0], leaderEpoch: zkdata.InitialLeaderEpoch, isr: eligible, controllerEpoch: ct.ctx.epoch}})
	}
	if offline > 1 {
		ct.stateChangeLog().WithField("count", offline).Warn("new partitions without a live replica stay offline")
	}
	if len(todo) == 0 {
		return nil
	}
	// Which partition znodes exist already: one children read per topic.
	existing := map[string]map[string]bool{}
	for _, p := range todo {
		if _, ok := existing[p.tp.Topic]; ok {
			continue
		}
		children, err := ct.conn.Children(zkdata.TopicPartitionsPath(p.tp.Topic))
		if err != nil && !errors.Is(err, zk.ErrNoNode) {
			return err
		}
		set := map[string]bool{}
		for _, c := range children {
			set[c] = true
		}
		if errors.Is(err, zk.ErrNoNode) {
			set = nil // no partitions parent yet
		}
		existing[p.tp.Topic] = set
	}
	var parents [][]any
	for _, t := range sorted.Keys(existing) {
		if existing[t] == nil {
			parents = append(parents, []any{&zk.CreateRequest{Path: zkdata.TopicPartitionsPath(t), Acl: zk.WorldACL(zk.PermAll)}})
		}
	}
	if len(parents) > 0 {
		res, err := ct.zk.fencedBatch(parents)
		if err != nil {
			return err
		}
		for _, r := range res {
			if r.err != nil && !errors.Is(r.err, zk.ErrNodeExists) && !errors.Is(r.err, zk.ErrNoNode) {
				return r.err
			}
		}
	}
	groups := make([][]any, len(todo))
	for i, p := range todo {
		tp := p.tp
		if !existing[tp.Topic][strconv.Itoa(int(tp.Partition))] {
			groups[i] = append(groups[i], &zk.CreateRequest{Path: zkdata.TopicPartitionPath(tp.Topic, tp.Partition), Acl: zk.WorldACL(zk.PermAll)})
		}
		groups[i] = append(groups[i], &zk.CreateRequest{Path: zkdata.PartitionStatePath(tp.Topic, tp.Partition),
			Data: zkdata.EncodeState(p.st.leader, p.st.leaderEpoch, p.st.isr, p.st.controllerEpoch), Acl: zk.WorldACL(zk.PermAll)})
	}
	res, err := ct.zk.fencedBatch(groups)
	if err != nil {
		return err
	}
	// Written by an earlier controller (or the topic is going away): use ZooKeeper's state.
	var reload []TopicPartition
	for i, r := range res {
		if r.err != nil {
			if !errors.Is(r.err, zk.ErrNodeExists) && !errors.Is(r.err, zk.ErrNoNode) {
				return r.err
			}
			reload = append(reload, todo[i].tp)
		}
	}
	if err := ct.zk.loadStates(reload); err != nil {
		return err
	}
	created := 0
	for i, p := range todo {
		tp := p.tp
		if res[i].err != nil {
			if _, ok := ct.ctx.states[tp]; ok {
				m.settle(tp)
				b.addLeaderAndIsr(p.live, tp, false)
			}
			continue
		}
		st := p.st
		st.zkVersion = 0
		ct.ctx.states[tp] = &st
		m.transition(tp, OnlinePartition)
		ct.stateChangeLog().WithField("topic", tp.Topic).WithField("partition", tp.Partition).WithField("leader", st.leader).
			WithField("isr", st.isr).WithField("leaderEpoch", st.leaderEpoch).Debug("new partition online")
		b.addLeaderAndIsr(p.live, tp, true)
		created++
	}
	ct.stateChangeLog().WithField("count", created).WithField("existing", len(reload)).Info("new partitions online")
	return nil
}

// offlineStrategy is the OfflinePartition election for tp (unclean when the topic allows it).
func (m *partitionStateMachine) offlineStrategy(tp TopicPartition, cur leaderIsr) (leaderIsr, bool, bool) {
	ct := m.ct
	return offlineElection(ct.ctx.replicas(tp), cur, ct.ctx.partitionLiveness(tp), func() bool { return ct.zk.uncleanAllowed(tp.Topic) })
}

// elect is OnlinePartition/OfflinePartition → OnlinePartition with an election strategy
// (electLeaderForPartitions): the strategy's results are written with fenced compare-and-sets
// on the cached zkVersions, batched in multis (fencedBatch, as Kafka 1.1+ writes them
// asynchronously); the partitions whose write fails with BADVERSION (the leader changed its
// ISR meanwhile) are re-read and recomputed (Kafka's partitionsToRetry loop). A changed state
// sends LeaderAndIsr to recipients(tp) and UpdateMetadata to every live broker. The
// partitions then settle in Online (live leader) or Offline.
func (m *partitionStateMachine) elect(tps []TopicPartition, b *requestBatch, strategy electionFunc, recipients func(TopicPartition) []int32) error {
	ct := m.ct
	var todo []TopicPartition
	for _, tp := range tps {
		if !validPartitionTransition(m.states[tp], OnlinePartition) {
			m.logInvalid(tp, m.states[tp], OnlinePartition)
			continue
		}
		todo = append(todo, tp)
	}
	counts := map[string]int{}
	for attempt := 0; attempt < 20 && len(todo) > 0; attempt++ {
		type write struct {
			tp      TopicPartition
			cur     leaderIsr
			next    leaderIsr
			unclean bool
		}
		var writes []write
		for _, tp := range todo {
			cur := ct.ctx.states[tp]
			if cur == nil {
				continue
			}
			if cur.controllerEpoch > ct.ctx.epoch {
				ct.stateChangeLog().WithField("topic", tp.Topic).WithField("partition", tp.Partition).
					WithField("stateControllerEpoch", cur.controllerEpoch).Warn("partition state written by a newer controller; aborting")
				return ErrControllerMoved
			}
			next, changed, unclean := strategy(tp, *cur)
			if !changed {
				continue
			}
			next.controllerEpoch = ct.ctx.epoch
			writes = append(writes, write{tp: tp, cur: *cur, next: next, unclean: unclean})
		}
		groups := make([][]any, len(writes))
		for i, w := range writes {
			groups[i] = []any{&zk.SetDataRequest{Path: zkdata.PartitionStatePath(w.tp.Topic, w.tp.Partition),
				Data: zkdata.EncodeState(w.next.leader, w.next.leaderEpoch, w.next.isr, w.next.controllerEpoch), Version: w.cur.zkVersion}}
		}
		res, err := ct.zk.fencedBatch(groups)
		if err != nil {
			return err
		}
		var badVersion []TopicPartition
		for i, r := range res {
			if errors.Is(r.err, zk.ErrBadVersion) {
				badVersion = append(badVersion, writes[i].tp)
			}
		}
		if err := ct.zk.loadStates(badVersion); err != nil {
			return err
		}
		todo = todo[:0]
		for i, w := range writes {
			tp, next := w.tp, w.next
			r := res[i]
			if errors.Is(r.err, zk.ErrBadVersion) {
				if s := ct.ctx.states[tp]; s != nil && s.sameData(next) {
					r = batchResult{res: []zk.MultiResponse{{Stat: &zk.Stat{Version: s.zkVersion}}}} // our earlier, retried write
				} else {
					todo = append(todo, tp) // recomputed from the state just read
					continue
				}
			}
			if errors.Is(r.err, zk.ErrNoNode) {
				delete(ct.ctx.states, tp)
				continue
			}
			if r.err != nil {
				return r.err
			}
			if len(r.res) > 0 && r.res[0].Stat != nil {
				next.zkVersion = r.res[0].Stat.Version
			}
			ct.ctx.states[tp] = &next
			l := ct.stateChangeLog().WithField("topic", tp.Topic).WithField("partition", tp.Partition).WithField("leader", next.leader).
				WithField("isr", next.isr).WithField("leaderEpoch", next.leaderEpoch)
			switch {
			case w.unclean:
				ct.mUnclean.Mark(1)
				l.WithField("previousLeader", w.cur.leader).WithField("previousIsr", w.cur.isr).
					Warn("unclean leader election: a replica outside the ISR became leader; data loss is possible")
			case next.leader == noLeader:
				if counts["offline"] == 0 {
					l.Warn("partition offline: no live in-sync replica")
				}
				counts["offline"]++
			default:
				l.Debug("partition state changed")
				counts["changed"]++
			}
			b.addLeaderAndIsr(recipients(tp), tp, false)
		}
	}
	if counts["offline"] > 1 {
		ct.stateChangeLog().WithField("count", counts["offline"]).Warn("partitions offline: no live in-sync replica")
	}
	if counts["changed"] > 0 {
		ct.stateChangeLog().WithField("count", counts["changed"]).Info("partition states changed")
	}
	for _, tp := range tps {
		if validPartitionTransition(m.states[tp], OnlinePartition) {
			m.settle(tp)
		}
	}
	return nil
}
