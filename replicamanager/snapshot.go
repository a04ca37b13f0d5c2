package replicamanager

import (
	"slices"
	"sort"
	"time"

	"github.com/isrbroker/isrbroker/fetcher"
	"github.com/isrbroker/isrbroker/replicamanager/replevents"
)

// This file is the replica manager's read-only view for the replication page
// (docs/replication-page.md): every hosted partition's role, leader epoch, HW, LEO and log start
// offset, and for a leader its ISR and each follower's progress (S5, S6, S10), copied under the
// partition's lock; the fetchers' state (S15, S16); and the recorded events.

// Snapshot is this broker's local view of replication.
type Snapshot struct {
	BrokerID            int32                     `json:"brokerId"`
	TimeMs              int64                     `json:"timeMs"`
	ReplicaLagTimeMaxMs int64                     `json:"replicaLagTimeMaxMs"` // replica.lag.time.max.ms (S5b, S10)
	ControllerEpoch     int32                     `json:"controllerEpoch"`     // latest controller epoch seen in a request
	Partitions          []PartitionSnapshot       `json:"partitions"`
	Fetchers            []fetcher.FetcherSnapshot `json:"fetchers"`
	Events              []replevents.Event        `json:"events"`
}

// Roles of a hosted replica.
const (
	RoleLeader   = "Leader"
	RoleFollower = "Follower"
	RoleNone     = "None" // created, but no LeaderAndIsr applied yet (or its leader was not live)
)

// PartitionSnapshot is one hosted replica.
type PartitionSnapshot struct {
	Topic          string  `json:"topic"`
	Partition      int32   `json:"partition"`
	Role           string  `json:"role"`
	Leader         int32   `json:"leader"`
	LeaderEpoch    int32   `json:"leaderEpoch"`
	HighWatermark  int64   `json:"highWatermark"`
	LogEndOffset   int64   `json:"logEndOffset"`
	LogStartOffset int64   `json:"logStartOffset"`
	Replicas       []int32 `json:"replicas"` // AR (S6)
	// ISR is the leader's ISR (S6); a follower keeps none (S14.2): empty.
	ISR []int32 `json:"isr"`
	// PendingISR is an ISR write under way or with an unknown outcome (K3), leader only.
	PendingISR []int32 `json:"pendingIsr,omitempty"`
	// MinISR is the partition's min.insync.replicas (K2), leader only (0 on a follower): the
	// page counts a partition whose ISR is smaller as under min ISR.
	MinISR int `json:"minIsr,omitempty"`
	// Followers is the leader's view of each follower (S5b): leader only.
	Followers []FollowerSnapshot `json:"followers,omitempty"`
}

// FollowerSnapshot is the leader's view of one follower.
type FollowerSnapshot struct {
	Broker         int32 `json:"broker"`
	LogEndOffset   int64 `json:"logEndOffset"` // as of its last fetch; -1 before its first fetch in this epoch
	LogStartOffset int64 `json:"logStartOffset"`
	InISR          bool  `json:"inIsr"`
	// LastCaughtUpAgoMs is the time since the follower was last caught up with the leader's LEO
	// (the lag clock of S5b/S10: it leaves the ISR past replica.lag.time.max.ms); -1: never in
	// this leader epoch.
	LastCaughtUpAgoMs int64 `json:"lastCaughtUpAgoMs"`
	LastFetchAgoMs    int64 `json:"lastFetchAgoMs"` // -1: no fetch in this leader epoch
}

// snapshotFetchers is implemented by fetcher.Manager.
type snapshotFetchers interface {
	Snapshot() []fetcher.FetcherSnapshot
}

// localView is this broker's local view for the replication page (docs/replication-page.md).
type localView struct {
	pool       *partitionPool
	ctl        *controllerRequests // its controller epoch
	fetcher    fetcherManager
	events     *replevents.Recorder
	brokerID   int32
	lagTimeMax time.Duration
	now        func() time.Time
}

// Snapshot returns this broker's local view: partitions sorted by topic and partition, the
// fetchers, and the events recorded after afterSeq (0: all kept).
func (lv *localView) Snapshot(afterSeq uint64) Snapshot {
	now := lv.now()
	lv.pool.mu.RLock()
	ctlEpoch := lv.ctl.controllerEpoch
	lv.pool.mu.RUnlock()
	s := Snapshot{
		BrokerID:            lv.brokerID,
		TimeMs:              now.UnixMilli(),
		ReplicaLagTimeMaxMs: lv.lagTimeMax.Milliseconds(),
		ControllerEpoch:     ctlEpoch,
		Partitions:          []PartitionSnapshot{},
		Fetchers:            []fetcher.FetcherSnapshot{},
		Events:              lv.events.Events(afterSeq),
	}
	for _, p := range lv.pool.allPartitions() {
		s.Partitions = append(s.Partitions, partitionSnapshot(p, now))
	}
	sort.Slice(s.Partitions, func(i, j int) bool {
		a, b := s.Partitions[i], s.Partitions[j]
		if a.Topic != b.Topic {
			return a.Topic < b.Topic
		}
		return a.Partition < b.Partition
	})
	if f, ok := lv.fetcher.(snapshotFetchers); ok {
		s.Fetchers = f.Snapshot()
	}
	return s
}

// partitionSnapshot is p's part of the local view.
func partitionSnapshot(p *Partition, now time.Time) PartitionSnapshot {
	p.mu.RLock()
	defer p.mu.RUnlock()
	s := PartitionSnapshot{
		Topic: p.tp.Topic, Partition: p.tp.Partition,
		Role: RoleNone, Leader: p.leaderID, LeaderEpoch: p.leaderEpoch,
		HighWatermark: p.hw.get(), LogEndOffset: p.log.LogEndOffset(), LogStartOffset: p.log.LogStartOffset(),
		Replicas: slices.Clone(p.assigned), ISR: []int32{},
	}
	if s.Replicas == nil {
		s.Replicas = []int32{}
	}
	switch {
	case p.isLeaderLocked() && p.leader != nil:
		s.Role = RoleLeader
		s.ISR = p.leader.ISR()
		s.PendingISR = p.leader.Pending()
		s.MinISR = p.cfg.minInsyncReplicas
		for _, id := range p.assigned {
			pr, ok := p.leader.Progress(id)
			if !ok || id == p.env.brokerID {
				continue
			}
			s.Followers = append(s.Followers, FollowerSnapshot{
				Broker: id, LogEndOffset: pr.LEO, LogStartOffset: pr.LogStartOffset,
				InISR:             p.leader.InISR(id),
				LastCaughtUpAgoMs: agoMs(now, pr.LastCaughtUpTime),
				LastFetchAgoMs:    agoMs(now, pr.LastFetchTime),
			})
		}
	case p.leaderID >= 0 && !p.isLeaderLocked():
		s.Role = RoleFollower
	}
	return s
}

func agoMs(now, t time.Time) int64 {
	if t.IsZero() {
		return -1
	}
	return max(now.Sub(t).Milliseconds(), 0)
}

// record adds a partition event (replevents) stamped with this partition.
func (p *Partition) record(e replevents.Event) {
	e.Topic, e.Partition = p.tp.Topic, p.tp.Partition
	p.env.events.Record(e)
}
