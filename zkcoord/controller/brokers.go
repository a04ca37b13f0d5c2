package controller

import (
	"slices"
	"time"

	"github.com/isrbroker/isrbroker/zkcoord/zkdata"
)

// brokerChangeHandler acts on /brokers/ids changes (Kafka's BrokerChange event: onBrokerStartup,
// onBrokerFailure) on the controller's event goroutine.
type brokerChangeHandler struct{ ct *Controller }

// processBrokerChange compares /brokers/ids with the known live brokers: new, dead, and
// bounced (same id, larger czxid: a failure followed by a startup).
func (h brokerChangeHandler) processBrokerChange() error {
	start := time.Now()
	defer h.ct.mElection.UpdateSince(start)
	ids, err := h.ct.zk.watchChildren(zkdata.PathBrokerIDs, evBrokerChange)
	if err != nil {
		return err
	}
	cur, err := h.ct.zk.readBrokers(ids)
	if err != nil {
		return err
	}
	var newIDs, deadIDs, bouncedIDs []int32
	for id, b := range cur {
		old, ok := h.ct.ctx.live[id]
		switch {
		case !ok:
			newIDs = append(newIDs, id)
		case b.Epoch > old.Epoch:
			bouncedIDs = append(bouncedIDs, id)
		}
	}
	for id := range h.ct.ctx.live {
		if _, ok := cur[id]; !ok {
			deadIDs = append(deadIDs, id)
		}
	}
	slices.Sort(newIDs)
	slices.Sort(deadIDs)
	slices.Sort(bouncedIDs)
	if len(newIDs)+len(deadIDs)+len(bouncedIDs) == 0 {
		return nil
	}
	h.ct.log.WithField("new", newIDs).WithField("dead", deadIDs).WithField("bounced", bouncedIDs).Info("broker change")
	for _, id := range append(slices.Clone(deadIDs), bouncedIDs...) {
		delete(h.ct.ctx.live, id)
		delete(h.ct.ctx.shuttingDown, id) // K7: a controlled shutdown ends with the registration
		delete(h.ct.ctx.offlineDirs, id)  // a restarted broker's log dirs are online again
		h.ct.chans.stopSender(id)
	}
	b := h.ct.newBatch()
	if len(newIDs) > 0 {
		for _, id := range newIDs {
			h.ct.ctx.live[id] = cur[id]
			h.ct.chans.startSender(cur[id])
		}
		if err := h.onBrokerStartup(newIDs, b); err != nil {
			return err
		}
	}
	if len(bouncedIDs) > 0 {
		if err := h.onBrokerFailure(bouncedIDs, b); err != nil {
			return err
		}
		for _, id := range bouncedIDs {
			h.ct.ctx.live[id] = cur[id]
			h.ct.chans.startSender(cur[id])
		}
		// The failure's requests (StopReplica(delete=false) for the bounced broker's replicas)
		// go out before the startup's LeaderAndIsr, as in Kafka, where each state-machine step
		// sends its own batch: one batch sends LeaderAndIsr before StopReplica, and the
		// StopReplica would stop the fetchers the LeaderAndIsr just started.
		b.send()
		b = h.ct.newBatch()
		if err := h.onBrokerStartup(bouncedIDs, b); err != nil {
			return err
		}
	}
	if len(deadIDs) > 0 {
		if err := h.onBrokerFailure(deadIDs, b); err != nil {
			return err
		}
	}
	b.send()
	// A broker holding a replica of a topic queued for deletion is back: the topic is eligible
	// again and its deletion resumes (resumeDeletionForTopics).
	return h.ct.deletion.resumeFor(append(newIDs, bouncedIDs...))
}

// onBrokerStartup: UpdateMetadata to the existing brokers, a full one to the new brokers,
// the new brokers' replicas go online (LeaderAndIsr), then New/Offline partitions are elected.
func (h brokerChangeHandler) onBrokerStartup(newIDs []int32, b *requestBatch) error {
	var existing []int32
	for _, id := range h.ct.ctx.liveIDs() {
		if !slices.Contains(newIDs, id) {
			existing = append(existing, id)
		}
	}
	b.updateMetadata(existing, nil)
	b.fullUpdateMetadata(newIDs)
	var replicas []partitionReplica
	for _, tp := range h.ct.ctx.sortedStates() {
		if h.ct.deletion.isQueued(tp.Topic) {
			continue // StopReplica(delete) follows in the deletion manager
		}
		for _, r := range h.ct.ctx.replicas(tp) {
			if slices.Contains(newIDs, r) {
				replicas = append(replicas, partitionReplica{tp, r})
			}
		}
	}
	h.ct.rsm.handleStateChanges(replicas, OnlineReplica, b)
	return h.ct.psm.triggerOnlineStateChange(b)
}

// onBrokerFailure is onReplicasBecomeOffline for the replicas on deadIDs: partitions whose
// leader died go offline and are elected (the dead replicas leave the ISR in the same write,
// as do dead ISR members of partitions whose leader lives); the dead replicas go offline, or
// ineligible for deletion when their topic is queued for deletion. Every change bumps the
// leader epoch.
func (h brokerChangeHandler) onBrokerFailure(deadIDs []int32, b *requestBatch) error {
	b.updateMetadata(h.ct.ctx.liveIDs(), nil)
	var offline, deleting []partitionReplica
	for _, tp := range h.ct.ctx.partitions() {
		for _, r := range h.ct.ctx.replicas(tp) {
			if !slices.Contains(deadIDs, r) {
				continue
			}
			if h.ct.deletion.isQueued(tp.Topic) {
				deleting = append(deleting, partitionReplica{tp, r})
			} else {
				offline = append(offline, partitionReplica{tp, r})
			}
		}
	}
	// Fresh states of the partitions with a replica on a dead broker (pipelined reads): a
	// leader may have re-added a replica to its ISR since the cached state, e.g. a broker in
	// controlled shutdown that followed the new leader until it exited (K7); deciding on the
	// cache would leave the dead broker in that ISR.
	var touched []TopicPartition
	seen := map[TopicPartition]bool{}
	for _, pr := range offline {
		if !seen[pr.tp] {
			seen[pr.tp] = true
			if _, ok := h.ct.ctx.states[pr.tp]; ok {
				touched = append(touched, pr.tp)
			}
		}
	}
	if err := h.ct.zk.loadStates(touched); err != nil {
		return err
	}
	var affected []TopicPartition
	for _, tp := range h.ct.ctx.sortedStates() {
		if h.ct.deletion.isQueued(tp.Topic) {
			continue // no elections for topics queued for deletion
		}
		if st := h.ct.ctx.states[tp]; h.ct.ctx.needsElection(st) {
			if !h.ct.ctx.isLive(st.leader) {
				h.ct.psm.transition(tp, OfflinePartition)
			}
			affected = append(affected, tp)
		}
	}
	if err := h.ct.psm.elect(affected, b, h.ct.psm.offlineStrategy, h.ct.ctx.liveReplicas); err != nil {
		return err
	}
	h.ct.rsm.fresh = seen // read above; elect's writes kept the cache current
	if err := h.ct.rsm.handleStateChanges(offline, OfflineReplica, b); err != nil {
		return err
	}
	return h.ct.deletion.failReplicas(deleting)
}
