package controller

import (
	"slices"
	"sort"

	"github.com/isrbroker/isrbroker/zkcoord/internal/sorted"
	"github.com/isrbroker/isrbroker/zkcoord/zkdata"
	"github.com/twmb/franz-go/pkg/kerr"
)

// topicDeletionManager is Kafka's TopicDeletionManager for /admin/delete_topics/<t>
// (docs/kafka-facts.md §2, "Topic deletion"). A queued topic's partitions are not elected and
// get no LeaderAndIsr; UpdateMetadata names them with leader -2 (LeaderDuringDelete).
//
// Each replica goes OfflineReplica → ReplicaDeletionStarted with StopReplica(delete=true), and
// the broker's answer decides: no error for the partition → ReplicaDeletionSuccessful; an
// error (for the partition or the whole request) → ReplicaDeletionIneligible. A replica whose
// broker is offline, or whose broker dies before answering, is ReplicaDeletionIneligible too.
// An ineligible replica makes its topic ineligible: the deletion is halted (the topic's znodes
// kept, so the name cannot be reused and the stale log cannot come back as a replica of a new
// topic) until a broker holding one of its replicas starts (onBrokerStartup →
// resumeDeletionForTopics) or a new controller takes over; then the ineligible replicas are
// reset to OfflineReplica and get StopReplica(delete=true) again. Only when every replica is
// ReplicaDeletionSuccessful do they go NonExistentReplica, the partitions OfflinePartition →
// NonExistentPartition, and the topic's znodes (/brokers/topics/<t>, /config/topics/<t>,
// /admin/delete_topics/<t>) are removed. With delete.topic.enable=false the request znode is
// just removed.
//
// Differences from Kafka 2.4: the OfflineReplica step sends no StopReplica(delete=false) and
// does not shrink the ISR (the partition is going away; StopReplica(delete=true) stops the
// fetchers too), and a reassignment in progress does not make a topic ineligible.
type topicDeletionManager struct {
	ct         *Controller
	queued     map[string]bool // topics queued for deletion and not yet removed
	ineligible map[string]bool // queued topics whose deletion is halted (topicsIneligibleForDeletion)
}

func (d *topicDeletionManager) reset() {
	d.queued = map[string]bool{}
	d.ineligible = map[string]bool{}
}

// init marks the queued topics the controller knows of at failover, and as ineligible those
// with a replica on a broker that is not live (fetchTopicDeletionsInProgress).
func (d *topicDeletionManager) init(children []string) {
	for _, t := range children {
		if _, ok := d.ct.ctx.assignments[t]; !ok {
			continue
		}
		d.queued[t] = true
		if d.hasReplicaOn(t, func(r int32) bool { return !d.ct.ctx.isLive(r) }) {
			d.ineligible[t] = true
		}
	}
}

func (d *topicDeletionManager) isQueued(topic string) bool { return d.queued[topic] }

func (d *topicDeletionManager) forget(topic string) {
	delete(d.queued, topic)
	delete(d.ineligible, topic)
}

func (d *topicDeletionManager) hasReplicaOn(topic string, on func(int32) bool) bool {
	for _, replicas := range d.ct.ctx.assignments[topic] {
		if slices.ContainsFunc(replicas, on) {
			return true
		}
	}
	return false
}

// topicReplicas returns every replica of topic.
func (d *topicDeletionManager) topicReplicas(topic string) []partitionReplica {
	var out []partitionReplica
	for _, p := range sorted.Keys(d.ct.ctx.assignments[topic]) {
		tp := TopicPartition{Topic: topic, Partition: p}
		for _, r := range d.ct.ctx.replicas(tp) {
			out = append(out, partitionReplica{tp, r})
		}
	}
	return out
}

// process handles the children of /admin/delete_topics (TopicDeletion event, and resumption
// after failover): the topics are queued and the deletions resumed.
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
		if !d.queued[t] {
			ct.log.WithField("topic", t).Info("topic queued for deletion")
			d.queued[t] = true
		}
	}
	return d.resume()
}

// resumeFor is resumeDeletionForTopics for the topics with a replica on one of the brokers
// ids, which just started: they are eligible again and the deletions resume.
func (d *topicDeletionManager) resumeFor(ids []int32) error {
	found := false
	for _, t := range sorted.Keys(d.queued) {
		if d.hasReplicaOn(t, func(r int32) bool { return slices.Contains(ids, r) }) {
			delete(d.ineligible, t)
			found = true
		}
	}
	if !found {
		return nil
	}
	return d.resume()
}

// resume is Kafka's resumeDeletions: a topic whose replicas are all
// ReplicaDeletionSuccessful is deleted; one with no replica awaiting an answer
// (ReplicaDeletionStarted) has its ineligible replicas reset to OfflineReplica for a retry;
// and an eligible topic (not halted, no replica awaiting an answer) has its deletion
// (re)started.
func (d *topicDeletionManager) resume() error {
	ct := d.ct
	var start []string
	for _, t := range sorted.Keys(d.queued) {
		replicas := d.topicReplicas(t)
		if !slices.ContainsFunc(replicas, func(pr partitionReplica) bool { return ct.rsm.states[pr] != ReplicaDeletionSuccessful }) {
			if err := d.completeDeleteTopic(t); err != nil {
				return err
			}
			continue
		}
		started := slices.ContainsFunc(replicas, func(pr partitionReplica) bool { return ct.rsm.states[pr] == ReplicaDeletionStarted })
		if started {
			continue // answers awaited
		}
		var failed []partitionReplica
		for _, pr := range replicas {
			if ct.rsm.states[pr] == ReplicaDeletionIneligible {
				failed = append(failed, pr)
			}
		}
		ct.rsm.transitionOnly(failed, OfflineReplica) // retryDeletionForIneligibleReplicas
		if d.ineligible[t] {
			ct.log.WithField("topic", t).Debug("not retrying the deletion of the topic: it is ineligible for deletion")
			continue
		}
		start = append(start, t)
	}
	for _, t := range start {
		d.startDeletion(t)
	}
	return nil
}

// startDeletion is onTopicDeletion + onPartitionDeletion for t: UpdateMetadata (leader -2)
// to every live broker; the replicas on offline brokers become ReplicaDeletionIneligible (the
// topic is halted); every other replica not yet deleted goes OfflineReplica →
// ReplicaDeletionStarted, which sends it StopReplica(delete=true).
func (d *topicDeletionManager) startDeletion(t string) {
	ct := d.ct
	b := ct.newBatch()
	var tps []TopicPartition
	for _, p := range sorted.Keys(ct.ctx.assignments[t]) {
		tps = append(tps, TopicPartition{Topic: t, Partition: p})
	}
	var dead, retry []partitionReplica
	offline := map[int32]bool{}
	for _, pr := range d.topicReplicas(t) {
		switch {
		case ct.rsm.states[pr] == ReplicaDeletionSuccessful:
		case !ct.ctx.isLive(pr.replica):
			dead = append(dead, pr)
			offline[pr.replica] = true
		default:
			retry = append(retry, pr)
		}
	}
	b.updateMetadata(ct.ctx.liveIDs(), tps)
	ct.rsm.failDeletion(dead)
	ct.rsm.handleStateChanges(ct.rsm.transitionOnly(retry, OfflineReplica), ReplicaDeletionStarted, b)
	b.send()
	l := ct.log.WithField("topic", t).WithField("replicas", len(retry))
	if len(offline) > 0 {
		d.ineligible[t] = true
		l = l.WithField("offlineReplicas", sorted.Keys(offline))
		l.Info("topic deletion started; it waits for the brokers of offline replicas (ineligible for deletion)")
		return
	}
	l.Info("topic deletion started")
}

// failReplicas is failReplicaDeletion: replicas of topics queued for deletion whose broker died
// or answered an error become ReplicaDeletionIneligible, their topics ineligible. A replica
// already deleted (ReplicaDeletionSuccessful) stays so.
func (d *topicDeletionManager) failReplicas(replicas []partitionReplica) error {
	replicas = slices.DeleteFunc(slices.Clone(replicas), func(pr partitionReplica) bool {
		return !d.queued[pr.tp.Topic] || d.ct.rsm.states[pr] == ReplicaDeletionSuccessful
	})
	if len(replicas) == 0 {
		return nil
	}
	d.ct.rsm.failDeletion(replicas)
	for _, pr := range replicas {
		if !d.ineligible[pr.tp.Topic] {
			d.ineligible[pr.tp.Topic] = true
			d.ct.log.WithField("topic", pr.tp.Topic).Info("halted the deletion of the topic: a replica could not be deleted")
		}
	}
	return d.resume()
}

// stopReplicaAnswer is a broker's answer to StopReplica(delete=true) (Kafka's
// TopicDeletionStopReplicaResponseReceived): the request's partitions with their codes.
type stopReplicaAnswer struct {
	broker      int32
	brokerEpoch int64 // of the broker the request went to
	code        int16 // request-level error: every partition failed
	partitions  []TopicPartition
	errs        map[TopicPartition]int16 // a partition missing from the answer failed
}

// onStopReplicaAnswer is processTopicDeletionStopReplicaResponseReceived, for replicas of
// topics queued for deletion that await it (ReplicaDeletionStarted): those answered without an
// error are ReplicaDeletionSuccessful, the others ineligible; then the deletions resume. An
// answer from an earlier registration of the broker is ignored (its failure already made
// those replicas ineligible).
func (d *topicDeletionManager) onStopReplicaAnswer(a *stopReplicaAnswer) error {
	ct := d.ct
	if bi, ok := ct.ctx.live[a.broker]; !ok || bi.Epoch != a.brokerEpoch {
		return nil
	}
	var failed, deleted []partitionReplica
	for _, tp := range a.partitions {
		pr := partitionReplica{tp, a.broker}
		if !d.queued[tp.Topic] || ct.rsm.states[pr] != ReplicaDeletionStarted {
			continue
		}
		code, ok := a.errs[tp]
		if a.code != 0 {
			code, ok = a.code, true
		}
		if !ok {
			code = kerr.UnknownServerError.Code
		}
		if code != 0 {
			ct.stateChangeLog().WithField("topic", tp.Topic).WithField("partition", tp.Partition).WithField("replica", a.broker).
				WithField("error", kerr.ErrorForCode(code)).Warn("replica deletion failed; the topic's deletion waits for a retry")
			failed = append(failed, pr)
			continue
		}
		deleted = append(deleted, pr)
	}
	if len(failed)+len(deleted) == 0 {
		return nil
	}
	ct.rsm.transitionOnly(deleted, ReplicaDeletionSuccessful)
	if len(failed) > 0 {
		return d.failReplicas(failed) // resumes
	}
	return d.resume()
}

// completeDeleteTopic removes t's znodes, then its replicas and partitions from the state
// machines and the context.
func (d *topicDeletionManager) completeDeleteTopic(t string) error {
	ct := d.ct
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
	ct.rsm.transitionOnly(d.topicReplicas(t), NonExistentReplica)
	for _, p := range sorted.Keys(ct.ctx.assignments[t]) {
		tp := TopicPartition{Topic: t, Partition: p}
		if ct.psm.state(tp) != OfflinePartition {
			ct.psm.transition(tp, OfflinePartition)
		}
		ct.psm.transition(tp, NonExistentPartition)
	}
	ct.partitionChanges.forgetTopic(t)
	ct.log.WithField("topic", t).Info("deleted topic")
	return nil
}
