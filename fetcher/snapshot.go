package fetcher

import (
	"sort"
	"time"
)

// This file is the fetcher's read-only view for the replication page (docs/replication-page.md):
// each running ReplicaFetcherThread, the leader it fetches from and the partitions it carries
// (S15, S16), copied under the fetcher's locks.

// FetcherSnapshot is one running fetcher.
type FetcherSnapshot struct {
	Name       string                   `json:"name"` // ReplicaFetcherThread-<fetcherId>-<leaderId>
	FetcherID  int                      `json:"fetcherId"`
	LeaderID   int32                    `json:"leader"`
	LeaderAddr string                   `json:"leaderAddr"`
	Partitions []FetchPartitionSnapshot `json:"partitions"`
}

// FetchPartitionSnapshot is one partition's fetch state inside a fetcher.
type FetchPartitionSnapshot struct {
	Topic       string `json:"topic"`
	Partition   int32  `json:"partition"`
	FetchOffset int64  `json:"fetchOffset"` // next offset to fetch (the local LEO while Fetching)
	LeaderEpoch int32  `json:"leaderEpoch"` // current leader epoch sent with each fetch
	State       string `json:"state"`       // Truncating or Fetching (K1)
	Delayed     bool   `json:"delayed"`     // backing off after an error (S17)
	Lag         int64  `json:"lag"`         // leader HW − fetch offset after the last fetch
}

// Snapshot lists the running fetchers, ordered by leader and fetcher id, each with its
// partitions in fetch order. A fetcher busy inside Local (an append or a truncation) is waited
// for, as Fetchers does.
func (m *Manager) Snapshot() []FetcherSnapshot {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := time.Now()
	out := make([]FetcherSnapshot, 0, len(m.fetchers))
	for key, th := range m.fetchers {
		out = append(out, FetcherSnapshot{
			Name:       th.name,
			FetcherID:  key.fetcherID,
			LeaderID:   key.leaderID,
			LeaderAddr: th.source.Addr,
			Partitions: th.snapshot(now),
		})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].LeaderID != out[j].LeaderID {
			return out[i].LeaderID < out[j].LeaderID
		}
		return out[i].FetcherID < out[j].FetcherID
	})
	return out
}

func (ps *partitionStates) snapshot(now time.Time) []FetchPartitionSnapshot {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	out := make([]FetchPartitionSnapshot, 0, len(ps.order))
	for _, tp := range ps.order {
		s := ps.parts[tp]
		if s == nil {
			continue
		}
		out = append(out, FetchPartitionSnapshot{
			Topic: tp.Topic, Partition: tp.Partition,
			FetchOffset: s.fetchOffset, LeaderEpoch: s.leaderEpoch,
			State: s.phase.String(), Delayed: !s.ready(now), Lag: s.lag,
		})
	}
	return out
}
