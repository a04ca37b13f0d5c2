package zkcoord

import (
	"errors"
	"fmt"
	"github.com/isrbroker/isrbroker/zkcoord/zkdata"
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
	if !zkdata.ValidTopicName(topic) {
		return 0, ErrUnknownTopic
	}
	path := zkdata.PartitionStatePath(topic, partition)
	data := zkdata.EncodeState(leader, leaderEpoch, isr, controllerEpoch)
	st, err := c.set(path, data, zkVersion)
	switch {
	case err == nil:
		c.isr.record(TopicPartition{Topic: topic, Partition: partition})
		return st.Version, nil
	case errors.Is(err, zk.ErrBadVersion):
		cur, st, gerr := c.get(path)
		if gerr != nil {
			return 0, fmt.Errorf("%w: %v", ErrBadVersion, gerr)
		}
		ps, derr := zkdata.DecodeState(cur)
		if derr == nil && ps.Leader == leader && ps.LeaderEpoch == leaderEpoch &&
			ps.ControllerEpoch == controllerEpoch && slices.Equal(ps.ISR, isr) {
			c.isr.record(TopicPartition{Topic: topic, Partition: partition})
			return st.Version, nil
		}
		c.log.WithField("topic", topic).WithField("partition", partition).WithField("leaderEpoch", leaderEpoch).
			WithField("zkVersion", zkVersion).WithField("storedZkVersion", st.Version).
			Info("cached zkVersion not equal to that in ZooKeeper, skip updating ISR")
		return 0, ErrBadVersion
	case errors.Is(err, zk.ErrNoNode):
		return 0, ErrUnknownTopic
	default:
		return 0, err
	}
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
	if _, err := p.c.create(zkdata.PathIsrChange+"/"+zkdata.IsrChangePrefix, zkdata.EncodeIsrChange(tps), zk.FlagSequence); err != nil {
		p.c.log.WithError(err).Warn("failed to write ISR change notification; will retry")
		p.mu.Lock()
		for _, tp := range tps {
			p.pending[tp] = struct{}{}
		}
		p.mu.Unlock()
	}
}
