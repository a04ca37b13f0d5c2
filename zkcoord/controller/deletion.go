package controller

import (
	"slices"
	"sort"

	"github.com/isrbroker/isrbroker/zkcoord/internal/sorted"
	"github.com/isrbroker/isrbroker/zkcoord/zkdata"
)

// topicDeletionManager is Kafka's TopicDeletionManager for /admin/delete_topics/<t>. A queued
// topic's partitions are not elected and get no LeaderAndIsr; UpdateMetadata names them with
// leader -2 (LeaderDuringDelete). Each live replica goes OfflineReplica →
// ReplicaDeletionStarted with StopReplica(delete=true); a replica whose broker is offline
// becomes ReplicaDeletionIneligible, and the deletion waits (the topic's znodes are kept, so
// the name cannot be reused and the stale log cannot come back as a replica of a new topic)
// until that broker registers again or a new controller takes over. Once every replica's
// broker was live for it, the replicas go ReplicaDeletionSuccessful → NonExistentReplica, the
// partitions OfflinePartition → NonExistentPartition, and the topic's znodes are removed.
// With delete.topic.enable=false the request znode is just removed.
//
// Differences from Kafka 2.4: the deletion completes once StopReplica(delete=true) is queued
// to every replica, without waiting for the responses, and the replicas' OfflineReplica step
// sends no StopReplica(delete=false) and does not shrink the ISR (the partition is going away).
type topicDeletionManager struct {
	ct     *Controller
	queued map[string]bool // topics queued for deletion and not yet removed
}

func (d *topicDeletionManager) reset() { d.queued = map[string]bool{} }

// init marks the queued topics the controller knows of at failover.
func (d *topicDeletionManager) init(children []string) {
	for _, t := range children {
		if _, ok := d.ct.ctx.assignments[t]; ok {
			d.queued[t] = true
		}
	}
}

func (d *topicDeletionManager) isQueued(topic string) bool { return d.queued[topic] }

func (d *topicDeletionManager) forget(topic string) { delete(d.queued, topic) }

// waitsFor reports whether a topic queued for deletion has a replica on one of ids.
func (d *topicDeletionManager) waitsFor(ids []int32) bool {
	for t := range d.queued {
		for _, replicas := range d.ct.ctx.assignments[t] {
			if slices.ContainsFunc(replicas, func(r int32) bool { return slices.Contains(ids, r) }) {
				return true
			}
		}
	}
	return false
}

// process handles the children of /admin/delete_topics (TopicDeletion event, and resumption
// after failover or when a broker holding a replica returns).
func (d *topicDeletionManager) process() error {
	ct := d.ct
	children, err := ct.zk.watchChildren(zkdata.PathDeleteTopics, evDeleteTopics)
	if err != nil || len(children) == 0 {
		return err
	}
	sort.Strings(children)
	if !ct.cfg.DeleteTopicEnable {
		ct.log.WithField("topics", children).Warn("ignoring topic deletion requests: delete.topic.enable is false")
		return ct.zk.deleteChildren(zkdata.PathDeleteTopics, children)
	}
	for _, t := range children {
		if _, ok := ct.ctx.assignments[t]; !ok {
			if err := ct.zk.deletePaths([]string{zkdata.DeleteTopicPath(t)}); err != nil {
				return err
			}
			continue
		}
		if err := d.deleteTopic(t); err != nil {
			return err
		}
	}
	return nil
}

// deleteTopic starts (or retries) the deletion of t and completes it when every replica's
// broker is live.
func (d *topicDeletionManager) deleteTopic(t string) error {
	ct := d.ct
	d.queued[t] = true
	b := ct.newBatch()
	var tps []TopicPartition
	var start, failed []partitionReplica
	offline := map[int32]bool{}
	for _, p := range sorted.Keys(ct.ctx.assignments[t]) {
		tp := TopicPartition{Topic: t, Partition: p}
		tps = append(tps, tp)
		b.stopReplica(ct.ctx.liveReplicas(tp), tp, true)
		for _, r := range ct.ctx.replicas(tp) {
			pr := partitionReplica{tp, r}
			switch {
			case !ct.ctx.isLive(r):
				offline[r] = true
				failed = append(failed, pr)
			case ct.rsm.state(tp, r) != ReplicaDeletionStarted:
				start = append(start, pr)
			}
		}
	}
	ct.rsm.transitionOnly(ct.rsm.transitionOnly(start, OfflineReplica), ReplicaDeletionStarted)
	ct.rsm.failDeletion(failed)
	b.updateMetadata(ct.ctx.liveIDs(), tps)
	b.send()
	if len(offline) > 0 {
		ct.log.WithField("topic", t).WithField("offlineReplicas", sorted.Keys(offline)).
			Info("topic deletion waits for the brokers of offline replicas (ineligible for deletion)")
		return nil
	}
	paths, err := ct.zk.subtree(zkdata.TopicPath(t))
	if err != nil {
		return err
	}
	if ok, _, _ := ct.conn.Exists(zkdata.TopicConfigPath(t)); ok {
		paths = append(paths, zkdata.TopicConfigPath(t))
	}
	paths = append(paths, zkdata.DeleteTopicPath(t))
	if err := ct.zk.deletePaths(paths); err != nil {
		return err
	}
	d.complete(tps)
	ct.forgetTopic(t)
	ct.log.WithField("topic", t).Info("deleted topic")
	return nil
}

// complete moves the deleted topic's replicas and partitions to their NonExistent states.
func (d *topicDeletionManager) complete(tps []TopicPartition) {
	ct := d.ct
	for _, tp := range tps {
		var started []partitionReplica
		for _, r := range ct.ctx.replicas(tp) {
			started = append(started, partitionReplica{tp, r})
		}
		ct.rsm.transitionOnly(ct.rsm.transitionOnly(started, ReplicaDeletionSuccessful), NonExistentReplica)
		if ct.psm.state(tp) != OfflinePartition {
			ct.psm.transition(tp, OfflinePartition)
		}
		ct.psm.transition(tp, NonExistentPartition)
	}
}
