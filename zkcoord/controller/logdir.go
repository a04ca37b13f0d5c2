package controller

import (
	"errors"
	"slices"

	"github.com/go-zookeeper/zk"
	"github.com/isrbroker/isrbroker/zkcoord/internal/sorted"
	"github.com/isrbroker/isrbroker/zkcoord/zkdata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Offline log dirs (KIP-112; docs/kafka-facts.md §12). A broker whose log dir goes offline
// writes /log_dir_event_notification/log_dir_event_<seq> ({"version":1,"broker":N,"event":1}).
// The controller watches the children and, on its event goroutine
// (processLogDirEventNotification), sends LeaderAndIsr for every replica of the brokers named
// (onBrokerLogDirFailure: their replicas go Online → Online), then deletes the notifications.
// The broker answers KAFKA_STORAGE_ERROR for the partitions in its offline dirs; the answer
// (LeaderAndIsrResponseReceived) records them in the context's offlineDirs (Kafka's
// replicasOnOfflineDirs), so that they no longer count as online replicas (isReplicaOnline),
// and the newly offline replicas go through onReplicasBecomeOffline: a partition whose leader
// is one of them goes OfflinePartition and is elected from the rest of the ISR, the replicas go
// OfflineReplica (StopReplica, out of the ISR), and UpdateMetadata lists them as offline
// replicas. A broker's entry is dropped when its registration goes or is replaced (a restart).

// lairAnswer is what an evLeaderAndIsrResponse carries: the partitions a broker answered
// KAFKA_STORAGE_ERROR and NONE for.
type lairAnswer struct {
	broker          int32
	controllerEpoch int32
	offline, online []TopicPartition
}

// isReplicaOnline is Kafka's ControllerContext.isReplicaOnline: the broker is live and the
// replica is not in one of its offline log dirs.
func (c *controllerContext) isReplicaOnline(id int32, tp TopicPartition) bool {
	return c.isLive(id) && !c.offlineDirs[id][tp]
}

// partitionLiveness is the liveness of tp's replicas for its elections: a replica in an offline
// log dir is neither live nor electable.
func (c *controllerContext) partitionLiveness(tp TopicPartition) liveness {
	return replicaLiveness{c: c, tp: tp}
}

type replicaLiveness struct {
	c  *controllerContext
	tp TopicPartition
}

func (l replicaLiveness) isLive(id int32) bool { return l.c.isReplicaOnline(id, l.tp) }
func (l replicaLiveness) electable(id int32) bool {
	return l.c.electable(id) && !l.c.offlineDirs[id][l.tp]
}

// logDirFailureHandler acts on /log_dir_event_notification and on the LeaderAndIsr answers that
// name offline replicas (KIP-112: Kafka's LogDirEventNotification and LeaderAndIsrResponseReceived
// events) on the controller's event goroutine.
type logDirFailureHandler struct{ ct *Controller }

// watchLogDirEvents (re-)arms the children watch of /log_dir_event_notification and deletes
// the pending notifications (onControllerFailover: the failover's LeaderAndIsr to every live
// replica finds the offline ones).
func (h logDirFailureHandler) watchLogDirEvents() error {
	notes, err := h.ct.zk.watchChildren(zkdata.PathLogDirEvent, evLogDirEvent)
	if err != nil {
		return err
	}
	return h.ct.zk.deleteChildren(zkdata.PathLogDirEvent, notes)
}

// processLogDirEvent is Kafka's processLogDirEventNotification: read the notifications, query
// the brokers they name with LeaderAndIsr, and delete them (also when the handling failed).
func (h logDirFailureHandler) processLogDirEvent() error {
	children, err := h.ct.zk.watchChildren(zkdata.PathLogDirEvent, evLogDirEvent)
	if err != nil {
		return err
	}
	var notes []string
	seen := map[int32]bool{}
	var brokers []int32
	for _, c := range children {
		if !zkdata.IsLogDirEvent(c) {
			continue
		}
		notes = append(notes, c)
		data, _, err := h.ct.conn.Get(zkdata.Child(zkdata.PathLogDirEvent, c))
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return err
		}
		id, err := zkdata.DecodeLogDirEvent(data)
		if err != nil {
			h.ct.log.WithError(err).WithField("notification", c).Warn("ignoring an undecodable log dir event")
			continue
		}
		if !seen[id] {
			seen[id] = true
			brokers = append(brokers, id)
		}
	}
	slices.Sort(brokers)
	if len(notes) == 0 {
		return nil
	}
	herr := h.onBrokerLogDirFailure(brokers)
	if err := h.ct.zk.deleteChildren(zkdata.PathLogDirEvent, notes); err != nil && herr == nil {
		herr = err
	}
	return herr
}

// onBrokerLogDirFailure sends LeaderAndIsr for every replica on brokers (their replicas go
// Online → Online) to find out which are still online; the offline ones answer
// KAFKA_STORAGE_ERROR (processLeaderAndIsrResponse).
func (h logDirFailureHandler) onBrokerLogDirFailure(brokers []int32) error {
	h.ct.log.WithField("targetBroker", brokers).Info("handling log dir failure: querying the brokers' replicas with LeaderAndIsr")
	var replicas []partitionReplica
	for _, tp := range h.ct.ctx.sortedStates() {
		for _, r := range h.ct.ctx.replicas(tp) {
			if slices.Contains(brokers, r) && h.ct.ctx.isLive(r) {
				replicas = append(replicas, partitionReplica{tp, r})
			}
		}
	}
	b := h.ct.newBatch()
	if err := h.ct.rsm.handleStateChanges(replicas, OnlineReplica, b); err != nil {
		return err
	}
	b.send()
	return nil
}

// onLeaderAndIsrResponse runs on a sender goroutine: a LeaderAndIsr answer that names
// partitions (KAFKA_STORAGE_ERROR or NONE) becomes an event for the controller goroutine.
func (h logDirFailureHandler) onLeaderAndIsrResponse(broker int32, r *kmsg.LeaderAndISRResponse) {
	if r.ErrorCode != 0 {
		return
	}
	a := &lairAnswer{broker: broker}
	for _, p := range r.Partitions {
		tp := TopicPartition{Topic: p.Topic, Partition: p.Partition}
		switch p.ErrorCode {
		case kerr.KafkaStorageError.Code:
			a.offline = append(a.offline, tp)
		case 0:
			a.online = append(a.online, tp)
		}
	}
	if len(a.offline) == 0 {
		// Nothing new can go offline; a replica answering NONE that was offline is only
		// possible after the broker restarted, which drops its entry (brokers.go).
		return
	}
	h.ct.enqueue(event{kind: evLeaderAndIsrResponse, lair: a})
}

// processLeaderAndIsrResponse is Kafka's processLeaderAndIsrResponseReceived: the broker's
// offline replicas become its previous ones minus those answered NONE plus those answered
// KAFKA_STORAGE_ERROR, and the newly offline ones go through onReplicasBecomeOffline.
func (h logDirFailureHandler) processLeaderAndIsrResponse(a *lairAnswer) error {
	if a == nil || !h.ct.ctx.isLive(a.broker) {
		return nil
	}
	cur := h.ct.ctx.offlineDirs[a.broker]
	if cur == nil {
		cur = map[TopicPartition]bool{}
		h.ct.ctx.offlineDirs[a.broker] = cur
	}
	for _, tp := range a.online {
		delete(cur, tp)
	}
	var newly []partitionReplica
	for _, tp := range a.offline {
		if !cur[tp] && h.ct.ctx.hasPartition(tp) {
			cur[tp] = true
			newly = append(newly, partitionReplica{tp, a.broker})
		}
	}
	if len(newly) == 0 {
		return nil
	}
	h.ct.stateChangeLog().WithField("replica", a.broker).WithField("offlineReplicas", len(newly)).
		WithField("topic", newly[0].tp.Topic).WithField("partition", newly[0].tp.Partition).
		Warn("replicas in an offline log dir: moving their leaderships (topic and partition: the first)")
	return h.onReplicasBecomeOffline(newly)
}

// onReplicasBecomeOffline is Kafka's onReplicasBecomeOffline for replicas of live brokers:
// the partitions whose leader is one of them go OfflinePartition and are elected (offline
// election over the online replicas of the ISR: the offline replicas leave the ISR in the same
// write), then the replicas go OfflineReplica (StopReplica, ISR removal), or ineligible for
// deletion when their topic is queued for deletion; every live broker gets UpdateMetadata.
func (h logDirFailureHandler) onReplicasBecomeOffline(replicas []partitionReplica) error {
	b := h.ct.newBatch()
	var offline, deleting []partitionReplica
	touched := map[TopicPartition]bool{}
	for _, pr := range replicas {
		if h.ct.deletion.isQueued(pr.tp.Topic) {
			deleting = append(deleting, pr)
			continue
		}
		offline = append(offline, pr)
		if _, ok := h.ct.ctx.states[pr.tp]; ok {
			touched[pr.tp] = true
		}
	}
	tps := sorted.TPKeys(touched)
	if err := h.ct.zk.loadStates(tps); err != nil { // fresh states, as onBrokerFailure
		return err
	}
	var leaderless []TopicPartition
	for _, tp := range tps {
		if st := h.ct.ctx.states[tp]; st != nil && !h.ct.ctx.isReplicaOnline(st.leader, tp) {
			h.ct.psm.transition(tp, OfflinePartition)
			leaderless = append(leaderless, tp)
		}
	}
	if err := h.ct.psm.elect(leaderless, b, h.ct.psm.offlineStrategy, h.ct.ctx.liveReplicas); err != nil {
		return err
	}
	h.ct.rsm.fresh = touched // read above; elect's writes kept the cache current
	if err := h.ct.rsm.handleStateChanges(offline, OfflineReplica, b); err != nil {
		return err
	}
	b.updateMetadata(h.ct.ctx.liveIDs(), tps)
	b.send()
	// Replicas of topics queued for deletion: ineligible, the deletion halted until they can be
	// deleted (the deletion manager's own path, as for a broker failure in brokers.go).
	return h.ct.deletion.failReplicas(deleting)
}
