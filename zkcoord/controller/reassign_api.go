package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/go-zookeeper/zk"

	"github.com/isrbroker/isrbroker/zkcoord/internal/sorted"
	"github.com/isrbroker/isrbroker/zkcoord/zkdata"
)

// KIP-455's protocol side of reassignments (Kafka 2.4's processApiPartitionReassignment and
// processListPartitionReassignments) and the failover resumption of reassignments
// (initializePartitionReassignments). The requests run on the controller goroutine.

// Per-partition outcomes of AlterPartitionReassignments; the broker maps them to Kafka's
// error codes.
var (
	ErrNoReassignmentInProgress = errors.New("zkcoord: no partition reassignment is in progress")
	ErrInvalidReassignment      = errors.New("zkcoord: invalid replica assignment")
	ErrUnknownPartition         = errors.New("zkcoord: the partition does not exist")
	errReassignFailed           = errors.New("zkcoord: controller failed while processing the reassignment")
)

// OngoingReassignment is one partition being reassigned, as ListPartitionReassignments
// answers it: RS, AR and RR.
type OngoingReassignment struct {
	Replicas, Adding, Removing []int32
}

// runAPI runs f on the controller goroutine and waits for it (or ctx, or the controller's
// end). f is not run when the controller is not active (ErrNotController).
func (ct *Controller) runAPI(ctx context.Context, f func() error) error {
	reply := make(chan error, 1)
	ev := event{kind: evReassignAPI, call: func() {
		err := errReassignFailed
		defer func() { reply <- err }()
		if !ct.active.Load() {
			err = ErrNotController
			return
		}
		err = f()
	}, preempt: func() { reply <- ErrNotController }}
	callErr, err := await(ctx, ct, ev, reply)
	if err != nil {
		return err
	}
	return callErr
}

// AlterPartitionReassignments starts, replaces or (a nil target) cancels the reassignment of
// each partition (Kafka 2.4's processApiPartitionReassignment). The result holds one entry per
// partition: nil, ErrInvalidReassignment (empty, duplicate or negative replicas, or an adding
// replica that is not a live broker), ErrNoReassignmentInProgress (cancel of a partition not
// being reassigned), ErrUnknownPartition, or the ZooKeeper failure that stopped processing.
// The error is ErrNotController, or the context's.
func (ct *Controller) AlterPartitionReassignments(ctx context.Context, targets map[TopicPartition][]int32) (map[TopicPartition]error, error) {
	var out map[TopicPartition]error
	err := ct.runAPI(ctx, func() error {
		out = ct.reassign.alter(targets)
		return nil
	})
	return out, err
}

// ListPartitionReassignments answers the partitions of tps (every partition when tps is nil)
// that are being reassigned.
func (ct *Controller) ListPartitionReassignments(ctx context.Context, tps []TopicPartition) (map[TopicPartition]OngoingReassignment, error) {
	out := map[TopicPartition]OngoingReassignment{}
	err := ct.runAPI(ctx, func() error {
		r := ct.reassign
		if tps == nil {
			tps = sorted.TPKeys(r.inProgress)
		}
		for _, tp := range tps {
			if !r.isReassigning(tp) {
				continue
			}
			if a := r.current(tp); a.being() {
				out[tp] = OngoingReassignment{Replicas: a.replicas, Adding: a.adding, Removing: a.removing}
			}
		}
		return nil
	})
	return out, err
}

// alter is processApiPartitionReassignment on the controller goroutine.
func (r *reassigner) alter(targets map[TopicPartition][]int32) map[TopicPartition]error {
	ct := r.ct
	out := make(map[TopicPartition]error, len(targets))
	todo := map[TopicPartition]assignment{}
	for tp, target := range targets {
		cur := r.current(tp)
		switch {
		case target != nil && !r.replicasValid(cur, target):
			out[tp] = ErrInvalidReassignment
		case target == nil && !cur.being():
			out[tp] = ErrNoReassignmentInProgress
		case target == nil:
			todo[tp] = cur.reassignTo(cur.origin())
		default:
			todo[tp] = cur.reassignTo(target)
		}
	}
	// The latest reassignment wins: the partitions leave /admin/reassign_partitions.
	if len(todo) > 0 {
		if err := r.removeFromZNode(func(tp TopicPartition, _ []int32) bool { _, ok := todo[tp]; return ok }); err != nil {
			return r.failAll(out, todo, err)
		}
	}
	for _, tp := range sorted.TPKeys(todo) {
		a := todo[tp]
		if !ct.ctx.hasPartition(tp) || ct.ctx.states[tp] == nil || ct.deletion.isQueued(tp.Topic) {
			out[tp] = ErrUnknownPartition
			delete(todo, tp)
			continue
		}
		cancel := targets[tp] == nil
		ct.log.WithField("topic", tp.Topic).WithField("partition", tp.Partition).WithField("current", ct.ctx.replicas(tp)).
			WithField("target", a.target()).WithField("cancel", cancel).Info("partition reassignment requested (AlterPartitionReassignments)")
		if err := r.onPartitionReassignment(tp, a); err != nil {
			return r.failAll(out, todo, err)
		}
		out[tp] = nil
		delete(todo, tp)
	}
	return out
}

// failAll answers err for every partition not processed yet and hands err to the
// controller's error handling (a moved controller resigns).
func (r *reassigner) failAll(out map[TopicPartition]error, todo map[TopicPartition]assignment, err error) map[TopicPartition]error {
	for tp := range todo {
		out[tp] = err
	}
	r.ct.handleErr(err)
	return out
}

// replicasValid is Kafka's replicasAreValid: a non-empty list without duplicates or negative
// ids whose adding replicas are live brokers.
func (r *reassigner) replicasValid(cur assignment, target []int32) bool {
	if len(target) == 0 {
		return false
	}
	seen := map[int32]bool{}
	for _, id := range target {
		if id < 0 || seen[id] {
			return false
		}
		seen[id] = true
	}
	for _, id := range cur.reassignTo(target).adding {
		if !r.ct.ctx.isLive(id) {
			return false
		}
	}
	return true
}

// onFailover is Kafka's initializePartitionReassignments: the reassignments recorded in the
// topic znodes (adding/removing replicas) are loaded, /admin/reassign_partitions is processed
// (it supplants those of the partitions it lists), and the others are resumed.
func (r *reassigner) onFailover() error {
	if err := r.loadFromTopics(); err != nil {
		return err
	}
	started, err := r.process()
	if err != nil {
		return err
	}
	for _, tp := range sorted.TPKeys(r.inProgress) {
		if started[tp] || !r.isReassigning(tp) {
			continue
		}
		a := r.current(tp)
		r.ct.log.WithField("topic", tp.Topic).WithField("partition", tp.Partition).WithField("replicas", a.replicas).
			WithField("adding", a.adding).WithField("removing", a.removing).Info("resuming partition reassignment")
		if err := r.onPartitionReassignment(tp, a); err != nil {
			return err
		}
	}
	return nil
}

// loadFromTopics reads every topic znode's adding/removing replicas into inProgress.
func (r *reassigner) loadFromTopics() error {
	ct := r.ct
	for _, topic := range sorted.Keys(ct.ctx.assignments) {
		data, _, err := ct.conn.Get(zkdata.TopicPath(topic))
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return err
		}
		full, err := zkdata.DecodeTopicFull(topic, data)
		if err != nil {
			continue // logged when the topic was loaded
		}
		for p, a := range full {
			tp := TopicPartition{Topic: topic, Partition: p}
			if len(a.Adding) == 0 && len(a.Removing) == 0 || ct.deletion.isQueued(topic) {
				continue
			}
			if !slices.Equal(ct.ctx.replicas(tp), a.Replicas) {
				ct.log.WithField("topic", topic).WithField("partition", p).Warn(fmt.Sprintf(
					"topic znode changed while loading: replicas %v, adding %v, removing %v", a.Replicas, a.Adding, a.Removing))
				continue
			}
			r.inProgress[tp] = &reassignCtx{adding: slices.Clone(a.Adding), removing: slices.Clone(a.Removing)}
		}
	}
	return nil
}
