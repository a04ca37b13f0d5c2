package agent

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/isrbroker/isrbroker/zkcoord/internal/sorted"
	"github.com/isrbroker/isrbroker/zkcoord/zkclient"
	"github.com/isrbroker/isrbroker/zkcoord/zkdata"
	"github.com/sirupsen/logrus"
)

// ErrBadVersion: the partition state's zkVersion does not match the leader's cached one.
var ErrBadVersion = errors.New("zkcoord: partition state zkVersion does not match")

// IsrConfig tunes the leader-side /isr_change_notification batching (K5; Kafka's 2500 ms /
// 5000 ms / 60000 ms constants are the defaults).
type IsrConfig struct {
	PropagationInterval time.Duration
	PropagationBlackOut time.Duration
	MaxDelay            time.Duration
	Log                 logrus.FieldLogger
}

// IsrWriter is the partition leader's own ISR write (K3) and the propagation of its changes
// to the controller through /isr_change_notification (K5; Kafka's
// ReplicaManager.maybePropagateIsrChanges, KAFKA-2722). It owns the pending changes.
type IsrWriter struct {
	conn zkclient.Conn
	cfg  IsrConfig
	log  logrus.FieldLogger

	mu          sync.Mutex
	pending     map[zkdata.TopicPartition]struct{}
	lastChange  time.Time
	lastPropgtn time.Time
}

// NewIsrWriter returns a writer for conn; Run propagates the changes.
func NewIsrWriter(conn zkclient.Conn, cfg IsrConfig) *IsrWriter {
	if cfg.PropagationInterval <= 0 {
		cfg.PropagationInterval = 2500 * time.Millisecond
	}
	if cfg.PropagationBlackOut <= 0 {
		cfg.PropagationBlackOut = 5000 * time.Millisecond
	}
	if cfg.MaxDelay <= 0 {
		cfg.MaxDelay = 60000 * time.Millisecond
	}
	return &IsrWriter{conn: conn, cfg: cfg, log: cfg.Log, pending: map[zkdata.TopicPartition]struct{}{}, lastPropgtn: time.Now()}
}

// UpdateLeaderAndIsr is the leader's own ISR write (K3, pre-2.7: the leader writes its ISR
// to ZooKeeper itself, ReplicationUtils.updateLeaderAndIsr): setData(state, json, zkVersion).
// The leader keeps its leader epoch and the controller epoch of the controller that elected
// it. On BADVERSION the node is re-read: if the stored leader/leader_epoch/isr/
// controller_epoch equal ours (a retried write after a connection loss) it is a success with
// the stored version; otherwise ErrBadVersion and the leader does not retry, it waits for a
// LeaderAndIsr with a fresh zkVersion. A success queues the partition for
// /isr_change_notification (K5).
func (w *IsrWriter) UpdateLeaderAndIsr(topic string, partition int32, leader, leaderEpoch int32, isr []int32, controllerEpoch int32, zkVersion int32) (int32, error) {
	if !zkdata.ValidTopicName(topic) {
		return 0, zkdata.ErrUnknownTopic
	}
	path := zkdata.PartitionStatePath(topic, partition)
	data := zkdata.EncodeState(leader, leaderEpoch, isr, controllerEpoch)
	st, err := w.conn.Set(path, data, zkVersion)
	switch {
	case err != nil && !errors.Is(err, zk.ErrBadVersion) && !errors.Is(err, zk.ErrNoNode):
		// The connection was lost (or the session expired) and the retries ran out: the write
		// may have committed. The leader re-reads the state and reconciles.
		return 0, fmt.Errorf("%w: %v", ErrIsrWriteOutcomeUnknown, err)
	case err == nil:
		w.record(zkdata.TopicPartition{Topic: topic, Partition: partition})
		return st.Version, nil
	case errors.Is(err, zk.ErrBadVersion):
		cur, st, gerr := w.conn.Get(path)
		if gerr != nil {
			// A retried write may be the one that committed: the outcome is unknown.
			return 0, fmt.Errorf("%w: re-reading after BADVERSION: %v", ErrIsrWriteOutcomeUnknown, gerr)
		}
		ps, derr := zkdata.DecodeState(cur)
		if derr == nil && ps.Leader == leader && ps.LeaderEpoch == leaderEpoch &&
			ps.ControllerEpoch == controllerEpoch && slices.Equal(ps.ISR, isr) {
			w.record(zkdata.TopicPartition{Topic: topic, Partition: partition})
			return st.Version, nil
		}
		w.log.WithField("topic", topic).WithField("partition", partition).WithField("leaderEpoch", leaderEpoch).
			WithField("zkVersion", zkVersion).WithField("storedZkVersion", st.Version).
			Info("cached zkVersion not equal to that in ZooKeeper, skip updating ISR")
		return 0, ErrBadVersion
	default: // zk.ErrNoNode
		return 0, zkdata.ErrUnknownTopic
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
func (w *IsrWriter) ReadLeaderAndIsr(topic string, partition int32) (leader, leaderEpoch int32, isr []int32, zkVersion int32, err error) {
	if !zkdata.ValidTopicName(topic) {
		return 0, 0, nil, 0, zkdata.ErrUnknownTopic
	}
	data, st, err := w.conn.Get(zkdata.PartitionStatePath(topic, partition))
	if errors.Is(err, zk.ErrNoNode) {
		return 0, 0, nil, 0, zkdata.ErrUnknownTopic
	}
	if err != nil {
		return 0, 0, nil, 0, err
	}
	ps, err := zkdata.DecodeState(data)
	if err != nil {
		return 0, 0, nil, 0, err
	}
	return ps.Leader, ps.LeaderEpoch, ps.ISR, st.Version, nil
}

func (w *IsrWriter) record(tp zkdata.TopicPartition) {
	w.mu.Lock()
	w.pending[tp] = struct{}{}
	w.lastChange = time.Now()
	w.mu.Unlock()
}

// PendingLen returns the number of partitions waiting for propagation.
func (w *IsrWriter) PendingLen() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.pending)
}

// Run propagates the pending changes every PropagationInterval until done is closed.
func (w *IsrWriter) Run(done <-chan struct{}) {
	t := time.NewTicker(w.cfg.PropagationInterval)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-t.C:
			w.maybePropagate(time.Now())
		}
	}
}

// maybePropagate writes one notification when changes are pending and either none arrived
// for the black-out time or the last propagation is older than the max delay.
func (w *IsrWriter) maybePropagate(now time.Time) {
	w.mu.Lock()
	if len(w.pending) == 0 ||
		!(now.Sub(w.lastChange) >= w.cfg.PropagationBlackOut || now.Sub(w.lastPropgtn) >= w.cfg.MaxDelay) {
		w.mu.Unlock()
		return
	}
	tps := sorted.TPKeys(w.pending)
	w.pending = map[zkdata.TopicPartition]struct{}{}
	w.lastPropgtn = now
	w.mu.Unlock()
	if _, err := w.conn.Create(zkdata.IsrChangeSequential, zkdata.EncodeIsrChange(tps), zk.FlagSequence); err != nil {
		w.log.WithError(err).Warn("failed to write ISR change notification; will retry")
		w.mu.Lock()
		for _, tp := range tps {
			w.pending[tp] = struct{}{}
		}
		w.mu.Unlock()
	}
}
