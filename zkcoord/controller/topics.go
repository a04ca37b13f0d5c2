package controller

import (
	"errors"
	"sort"

	"github.com/go-zookeeper/zk"
	"github.com/isrbroker/isrbroker/zkcoord/internal/sorted"
	"github.com/isrbroker/isrbroker/zkcoord/zkdata"
)

// processTopicChange handles /brokers/topics children: new topics' partitions go through
// NewPartition to OnlinePartition; topics whose znode vanished are forgotten.
func (ct *Controller) processTopicChange() error {
	topics, err := ct.zk.watchChildren(zkdata.PathBrokerTopics, evTopicChange)
	if err != nil {
		return err
	}
	cur := map[string]bool{}
	for _, t := range topics {
		cur[t] = true
	}
	for t := range ct.ctx.assignments {
		if !cur[t] {
			ct.forgetTopic(t)
		}
	}
	b := ct.newBatch()
	var fresh []TopicPartition
	sort.Strings(topics)
	for _, t := range topics {
		if _, ok := ct.ctx.assignments[t]; ok {
			continue
		}
		a, err := ct.zk.watchTopic(t)
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			ct.log.WithError(err).WithField("topic", t).Error("ignoring undecodable topic znode")
			continue
		}
		ct.ctx.assignments[t] = a
		ct.log.WithField("topic", t).WithField("partitions", len(a)).Info("new topic")
		tps := make([]TopicPartition, 0, len(a))
		for _, p := range sorted.Keys(a) {
			tps = append(tps, TopicPartition{Topic: t, Partition: p})
		}
		if err := ct.zk.loadStates(tps); err != nil {
			return err
		}
		for _, tp := range tps {
			if _, ok := ct.ctx.states[tp]; !ok {
				fresh = append(fresh, tp)
			} else {
				ct.psm.initPartition(tp) // written by an earlier controller
				ct.rsm.initPartition(tp)
			}
		}
	}
	if err := ct.onNewPartitionCreation(fresh, b); err != nil {
		return err
	}
	b.send()
	return nil
}

// processPartitionModification handles partitions added to an existing topic.
func (ct *Controller) processPartitionModification(topic string) error {
	if _, ok := ct.ctx.assignments[topic]; !ok {
		return nil
	}
	a, err := ct.zk.watchTopic(topic)
	if errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	if err != nil {
		ct.log.WithError(err).WithField("topic", topic).Error("ignoring undecodable topic znode")
		return nil
	}
	var fresh []TopicPartition
	for _, p := range sorted.Keys(a) {
		if _, ok := ct.ctx.assignments[topic][p]; !ok {
			fresh = append(fresh, TopicPartition{Topic: topic, Partition: p})
		}
	}
	ct.ctx.assignments[topic] = a
	if len(fresh) == 0 {
		return nil
	}
	ct.log.WithField("topic", topic).WithField("added", len(fresh)).Info("partitions added")
	b := ct.newBatch()
	if err := ct.onNewPartitionCreation(fresh, b); err != nil {
		return err
	}
	b.send()
	return nil
}

// onNewPartitionCreation is Kafka's: the partitions and their replicas become New, then the
// partitions Online (leader and ISR initialized, LeaderAndIsr with isNew) and the replicas
// Online (live) or Offline.
func (ct *Controller) onNewPartitionCreation(tps []TopicPartition, b *requestBatch) error {
	var replicas []partitionReplica
	for _, tp := range tps {
		ct.psm.transition(tp, NewPartition)
		for _, r := range ct.ctx.replicas(tp) {
			replicas = append(replicas, partitionReplica{tp, r})
		}
	}
	ct.rsm.handleStateChanges(replicas, NewReplica, nil)
	if err := ct.psm.initializeLeaderAndIsr(tps, b); err != nil {
		return err
	}
	var online, offline []partitionReplica
	for _, pr := range replicas {
		if ct.ctx.isLive(pr.replica) {
			online = append(online, pr)
		} else {
			offline = append(offline, pr)
		}
	}
	ct.rsm.handleStateChanges(online, OnlineReplica, nil)
	ct.rsm.handleStateChanges(offline, OfflineReplica, nil)
	return nil
}

// forgetTopic drops a topic whose znode is gone from the context and the state machines.
func (ct *Controller) forgetTopic(t string) {
	for p := range ct.ctx.assignments[t] {
		tp := TopicPartition{Topic: t, Partition: p}
		delete(ct.ctx.states, tp)
		ct.psm.forget(tp)
		ct.rsm.forgetPartition(tp)
	}
	delete(ct.ctx.assignments, t)
	ct.deletion.forget(t)
	ct.zk.disarm("data:" + zkdata.TopicPath(t))
	ct.reassign.forgetTopic(t)
}

// processIsrChange handles /isr_change_notification (K5): re-read the named partitions'
// states, send UpdateMetadata for them to every live broker, delete the notifications.
func (ct *Controller) processIsrChange() error {
	children, err := ct.zk.watchChildren(zkdata.PathIsrChange, evIsrChange)
	if err != nil || len(children) == 0 {
		return err
	}
	sort.Strings(children)
	seen := map[TopicPartition]bool{}
	var tps []TopicPartition
	for _, c := range children {
		if !zkdata.IsIsrChange(c) {
			continue
		}
		data, _, err := ct.conn.Get(zkdata.Child(zkdata.PathIsrChange, c))
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return err
		}
		list, err := zkdata.DecodeIsrChange(data)
		if err != nil {
			ct.log.WithError(err).WithField("znode", c).Warn("ignoring undecodable ISR change notification")
			continue
		}
		for _, tp := range list {
			if ct.ctx.hasPartition(tp) && !seen[tp] {
				seen[tp] = true
				tps = append(tps, tp)
			}
		}
	}
	if err := ct.zk.loadStates(tps); err != nil {
		return err
	}
	if len(tps) > 0 {
		b := ct.newBatch()
		b.updateMetadata(ct.ctx.liveIDs(), tps)
		b.send()
	}
	return ct.zk.deleteChildren(zkdata.PathIsrChange, children)
}
