package fetcher

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sirupsen/logrus"
)

// fetcherThread is one "ReplicaFetcherThread-<fetcherId>-<leaderId>" goroutine (S17).
type fetcherThread struct {
	name      string
	fetcherID int
	source    BrokerEndPoint
	cfg       Config
	local     Local
	leader    Leader
	log       logrus.FieldLogger
	mgr       *Manager

	// partitionStates is the partition table; its mu is held while calling Local (see package
	// doc). The truncation phase (thread_truncate.go), the fetch phase (thread_fetch.go) and
	// OFFSET_OUT_OF_RANGE handling (thread_outofrange.go) work on it.
	partitionStates
	metricName string        // the PartitionCount gauge's name
	session    *fetchSession // the incremental fetch session with the leader (KIP-227, fetch_session.go)
	warnKey    string        // names this fetcher for the rate limit of its warnings (ratelog.go)

	wake   chan struct{}
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}
}

func newFetcherThread(m *Manager, fetcherID int, source BrokerEndPoint, leader Leader) *fetcherThread {
	ctx, cancel := context.WithCancel(context.Background())
	name := FetcherThreadName(fetcherID, source.ID)
	return &fetcherThread{
		name:      name,
		fetcherID: fetcherID,
		source:    source,
		cfg:       m.cfg,
		local:     m.local,
		leader:    leader,
		log:       m.cfg.Log.WithFields(logrus.Fields{"fetcherId": fetcherID, "leader": source.ID, "brokerId": m.cfg.BrokerID}),
		mgr:       m,
		wake:      make(chan struct{}, 1),
		ctx:       ctx,
		cancel:    cancel,
		done:      make(chan struct{}),

		partitionStates: newPartitionStates(),
		session:         newFetchSession(),
		metricName:      MetricPartitionCount(fetcherID, source.ID),
		warnKey:         fmt.Sprint(m.cfg.BrokerID, "/", name),
	}
}

// start registers the PartitionCount gauge (replacing a stale one of the same name) and starts
// the goroutine.
func (t *fetcherThread) start() {
	t.cfg.Registry.Unregister(t.metricName)
	_ = t.cfg.Registry.Register(t.metricName, t.partitionCountGauge)
	go t.run()
}

// shutdown stops the goroutine, waits for it, closes the leader connection and unregisters the
// PartitionCount gauge (idle fetchers disappear from the metrics, S23).
func (t *fetcherThread) shutdown() {
	t.cancel()
	<-t.done
	_ = t.leader.Close()
	if t.cfg.Registry.Get(t.metricName) == t.partitionCountGauge {
		t.cfg.Registry.Unregister(t.metricName)
	}
	t.log.Info("fetcher shut down")
}

func (t *fetcherThread) signal() {
	select {
	case t.wake <- struct{}{}:
	default:
	}
}

func (t *fetcherThread) plog(tp TopicPartition, s *partitionState) logrus.FieldLogger {
	l := t.log.WithFields(logrus.Fields{"topic": tp.Topic, "partition": tp.Partition})
	if s != nil {
		l = l.WithField("leaderEpoch", s.leaderEpoch)
	}
	return l
}

// addPartitions implements AbstractFetcherThread.addPartitions: a partition already present at
// the same leader epoch keeps its state; otherwise it starts Truncating at InitOffset.
func (t *fetcherThread) addPartitions(parts map[TopicPartition]InitialFetchState) {
	t.mu.Lock()
	for tp, init := range parts {
		if s, ok := t.parts[tp]; ok {
			if s.leaderEpoch == init.CurrentLeaderEpoch {
				continue
			}
		} else {
			t.order = append(t.order, tp)
		}
		t.parts[tp] = &partitionState{fetchOffset: init.InitOffset, leaderEpoch: init.CurrentLeaderEpoch, phase: phaseTruncating}
		t.plog(tp, t.parts[tp]).WithField("initOffset", init.InitOffset).Info("added partition, truncating")
	}
	t.countChangedLocked()
	t.mu.Unlock()
	t.signal()
}

// restore adds partitions with their states as they were (moving them from a replaced fetcher).
func (t *fetcherThread) restore(states map[TopicPartition]partitionState) {
	t.mu.Lock()
	for tp, s := range states {
		if _, ok := t.parts[tp]; ok {
			continue
		}
		s := s
		t.parts[tp] = &s
		t.order = append(t.order, tp)
	}
	t.countChangedLocked()
	t.mu.Unlock()
	t.signal()
}

// removePartitions removes partitions (S22). It waits for any in-progress truncation or append,
// so nothing more is written to their logs once it returns (S14.3).
func (t *fetcherThread) removePartitions(parts []TopicPartition) {
	t.mu.Lock()
	for _, tp := range parts {
		t.deleteLocked(tp)
	}
	t.mu.Unlock()
	t.signal()
}

// delayLocked backs a partition off for replica.fetch.backoff.ms (S17).
func (t *fetcherThread) delayLocked(s *partitionState) {
	s.delayUntil = time.Now().Add(t.cfg.FetchBackoff)
}

// failLocked marks a partition failed until it is added again (FENCED_LEADER_EPOCH: our epoch
// is older than the leader's; wait for the LeaderAndIsr that carries the new one).
func (t *fetcherThread) failLocked(tp TopicPartition, s *partitionState, why string) {
	t.plog(tp, s).WithField("reason", why).Warn("partition failed; awaiting a new LeaderAndIsr before fetching again")
	t.deleteLocked(tp)
	t.mgr.markFailed(tp)
}

// localErrorLocked handles an error of the Local side: not a follower any more → back off
// (the next LeaderAndIsr removes or re-adds the partition); anything else → log and back off.
func (t *fetcherThread) localErrorLocked(tp TopicPartition, s *partitionState, op string, err error) {
	l := t.plog(tp, s).WithError(err).WithField("op", op)
	if errors.Is(err, ErrNotFollower) {
		l.Debug("partition is no longer a follower at this epoch; backing off")
	} else {
		l.Error("local replica error; backing off")
	}
	t.delayLocked(s)
}

// run is doWork in a loop: maybeTruncate, then maybeFetch; when nothing was ready, wait for the
// backoff, an earlier end of a partition's delay, or an Add/Remove (S17).
func (t *fetcherThread) run() {
	defer close(t.done)
	t.log.Info("fetcher started")
	for t.ctx.Err() == nil {
		truncated := t.maybeTruncate()
		fetched := t.maybeFetch()
		if !truncated && !fetched {
			t.idle()
		}
	}
}

func (t *fetcherThread) idle() {
	wait := t.cfg.FetchBackoff
	now := time.Now()
	t.mu.Lock()
	for _, s := range t.parts {
		if d := s.delayUntil.Sub(now); d > 0 && d < wait {
			wait = d
		}
	}
	t.mu.Unlock()
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-t.ctx.Done():
	case <-t.wake:
	case <-timer.C:
	}
}
