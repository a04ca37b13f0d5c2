package controller

import (
	"context"
	"errors"
	"strconv"
	"strings"

	"github.com/isrbroker/isrbroker/zkcoord/zkdata"
)

// Admin-requested leader elections (ElectLeaders, KIP-460; Kafka 2.4.1's
// KafkaController.electLeaders → ReplicaLeaderElection(AdminClientTriggered) →
// processReplicaLeaderElection / onReplicaElection) and the unclean election that follows
// unclean.leader.election.enable being turned on dynamically (TopicUncleanLeaderElectionEnable,
// UncleanLeaderElectionEnable). Both run on the controller goroutine like every other event.
// docs/kafka-facts.md, "Leader elections requested by an admin (KIP-460)", lists the rules.

// ElectionError classifies one partition's ElectLeaders outcome; the broker maps it to the
// Kafka error code.
type ElectionError int8

const (
	ElectionOK                ElectionError = iota // elected: Leader is the expected leader
	ElectionNotNeeded                              // preferred already leads / a live leader exists (unclean)
	ElectionPreferredNotAvail                      // preferred replica not live or not in the ISR
	ElectionEligibleNotAvail                       // no live replica to elect (unclean)
	ElectionUnknownPartition                       // the controller knows no such partition
	ElectionTopicBeingDeleted                      // topic queued for deletion (INVALID_TOPIC_EXCEPTION)
)

// ElectionResult is one partition's ElectLeaders result.
type ElectionResult struct {
	Err    ElectionError
	Leader int32 // the elected leader when Err is ElectionOK
}

// electReq is an ElectLeaders event's payload; reply has room for the one answer.
type electReq struct {
	partitions []TopicPartition // nil: every partition the controller knows
	unclean    bool
	reply      chan electResult
}

type electResult struct {
	results map[TopicPartition]ElectionResult
	err     error
}

var errElectFailed = errors.New("zkcoord: controller failed while processing the leader election")

// ElectLeaders runs a preferred (unclean false) or unclean (KIP-460) election for
// partitions (nil: every partition) on the controller goroutine and returns each partition's
// result. The caller waits for the elected leaders to reach its metadata (Kafka's
// DelayedElectLeader). ErrNotController when this broker is not the active controller; ctx's
// error when ctx ends first.
func (ct *Controller) ElectLeaders(ctx context.Context, partitions []TopicPartition, unclean bool) (map[TopicPartition]ElectionResult, error) {
	req := &electReq{partitions: partitions, unclean: unclean, reply: make(chan electResult, 1)}
	preempt := func() { req.reply <- electResult{err: ErrNotController} }
	r, err := await(ctx, ct, event{kind: evElectLeaders, elect: req, preempt: preempt}, req.reply)
	if err != nil {
		return nil, err
	}
	return r.results, r.err
}

// EnableUncleanElection is the controller side of unclean.leader.election.enable turned on
// (topic "" : the broker default, every topic). Only the active controller acts; the
// election re-reads the config from ZooKeeper.
func (ct *Controller) EnableUncleanElection(topic string) {
	if ct.closed() || !ct.active.Load() {
		return
	}
	ct.enqueue(event{kind: evUncleanEnable, topic: topic})
}

// electionRequests runs the elections asked for from outside (ElectLeaders, KIP-460; a topic's
// unclean.leader.election.enable turned on, K6) on the controller's event goroutine.
type electionRequests struct{ ct *Controller }

// onElectLeaders runs on the controller goroutine and always answers, even when
// processing panics (handle's recover then resigns).
func (h electionRequests) onElectLeaders(req *electReq) {
	if req == nil {
		return
	}
	res := electResult{err: errElectFailed}
	defer func() { req.reply <- res }()
	if !h.ct.active.Load() {
		res.err = ErrNotController
		return
	}
	results, err := h.processElectLeaders(req.partitions, req.unclean)
	switch {
	case err == nil:
		res = electResult{results: results}
	case errors.Is(err, ErrControllerMoved):
		res.err = ErrNotController
		h.ct.handleErr(err)
	default:
		res.err = err
		h.ct.handleErr(err)
	}
}

// processElectLeaders is processReplicaLeaderElection + onReplicaElection for an
// AdminClientTriggered election. Unknown partitions → ElectionUnknownPartition; topics queued
// for deletion → ElectionTopicBeingDeleted; preferred: the preferred replica already leads →
// ElectionNotNeeded; unclean: the leader is live → ElectionNotNeeded. The others are elected
// (preferred strategy, or the offline strategy with unclean allowed whatever the topic's
// config) with the states re-read first; a partition whose election finds no candidate is
// ElectionPreferredNotAvail / ElectionEligibleNotAvail.
func (h electionRequests) processElectLeaders(partitions []TopicPartition, unclean bool) (map[TopicPartition]ElectionResult, error) {
	if partitions == nil {
		partitions = h.ct.ctx.partitions()
	}
	kind := "PREFERRED"
	if unclean {
		kind = "UNCLEAN"
	}
	h.ct.log.WithField("electionType", kind).WithField("partitions", len(partitions)).Info("replica leader election requested by an admin client")
	out := make(map[TopicPartition]ElectionResult, len(partitions))
	var electable []TopicPartition
	for _, tp := range partitions {
		if _, done := out[tp]; done {
			continue
		}
		if !h.ct.ctx.hasPartition(tp) {
			out[tp] = ElectionResult{Err: ElectionUnknownPartition}
			continue
		}
		if h.ct.deletion.isQueued(tp.Topic) {
			out[tp] = ElectionResult{Err: ElectionTopicBeingDeleted}
			continue
		}
		if err := h.ct.zk.loadState(tp); err != nil {
			return nil, err
		}
		st := h.ct.ctx.states[tp]
		leader := int32(noLeader)
		if st != nil {
			leader = st.leader
		}
		reps := h.ct.ctx.replicas(tp)
		if !unclean && len(reps) > 0 && leader == reps[0] || unclean && leader != noLeader && h.ct.ctx.isLive(leader) {
			out[tp] = ElectionResult{Err: ElectionNotNeeded}
			continue
		}
		out[tp] = ElectionResult{Err: ElectionOK} // placeholder until elected
		electable = append(electable, tp)
	}
	if len(electable) > 0 {
		b := h.ct.newBatch()
		var strategy electionFunc
		if unclean {
			strategy = func(tp TopicPartition, cur leaderIsr) (leaderIsr, bool, bool) {
				return offlineElection(h.ct.ctx.replicas(tp), cur, h.ct.ctx, func() bool { return true })
			}
		} else {
			strategy = func(tp TopicPartition, cur leaderIsr) (leaderIsr, bool, bool) {
				next, changed := preferredElection(h.ct.ctx.replicas(tp), cur, h.ct.ctx)
				return next, changed, false
			}
		}
		if err := h.ct.psm.elect(electable, b, strategy, h.ct.ctx.liveReplicas); err != nil {
			return nil, err
		}
		b.send()
	}
	for _, tp := range electable {
		st := h.ct.ctx.states[tp]
		reps := h.ct.ctx.replicas(tp)
		l := h.ct.log.WithField("topic", tp.Topic).WithField("partition", tp.Partition).WithField("electionType", kind)
		switch {
		case !unclean && st != nil && len(reps) > 0 && st.leader == reps[0]:
			out[tp] = ElectionResult{Leader: st.leader}
		case unclean && st != nil && h.ct.ctx.electable(st.leader):
			out[tp] = ElectionResult{Leader: st.leader}
		case unclean:
			out[tp] = ElectionResult{Err: ElectionEligibleNotAvail}
			l.Warn("leader election failed: no live replica is eligible")
		default:
			out[tp] = ElectionResult{Err: ElectionPreferredNotAvail}
			l.WithField("replicas", reps).Warn("leader election failed: the preferred replica is not live or not in the ISR")
		}
	}
	return out, nil
}

// processUncleanEnable is processTopicUncleanLeaderElectionEnable (topic != "") and
// processUncleanLeaderElectionEnable (topic == ""): the offline partitions (no live leader)
// of the topic, or of every topic, not queued for deletion, get the OfflinePartition
// election, whose uncleanAllowed re-reads the topic override and the dynamic broker configs
// from ZooKeeper (no cached value can be stale).
func (h electionRequests) processUncleanEnable(topic string) error {
	l := h.ct.log.WithField("topic", topic) // "": the broker default changed
	var offline []TopicPartition
	for _, tp := range h.ct.ctx.sortedStates() {
		if topic != "" && tp.Topic != topic || h.ct.deletion.isQueued(tp.Topic) {
			continue
		}
		if st := h.ct.ctx.states[tp]; h.ct.ctx.isLive(st.leader) {
			continue
		}
		if err := h.ct.zk.loadState(tp); err != nil {
			return err
		}
		if st := h.ct.ctx.states[tp]; st != nil && !h.ct.ctx.isLive(st.leader) {
			offline = append(offline, tp)
		}
	}
	l.WithField("offlinePartitions", len(offline)).Info("unclean leader election has been enabled")
	if len(offline) == 0 {
		return nil
	}
	b := h.ct.newBatch()
	if err := h.ct.psm.elect(offline, b, h.ct.psm.offlineStrategy, h.ct.ctx.liveReplicas); err != nil {
		return err
	}
	b.send()
	return nil
}

// dynamicUncleanDefault is this broker's dynamic unclean.leader.election.enable: its own
// /config/brokers/<id> entry, else the cluster default /config/brokers/<default>, else the
// static server.properties value (KIP-226 precedence).
func (z *controllerZk) dynamicUncleanDefault() bool {
	for _, name := range []string{strconv.Itoa(int(z.ct.cfg.BrokerID)), zkdata.DefaultBrokerEntity} {
		if v, ok := z.configBool(zkdata.BrokerEntityConfigPath(name)); ok {
			return v
		}
	}
	return z.ct.cfg.UncleanLeaderElection
}

// configBool reads unclean.leader.election.enable from the config znode at path.
func (z *controllerZk) configBool(path string) (bool, bool) {
	data, _, err := z.ct.conn.Get(path)
	if err != nil {
		return false, false
	}
	cfg, err := zkdata.DecodeConfig(data)
	if err != nil {
		return false, false
	}
	v, ok := cfg[configUnclean]
	if !ok {
		return false, false
	}
	bv, err := strconv.ParseBool(strings.TrimSpace(v))
	return bv, err == nil
}

const configUnclean = "unclean.leader.election.enable"
