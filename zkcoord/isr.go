package zkcoord

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
)

// UpdateLeaderAndIsr is the leader's own ISR write (K3, pre-2.7: the leader writes its ISR
// to ZooKeeper itself, ReplicationUtils.updateLeaderAndIsr): setData(state, json, zkVersion).
// The leader keeps its leader epoch and the controller epoch of the controller that elected
// it. On BADVERSION the node is re-read: if the stored leader/leader_epoch/isr/
// controller_epoch equal ours (a retried write after a connection loss) it is a success with
// the stored version; otherwise ErrBadVersion and the leader does not retry, it waits for a
// LeaderAndIsr with a fresh zkVersion. A success queues the partition for
// /isr_change_notification (K5).
func (c *Coordinator) UpdateLeaderAndIsr(topic string, partition int32, leader, leaderEpoch int32, isr []int32, controllerEpoch int32, zkVersion int32) (int32, error) {
	if !validTopicName(topic) {
		return 0, ErrUnknownTopic
	}
	path := partitionStatePath(topic, partition)
	data := encodeState(leader, leaderEpoch, isr, controllerEpoch)
	st, err := c.set(path, data, zkVersion)
	switch {
	case err != nil && !errors.Is(err, zk.ErrBadVersion) && !errors.Is(err, zk.ErrNoNode):
		// The connection was lost (or the session expired) and the retries ran out: the write
		// may have committed. The leader re-reads the state and reconciles.
		return 0, fmt.Errorf("%w: %v", ErrIsrWriteOutcomeUnknown, err)
	case err == nil:
		c.isr.record(TopicPartition{Topic: topic, Partition: partition})
		return st.Version, nil
	case errors.Is(err, zk.ErrBadVersion):
		cur, st, gerr := c.get(path)
		if gerr != nil {
			// A retried write may be the one that committed: the outcome is unknown.
			return 0, fmt.Errorf("%w: re-reading after BADVERSION: %v", ErrIsrWriteOutcomeUnknown, gerr)
		}
		ps, derr := decodeState(cur)
		if derr == nil && ps.Leader == leader && ps.LeaderEpoch == leaderEpoch &&
			ps.ControllerEpoch == controllerEpoch && slices.Equal(ps.ISR, isr) {
			c.isr.record(TopicPartition{Topic: topic, Partition: partition})
			return st.Version, nil
		}
		c.log.WithField("topic", topic).WithField("partition", partition).WithField("leaderEpoch", leaderEpoch).
			WithField("zkVersion", zkVersion).WithField("storedZkVersion", st.Version).
			Info("cached zkVersion not equal to that in ZooKeeper, skip updating ISR")
		return 0, ErrBadVersion
	default: // zk.ErrNoNode
		return 0, ErrUnknownTopic
	}
}

// ErrIsrWriteOutcomeUnknown is wrapped by UpdateLeaderAndIsr's error when it gave up without
// knowing whether the write committed. It has an OutcomeUnknown method (true), by which the
// replica manager recognises it without importing this package.
var ErrIsrWriteOutcomeUnknown error = outcomeUnknownError{}

type outcomeUnknownError struct{}

func (outcomeUnknownError) Error() string {
	return "zkcoord: ISR write outcome unknown (connection lost before the answer)"
}

// OutcomeUnknown marks the error for replicamanager.IsOutcomeUnknown.
func (outcomeUnknownError) OutcomeUnknown() bool { return true }

// ReadLeaderAndIsr reads a partition's state znode for a leader that reconciles after an ISR
// write with an unknown outcome (replicamanager.IsrWriter).
func (c *Coordinator) ReadLeaderAndIsr(topic string, partition int32) (leader, leaderEpoch int32, isr []int32, zkVersion int32, err error) {
	ps, err := c.PartitionState(topic, partition)
	if err != nil {
		return 0, 0, nil, 0, err
	}
	return ps.Leader, ps.LeaderEpoch, ps.ISR, ps.ZkVersion, nil
}

// isrPropagator batches leader-side ISR changes into one /isr_change_notification znode
// (K5; Kafka's ReplicaManager.maybePropagateIsrChanges, KAFKA-2722): every interval, if
// changes are pending and either none arrived for the black-out time or the last
// propagation is older than the max delay.
type isrPropagator struct {
	c           *Coordinator
	mu          sync.Mutex
	pending     map[TopicPartition]struct{}
	lastChange  time.Time
	lastPropgtn time.Time
}

func newIsrPropagator(c *Coordinator) *isrPropagator {
	return &isrPropagator{c: c, pending: map[TopicPartition]struct{}{}, lastPropgtn: time.Now()}
}

func (p *isrPropagator) record(tp TopicPartition) {
	if p == nil {
		return
	}
	p.mu.Lock()
	p.pending[tp] = struct{}{}
	p.lastChange = time.Now()
	p.mu.Unlock()
}

func (p *isrPropagator) run() {
	defer p.c.wg.Done()
	t := time.NewTicker(p.c.cfg.IsrChangePropagationInterval)
	defer t.Stop()
	for {
		select {
		case <-p.c.done:
			return
		case <-t.C:
			p.maybePropagate(time.Now())
		}
	}
}

func (p *isrPropagator) maybePropagate(now time.Time) {
	p.mu.Lock()
	if len(p.pending) == 0 ||
		!(now.Sub(p.lastChange) >= p.c.cfg.IsrChangePropagationBlackOut || now.Sub(p.lastPropgtn) >= p.c.cfg.IsrChangeMaxDelay) {
		p.mu.Unlock()
		return
	}
	tps := make([]TopicPartition, 0, len(p.pending))
	for tp := range p.pending {
		tps = append(tps, tp)
	}
	p.pending = map[TopicPartition]struct{}{}
	p.lastPropgtn = now
	p.mu.Unlock()
	sort.Slice(tps, func(i, j int) bool {
		if tps[i].Topic != tps[j].Topic {
			return tps[i].Topic < tps[j].Topic
		}
		return tps[i].Partition < tps[j].Partition
	})
	if _, err := p.c.create(pathIsrChange+"/"+isrChangePrefix, encodeIsrChange(tps), zk.FlagSequence); err != nil {
		p.c.log.WithError(err).Warn("failed to write ISR change notification; will retry")
		p.mu.Lock()
		for _, tp := range tps {
			p.pending[tp] = struct{}{}
		}
		p.mu.Unlock()
	}
}
