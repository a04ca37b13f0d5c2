package controller

import (
	"slices"
	"time"

	"github.com/isrbroker/isrbroker/zkcoord/zkdata"
)

// processBrokerChange compares /brokers/ids with the known live brokers: new, dead, and
// bounced (same id, larger czxid: a failure followed by a startup).
func (ct *Controller) processBrokerChange() error {
	start := time.Now()
	defer ct.mElection.UpdateSince(start)
	ids, err := ct.zk.watchChildren(zkdata.PathBrokerIDs, evBrokerChange)
	if err != nil {
		return err
	}
	cur, err := ct.zk.readBrokers(ids)
	if err != nil {
		return err
	}
	var newIDs, deadIDs, bouncedIDs []int32
	for id, b := range cur {
		old, ok := ct.ctx.live[id]
		switch {
		case !ok:
			newIDs = append(newIDs, id)
		case b.Epoch > old.Epoch:
			bouncedIDs = append(bouncedIDs, id)
		}
	}
	for id := range ct.ctx.live {
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
	ct.log.WithField("new", newIDs).WithField("dead", deadIDs).WithField("bounced", bouncedIDs).Info("broker change")
	for _, id := range append(slices.Clone(deadIDs), bouncedIDs...) {
		delete(ct.ctx.live, id)
		delete(ct.ctx.shuttingDown, id) // K7: a controlled shutdown ends with the registration
		delete(ct.ctx.offlineDirs, id)  // a restarted broker's log dirs are online again
		ct.chans.stopSender(id)
	}
	b := ct.newBatch()
	if len(newIDs) > 0 {
		for _, id := range newIDs {
			ct.ctx.live[id] = cur[id]
			ct.chans.startSender(cur[id])
		}
		if err := ct.onBrokerStartup(newIDs, b); err != nil {
			return err
		}
	}
	if len(bouncedIDs) > 0 {
		if err := ct.onBrokerFailure(bouncedIDs, b); err != nil {
			return err
		}
		for _, id := range bouncedIDs {
			ct.ctx.live[id] = cur[id]
			ct.chans.startSender(cur[id])
		}
		// The failure's requests (StopReplica(delete=false) for the bounced broker's replicas)
		// go out before the startup's LeaderAndIsr, as in Kafka, where each state-machine step
		// sends its own batch: one batch sends LeaderAndIsr before StopReplica, and the
		// StopReplica would stop the fetchers the LeaderAndIsr just started.
		b.send()
		b = ct.newBatch()
		if err := ct.onBrokerStartup(bouncedIDs, b); err != nil {
			return err
		}
	}
	if len(deadIDs) > 0 {
		if err := ct.onBrokerFailure(deadIDs, b); err != nil {
			return err
		}
	}
	b.send()
	// A broker holding a replica of a topic queued for deletion is back: the topic is eligible
	// again and its deletion resumes (resumeDeletionForTopics).
	return ct.deletion.resumeFor(append(newIDs, bouncedIDs...))
}

// onBrokerStartup: UpdateMetadata to the existing brokers, a full one to the new brokers,
// the new brokers' replicas go online (LeaderAndIsr), then New/Offline partitions are elected.
func (ct *Controller) onBrokerStartup(newIDs []int32, b *requestBatch) error {
	var existing []int32
	for _, id := range ct.ctx.liveIDs() {
		if !slices.Contains(newIDs, id) {
			existing = append(existing, id)
		}
	}
	b.updateMetadata(existing, nil)
	b.fullUpdateMetadata(newIDs)
	var replicas []partitionReplica
	for _, tp := range ct.ctx.sortedStates() {
		if ct.deletion.isQueued(tp.Topic) {
			continue // StopReplica(delete) follows in the deletion manager
		}
		for _, r := range ct.ctx.replicas(tp) {
			if slices.Contains(newIDs, r) {
				replicas = append(replicas, partitionReplica{tp, r})
			}
		}
	}
	ct.rsm.handleStateChanges(replicas, OnlineReplica, b)
	return ct.psm.triggerOnlineStateChange(b)
}

// onBrokerFailure is onReplicasBecomeOffline for the replicas on deadIDs: partitions whose
// leader died go offline and are elected (the dead replicas leave the ISR in the same write,
// as do dead ISR members of partitions whose leader lives); the dead replicas go offline, or
// ineligible for deletion when their topic is queued for deletion. Every change bumps the
// leader epoch.
func (ct *Controller) onBrokerFailure(deadIDs []int32, b *requestBatch) error {
	b.updateMetadata(ct.ctx.liveIDs(), nil)
	var offline, deleting []partitionReplica
	for _, tp := range ct.ctx.partitions() {
		for _, r := range ct.ctx.replicas(tp) {
			if !slices.Contains(deadIDs, r) {
				continue
			}
			if ct.deletion.isQueued(tp.Topic) {
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
			if _, ok := ct.ctx.states[pr.tp]; ok {
				touched = append(touched, pr.tp)
			}
		}
	}
	if err := ct.zk.loadStates(touched); err != nil {
		return err
	}
	var affected []TopicPartition
	for _, tp := range ct.ctx.sortedStates() {
		if ct.deletion.isQueued(tp.Topic) {
			continue // no elections for topics queued for deletion
		}
		if st := ct.ctx.states[tp]; ct.ctx.needsElection(st) {
			if !ct.ctx.isLive(st.leader) {
				ct.psm.transition(tp, OfflinePartition)
			}
			affected = append(affected, tp)
		}
	}
	if err := ct.psm.elect(affected, b, ct.psm.offlineStrategy, ct.ctx.liveReplicas); err != nil {
		return err
	}
	ct.rsm.fresh = seen // read above; elect's writes kept the cache current
	if err := ct.rsm.handleStateChanges(offline, OfflineReplica, b); err != nil {
		return err
	}
	return ct.deletion.failReplicas(deleting)
}
