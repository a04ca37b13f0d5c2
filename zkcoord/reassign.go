package zkcoord

import (
	"errors"
	"fmt"
	"github.com/isrbroker/isrbroker/zkcoord/zkdata"
	"slices"

	"github.com/go-zookeeper/zk"
)

// Partition reassignment on the controller (issue 4 item 2; kafka-zk-reference §7 "Controller
// steps, ≤2.3", Kafka 2.0's KafkaController.onPartitionReassignment). RAR is the reassigned
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

// reassignmentInProgress reports whether any partition is being reassigned (auto leader
// rebalance stays off meanwhile, like Kafka's checkAndTriggerAutoLeaderRebalance).
func (ct *controller) reassignmentInProgress() bool { return len(ct.reassigning) > 0 }

// isReassigning reports whether tp is being reassigned.
func (ct *controller) isReassigning(tp TopicPartition) bool {
	_, ok := ct.reassigning[tp]
	return ok
}

// watchReassignZNode (re-)arms the exists watch on /admin/reassign_partitions and returns
// its entries (nil when it does not exist). An undecodable znode is logged and deleted,
// otherwise it would block every later reassignment.
func (ct *controller) watchReassignZNode() ([]PartitionReassignment, error) {
	key := "exists:" + zkdata.PathReassignPartitions
	if _, ok := ct.armed[key]; !ok {
		var wch <-chan zk.Event
		err := retry(ct.c, func() (err error) {
			_, _, wch, err = ct.c.conn.ExistsW(ct.c.p(zkdata.PathReassignPartitions))
			return err
		})
		if err != nil {
			return nil, err
		}
		ct.arm(key, event{kind: evReassignPartitions}, wch)
	}
	data, _, err := ct.c.get(zkdata.PathReassignPartitions)
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	parts, derr := zkdata.DecodeReassignment(data)
	if derr != nil {
		ct.log.WithError(derr).Error("undecodable /admin/reassign_partitions; deleting it")
		return nil, ct.deletePaths([]string{zkdata.PathReassignPartitions})
	}
	return parts, nil
}

// processReassignPartitions handles the znode watch (and failover): every listed partition
// not yet in progress is validated and started.
func (ct *controller) processReassignPartitions() error {
	parts, err := ct.watchReassignZNode()
	if err != nil || len(parts) == 0 {
		return err
	}
	var failed []TopicPartition
	for _, pr := range parts {
		tp := TopicPartition{Topic: pr.Topic, Partition: pr.Partition}
		if ct.isReassigning(tp) {
			continue
		}
		l := ct.log.WithField("topic", tp.Topic).WithField("partition", tp.Partition).WithField("target", pr.Replicas)
		if why := ct.invalidReassignment(tp, pr.Replicas); why != "" {
			l.WithField("reason", why).Error("partition reassignment failed")
			failed = append(failed, tp)
			continue
		}
		if slices.Equal(ct.replicas(tp), pr.Replicas) {
			// Already done (e.g. a previous controller died between steps 10 and 11).
			l.Info("partition already has the target replicas; reassignment complete")
			failed = append(failed, tp)
			continue
		}
		ct.reassigning[tp] = &reassignCtx{target: slices.Clone(pr.Replicas)}
		l.WithField("current", ct.replicas(tp)).Info("partition reassignment started")
		if err := ct.watchReassignState(tp); err != nil {
			return err
		}
		if err := ct.onPartitionReassignment(tp); err != nil {
			return err
		}
	}
	if len(failed) > 0 {
		if err := ct.removeFromReassignZNode(failed); err != nil {
			return err
		}
		b := ct.newBatch()
		b.updateMetadata(ct.liveIDs(), nil)
		b.send()
	}
	return nil
}

// invalidReassignment returns why target cannot be applied to tp ("" when it can): unknown
// partition, empty or duplicate replicas, a replica that is not live (Kafka fails the
// partition when some RAR broker is not alive).
func (ct *controller) invalidReassignment(tp TopicPartition, target []int32) string {
	if _, ok := ct.assignments[tp.Topic][tp.Partition]; !ok {
		return "partition does not exist"
	}
	if _, ok := ct.states[tp]; !ok {
		return "partition has no state yet"
	}
	if len(target) == 0 {
		return "empty replica list"
	}
	seen := map[int32]bool{}
	for _, r := range target {
		if seen[r] {
			return fmt.Sprintf("replica %d listed twice", r)
		}
		seen[r] = true
		if !ct.isLive(r) {
			return fmt.Sprintf("replica %d is not a live broker", r)
		}
	}
	return ""
}

// watchReassignState (re-)arms the data watch on tp's state znode and refreshes the cached
// state from it.
func (ct *controller) watchReassignState(tp TopicPartition) error {
	path := zkdata.PartitionStatePath(tp.Topic, tp.Partition)
	key := "data:" + path
	if _, ok := ct.armed[key]; ok {
		return ct.loadState(tp)
	}
	var wch <-chan zk.Event
	err := retry(ct.c, func() (err error) {
		_, _, wch, err = ct.c.conn.GetW(ct.c.p(path))
		return err
	})
	if errors.Is(err, zk.ErrNoNode) {
		delete(ct.states, tp)
		return nil
	}
	if err != nil {
		return err
	}
	ct.arm(key, event{kind: evReassignIsrChange, topic: tp.Topic}, wch)
	return ct.loadState(tp)
}

// processReassignIsrChange handles a state znode watch of a reassigning partition: step 4's
// check runs again for every partition being reassigned (their watches are re-armed).
func (ct *controller) processReassignIsrChange() error {
	tps := make([]TopicPartition, 0, len(ct.reassigning))
	for tp := range ct.reassigning {
		tps = append(tps, tp)
	}
	sortTPs(tps)
	for _, tp := range tps {
		if !ct.isReassigning(tp) {
			continue
		}
		if err := ct.watchReassignState(tp); err != nil {
			return err
		}
		if st := ct.states[tp]; st != nil && ct.targetInIsr(tp, st) {
			if err := ct.onPartitionReassignment(tp); err != nil {
				return err
			}
		}
	}
	return nil
}

func (ct *controller) targetInIsr(tp TopicPartition, st *leaderIsr) bool {
	rc := ct.reassigning[tp]
	if rc == nil {
		return false
	}
	for _, r := range rc.target {
		if !slices.Contains(st.isr, r) {
			return false
		}
	}
	return true
}

// onPartitionReassignment runs steps 1–3 while RAR is not in the ISR, else steps 5–12.
func (ct *controller) onPartitionReassignment(tp TopicPartition) error {
	rc := ct.reassigning[tp]
	st := ct.states[tp]
	if rc == nil || st == nil {
		return nil
	}
	l := ct.log.WithField("topic", tp.Topic).WithField("partition", tp.Partition).WithField("target", rc.target)
	if !ct.targetInIsr(tp, st) {
		// Step 1: AR = OAR+RAR in ZK.
		cur := ct.replicas(tp)
		all := slices.Clone(rc.target)
		for _, r := range cur {
			if !slices.Contains(all, r) {
				all = append(all, r)
			}
		}
		var added []int32
		for _, r := range rc.target {
			if !slices.Contains(cur, r) {
				added = append(added, r)
			}
		}
		if !slices.Equal(all, cur) {
			if err := ct.writeAssignment(tp, all); err != nil {
				return err
			}
		}
		// Step 2: LeaderAndIsr to OAR+RAR with the leader epoch bumped. Step 3: RAR−OAR →
		// NewReplica (their LeaderAndIsr has isNew=true and makes them followers).
		b := ct.newBatch()
		if err := ct.updateStatesWith([]TopicPartition{tp}, b, bumpLeaderEpoch(ct.epoch), ct.liveReplicas); err != nil {
			return err
		}
		b.addLeaderAndIsr(added, tp, true)
		b.send()
		l.WithField("replicas", all).WithField("newReplicas", added).Info("reassignment: new replicas started; waiting for them to join the ISR")
		return nil
	}

	// Step 4 holds: RAR ⊆ ISR. Step 5 (RAR → OnlineReplica) needs no request.
	old := slices.DeleteFunc(slices.Clone(ct.replicas(tp)), func(r int32) bool { return slices.Contains(rc.target, r) })
	// Step 6: AR = RAR in memory.
	ct.assignments[tp.Topic][tp.Partition] = slices.Clone(rc.target)
	// Step 7: Reassign election when the leader is not in RAR or not live, else an epoch
	// bump; LeaderAndIsr to RAR.
	b := ct.newBatch()
	if err := ct.updateStatesWith([]TopicPartition{tp}, b, ct.reassignElection(rc.target), ct.liveReplicas); err != nil {
		return err
	}
	b.send()
	if s := ct.states[tp]; s == nil || !slices.Contains(rc.target, s.leader) || !ct.isLive(s.leader) {
		// No RAR replica is live and in the ISR (they died meanwhile): keep OAR+RAR and
		// wait for the next ISR change, like Kafka's failed state change.
		ct.assignments[tp.Topic][tp.Partition] = append(slices.Clone(rc.target), old...)
		l.Error("reassignment: no target replica is live and in the ISR; cannot move the leader yet")
		return nil
	}
	// Step 8: OAR−RAR → OfflineReplica: StopReplica(delete=false), then out of the ISR with
	// the leader epoch bumped (the ISR is never emptied); LeaderAndIsr to RAR.
	var liveOld []int32
	for _, r := range old {
		if ct.isLive(r) {
			liveOld = append(liveOld, r)
		}
	}
	b = ct.newBatch()
	for _, r := range liveOld {
		b.stopReplica([]int32{r}, tp, false)
	}
	removeOld := func(_ TopicPartition, cur leaderIsr) (leaderIsr, bool, bool) {
		isr := slices.DeleteFunc(slices.Clone(cur.isr), func(r int32) bool { return slices.Contains(old, r) })
		if len(isr) == 0 || len(isr) == len(cur.isr) {
			return cur, false, false
		}
		leader := cur.leader
		if slices.Contains(old, leader) {
			leader = zkdata.NoLeader
		}
		return leaderIsr{leader: leader, leaderEpoch: cur.leaderEpoch + 1, isr: isr, controllerEpoch: ct.epoch}, true, false
	}
	if err := ct.updateStatesWith([]TopicPartition{tp}, b, removeOld, ct.liveReplicas); err != nil {
		return err
	}
	b.send()
	// Step 9: OAR−RAR → NonExistentReplica: StopReplica(delete=true) deletes the logs (S22).
	if len(liveOld) > 0 {
		b = ct.newBatch()
		b.stopReplica(liveOld, tp, true)
		b.send()
	}
	// Step 10: AR = RAR in ZK.
	if err := ct.writeAssignment(tp, rc.target); err != nil {
		return err
	}
	// Step 11: remove the partition from /admin/reassign_partitions.
	if err := ct.removeFromReassignZNode([]TopicPartition{tp}); err != nil {
		return err
	}
	ct.stopReassigning(tp)
	// Step 12: UpdateMetadata to every live broker.
	b = ct.newBatch()
	b.updateMetadata(ct.liveIDs(), []TopicPartition{tp})
	b.send()
	s := ct.states[tp]
	l.WithField("removed", old).WithField("leader", s.leader).WithField("isr", s.isr).
		WithField("leaderEpoch", s.leaderEpoch).Info("partition reassignment completed")
	return nil
}

// bumpLeaderEpoch keeps leader and ISR and increments the leader epoch
// (updateLeaderEpochAndSendRequest).
func bumpLeaderEpoch(controllerEpoch int32) func(TopicPartition, leaderIsr) (leaderIsr, bool, bool) {
	return func(_ TopicPartition, cur leaderIsr) (leaderIsr, bool, bool) {
		return leaderIsr{leader: cur.leader, leaderEpoch: cur.leaderEpoch + 1, isr: cur.isr, controllerEpoch: controllerEpoch}, true, false
	}
}

// reassignElection is step 7: with the leader live and in RAR only the epoch is bumped;
// otherwise the Reassign election (reassignPartitionLeaderElection) picks the first RAR
// replica that is live (not shutting down) and in the ISR, ISR unchanged. Without a
// candidate nothing changes.
func (ct *controller) reassignElection(target []int32) func(TopicPartition, leaderIsr) (leaderIsr, bool, bool) {
	return func(tp TopicPartition, cur leaderIsr) (leaderIsr, bool, bool) {
		if slices.Contains(target, cur.leader) && ct.isLive(cur.leader) {
			return bumpLeaderEpoch(ct.epoch)(tp, cur)
		}
		for _, r := range target {
			if ct.electable(r) && slices.Contains(cur.isr, r) {
				return leaderIsr{leader: r, leaderEpoch: cur.leaderEpoch + 1, isr: cur.isr, controllerEpoch: ct.epoch}, true, false
			}
		}
		return cur, false, false
	}
}

// writeAssignment sets tp's replicas in /brokers/topics/<t> (fenced) and in memory. The
// other partitions are taken from ZooKeeper, so a concurrent partition addition survives.
func (ct *controller) writeAssignment(tp TopicPartition, replicas []int32) error {
	data, st, err := ct.c.get(zkdata.TopicPath(tp.Topic))
	if err != nil {
		return err
	}
	a, err := zkdata.DecodeTopic(tp.Topic, data)
	if err != nil {
		return err
	}
	a[tp.Partition] = slices.Clone(replicas)
	if _, err := ct.fencedMulti(&zk.SetDataRequest{Path: ct.c.p(zkdata.TopicPath(tp.Topic)), Data: zkdata.EncodeTopic(a), Version: st.Version}); err != nil {
		return err
	}
	if ct.assignments[tp.Topic] == nil {
		ct.assignments[tp.Topic] = map[int32][]int32{}
	}
	ct.assignments[tp.Topic][tp.Partition] = slices.Clone(replicas)
	return nil
}

// removeFromReassignZNode drops tps from /admin/reassign_partitions with a fenced
// compare-and-set, deleting the znode when nothing is left (step 11).
func (ct *controller) removeFromReassignZNode(tps []TopicPartition) error {
	for attempt := 0; attempt < 10; attempt++ {
		data, st, err := ct.c.get(zkdata.PathReassignPartitions)
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
		left := slices.DeleteFunc(parts, func(p PartitionReassignment) bool {
			return slices.Contains(tps, TopicPartition{Topic: p.Topic, Partition: p.Partition})
		})
		var op interface{}
		if len(left) == 0 {
			op = &zk.DeleteRequest{Path: ct.c.p(zkdata.PathReassignPartitions), Version: st.Version}
		} else {
			op = &zk.SetDataRequest{Path: ct.c.p(zkdata.PathReassignPartitions), Data: zkdata.EncodeReassignment(left), Version: st.Version}
		}
		_, err = ct.fencedMulti(op)
		if errors.Is(err, zk.ErrBadVersion) || errors.Is(err, zk.ErrNoNode) {
			continue
		}
		return err
	}
	return fmt.Errorf("zkcoord: %s keeps changing", zkdata.PathReassignPartitions)
}

// stopReassigning forgets tp's reassignment and drops its state watch.
func (ct *controller) stopReassigning(tp TopicPartition) {
	delete(ct.reassigning, tp)
	delete(ct.armed, "data:"+zkdata.PartitionStatePath(tp.Topic, tp.Partition))
}

// forgetReassignments drops the reassignments of a deleted topic, in memory and (best
// effort) in /admin/reassign_partitions, so that they do not block later reassignments.
func (ct *controller) forgetReassignments(topic string) {
	var tps []TopicPartition
	for tp := range ct.reassigning {
		if tp.Topic == topic {
			tps = append(tps, tp)
		}
	}
	if len(tps) == 0 {
		return
	}
	for _, tp := range tps {
		ct.stopReassigning(tp)
	}
	if err := ct.removeFromReassignZNode(tps); err != nil {
		ct.log.WithError(err).WithField("topic", topic).Warn("cannot remove the deleted topic's partitions from /admin/reassign_partitions")
	}
}
