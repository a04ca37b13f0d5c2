package controller

import (
	"errors"
	"fmt"
	"github.com/isrbroker/isrbroker/zkcoord/internal/sorted"
	"github.com/isrbroker/isrbroker/zkcoord/zkdata"
	"slices"

	"github.com/go-zookeeper/zk"
)

// Partition reassignment on the controller (Kafka 2.0's KafkaController.onPartitionReassignment, the
// ZooKeeper-driven steps; docs/design.md, "Controller"). RAR is the reassigned
// (target) replica list, OAR the original one, AR the assignment.
//
//  1. AR in ZK = OAR+RAR (RAR first, then the old replicas that are not in RAR).
//  2. LeaderAndIsr to OAR+RAR with the leader epoch bumped.
//  3. RAR−OAR → NewReplica: their LeaderAndIsr (isNew) makes them followers outside the ISR;
//     the leader adds them once caught up (S6, S11, K4).
//  4. Wait until RAR ⊆ ISR: the partition state znode is watched, so the leader's ISR
//     expansion re-runs the check.
//  5. RAR → OnlineReplica (no request).
//  6. AR = RAR in memory.
//  7. Leader not in RAR or dead → Reassign election (first RAR replica live and in the ISR);
//     else a leader epoch bump. LeaderAndIsr to RAR.
//  8. OAR−RAR → OfflineReplica: StopReplica(delete=false), out of the ISR with an epoch bump.
//  9. OAR−RAR → NonExistentReplica: StopReplica(delete=true) deletes their logs (S22).
//  10. AR in ZK = RAR, last: until then ZooKeeper holds the only durable copy of OAR.
//  11. The partition leaves /admin/reassign_partitions (deleted when empty).
//  12. UpdateMetadata to every live broker.
//
// Every ZooKeeper write is a fenced multi (K3). The znode is re-read whenever its watch
// fires (Kafka acts on creation only; acting on a rewrite too is harmless because partitions
// already in progress are skipped) and at controller failover, which resumes reassignments:
// the assignment in ZK is then OAR+RAR, so OAR−RAR is recovered as AR−RAR.

// reassignCtx is one partition being reassigned.
type reassignCtx struct {
	target []int32 // RAR
}

// reassigner runs partition reassignments.
type reassigner struct {
	ct         *Controller
	inProgress map[TopicPartition]*reassignCtx
}

func (r *reassigner) reset() { r.inProgress = map[TopicPartition]*reassignCtx{} }

// reassignmentInProgress reports whether any partition is being reassigned (auto leader
// rebalance stays off meanwhile, like Kafka's checkAndTriggerAutoLeaderRebalance).
func (r *reassigner) any() bool { return len(r.inProgress) > 0 }

// isReassigning reports whether tp is being reassigned.
func (r *reassigner) isReassigning(tp TopicPartition) bool {
	_, ok := r.inProgress[tp]
	return ok
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

// processReassignPartitions handles the znode watch (and failover): every listed partition
// not yet in progress is validated and started.
func (r *reassigner) process() error {
	ct := r.ct
	parts, err := r.watchZNode()
	if err != nil || len(parts) == 0 {
		return err
	}
	var failed []TopicPartition
	for _, pr := range parts {
		tp := TopicPartition{Topic: pr.Topic, Partition: pr.Partition}
		if r.isReassigning(tp) {
			continue
		}
		l := ct.log.WithField("topic", tp.Topic).WithField("partition", tp.Partition).WithField("target", pr.Replicas)
		if why := r.invalid(tp, pr.Replicas); why != "" {
			l.WithField("reason", why).Error("partition reassignment failed")
			failed = append(failed, tp)
			continue
		}
		if slices.Equal(ct.ctx.replicas(tp), pr.Replicas) {
			// Already done (e.g. a previous controller died between steps 10 and 11).
			l.Info("partition already has the target replicas; reassignment complete")
			failed = append(failed, tp)
			continue
		}
		r.inProgress[tp] = &reassignCtx{target: slices.Clone(pr.Replicas)}
		l.WithField("current", ct.ctx.replicas(tp)).Info("partition reassignment started")
		if err := ct.zk.watchState(tp, evReassignIsrChange); err != nil {
			return err
		}
		if err := r.onPartitionReassignment(tp); err != nil {
			return err
		}
	}
	if len(failed) > 0 {
		if err := r.removeFromZNode(failed); err != nil {
			return err
		}
		b := ct.newBatch()
		b.updateMetadata(ct.ctx.liveIDs(), nil)
		b.send()
	}
	return nil
}

// invalidReassignment returns why target cannot be applied to tp ("" when it can): unknown
// partition, empty or duplicate replicas, a replica that is not live (Kafka fails the
// partition when some RAR broker is not alive).
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

// processReassignIsrChange handles a state znode watch of a reassigning partition: step 4's
// check runs again for every partition being reassigned (their watches are re-armed).
func (r *reassigner) processIsrChange() error {
	ct := r.ct
	for _, tp := range sorted.TPKeys(r.inProgress) {
		if !r.isReassigning(tp) {
			continue
		}
		if err := ct.zk.watchState(tp, evReassignIsrChange); err != nil {
			return err
		}
		if st := ct.ctx.states[tp]; st != nil && r.targetInIsr(tp, st) {
			if err := r.onPartitionReassignment(tp); err != nil {
				return err
			}
		}
	}
	return nil
}

func (r *reassigner) targetInIsr(tp TopicPartition, st *leaderIsr) bool {
	rc := r.inProgress[tp]
	if rc == nil {
		return false
	}
	for _, id := range rc.target {
		if !slices.Contains(st.isr, id) {
			return false
		}
	}
	return true
}

// onPartitionReassignment runs steps 1–3 while RAR is not in the ISR, else steps 5–12.
func (r *reassigner) onPartitionReassignment(tp TopicPartition) error {
	rc := r.inProgress[tp]
	st := r.ct.ctx.states[tp]
	if rc == nil || st == nil {
		return nil
	}
	if !r.targetInIsr(tp, st) {
		return r.start(tp, rc)
	}
	return r.complete(tp, rc)
}

// start is steps 1–3: AR = OAR+RAR in ZooKeeper, LeaderAndIsr with the leader epoch bumped to
// OAR+RAR, and RAR−OAR → NewReplica (their LeaderAndIsr has isNew=true and makes them
// followers outside the ISR; the leader adds them once caught up: S6, S11, K4).
func (r *reassigner) start(tp TopicPartition, rc *reassignCtx) error {
	ct := r.ct
	cur := ct.ctx.replicas(tp)
	all := slices.Clone(rc.target)
	for _, id := range cur {
		if !slices.Contains(all, id) {
			all = append(all, id)
		}
	}
	var added []partitionReplica
	var addedIDs []int32
	for _, id := range rc.target {
		if !slices.Contains(cur, id) {
			added = append(added, partitionReplica{tp, id})
			addedIDs = append(addedIDs, id)
		}
	}
	if !slices.Equal(all, cur) {
		if err := r.writeAssignment(tp, all); err != nil {
			return err
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
	ct.log.WithField("topic", tp.Topic).WithField("partition", tp.Partition).WithField("target", rc.target).
		WithField("replicas", all).WithField("newReplicas", addedIDs).Info("reassignment: new replicas started; waiting for them to join the ISR")
	return nil
}

// complete is steps 5–12, once RAR ⊆ ISR (step 4).
func (r *reassigner) complete(tp TopicPartition, rc *reassignCtx) error {
	ct := r.ct
	l := ct.log.WithField("topic", tp.Topic).WithField("partition", tp.Partition).WithField("target", rc.target)
	old := slices.DeleteFunc(slices.Clone(ct.ctx.replicas(tp)), func(id int32) bool { return slices.Contains(rc.target, id) })
	// Step 5: RAR → OnlineReplica (no request).
	var targets []partitionReplica
	for _, id := range rc.target {
		if ct.rsm.state(tp, id) != OnlineReplica {
			targets = append(targets, partitionReplica{tp, id})
		}
	}
	ct.rsm.transitionOnly(targets, OnlineReplica)
	// Step 6: AR = RAR in memory.
	ct.ctx.assignments[tp.Topic][tp.Partition] = slices.Clone(rc.target)
	// Step 7: Reassign election when the leader is not in RAR or not live, else an epoch
	// bump; LeaderAndIsr to RAR.
	b := ct.newBatch()
	elect := func(_ TopicPartition, cur leaderIsr) (leaderIsr, bool, bool) {
		next, changed := reassignElection(rc.target, cur, ct.ctx)
		return next, changed, false
	}
	if err := ct.psm.elect([]TopicPartition{tp}, b, elect, ct.ctx.liveReplicas); err != nil {
		return err
	}
	b.send()
	if s := ct.ctx.states[tp]; s == nil || !slices.Contains(rc.target, s.leader) || !ct.ctx.isLive(s.leader) {
		// No RAR replica is live and in the ISR (they died meanwhile): keep OAR+RAR and
		// wait for the next ISR change, like Kafka's failed state change.
		ct.ctx.assignments[tp.Topic][tp.Partition] = append(slices.Clone(rc.target), old...)
		l.Error("reassignment: no target replica is live and in the ISR; cannot move the leader yet")
		return nil
	}
	// Step 8: OAR−RAR → OfflineReplica: StopReplica(delete=false) to the live ones, then out
	// of the ISR with the leader epoch bumped (the ISR is never emptied); LeaderAndIsr to RAR.
	oldReplicas := make([]partitionReplica, 0, len(old))
	for _, id := range old {
		oldReplicas = append(oldReplicas, partitionReplica{tp, id})
	}
	b = ct.newBatch()
	if err := ct.rsm.handleStateChanges(oldReplicas, OfflineReplica, b); err != nil {
		return err
	}
	b.send()
	// Step 9: OAR−RAR → ReplicaDeletionStarted: StopReplica(delete=true) deletes the logs
	// (S22); then ReplicaDeletionSuccessful → NonExistentReplica.
	b = ct.newBatch()
	if err := ct.rsm.handleStateChanges(oldReplicas, ReplicaDeletionStarted, b); err != nil {
		return err
	}
	b.send()
	ct.rsm.transitionOnly(ct.rsm.transitionOnly(oldReplicas, ReplicaDeletionSuccessful), NonExistentReplica)
	// Step 10: AR = RAR in ZK.
	if err := r.writeAssignment(tp, rc.target); err != nil {
		return err
	}
	// Step 11: remove the partition from /admin/reassign_partitions.
	if err := r.removeFromZNode([]TopicPartition{tp}); err != nil {
		return err
	}
	r.stop(tp)
	// Step 12: UpdateMetadata to every live broker.
	b = ct.newBatch()
	b.updateMetadata(ct.ctx.liveIDs(), []TopicPartition{tp})
	b.send()
	s := ct.ctx.states[tp]
	l.WithField("removed", old).WithField("leader", s.leader).WithField("isr", s.isr).
		WithField("leaderEpoch", s.leaderEpoch).Info("partition reassignment completed")
	return nil
}

// writeAssignment sets tp's replicas in /brokers/topics/<t> (fenced) and in memory. The
// other partitions are taken from ZooKeeper, so a concurrent partition addition survives.
func (r *reassigner) writeAssignment(tp TopicPartition, replicas []int32) error {
	ct := r.ct
	data, st, err := ct.conn.Get(zkdata.TopicPath(tp.Topic))
	if err != nil {
		return err
	}
	a, err := zkdata.DecodeTopic(tp.Topic, data)
	if err != nil {
		return err
	}
	a[tp.Partition] = slices.Clone(replicas)
	if _, err := ct.zk.fencedMulti(&zk.SetDataRequest{Path: zkdata.TopicPath(tp.Topic), Data: zkdata.EncodeTopic(a), Version: st.Version}); err != nil {
		return err
	}
	if ct.ctx.assignments[tp.Topic] == nil {
		ct.ctx.assignments[tp.Topic] = map[int32][]int32{}
	}
	ct.ctx.assignments[tp.Topic][tp.Partition] = slices.Clone(replicas)
	return nil
}

// removeFromZNode drops tps from /admin/reassign_partitions with a fenced compare-and-set,
// deleting the znode when nothing is left (step 11).
func (r *reassigner) removeFromZNode(tps []TopicPartition) error {
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
		left := slices.DeleteFunc(parts, func(p zkdata.PartitionReassignment) bool {
			return slices.Contains(tps, TopicPartition{Topic: p.Topic, Partition: p.Partition})
		})
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
	if len(tps) == 0 {
		return
	}
	for _, tp := range tps {
		r.stop(tp)
	}
	if err := r.removeFromZNode(tps); err != nil {
		r.ct.log.WithError(err).WithField("topic", topic).Warn("cannot remove the deleted topic's partitions from /admin/reassign_partitions")
	}
}
