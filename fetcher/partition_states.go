package fetcher

import (
	"sync"
	"time"

	"github.com/rcrowley/go-metrics"
)

// This file holds a fetcher's partition table: each partition's fetch state (Truncating →
// Fetching, fetch offset, leader epoch, backoff, lag) in fetch order.

// fetchPhase is a partition's state inside a fetcher (Kafka's PartitionFetchState.state).
type fetchPhase int8

const (
	phaseTruncating fetchPhase = iota // waiting for epoch truncation (K1) before fetching
	phaseFetching
)

func (p fetchPhase) String() string {
	if p == phaseTruncating {
		return "Truncating"
	}
	return "Fetching"
}

// partitionState is one partition's fetch state.
type partitionState struct {
	fetchOffset int64 // next offset to fetch; equals the local LEO while Fetching
	leaderEpoch int32 // current leader epoch from LeaderAndIsr (sent as current_leader_epoch)
	phase       fetchPhase
	delayUntil  time.Time // backoff after an error (S17): not fetched/truncated before
	lag         int64     // leader HW − fetch offset after the last fetch, in messages
}

func (s *partitionState) ready(now time.Time) bool { return !now.Before(s.delayUntil) }

// PartitionFetchState is an observable snapshot of one partition's fetch state.
type PartitionFetchState struct {
	FetchOffset int64
	LeaderEpoch int32
	Truncating  bool
	Delayed     bool
	Lag         int64
}

// sentState remembers what a request was built from, to drop replies to a state that changed.
type sentState struct {
	fetchOffset int64
	leaderEpoch int32
	askedEpoch  int32 // OffsetForLeaderEpoch: the local latest epoch asked about
}

// partitionStates is a fetcher's partition table (Kafka's PartitionStates inside
// AbstractFetcherThread): each partition's fetch state, in fetch order. Its mu is the fetcher's
// partition-state lock of the package doc, held while the fetcher calls Local; the fetcher
// thread embeds it.
type partitionStates struct {
	mu    sync.Mutex // guards parts and order; held while calling Local (see package doc)
	parts map[TopicPartition]*partitionState
	order []TopicPartition // fetch order; partitions that got data move to the end

	// partitionCountGauge is the FetcherStats PartitionCount gauge (MetricPartitionCount). It is
	// a plain gauge set under mu whenever parts changes, so rendering the registry never waits
	// for a fetcher busy inside Local.
	partitionCountGauge metrics.Gauge
}

func newPartitionStates() partitionStates {
	return partitionStates{parts: make(map[TopicPartition]*partitionState), partitionCountGauge: metrics.NewGauge()}
}

// countChangedLocked publishes len(parts) to the PartitionCount gauge; call it with mu held
// after every change of parts.
func (ps *partitionStates) countChangedLocked() {
	ps.partitionCountGauge.Update(int64(len(ps.parts)))
}

// takeStates removes and returns all partition states.
func (ps *partitionStates) takeStates() map[TopicPartition]partitionState {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	out := make(map[TopicPartition]partitionState, len(ps.parts))
	for tp, s := range ps.parts {
		out[tp] = *s
	}
	ps.parts = make(map[TopicPartition]*partitionState)
	ps.order = nil
	ps.countChangedLocked()
	return out
}

func (ps *partitionStates) deleteLocked(tp TopicPartition) {
	if _, ok := ps.parts[tp]; !ok {
		return
	}
	delete(ps.parts, tp)
	for i, o := range ps.order {
		if o == tp {
			ps.order = append(ps.order[:i], ps.order[i+1:]...)
			break
		}
	}
	ps.countChangedLocked()
}

func (ps *partitionStates) moveToEndLocked(tp TopicPartition) {
	for i, o := range ps.order {
		if o == tp {
			copy(ps.order[i:], ps.order[i+1:])
			ps.order[len(ps.order)-1] = tp
			return
		}
	}
}

func (ps *partitionStates) partitions() []TopicPartition {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return append([]TopicPartition(nil), ps.order...)
}

func (ps *partitionStates) partitionCount() int {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return len(ps.parts)
}

func (ps *partitionStates) state(tp TopicPartition) (PartitionFetchState, bool) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	s, ok := ps.parts[tp]
	if !ok {
		return PartitionFetchState{}, false
	}
	return PartitionFetchState{
		FetchOffset: s.fetchOffset,
		LeaderEpoch: s.leaderEpoch,
		Truncating:  s.phase == phaseTruncating,
		Delayed:     !s.ready(time.Now()),
		Lag:         s.lag,
	}, true
}

func (ps *partitionStates) maxLag() int64 {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	var m int64
	for _, s := range ps.parts {
		if s.lag > m {
			m = s.lag
		}
	}
	return m
}

// current returns the state of tp only if it is unchanged since a request was built from sent
// and still in phase.
func (ps *partitionStates) currentLocked(tp TopicPartition, sent sentState, phase fetchPhase) *partitionState {
	s, ok := ps.parts[tp]
	if !ok || s.leaderEpoch != sent.leaderEpoch || s.fetchOffset != sent.fetchOffset || s.phase != phase {
		return nil
	}
	return s
}
