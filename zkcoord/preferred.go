package zkcoord

import (
	"context"
	"errors"
	"github.com/isrbroker/isrbroker/zkcoord/zkdata"
	"slices"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/rcrowley/go-metrics"
)

// Preferred leader election and automatic leader rebalance (K7, kafka-zk-reference §2
// "Elections" and "Failover sequence"; Kafka's KafkaController.onReplicaElection and
// checkAndTriggerAutoLeaderRebalance). The preferred replica of a partition is the head of
// its assignment. An operator asks for preferred elections by creating
// /admin/preferred_replica_election (`isrbroker leader-election`); the controller watches
// that znode, elects, sends LeaderAndIsr/UpdateMetadata and deletes it. With
// auto.leader.rebalance.enable the controller also checks, 5 s after failover and then
// every leader.imbalance.check.interval.seconds, how many partitions each broker should
// lead but does not, and moves them back when that share exceeds
// leader.imbalance.per.broker.percentage.

// ErrPreferredElectionInProgress: /admin/preferred_replica_election already exists (the
// controller has not finished the previous request).
var ErrPreferredElectionInProgress = errors.New("zkcoord: There is an existing preferred replica election in progress")

// autoRebalanceFirstDelay is Kafka's delay of the first leader imbalance check after a
// controller failover.
const autoRebalanceFirstDelay = 5 * time.Second

// Election triggers, logged with every preferred election.
const (
	triggerAdmin = "admin"          // /admin/preferred_replica_election
	triggerAuto  = "auto-rebalance" // leader imbalance check
)

const metricPreferredImbalance = "kafka.controller:type=KafkaController,name=PreferredReplicaImbalanceCount"

// ---- admin side (operator tools) ----

// RequestPreferredElection creates /admin/preferred_replica_election listing tps
// (Kafka's PreferredReplicaLeaderElectionCommand). ErrPreferredElectionInProgress when the
// znode already exists. The partitions are not checked against the cluster here; the
// controller skips unknown ones.
func (c *Coordinator) RequestPreferredElection(ctx context.Context, tps []TopicPartition) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	_, err := c.create(zkdata.PathPreferredReplicaElection, zkdata.EncodePreferredElection(tps), 0)
	if errors.Is(err, zk.ErrNodeExists) {
		return ErrPreferredElectionInProgress
	}
	return err
}

// PreferredElectionPending reports whether /admin/preferred_replica_election exists.
func (c *Coordinator) PreferredElectionPending() (bool, error) {
	ok, _, err := c.exists(zkdata.PathPreferredReplicaElection)
	return ok, err
}

// WaitPreferredElectionDone waits until /admin/preferred_replica_election is gone (the
// controller deletes it after writing the new partition states), or ctx ends.
func (c *Coordinator) WaitPreferredElectionDone(ctx context.Context) error {
	for {
		var (
			ok  bool
			wch <-chan zk.Event
		)
		err := retry(c, func() (err error) {
			ok, _, wch, err = c.conn.ExistsW(c.p(zkdata.PathPreferredReplicaElection))
			return err
		})
		if err != nil {
			return err
		}
		if !ok {
			return nil
		}
		select {
		case <-wch:
		case <-ctx.Done():
			return ctx.Err()
		case <-c.done:
			return errClosed
		}
	}
}

// ---- controller side ----

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
func (ct *controller) classifyPreferred(tp TopicPartition, skip preferredSkips) preferredOutcome {
	if _, ok := ct.assignments[tp.Topic][tp.Partition]; !ok {
		return prefUnknown
	}
	if skip.deleting[tp.Topic] || ct.isReassigning(tp) {
		return prefBusy
	}
	reps := ct.replicas(tp)
	if len(reps) == 0 {
		return prefNoReplicas
	}
	st := ct.states[tp]
	if st == nil {
		return prefUnknown
	}
	pref := reps[0]
	switch {
	case st.leader == pref:
		return prefAlready
	case !ct.electable(pref):
		return prefNotLive
	case !slices.Contains(st.isr, pref):
		return prefNotInISR
	}
	return prefElect
}

// preferredState is the PreferredReplica election
// (PartitionLeaderElectionAlgorithms.preferredReplicaPartitionLeaderElection): the
// assignment head becomes leader only if it is live, not shutting down and in the ISR; the
// ISR is kept and leader_epoch+1. Otherwise (or when it already leads) nothing changes.
func (ct *controller) preferredState(tp TopicPartition, cur leaderIsr) (leaderIsr, bool, bool) {
	reps := ct.replicas(tp)
	if len(reps) == 0 {
		return cur, false, false
	}
	pref := reps[0]
	if cur.leader == pref || !ct.electable(pref) || !slices.Contains(cur.isr, pref) {
		return cur, false, false
	}
	return leaderIsr{leader: pref, leaderEpoch: cur.leaderEpoch + 1, isr: slices.Clone(cur.isr), controllerEpoch: ct.epoch}, true, false
}

// preferredSkips are the partitions preferred elections leave alone besides those being
// reassigned (reassign.go): topics queued for deletion (/admin/delete_topics).
type preferredSkips struct {
	deleting map[string]bool
}

func (ct *controller) loadPreferredSkips() (preferredSkips, error) {
	skip := preferredSkips{deleting: map[string]bool{}}
	ch, err := ct.c.children(zkdata.PathDeleteTopics)
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
func (ct *controller) electPreferred(tps []TopicPartition, skip preferredSkips, trigger string) ([]TopicPartition, error) {
	var eligible []TopicPartition
	for _, tp := range tps {
		if _, ok := ct.assignments[tp.Topic][tp.Partition]; ok {
			if err := ct.loadState(tp); err != nil {
				return nil, err
			}
		}
		o := ct.classifyPreferred(tp, skip)
		l := ct.log.WithField("topic", tp.Topic).WithField("partition", tp.Partition).WithField("trigger", trigger)
		switch o {
		case prefElect:
			eligible = append(eligible, tp)
		case prefAlready:
			l.Debug("preferred replica election: the preferred replica already leads")
		default:
			if st := ct.states[tp]; st != nil {
				l = l.WithField("leader", st.leader).WithField("isr", st.isr).WithField("leaderEpoch", st.leaderEpoch)
			}
			l = l.WithField("replicas", ct.replicas(tp)).WithField("reason", o.String())
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
		before[tp] = ct.states[tp].leader
	}
	b := ct.newBatch()
	if err := ct.updateStatesWith(eligible, b, ct.preferredState, ct.liveReplicas); err != nil {
		return nil, err
	}
	b.send()
	var moved []TopicPartition
	for _, tp := range eligible {
		st := ct.states[tp]
		if st == nil {
			continue
		}
		if reps := ct.replicas(tp); len(reps) > 0 && st.leader == reps[0] && before[tp] != st.leader {
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

// watchPreferredElection (re-)arms the exists watch on /admin/preferred_replica_election
// (it fires on creation, data change and deletion) and returns the znode's data, nil when
// it does not exist.
func (ct *controller) watchPreferredElection() ([]byte, error) {
	key := "exists:" + zkdata.PathPreferredReplicaElection
	if _, ok := ct.armed[key]; !ok {
		var wch <-chan zk.Event
		err := retry(ct.c, func() (err error) {
			_, _, wch, err = ct.c.conn.ExistsW(ct.c.p(zkdata.PathPreferredReplicaElection))
			return err
		})
		if err != nil {
			return nil, err
		}
		ct.arm(key, event{kind: evPreferredElection}, wch)
	}
	data, _, err := ct.c.get(zkdata.PathPreferredReplicaElection)
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if data == nil {
		data = []byte{}
	}
	return data, nil
}

// processPreferredElection handles /admin/preferred_replica_election (K7): elect the
// listed partitions' preferred replicas, then delete the znode with a fenced multi. Unknown
// partitions, partitions of topics being deleted or being reassigned, and partitions whose
// preferred replica already leads are skipped; a preferred replica that is not live or not
// in the ISR is not elected (logged). An undecodable znode is logged and deleted.
func (ct *controller) processPreferredElection() error {
	data, err := ct.watchPreferredElection()
	if err != nil || data == nil {
		return err
	}
	tps, derr := zkdata.DecodePreferredElection(data)
	if derr != nil {
		ct.log.WithError(derr).Warn("ignoring undecodable preferred replica election request")
		return ct.deletePaths([]string{zkdata.PathPreferredReplicaElection})
	}
	skip, err := ct.loadPreferredSkips()
	if err != nil {
		return err
	}
	ct.log.WithField("partitions", len(tps)).Info("preferred replica election requested")
	moved, err := ct.electPreferred(tps, skip, triggerAdmin)
	if err != nil {
		return err
	}
	ct.log.WithField("requested", len(tps)).WithField("elected", len(moved)).Info("preferred replica election done")
	return ct.deletePaths([]string{zkdata.PathPreferredReplicaElection})
}

// preferredOnFailover is the preferred-election part of controller failover: register the
// watch and process a request left pending by an earlier controller, then schedule the
// first leader imbalance check.
func (ct *controller) preferredOnFailover() error {
	if err := ct.processPreferredElection(); err != nil {
		return err
	}
	ct.scheduleAutoRebalance(autoRebalanceFirstDelay)
	return nil
}

// scheduleAutoRebalance enqueues an evAutoRebalance for the current controller epoch after
// d. The timer goroutine only enqueues; the check runs on the controller goroutine, and an
// event of an earlier controllership is ignored there.
func (ct *controller) scheduleAutoRebalance(d time.Duration) {
	if !ct.c.cfg.AutoLeaderRebalance {
		return
	}
	epoch := ct.epoch
	done := ct.c.done
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
func (ct *controller) processAutoRebalance(epoch int32) error {
	if epoch != ct.epoch || !ct.c.cfg.AutoLeaderRebalance {
		return nil // a timer of an earlier controllership
	}
	defer ct.scheduleAutoRebalance(ct.c.cfg.LeaderImbalanceCheckInterval)
	if ct.reassignmentInProgress() {
		ct.log.Debug("leader imbalance check skipped: a partition reassignment is in progress")
		return nil
	}
	skip, err := ct.loadPreferredSkips()
	if err != nil {
		return err
	}
	byPreferred := map[int32][]TopicPartition{}
	for _, tp := range ct.sortedStates() {
		reps := ct.replicas(tp)
		if len(reps) == 0 || skip.deleting[tp.Topic] {
			continue
		}
		byPreferred[reps[0]] = append(byPreferred[reps[0]], tp)
	}
	threshold := float64(ct.c.cfg.LeaderImbalancePerBrokerPercentage) / 100
	var candidates []TopicPartition
	for _, id := range sortedKeysInt32(byPreferred) {
		all := byPreferred[id]
		var notLed []TopicPartition
		for _, tp := range all {
			if ct.states[tp].leader != id {
				notLed = append(notLed, tp)
			}
		}
		ratio := float64(len(notLed)) / float64(len(all))
		l := ct.log.WithField("broker", id).WithField("imbalanceRatio", ratio).WithField("notLed", len(notLed)).WithField("preferredFor", len(all))
		if ratio <= threshold {
			if len(notLed) > 0 {
				l.Debug("leader imbalance within leader.imbalance.per.broker.percentage")
			}
			continue
		}
		l.Info("leader imbalance above leader.imbalance.per.broker.percentage: triggering preferred replica elections")
		for _, tp := range notLed {
			if ct.electable(id) {
				candidates = append(candidates, tp)
			}
		}
	}
	if len(candidates) == 0 {
		return nil
	}
	moved, err := ct.electPreferred(candidates, skip, triggerAuto)
	if err != nil {
		return err
	}
	ct.log.WithField("candidates", len(candidates)).WithField("elected", len(moved)).Info("automatic leader rebalance done")
	return nil
}

// preferredImbalanceCount is PreferredReplicaImbalanceCount: partitions with a state whose
// leader is not their preferred replica, topics being deleted excluded (only those the
// controller knows of: the check runs after every event and reads nothing from ZooKeeper).
func (ct *controller) preferredImbalanceCount() int64 {
	var n int64
	for tp, st := range ct.states {
		if reps := ct.replicas(tp); len(reps) > 0 && st.leader != reps[0] {
			n++
		}
	}
	return n
}

// updatePreferredImbalanceGauge sets PreferredReplicaImbalanceCount (0 when not the
// controller).
func (ct *controller) updatePreferredImbalanceGauge() {
	g := metrics.GetOrRegisterGauge(metricPreferredImbalance, ct.c.reg)
	if !ct.active.Load() {
		g.Update(0)
		return
	}
	g.Update(ct.preferredImbalanceCount())
}

func sortedKeysInt32[V any](m map[int32]V) []int32 {
	out := make([]int32, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sortInt32(out)
	return out
}
