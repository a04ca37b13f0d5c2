package replview

import (
	"github.com/isrbroker/isrbroker/fetcher"
	"github.com/isrbroker/isrbroker/replicamanager"
	"github.com/isrbroker/isrbroker/replicamanager/replevents"
)

// LocalView is /replication/local.json: one broker's snapshot and when its process started
// (events of a restarted broker start again at sequence number 1).
type LocalView struct {
	replicamanager.Snapshot
	StartedMs int64 `json:"startedMs"`
}

// ClusterView is /replication/cluster.json.
type ClusterView struct {
	TimeMs              int64              `json:"timeMs"`
	ServedBy            int32              `json:"servedBy"`
	Controller          ControllerView     `json:"controller"`
	ReplicaLagTimeMaxMs int64              `json:"replicaLagTimeMaxMs"`
	Brokers             []BrokerView       `json:"brokers"`
	Partitions          []PartitionView    `json:"partitions"`
	Events              []replevents.Event `json:"events"` // newest first
	Errors              []string           `json:"errors"` // ZooKeeper reads that failed
}

// ControllerView is /controller and /controller_epoch (S9); ID -1: no controller.
type ControllerView struct {
	ID    int32 `json:"id"`
	Epoch int32 `json:"epoch"`
}

// BrokerView is one broker: registered in /brokers/ids, or only named in a partition's
// assigned replicas.
type BrokerView struct {
	ID          int32                     `json:"id"`
	PageAddress string                    `json:"pageAddress"`
	Registered  bool                      `json:"registered"` // in /brokers/ids
	Reachable   bool                      `json:"reachable"`  // its local.json was read
	Error       string                    `json:"error,omitempty"`
	StartedMs   int64                     `json:"startedMs,omitempty"`
	Leaders     int                       `json:"leaders"`   // partitions it leads
	Followers   int                       `json:"followers"` // partitions it follows
	Fetchers    []fetcher.FetcherSnapshot `json:"fetchers"`  // S15, S16
}

// PartitionView is one partition as seen by its leader (or, with no reachable leader, by the
// follower with the newest leader epoch).
type PartitionView struct {
	Topic          string  `json:"topic"`
	Partition      int32   `json:"partition"`
	Leader         int32   `json:"leader"`
	LeaderEpoch    int32   `json:"leaderEpoch"`
	HighWatermark  int64   `json:"highWatermark"`
	LogStartOffset int64   `json:"logStartOffset"`
	Replicas       []int32 `json:"replicas"` // AR (S6)
	ISR            []int32 `json:"isr"`      // the leader's ISR; empty when no leader answered
	OutOfSync      []int32 `json:"osr"`      // AR − ISR (S6)
	// LeaderReachable: the view comes from the leader's own snapshot. Otherwise the leader and
	// epoch are the newest a follower knows, and the ISR is unknown.
	LeaderReachable bool          `json:"leaderReachable"`
	ReplicaStates   []ReplicaView `json:"replicaStates"` // in AR order
}

// ReplicaView is one assigned replica of a partition.
type ReplicaView struct {
	Broker int32  `json:"broker"`
	Role   string `json:"role"` // Leader, Follower, or "" when neither the replica nor the leader answered
	InISR  bool   `json:"inIsr"`
	// LogEndOffset is the replica's own LEO when it answered (LEOSource "self"), else the
	// leader's view as of its last fetch ("leader"), else -1 ("").
	LogEndOffset int64  `json:"logEndOffset"`
	LEOSource    string `json:"leoSource"`
	// HighWatermark is the replica's own HW (a follower's trails the leader's), -1 if unknown.
	HighWatermark int64 `json:"highWatermark"`
	// LastCaughtUpAgoMs is the leader's lag clock for a follower (S5b, S10): the time since it was
	// last caught up; -1 never (this leader epoch) or unknown.
	LastCaughtUpAgoMs int64  `json:"lastCaughtUpAgoMs"`
	LastFetchAgoMs    int64  `json:"lastFetchAgoMs"`
	Fetcher           string `json:"fetcher,omitempty"` // the follower's fetcher thread carrying the partition (S16)
	FetchState        string `json:"fetchState,omitempty"`
	Reachable         bool   `json:"reachable"`
}
