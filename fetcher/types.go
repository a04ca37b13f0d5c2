package fetcher

import (
	"errors"
	"fmt"
	"time"

	"github.com/isrbroker/isrbroker/broker/kproto"
	"github.com/isrbroker/isrbroker/logstore/record"
	"github.com/rcrowley/go-metrics"
	"github.com/sirupsen/logrus"
)

// TopicPartition names one partition (the log layer's type, shared).
type TopicPartition = record.TopicPartition

// BrokerEndPoint is a leader's id and inter-broker address ("host:port").
type BrokerEndPoint struct {
	ID   int32
	Addr string
}

// InitialFetchState is what makeFollowers hands to AddFetcherForPartitions (S14.6): the leader,
// the partition's current leader epoch and the initial fetch offset, which is the local HW in
// Kafka 2.4 (used as the truncation point when the local log has no leader epochs).
type InitialFetchState struct {
	Leader             BrokerEndPoint
	CurrentLeaderEpoch int32
	InitOffset         int64
}

// Config holds the replica fetcher settings (docs/kafka-facts.md §7). Zero values take Kafka's
// defaults (see DefaultConfig).
type Config struct {
	BrokerID    int32
	NumFetchers int // num.replica.fetchers

	FetchWaitMax  time.Duration // replica.fetch.wait.max.ms
	FetchBackoff  time.Duration // replica.fetch.backoff.ms
	SocketTimeout time.Duration // replica.socket.timeout.ms

	FetchMinBytes         int32 // replica.fetch.min.bytes
	FetchMaxBytes         int32 // replica.fetch.max.bytes (per partition)
	FetchResponseMaxBytes int32 // replica.fetch.response.max.bytes (whole response)

	LocalAddr string // bind outgoing connections (fault tests); "" = any
	// Security secures the connections to leaders (TLS, SASL of the inter-broker listener);
	// the zero value is PLAINTEXT.
	Security kproto.Security

	Registry metrics.Registry
	Log      logrus.FieldLogger

	// NewLeader, when set, builds the Leader a new fetcher talks to (tests plug an in-memory
	// leader here). nil means a RemoteLeader over broker/kproto.
	NewLeader func(leader BrokerEndPoint, fetcherID int) Leader

	// Quota is the follower replication throttle (follower.replication.throttled.*, issue 4);
	// nil means unthrottled.
	Quota ReplicaQuota
}

// DefaultConfig returns Kafka 2.4's replica fetcher defaults.
func DefaultConfig() Config {
	return Config{
		NumFetchers:           1,
		FetchWaitMax:          500 * time.Millisecond,
		FetchBackoff:          time.Second,
		SocketTimeout:         30 * time.Second,
		FetchMinBytes:         1,
		FetchMaxBytes:         1048576,
		FetchResponseMaxBytes: 10485760,
	}
}

// withDefaults fills zero or invalid values from DefaultConfig.
func (c Config) withDefaults() Config {
	d := DefaultConfig()
	if c.NumFetchers < 1 {
		c.NumFetchers = d.NumFetchers
	}
	if c.FetchWaitMax <= 0 {
		c.FetchWaitMax = d.FetchWaitMax
	}
	if c.FetchBackoff <= 0 {
		c.FetchBackoff = d.FetchBackoff
	}
	if c.SocketTimeout <= 0 {
		c.SocketTimeout = d.SocketTimeout
	}
	if c.FetchMinBytes <= 0 {
		c.FetchMinBytes = d.FetchMinBytes
	}
	if c.FetchMaxBytes <= 0 {
		c.FetchMaxBytes = d.FetchMaxBytes
	}
	if c.FetchResponseMaxBytes <= 0 {
		c.FetchResponseMaxBytes = d.FetchResponseMaxBytes
	}
	if c.Registry == nil {
		c.Registry = metrics.NewRegistry()
	}
	if c.Log == nil {
		c.Log = logrus.StandardLogger()
	}
	return c
}

// Local is the follower side the fetcher drives; the replica manager implements it. Every method
// fails with an error wrapping ErrNotFollower if the partition is no longer a follower at that
// leader epoch (the fetcher then delays the partition; the next LeaderAndIsr removes or re-adds it).
// See the package comment for the locking contract.
type Local interface {
	LogEndOffset(tp TopicPartition) (int64, error)
	LatestEpoch(tp TopicPartition) (epoch int32, ok bool, err error)
	// EndOffsetForEpoch has KIP-279 semantics: the largest local epoch <= epoch and its end offset
	// (the next epoch's start offset, or the LEO for the latest epoch); (-1, -1) if none.
	EndOffsetForEpoch(tp TopicPartition, epoch int32) (foundEpoch int32, endOffset int64, err error)
	HighWatermark(tp TopicPartition) (int64, error)
	TruncateTo(tp TopicPartition, offset int64) error
	TruncateFullyAndStartAt(tp TopicPartition, offset int64) error
	// ProcessPartitionData (S18): append leader batches as a follower (offsets/epochs kept;
	// fetchOffset == local LEO, and records[0] base offset must not be below it: above it is a
	// compaction gap of the leader's log, which moves the LEO past it), then follower HW =
	// min(leaderHW, LEO), log start = max(own, leaderLogStart). Returns the new LEO, which the
	// next fetch asks for. records may be empty (the leader had nothing new): then only the HW
	// and log start are updated.
	ProcessPartitionData(tp TopicPartition, fetchOffset int64, records []byte, leaderHW, leaderLogStart int64) (int64, error)
}

// TruncationPreparer is optionally implemented by Local; when it is, the fetcher runs the slow
// part of an epoch truncation (a copy of up to segment.bytes of kept bytes, and its fsync)
// without its partition-state lock, so that the other partitions of the fetcher keep
// replicating, and commits it under the lock once the partition's state is checked to be the
// one the truncation was planned for (else it aborts it). PrepareTruncateTo must not hold a lock
// of the partition (or any other) when it returns, except what serialises truncations of that
// log; the prepared truncation's Commit has TruncateTo's effect and errors.
type TruncationPreparer interface {
	PrepareTruncateTo(tp TopicPartition, offset int64) (PreparedTruncation, error)
}

// PreparedTruncation is a truncation whose slow part is done: exactly one of Commit and Abort is
// called.
type PreparedTruncation interface {
	Commit() error
	Abort()
}

// LogStartOffsetter is optionally implemented by Local; when it is, the fetcher sends the
// follower's log start offset in its fetch requests (Fetch v5+ log_start_offset), else -1.
type LogStartOffsetter interface {
	LogStartOffset(tp TopicPartition) (int64, error)
}

// ErrNotFollower is wrapped by Local's errors when the partition is no longer a follower at the
// fetcher's leader epoch.
var ErrNotFollower = errors.New("fetcher: partition is not a follower at this epoch")

// FetcherInfo describes one running fetcher (observable for tests and admin output).
type FetcherInfo struct {
	LeaderID   int32
	FetcherID  int
	Partitions []TopicPartition
}

// Metric names (docs/kafka-facts.md §9).
const (
	MetricMaxLag                   = "kafka.server:type=ReplicaFetcherManager,name=MaxLag,clientId=Replica"
	MetricReplicationBytesInPerSec = "kafka.server:type=BrokerTopicMetrics,name=ReplicationBytesInPerSec"
	// MetricFetcherThreadCount is a gauge: the number of running fetchers over all leaders
	// (S15, S23: it drops when idle fetchers are shut down).
	MetricFetcherThreadCount = "kafka.server:type=ReplicaFetcherManager,name=FetcherThreadCount,clientId=Replica"
)

// FetcherThreadName is the name of the fetcher for (fetcherID, leaderID):
// "ReplicaFetcherThread-<fetcherId>-<leaderId>", as in Kafka.
func FetcherThreadName(fetcherID int, leaderID int32) string {
	return fmt.Sprintf("ReplicaFetcherThread-%d-%d", fetcherID, leaderID)
}

// MetricPartitionCount names one fetcher's PartitionCount gauge (the partitions it serves):
// "kafka.server:type=FetcherStats,name=PartitionCount,clientId=ReplicaFetcherThread-<fetcherId>-<leaderId>".
// It is registered when the fetcher starts and unregistered when it shuts down (S15, S23).
func MetricPartitionCount(fetcherID int, leaderID int32) string {
	return "kafka.server:type=FetcherStats,name=PartitionCount,clientId=" + FetcherThreadName(fetcherID, leaderID)
}
