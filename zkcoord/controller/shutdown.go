package controller

import (
	"context"
	"errors"
	"slices"

	"github.com/isrbroker/isrbroker/zkcoord/internal/sorted"
)

// Controlled shutdown (K7; Kafka's KafkaController.doControlledShutdown). A broker about to stop sends ControlledShutdown
// (API key 7) to the controller, which moves the leaderships the broker holds to other ISR
// members and takes it out of the ISRs it follows in, so clients see a leader change
// instead of a dead leader. The request is served on the controller goroutine like every
// other controller event; the broker's handler waits for the result.

// Errors of ControlledShutdown; the broker maps them to NOT_CONTROLLER,
// STALE_BROKER_EPOCH and BROKER_NOT_AVAILABLE.
var (
	ErrNotController      = errors.New("zkcoord: this broker is not the active controller")
	ErrStaleBrokerEpoch   = errors.New("zkcoord: broker epoch is older than the registered one")
	ErrBrokerNotAvailable = errors.New("zkcoord: broker is not registered as live")
	errShutdownFailed     = errors.New("zkcoord: controller failed while processing the controlled shutdown")
)

// shutdownReq is a ControlledShutdown event's payload; reply has room for the one answer.
type shutdownReq struct {
	brokerID    int32
	brokerEpoch int64
	reply       chan shutdownResult
}

type shutdownResult struct {
	remaining []TopicPartition
	err       error
}

// ControlledShutdown asks this broker's controller to prepare brokerID's shutdown (K7): it
// is marked shutting down (excluded from later elections until its registration goes
// away), every replicated partition it leads gets a ControlledShutdown election, and it
// leaves the ISR of every partition it follows (StopReplica(delete=false) to it). The
// answer lists the partitions it still leads: those without another live ISR member.
// brokerEpoch -1 (ControlledShutdown v0/v1) skips the epoch check.
//
// Errors: ErrNotController when this broker is not the active controller,
// ErrBrokerNotAvailable for a broker that is not live, ErrStaleBrokerEpoch when
// brokerEpoch is older than its registration, ctx's error when ctx ends first.
func (ct *Controller) ControlledShutdown(ctx context.Context, brokerID int32, brokerEpoch int64) ([]TopicPartition, error) {
	req := &shutdownReq{brokerID: brokerID, brokerEpoch: brokerEpoch, reply: make(chan shutdownResult, 1)}
	preempt := func() { req.reply <- shutdownResult{err: ErrNotController} }
	r, err := await(ctx, ct, event{kind: evControlledShutdown, shutdown: req, preempt: preempt}, req.reply)
	if err != nil {
		return nil, err
	}
	return r.remaining, r.err
}

// shutdownHandler is the controller side of controlled shutdown.
type shutdownHandler struct{ ct *Controller }

// onRequest runs on the controller goroutine. It always answers the waiting
// handler, even when processing panics (handle's recover then resigns).
func (h shutdownHandler) onRequest(req *shutdownReq) {
	ct := h.ct
	if req == nil {
		return
	}
	res := shutdownResult{err: errShutdownFailed}
	defer func() { req.reply <- res }()
	if !ct.active.Load() {
		res.err = ErrNotController
		return
	}
	remaining, err := h.process(req.brokerID, req.brokerEpoch)
	switch {
	case err == nil, errors.Is(err, ErrBrokerNotAvailable), errors.Is(err, ErrStaleBrokerEpoch):
		res = shutdownResult{remaining: remaining, err: err}
	case errors.Is(err, ErrControllerMoved):
		res.err = ErrNotController
		ct.handleErr(err)
	default:
		res.err = err
		ct.handleErr(err)
	}
}

// process is KafkaController.doControlledShutdown.
func (h shutdownHandler) process(id int32, brokerEpoch int64) ([]TopicPartition, error) {
	ct := h.ct
	l := ct.log.WithField("shuttingDownBroker", id)
	bi, ok := ct.ctx.live[id]
	if !ok {
		l.Warn("controlled shutdown requested by a broker that is not live")
		return nil, ErrBrokerNotAvailable
	}
	// KIP-380: -1 (v0/v1 requests) is accepted; an older epoch is a previous incarnation.
	if brokerEpoch != -1 && brokerEpoch < bi.Epoch {
		l.WithField("brokerEpoch", brokerEpoch).WithField("currentBrokerEpoch", bi.Epoch).Warn("controlled shutdown with a stale broker epoch")
		return nil, ErrStaleBrokerEpoch
	}
	ct.ctx.shuttingDown[id] = true
	l.WithField("shuttingDownBrokers", sorted.Keys(ct.ctx.shuttingDown)).Info("controlled shutdown requested")

	// Only replicated partitions are acted on: an RF=1 partition has nowhere to go.
	var led, followed []TopicPartition
	for _, tp := range ct.ctx.sortedStates() {
		reps := ct.ctx.replicas(tp)
		if len(reps) <= 1 || !slices.Contains(reps, id) {
			continue
		}
		if ct.ctx.states[tp].leader == id {
			led = append(led, tp)
		} else {
			followed = append(followed, tp)
		}
	}
	b := ct.newBatch()
	// Led partitions: ControlledShutdown election; the LeaderAndIsr goes to every live
	// replica, the shutting-down broker included (it becomes a follower of the new leader).
	elect := func(tp TopicPartition, cur leaderIsr) (leaderIsr, bool, bool) {
		next, changed := controlledShutdownElection(ct.ctx.replicas(tp), cur, ct.ctx, func(r int32) bool { return ct.ctx.shuttingDown[r] })
		return next, changed, false
	}
	if err := ct.psm.elect(led, b, elect, ct.ctx.liveReplicas); err != nil {
		return nil, err
	}
	// Followed partitions: the replica goes OfflineReplica: StopReplica(delete=false) to it,
	// and it leaves the ISR with the leader epoch bumped (LeaderAndIsr to the other replicas).
	var offline []partitionReplica
	for _, tp := range followed {
		offline = append(offline, partitionReplica{tp, id})
	}
	if err := ct.rsm.handleStateChanges(offline, OfflineReplica, b); err != nil {
		return nil, err
	}
	b.send()

	var remaining []TopicPartition
	for _, tp := range ct.ctx.sortedStates() {
		if ct.ctx.states[tp].leader == id && len(ct.ctx.replicas(tp)) > 1 {
			remaining = append(remaining, tp)
		}
	}
	l.WithField("moved", len(led)-len(remaining)).WithField("remaining", len(remaining)).
		WithField("followed", len(followed)).Info("controlled shutdown processed")
	return remaining, nil
}
