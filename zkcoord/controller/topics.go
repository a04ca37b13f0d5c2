package controller

import (
	"errors"
	"sort"

	"github.com/go-zookeeper/zk"
	"github.com/isrbroker/isrbroker/zkcoord/internal/sorted"
	"github.com/isrbroker/isrbroker/zkcoord/zkdata"
)

// partitionChangeHandler acts on /brokers/topics changes (Kafka's TopicChange and
// PartitionModifications events) and on /isr_change_notification (IsrChangeNotification) on the
// controller's event goroutine.
type partitionChangeHandler struct{ ct *Controller }

// processTopicChange handles /brokers/topics children: new topics' partitions go through
// NewPartition to OnlinePartition; topics whose znode vanished are forgotten.
func (h partitionChangeHandler) processTopicChange() error {
	topics, err := h.ct.zk.watchChildren(zkdata.PathBrokerTopics, evTopicChange)
	if err != nil {
		return err
	}
	cur := map[string]bool{}
	for _, t := range topics {
		cur[t] = true
	}
	for t := range h.ct.ctx.assignments {
		if !cur[t] {
			h.forgetTopic(t)
		}
	}
	b := h.ct.newBatch()
	var fresh []TopicPartition
	sort.Strings(topics)
	for _, t := range topics {
		if _, ok := h.ct.ctx.assignments[t]; ok {
			continue
		}
		a, err := h.ct.zk.watchTopic(t)
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			h.ct.log.WithError(err).WithField("topic", t).Error("ignoring undecodable topic znode")
			continue
		}
		h.ct.ctx.assignments[t] = a
		h.ct.log.WithField("topic", t).WithField("partitions", len(a)).Info("new topic")
		tps := make([]TopicPartition, 0, len(a))
		for _, p := range sorted.Keys(a) {
			tps = append(tps, TopicPartition{Topic: t, Partition: p})
		}
		if err := h.ct.zk.loadStates(tps); err != nil {
			return err
		}
		for _, tp := range tps {
			if _, ok := h.ct.ctx.states[tp]; !ok {
				fresh = append(fresh, tp)
			} else {
				h.ct.psm.initPartition(tp) // written by an earlier controller
				h.ct.rsm.initPartition(tp)
			}
		}
	}
	if err := h.onNewPartitionCreation(fresh, b); err != nil {
		return err
	}
	b.send()
	return nil
}

// processPartitionModification handles partitions added to an existing topic.
func (h partitionChangeHandler) processPartitionModification(topic string) error {
	if _, ok := h.ct.ctx.assignments[topic]; !ok {
		return nil
	}
	a, err := h.ct.zk.watchTopic(topic)
	if errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	if err != nil {
		h.ct.log.WithError(err).WithField("topic", topic).Error("ignoring undecodable topic znode")
		return nil
	}
	var fresh []TopicPartition
	for _, p := range sorted.Keys(a) {
		if _, ok := h.ct.ctx.assignments[topic][p]; !ok {
			fresh = append(fresh, TopicPartition{Topic: topic, Partition: p})
		}
	}
	h.ct.ctx.assignments[topic] = a
	if len(fresh) == 0 {
		return nil
	}
	h.ct.log.WithField("topic", topic).WithField("added", len(fresh)).Info("partitions added")
	b := h.ct.newBatch()
	if err := h.onNewPartitionCreation(fresh, b); err != nil {
		return err
	}
	b.send()
	return nil
}

// onNewPartitionCreation is Kafka's: the partitions and their replicas become New, then the
// partitions Online (leader and ISR initialized, LeaderAndIsr with isNew) and the replicas
// Online (live) or Offline.
func (h partitionChangeHandler) onNewPartitionCreation(tps []TopicPartition, b *requestBatch) error {
	var replicas []partitionReplica
	for _, tp := range tps {
		h.ct.psm.transition(tp, NewPartition)
		for _, r := range h.ct.ctx.replicas(tp) {
			replicas = append(replicas, partitionReplica{tp, r})
		}
	}
	h.ct.rsm.handleStateChanges(replicas, NewReplica, nil)
	if err := h.ct.psm.initializeLeaderAndIsr(tps, b); err != nil {
		return err
	}
	var online, offline []partitionReplica
	for _, pr := range replicas {
		if h.ct.ctx.isLive(pr.replica) {
			online = append(online, pr)
		} else {
			offline = append(offline, pr)
		}
	}
	h.ct.rsm.handleStateChanges(online, OnlineReplica, nil)
	h.ct.rsm.handleStateChanges(offline, OfflineReplica, nil)
	return nil
}

// forgetTopic drops a topic whose znode is gone from the context and the state machines.
func (h partitionChangeHandler) forgetTopic(t string) {
	for p := range h.ct.ctx.assignments[t] {
		tp := TopicPartition{Topic: t, Partition: p}
		delete(h.ct.ctx.states, tp)
		h.ct.psm.forget(tp)
		h.ct.rsm.forgetPartition(tp)
	}
	delete(h.ct.ctx.assignments, t)
	h.ct.deletion.forget(t)
	h.ct.zk.disarm("data:" + zkdata.TopicPath(t))
	h.ct.reassign.forgetTopic(t)
}

// processIsrChange handles /isr_change_notification (K5): re-read the named partitions'
// states, send UpdateMetadata for them to every live broker, delete the notifications.
func (h partitionChangeHandler) processIsrChange() error {
	children, err := h.ct.zk.watchChildren(zkdata.PathIsrChange, evIsrChange)
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
		data, _, err := h.ct.conn.Get(zkdata.Child(zkdata.PathIsrChange, c))
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return err
		}
		list, err := zkdata.DecodeIsrChange(data)
		if err != nil {
			h.ct.log.WithError(err).WithField("znode", c).Warn("ignoring undecodable ISR change notification")
			continue
		}
		for _, tp := range list {
			if h.ct.ctx.hasPartition(tp) && !seen[tp] {
				seen[tp] = true
				tps = append(tps, tp)
			}
		}
	}
	if err := h.ct.zk.loadStates(tps); err != nil {
		return err
	}
	if len(tps) > 0 {
		b := h.ct.newBatch()
		b.updateMetadata(h.ct.ctx.liveIDs(), tps)
		b.send()
	}
	return h.ct.zk.deleteChildren(zkdata.PathIsrChange, children)
}
