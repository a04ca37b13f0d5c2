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
	Summary             SummaryView        `json:"summary"`
	Brokers             []BrokerView       `json:"brokers"`
	Partitions          []PartitionView    `json:"partitions"`
	Events              []replevents.Event `json:"events"` // newest first
	Errors              []string           `json:"errors"` // ZooKeeper reads that failed
}

// SummaryView counts the partitions by their problems (PartitionView.Problems); a partition
// may have several.
type SummaryView struct {
	Partitions         int `json:"partitions"`
	Topics             int `json:"topics"`
	InternalTopics     int `json:"internalTopics"` // names starting with "__" (__consumer_offsets, __transaction_state)
	UnderReplicated    int `json:"underReplicated"`
	UnderMinISR        int `json:"underMinIsr"`
	Offline            int `json:"offline"`
	LeaderNotPreferred int `json:"leaderNotPreferred"`
}

// The problems of a partition (PartitionView.Problems), in this order.
const (
	// ProblemOffline: no replica answers as its leader (leader -1, or the leader did not answer).
	ProblemOffline = "offline"
	// ProblemUnderMinISR: the leader's ISR is smaller than min.insync.replicas (K2).
	ProblemUnderMinISR = "underMinIsr"
	// ProblemUnderReplicated: the leader's ISR is smaller than AR (S6, S12).
	ProblemUnderReplicated = "underReplicated"
	// ProblemLeaderNotPreferred: the leader is not the first replica of AR, the preferred one.
	ProblemLeaderNotPreferred = "leaderNotPreferred"
)

// ControllerView is /controller and /controller_epoch (S9); ID -1: no controller.
type ControllerView struct {
	ID    int32 `json:"id"`
	Epoch int32 `json:"epoch"`
}

// BrokerView is one broker: registered in /brokers/ids, or only named in a partition's
// assigned replicas.
type BrokerView struct {
	ID          int32         `json:"id"`
	PageAddress string        `json:"pageAddress"`
	Registered  bool          `json:"registered"` // in /brokers/ids
	Reachable   bool          `json:"reachable"`  // its local.json was read
	Error       string        `json:"error,omitempty"`
	StartedMs   int64         `json:"startedMs,omitempty"`
	Leaders     int           `json:"leaders"`   // partitions it leads
	Followers   int           `json:"followers"` // partitions it follows
	Fetchers    []FetcherView `json:"fetchers"`  // S15, S16
	// FetchLag and FetchMaxLag sum and bound its fetchers' lags (leader HW − fetch offset) over
	// the FetchPartitions partitions they carry.
	FetchPartitions int   `json:"fetchPartitions"`
	FetchLag        int64 `json:"fetchLag"`
	FetchMaxLag     int64 `json:"fetchMaxLag"`
}

// FetcherView is one replica fetcher thread of a broker (S15, S16) with the totals over its
// partitions. Partitions lists only those not caught up — a lag above 0, Truncating, or
// delayed — at most MaxFetcherPartitions of them: at 10,000 partitions the full lists would be
// a fifth of cluster.json and every partition's fetcher and state is in its replicaStates.
type FetcherView struct {
	fetcher.FetcherSnapshot
	PartitionCount int   `json:"partitionCount"`   // all the partitions it carries
	Lag            int64 `json:"lag"`              // the sum of their lags (leader HW − fetch offset)
	MaxLag         int64 `json:"maxLag,omitempty"` // the largest
}

// PartitionView is one partition as seen by its leader (or, with no reachable leader, by the
// follower with the newest leader epoch).
type PartitionView struct {
	Topic          string  `json:"topic"`
	Partition      int32   `json:"partition"`
	Leader         int32   `json:"leader"`
	LeaderEpoch    int32   `json:"leaderEpoch"`
	HighWatermark  int64   `json:"highWatermark"`
	LogStartOffset int64   `json:"logStartOffset,omitempty"`
	Replicas       []int32 `json:"replicas"`      // AR (S6)
	ISR            []int32 `json:"isr"`           // the leader's ISR; empty when no leader answered
	OutOfSync      []int32 `json:"osr,omitempty"` // AR − ISR (S6)
	// LeaderReachable: the view comes from the leader's own snapshot. Otherwise the leader and
	// epoch are the newest a follower knows, and the ISR is unknown.
	LeaderReachable bool `json:"leaderReachable,omitempty"`
	// MinISR is the leader's min.insync.replicas (K2); 0 when no leader answered.
	MinISR int `json:"minIsr,omitempty"`
	// Problems are the partition's Problem* values, none when healthy.
	Problems []string `json:"problems,omitempty"`
	// ReplicaStates are in AR order; cluster.json?brief=1 leaves them out of healthy partitions.
	ReplicaStates []ReplicaView `json:"replicaStates,omitempty"`
}

// ReplicaView is one assigned replica of a partition.
type ReplicaView struct {
	Broker int32  `json:"broker"`
	Role   string `json:"role"` // Leader, Follower, or "" when neither the replica nor the leader answered
	InISR  bool   `json:"inIsr,omitempty"`
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
	Reachable         bool   `json:"reachable,omitempty"`
}
