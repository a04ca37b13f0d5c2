package controller

import (
	"errors"
	"fmt"
	"slices"

	"github.com/go-zookeeper/zk"

	"github.com/isrbroker/isrbroker/zkcoord/internal/sorted"
	"github.com/isrbroker/isrbroker/zkcoord/zkdata"
)

// Partition reassignment on the controller: Kafka 2.4's KIP-455 model
// (KafkaController.onPartitionReassignment; docs/design.md, "Controller"; docs/kafka-facts.md,
// "KIP-455 reassignments"). A partition's assignment is RS (all replicas), AR (adding =
// RS − original replicas) and RR (removing = RS − target replicas); TRS = RS − RR is the
// target, ORS = RS − AR the original. reassignTo(TRS) from ORS gives RS = TRS ++ (ORS − TRS).
//
// onPartitionReassignment(tp, new assignment):
//
//	U1. If the assignment changed: RS, AR, RR to /brokers/topics/<t> ("adding_replicas" and
//	    "removing_replicas", version 2) and to memory; replicas of the previous RS that are
//	    not in the new one (adding replicas of a replaced or cancelled reassignment) are
//	    stopped and deleted (B4/B5 below). The state znode is watched for ISR changes.
//	If TRS ⊄ ISR:
//	A1. LeaderAndIsr with the leader epoch bumped to RS.
//	A2. AR → NewReplica: their LeaderAndIsr (isNew) makes them followers outside the ISR; the
//	    leader adds them once caught up (S6, S11, K4). Each ISR change re-runs the check.
//	Else:
//	B1. AR → OnlineReplica (no request).
//	B2. RS = TRS, AR = RR = [] in memory.
//	B3. Leader not in TRS or dead → Reassign election (first TRS replica live and in the ISR),
//	    else a leader epoch bump; LeaderAndIsr to TRS.
//	B4. RR → OfflineReplica: StopReplica(delete=false), out of the ISR with an epoch bump.
//	B5. RR → NonExistentReplica: StopReplica(delete=true) deletes their logs (S22).
//	B6. RS = TRS in ZK, last: until then ZooKeeper holds the only durable copy of ORS.
//	B7. The ISR watch is dropped; the partition leaves /admin/reassign_partitions when the
//	    replicas listed there are TRS (deleted when empty).
//	B8. UpdateMetadata to every live broker.
//
// Reassignments come from /admin/reassign_partitions (process, the ZooKeeper path of the
// --zookeeper tools) and from AlterPartitionReassignments (reassign_api.go); the latest
// one for a partition wins: an API request removes the partition from the znode. Every
// ZooKeeper write is a fenced multi (K3). At failover the API reassignments are read back from
// the topic znodes' adding/removing maps, the znode is processed (it supplants them for the
// partitions it lists), and the others are resumed.

// reassignCtx is one partition being reassigned: its AR and RR (RS is the controller
// context's assignment).
type reassignCtx struct {
	adding   []int32
	removing []int32
}

// assignment is Kafka's ReplicaAssignment.
type assignment struct {
	replicas, adding, removing []int32
}

func (a assignment) being() bool { return len(a.adding) > 0 || len(a.removing) > 0 }

// origin is ORS = RS − AR.
func (a assignment) origin() []int32 { return minus(a.replicas, a.adding) }

// target is TRS = RS − RR.
func (a assignment) target() []int32 { return minus(a.replicas, a.removing) }

// reassignTo is Kafka's ReplicaAssignment.reassignTo: RS = TRS ++ (ORS − TRS).
func (a assignment) reassignTo(target []int32) assignment {
	orig := a.origin()
	rs := slices.Clone(target)
	for _, id := range orig {
		if !slices.Contains(rs, id) {
			rs = append(rs, id)
		}
	}
	return assignment{replicas: rs, adding: minus(rs, orig), removing: minus(rs, target)}
}

func (a assignment) equal(b assignment) bool {
	return slices.Equal(a.replicas, b.replicas) && slices.Equal(a.adding, b.adding) && slices.Equal(a.removing, b.removing)
}

// minus is a − b, in a's order.
func minus(a, b []int32) []int32 {
	var out []int32
	for _, id := range a {
		if !slices.Contains(b, id) {
			out = append(out, id)
		}
	}
	return out
}

// reassigner runs partition reassignments.
type reassigner struct {
	ct         *Controller
	inProgress map[TopicPartition]*reassignCtx
}

func (r *reassigner) reset() { r.inProgress = map[TopicPartition]*reassignCtx{} }

// any reports whether any partition is being reassigned (auto leader rebalance stays off
// meanwhile, like Kafka's checkAndTriggerAutoLeaderRebalance).
func (r *reassigner) any() bool { return len(r.inProgress) > 0 }

// isReassigning reports whether tp is being reassigned.
func (r *reassigner) isReassigning(tp TopicPartition) bool {
	_, ok := r.inProgress[tp]
	return ok
}

// current is tp's full assignment (Kafka's partitionFullReplicaAssignment).
func (r *reassigner) current(tp TopicPartition) assignment {
	a := assignment{replicas: slices.Clone(r.ct.ctx.replicas(tp))}
	if rc := r.inProgress[tp]; rc != nil {
		a.adding, a.removing = slices.Clone(rc.adding), slices.Clone(rc.removing)
	}
	return a
}

// watchZNode (re-)arms the exists watch on /admin/reassign_partitions and returns its
// entries (nil when it does not exist). An undecodable znode is logged and deleted, otherwise
// it would block every later reassignment.
func (r *reassigner) watchZNode() ([]zkdata.PartitionReassignment, error) {
	ct := r.ct
	data, err := ct.zk.watchExists(zkdata.PathReassignPartitions, evReassignPartitions)
	if err != nil || data == nil {
		return nil, err
	}
	parts, derr := zkdata.DecodeReassignment(data)
	if derr != nil {
		ct.log.WithError(derr).Error("undecodable /admin/reassign_partitions; deleting it")
		return nil, ct.zk.deletePaths([]string{zkdata.PathReassignPartitions})
	}
	return parts, nil
}

// process handles the znode watch (Kafka's processZkPartitionReassignment): every listed
// partition not already moving to the listed replicas is validated and reassigned; invalid
// ones leave the znode. It returns the partitions it (re)started.
func (r *reassigner) process() (map[TopicPartition]bool, error) {
	ct := r.ct
	started := map[TopicPartition]bool{}
	parts, err := r.watchZNode()
	if err != nil || len(parts) == 0 {
		return started, err
	}
	var failed []TopicPartition
	for _, pr := range parts {
		tp := TopicPartition{Topic: pr.Topic, Partition: pr.Partition}
		cur := r.current(tp)
		if r.isReassigning(tp) && slices.Equal(cur.target(), pr.Replicas) {
			continue // in progress (at failover: resumed by onFailover)
		}
		l := ct.log.WithField("topic", tp.Topic).WithField("partition", tp.Partition).WithField("target", pr.Replicas)
		if why := r.invalid(tp, pr.Replicas); why != "" {
			l.WithField("reason", why).Error("partition reassignment failed")
			failed = append(failed, tp)
			continue
		}
		if !r.isReassigning(tp) && slices.Equal(cur.replicas, pr.Replicas) {
			// Already done (e.g. a previous controller died between steps B6 and B7).
			l.Info("partition already has the target replicas; reassignment complete")
			failed = append(failed, tp)
			continue
		}
		l.WithField("current", cur.replicas).Info("partition reassignment started (/admin/reassign_partitions)")
		if err := r.onPartitionReassignment(tp, cur.reassignTo(pr.Replicas)); err != nil {
			return started, err
		}
		started[tp] = true
	}
	if len(failed) > 0 {
		if err := r.removeFromZNode(func(tp TopicPartition, _ []int32) bool { return slices.Contains(failed, tp) }); err != nil {
			return started, err
		}
		b := ct.newBatch()
		b.updateMetadata(ct.ctx.liveIDs(), nil)
		b.send()
	}
	return started, nil
}

// invalid returns why the znode's target cannot be applied to tp ("" when it can): unknown
// partition, empty or duplicate replicas, a replica that is not live (isrbroker's
// /admin/reassign_partitions path refuses these rather than waiting for the broker).
func (r *reassigner) invalid(tp TopicPartition, target []int32) string {
	ct := r.ct
	if !ct.ctx.hasPartition(tp) {
		return "partition does not exist"
	}
	if _, ok := ct.ctx.states[tp]; !ok {
		return "partition has no state yet"
	}
	if len(target) == 0 {
		return "empty replica list"
	}
	seen := map[int32]bool{}
	for _, id := range target {
		if seen[id] {
			return fmt.Sprintf("replica %d listed twice", id)
		}
		seen[id] = true
		if !ct.ctx.isLive(id) {
			return fmt.Sprintf("replica %d is not a live broker", id)
		}
	}
	return ""
}

// processIsrChange handles a state znode watch of a reassigning partition
// (processPartitionReassignmentIsrChange): the completion check runs again for every
// partition being reassigned (their watches are re-armed).
func (r *reassigner) processIsrChange() error {
	ct := r.ct
	for _, tp := range sorted.TPKeys(r.inProgress) {
		if !r.isReassigning(tp) {
			continue
		}
		if err := ct.zk.watchState(tp, evReassignIsrChange); err != nil {
			return err
		}
		if a := r.current(tp); r.complete(tp, a) {
			if err := r.onPartitionReassignment(tp, a); err != nil {
				return err
			}
		}
	}
	return nil
}

// complete is Kafka's isReassignmentComplete: not being reassigned, or TRS ⊆ ISR.
func (r *reassigner) complete(tp TopicPartition, a assignment) bool {
	if !a.being() {
		return true
	}
	st := r.ct.ctx.states[tp]
	if st == nil {
		return false
	}
	for _, id := range a.target() {
		if !slices.Contains(st.isr, id) {
			return false
		}
	}
	return true
}

// onPartitionReassignment runs U1, then A1–A2 while TRS is not in the ISR, else B1–B8.
func (r *reassigner) onPartitionReassignment(tp TopicPartition, a assignment) error {
	if err := r.updateCurrent(tp, a); err != nil {
		return err
	}
	if !r.complete(tp, a) {
		return r.start(tp, a)
	}
	return r.finish(tp, a)
}

// updateCurrent is U1 (Kafka's updateCurrentReassignment).
func (r *reassigner) updateCurrent(tp TopicPartition, a assignment) error {
	ct := r.ct
	cur := r.current(tp)
	if !cur.equal(a) {
		if err := r.writeAssignment(tp, a); err != nil {
			return err
		}
		r.inProgress[tp] = &reassignCtx{adding: slices.Clone(a.adding), removing: slices.Clone(a.removing)}
		if unneeded := minus(cur.replicas, a.replicas); len(unneeded) > 0 {
			ct.log.WithField("topic", tp.Topic).WithField("partition", tp.Partition).WithField("replicas", unneeded).
				Info("reassignment: stopping the replicas the new assignment no longer has")
			if err := r.stopRemoved(tp, unneeded); err != nil {
				return err
			}
		}
	}
	if _, ok := r.inProgress[tp]; !ok {
		r.inProgress[tp] = &reassignCtx{}
	}
	return ct.zk.watchState(tp, evReassignIsrChange)
}

// start is A1–A2: LeaderAndIsr with the leader epoch bumped to RS, and AR → NewReplica.
func (r *reassigner) start(tp TopicPartition, a assignment) error {
	ct := r.ct
	var added []partitionReplica
	for _, id := range a.adding {
		if ct.rsm.state(tp, id) == NonExistentReplica {
			added = append(added, partitionReplica{tp, id})
		}
	}
	b := ct.newBatch()
	bump := func(_ TopicPartition, cur leaderIsr) (leaderIsr, bool, bool) {
		return bumpLeaderEpoch(cur), true, false
	}
	if err := ct.psm.elect([]TopicPartition{tp}, b, bump, ct.ctx.liveReplicas); err != nil {
		return err
	}
	if err := ct.rsm.handleStateChanges(added, NewReplica, b); err != nil {
		return err
	}
	b.send()
	ct.log.WithField("topic", tp.Topic).WithField("partition", tp.Partition).WithField("target", a.target()).
		WithField("replicas", a.replicas).WithField("adding", a.adding).WithField("removing", a.removing).
		Info("reassignment: adding replicas started; waiting for them to join the ISR")
	return nil
}

// finish is B1–B8, once TRS ⊆ ISR.
func (r *reassigner) finish(tp TopicPartition, a assignment) error {
	ct := r.ct
	target := a.target()
	l := ct.log.WithField("topic", tp.Topic).WithField("partition", tp.Partition).WithField("target", target)
	// B1: AR → OnlineReplica (no request).
	var adding []partitionReplica
	for _, id := range a.adding {
		if ct.rsm.state(tp, id) != OnlineReplica {
			adding = append(adding, partitionReplica{tp, id})
		}
	}
	ct.rsm.transitionOnly(adding, OnlineReplica)
	// B2: RS = TRS in memory.
	ct.ctx.assignments[tp.Topic][tp.Partition] = slices.Clone(target)
	// B3: Reassign election when the leader is not in TRS or not live, else an epoch bump;
	// LeaderAndIsr to TRS.
	b := ct.newBatch()
	elect := func(_ TopicPartition, cur leaderIsr) (leaderIsr, bool, bool) {
		next, changed := reassignElection(target, cur, ct.ctx)
		return next, changed, false
	}
	if err := ct.psm.elect([]TopicPartition{tp}, b, elect, ct.ctx.liveReplicas); err != nil {
		return err
	}
	b.send()
	if s := ct.ctx.states[tp]; s == nil || !slices.Contains(target, s.leader) || !ct.ctx.isLive(s.leader) {
		// No TRS replica is live and in the ISR (they died meanwhile): keep RS and wait for
		// the next ISR change, like Kafka's failed state change.
		ct.ctx.assignments[tp.Topic][tp.Partition] = slices.Clone(a.replicas)
		l.Error("reassignment: no target replica is live and in the ISR; cannot move the leader yet")
		return nil
	}
	// B4, B5: RR → OfflineReplica → NonExistentReplica.
	if err := r.stopRemoved(tp, a.removing); err != nil {
		return err
	}
	// B6: RS = TRS in ZK, AR = RR = [].
	done := assignment{replicas: target}
	if err := r.writeAssignment(tp, done); err != nil {
		return err
	}
	// B7: the ISR watch is dropped; the partition leaves /admin/reassign_partitions.
	r.stop(tp)
	if err := r.removeFromZNode(func(p TopicPartition, replicas []int32) bool {
		return p == tp && slices.Equal(replicas, target)
	}); err != nil {
		return err
	}
	// B8: UpdateMetadata to every live broker.
	b = ct.newBatch()
	b.updateMetadata(ct.ctx.liveIDs(), []TopicPartition{tp})
	b.send()
	s := ct.ctx.states[tp]
	l.WithField("removed", a.removing).WithField("leader", s.leader).WithField("isr", s.isr).
		WithField("leaderEpoch", s.leaderEpoch).Info("partition reassignment completed")
	return nil
}

// stopRemoved is B4–B5 (stopRemovedReplicasOfReassignedPartition): replicas → OfflineReplica
// (StopReplica(delete=false), out of the ISR with the leader epoch bumped; the ISR is never
// emptied) → ReplicaDeletionStarted (StopReplica(delete=true) deletes the logs, S22) →
// ReplicaDeletionSuccessful → NonExistentReplica.
func (r *reassigner) stopRemoved(tp TopicPartition, ids []int32) error {
	if len(ids) == 0 {
		return nil
	}
	ct := r.ct
	prs := make([]partitionReplica, 0, len(ids))
	for _, id := range ids {
		prs = append(prs, partitionReplica{tp, id})
	}
	b := ct.newBatch()
	if err := ct.rsm.handleStateChanges(prs, OfflineReplica, b); err != nil {
		return err
	}
	b.send()
	b = ct.newBatch()
	if err := ct.rsm.handleStateChanges(prs, ReplicaDeletionStarted, b); err != nil {
		return err
	}
	b.send()
	ct.rsm.transitionOnly(ct.rsm.transitionOnly(prs, ReplicaDeletionSuccessful), NonExistentReplica)
	return nil
}

// writeAssignment sets tp's RS, AR and RR in /brokers/topics/<t> (fenced) and RS in memory.
// The other partitions are taken from ZooKeeper, so a concurrent partition addition survives.
func (r *reassigner) writeAssignment(tp TopicPartition, a assignment) error {
	ct := r.ct
	data, st, err := ct.conn.Get(zkdata.TopicPath(tp.Topic))
	if err != nil {
		return err
	}
	full, err := zkdata.DecodeTopicFull(tp.Topic, data)
	if err != nil {
		return err
	}
	full[tp.Partition] = zkdata.ReplicaAssignment{Replicas: slices.Clone(a.replicas), Adding: slices.Clone(a.adding), Removing: slices.Clone(a.removing)}
	if _, err := ct.zk.fencedMulti(&zk.SetDataRequest{Path: zkdata.TopicPath(tp.Topic), Data: zkdata.EncodeTopicFull(full), Version: st.Version}); err != nil {
		return err
	}
	if ct.ctx.assignments[tp.Topic] == nil {
		ct.ctx.assignments[tp.Topic] = map[int32][]int32{}
	}
	ct.ctx.assignments[tp.Topic][tp.Partition] = slices.Clone(a.replicas)
	return nil
}

// removeFromZNode drops the entries drop selects from /admin/reassign_partitions with a
// fenced compare-and-set, deleting the znode when nothing is left (Kafka's
// maybeRemoveFromZkReassignment).
func (r *reassigner) removeFromZNode(drop func(TopicPartition, []int32) bool) error {
	ct := r.ct
	for attempt := 0; attempt < 10; attempt++ {
		data, st, err := ct.conn.Get(zkdata.PathReassignPartitions)
		if errors.Is(err, zk.ErrNoNode) {
			return nil
		}
		if err != nil {
			return err
		}
		parts, derr := zkdata.DecodeReassignment(data)
		if derr != nil {
			parts = nil
		}
		left := slices.DeleteFunc(slices.Clone(parts), func(p zkdata.PartitionReassignment) bool {
			return drop(TopicPartition{Topic: p.Topic, Partition: p.Partition}, p.Replicas)
		})
		if derr == nil && len(left) == len(parts) {
			return nil
		}
		var op any
		if len(left) == 0 {
			op = &zk.DeleteRequest{Path: zkdata.PathReassignPartitions, Version: st.Version}
		} else {
			op = &zk.SetDataRequest{Path: zkdata.PathReassignPartitions, Data: zkdata.EncodeReassignment(left), Version: st.Version}
		}
		_, err = ct.zk.fencedMulti(op)
		if errors.Is(err, zk.ErrBadVersion) || errors.Is(err, zk.ErrNoNode) {
			continue
		}
		return err
	}
	return fmt.Errorf("zkcoord: %s keeps changing", zkdata.PathReassignPartitions)
}

// stop forgets tp's reassignment and drops its state watch.
func (r *reassigner) stop(tp TopicPartition) {
	delete(r.inProgress, tp)
	r.ct.zk.unwatchState(tp)
}

// forgetTopic drops the reassignments of a deleted topic, in memory and (best effort) in
// /admin/reassign_partitions, so that they do not block later reassignments.
func (r *reassigner) forgetTopic(topic string) {
	var tps []TopicPartition
	for tp := range r.inProgress {
		if tp.Topic == topic {
			tps = append(tps, tp)
		}
	}
	for _, tp := range tps {
		r.stop(tp)
	}
	if err := r.removeFromZNode(func(tp TopicPartition, _ []int32) bool { return tp.Topic == topic }); err != nil {
		r.ct.log.WithError(err).WithField("topic", topic).Warn("cannot remove the deleted topic's partitions from /admin/reassign_partitions")
	}
}
