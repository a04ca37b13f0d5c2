package controller

import (
	"errors"
	"slices"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/isrbroker/isrbroker/zkcoord/internal/sorted"
	"github.com/isrbroker/isrbroker/zkcoord/zkdata"
)

// Preferred leader election and automatic leader rebalance (K7; Kafka's
// KafkaController.onReplicaElection and checkAndTriggerAutoLeaderRebalance). The preferred
// replica of a partition is the head of its assignment. An operator asks for preferred
// elections by creating /admin/preferred_replica_election (`isrbroker leader-election`); the
// controller watches that znode, elects, sends LeaderAndIsr/UpdateMetadata and deletes it.
// With auto.leader.rebalance.enable the controller also checks, 5 s after failover and then
// every leader.imbalance.check.interval.seconds, how many partitions each broker should lead
// but does not, and moves them back when that share exceeds
// leader.imbalance.per.broker.percentage.

// autoRebalanceFirstDelay is Kafka's delay of the first leader imbalance check after a
// controller failover.
const autoRebalanceFirstDelay = 5 * time.Second

// Election triggers, logged with every preferred election.
const (
	triggerAdmin = "admin"          // /admin/preferred_replica_election
	triggerAuto  = "auto-rebalance" // leader imbalance check
)

const metricPreferredImbalance = "kafka.controller:type=KafkaController,name=PreferredReplicaImbalanceCount"

// preferredElector runs preferred elections and the leader imbalance checks.
type preferredElector struct {
	ct *Controller
}

// preferredOutcome classifies one partition of a preferred election request.
type preferredOutcome int

const (
	prefElect      preferredOutcome = iota // preferred replica is live and in the ISR: elect it
	prefAlready                            // preferred replica already leads: no-op
	prefNotLive                            // preferred replica not live (or shutting down, K7)
	prefNotInISR                           // preferred replica live but not in the ISR
	prefUnknown                            // no such partition, or no state yet
	prefBusy                               // topic being deleted or partition being reassigned
	prefNoReplicas                         // empty assignment
)

func (o preferredOutcome) String() string {
	switch o {
	case prefElect:
		return "elect"
	case prefAlready:
		return "preferred replica already leader"
	case prefNotLive:
		return "preferred replica not live"
	case prefNotInISR:
		return "preferred replica not in the ISR"
	case prefUnknown:
		return "unknown partition"
	case prefBusy:
		return "partition being deleted or reassigned"
	default:
		return "no replicas"
	}
}

// classifyPreferred decides what a preferred election does for tp from the cached state.
func (p *preferredElector) classify(tp TopicPartition, skip preferredSkips) preferredOutcome {
	ct := p.ct
	if !ct.ctx.hasPartition(tp) {
		return prefUnknown
	}
	if skip.deleting[tp.Topic] || ct.reassign.isReassigning(tp) {
		return prefBusy
	}
	reps := ct.ctx.replicas(tp)
	if len(reps) == 0 {
		return prefNoReplicas
	}
	st := ct.ctx.states[tp]
	if st == nil {
		return prefUnknown
	}
	pref := reps[0]
	switch {
	case st.leader == pref:
		return prefAlready
	case !ct.ctx.electable(pref):
		return prefNotLive
	case !slices.Contains(st.isr, pref):
		return prefNotInISR
	}
	return prefElect
}

// preferredSkips are the partitions preferred elections leave alone besides those being
// reassigned (reassign.go): topics queued for deletion (/admin/delete_topics).
type preferredSkips struct {
	deleting map[string]bool
}

func (p *preferredElector) loadSkips() (preferredSkips, error) {
	ct := p.ct
	skip := preferredSkips{deleting: map[string]bool{}}
	ch, err := ct.conn.Children(zkdata.PathDeleteTopics)
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		return skip, err
	}
	for _, t := range ch {
		skip.deleting[t] = true
	}
	return skip, nil
}

// electPreferred runs the preferred election for tps (KafkaController.onReplicaElection):
// the states of the partitions are re-read first (the ISR in the cache may lag behind the
// leader's own ISR changes until the ISR change notification arrives), each partition is
// classified and logged, the eligible ones are elected with a fenced compare-and-set, and
// LeaderAndIsr (to the live replicas) plus UpdateMetadata are sent. It returns the
// partitions whose leader changed.
func (p *preferredElector) elect(tps []TopicPartition, skip preferredSkips, trigger string) ([]TopicPartition, error) {
	ct := p.ct
	var eligible []TopicPartition
	for _, tp := range tps {
		if ct.ctx.hasPartition(tp) {
			if err := ct.zk.loadState(tp); err != nil {
				return nil, err
			}
		}
		o := p.classify(tp, skip)
		l := ct.log.WithField("topic", tp.Topic).WithField("partition", tp.Partition).WithField("trigger", trigger)
		switch o {
		case prefElect:
			eligible = append(eligible, tp)
		case prefAlready:
			l.Debug("preferred replica election: the preferred replica already leads")
		default:
			if st := ct.ctx.states[tp]; st != nil {
				l = l.WithField("leader", st.leader).WithField("isr", st.isr).WithField("leaderEpoch", st.leaderEpoch)
			}
			l = l.WithField("replicas", ct.ctx.replicas(tp)).WithField("reason", o.String())
			if trigger == triggerAuto {
				l.Debug("preferred replica not elected") // re-checked every interval
			} else {
				l.Warn("preferred replica not elected")
			}
		}
	}
	if len(eligible) == 0 {
		return nil, nil
	}
	start := time.Now()
	defer ct.mElection.UpdateSince(start)
	before := make(map[TopicPartition]int32, len(eligible))
	for _, tp := range eligible {
		before[tp] = ct.ctx.states[tp].leader
	}
	b := ct.newBatch()
	elect := func(tp TopicPartition, cur leaderIsr) (leaderIsr, bool, bool) {
		next, changed := preferredElection(ct.ctx.replicas(tp), cur, ct.ctx)
		return next, changed, false
	}
	if err := ct.psm.elect(eligible, b, elect, ct.ctx.liveReplicas); err != nil {
		return nil, err
	}
	b.send()
	var moved []TopicPartition
	for _, tp := range eligible {
		st := ct.ctx.states[tp]
		if st == nil {
			continue
		}
		if reps := ct.ctx.replicas(tp); len(reps) > 0 && st.leader == reps[0] && before[tp] != st.leader {
			moved = append(moved, tp)
			ct.log.WithField("topic", tp.Topic).WithField("partition", tp.Partition).WithField("trigger", trigger).
				WithField("leader", st.leader).WithField("previousLeader", before[tp]).WithField("leaderEpoch", st.leaderEpoch).
				Info("preferred replica elected leader")
		} else {
			ct.log.WithField("topic", tp.Topic).WithField("partition", tp.Partition).WithField("trigger", trigger).
				Warn("preferred replica not elected: the partition state changed meanwhile")
		}
	}
	return moved, nil
}

// processPreferredElection handles /admin/preferred_replica_election (K7): elect the
// listed partitions' preferred replicas, then delete the znode with a fenced multi. Unknown
// partitions, partitions of topics being deleted or being reassigned, and partitions whose
// preferred replica already leads are skipped; a preferred replica that is not live or not
// in the ISR is not elected (logged). An undecodable znode is logged and deleted.
func (p *preferredElector) process() error {
	ct := p.ct
	data, err := ct.zk.watchExists(zkdata.PathPreferredReplicaElection, evPreferredElection)
	if err != nil || data == nil {
		return err
	}
	tps, derr := zkdata.DecodePreferredElection(data)
	if derr != nil {
		ct.log.WithError(derr).Warn("ignoring undecodable preferred replica election request")
		return ct.zk.deletePaths([]string{zkdata.PathPreferredReplicaElection})
	}
	skip, err := p.loadSkips()
	if err != nil {
		return err
	}
	ct.log.WithField("partitions", len(tps)).Info("preferred replica election requested")
	moved, err := p.elect(tps, skip, triggerAdmin)
	if err != nil {
		return err
	}
	ct.log.WithField("requested", len(tps)).WithField("elected", len(moved)).Info("preferred replica election done")
	return ct.zk.deletePaths([]string{zkdata.PathPreferredReplicaElection})
}

// preferredOnFailover is the preferred-election part of controller failover: register the
// watch and process a request left pending by an earlier controller, then schedule the
// first leader imbalance check.
func (p *preferredElector) onFailover() error {
	if err := p.process(); err != nil {
		return err
	}
	p.scheduleAutoRebalance(autoRebalanceFirstDelay)
	return nil
}

// scheduleAutoRebalance enqueues an evAutoRebalance for the current controller epoch after
// d. The timer goroutine only enqueues; the check runs on the controller goroutine, and an
// event of an earlier controllership is ignored there.
func (p *preferredElector) scheduleAutoRebalance(d time.Duration) {
	ct := p.ct
	if !ct.cfg.AutoLeaderRebalance {
		return
	}
	epoch := ct.ctx.epoch
	done := ct.done
	go func() {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
			ct.enqueue(event{kind: evAutoRebalance, epoch: epoch})
		case <-done:
		}
	}()
}

// processAutoRebalance is checkAndTriggerAutoLeaderRebalance: for every broker, the
// partitions whose preferred replica it is; when the share of those it does not lead is
// above leader.imbalance.per.broker.percentage, the ones whose preferred replica is live,
// not shutting down and in the ISR get a preferred election. Nothing is done while a
// reassignment runs; topics being deleted are left out. The next check is scheduled
// whatever the outcome.
func (p *preferredElector) processAutoRebalance(epoch int32) error {
	ct := p.ct
	if epoch != ct.ctx.epoch || !ct.cfg.AutoLeaderRebalance {
		return nil // a timer of an earlier controllership
	}
	defer p.scheduleAutoRebalance(ct.cfg.LeaderImbalanceCheckInterval)
	if ct.reassign.any() {
		ct.log.Debug("leader imbalance check skipped: a partition reassignment is in progress")
		return nil
	}
	skip, err := p.loadSkips()
	if err != nil {
		return err
	}
	byPreferred := map[int32][]TopicPartition{}
	for _, tp := range ct.ctx.sortedStates() {
		reps := ct.ctx.replicas(tp)
		if len(reps) == 0 || skip.deleting[tp.Topic] {
			continue
		}
		byPreferred[reps[0]] = append(byPreferred[reps[0]], tp)
	}
	threshold := float64(ct.cfg.LeaderImbalancePerBrokerPercentage) / 100
	var candidates []TopicPartition
	for _, id := range sorted.Keys(byPreferred) {
		all := byPreferred[id]
		var notLed []TopicPartition
		for _, tp := range all {
			if ct.ctx.states[tp].leader != id {
				notLed = append(notLed, tp)
			}
		}
		ratio := float64(len(notLed)) / float64(len(all))
		l := ct.log.WithField("preferredLeader", id).WithField("imbalanceRatio", ratio).WithField("notLed", len(notLed)).WithField("preferredFor", len(all))
		if ratio <= threshold {
			if len(notLed) > 0 {
				l.Debug("leader imbalance within leader.imbalance.per.broker.percentage")
			}
			continue
		}
		l.Info("leader imbalance above leader.imbalance.per.broker.percentage: triggering preferred replica elections")
		for _, tp := range notLed {
			if ct.ctx.electable(id) {
				candidates = append(candidates, tp)
			}
		}
	}
	if len(candidates) == 0 {
		return nil
	}
	moved, err := p.elect(candidates, skip, triggerAuto)
	if err != nil {
		return err
	}
	ct.log.WithField("candidates", len(candidates)).WithField("elected", len(moved)).Info("automatic leader rebalance done")
	return nil
}

// imbalanceCount is PreferredReplicaImbalanceCount: partitions with a state whose
// leader is not their preferred replica, topics being deleted excluded (only those the
// controller knows of: the check runs after every event and reads nothing from ZooKeeper).
func (p *preferredElector) imbalanceCount() int64 {
	ct := p.ct
	var n int64
	for tp, st := range ct.ctx.states {
		if reps := ct.ctx.replicas(tp); len(reps) > 0 && st.leader != reps[0] {
			n++
		}
	}
	return n
}
