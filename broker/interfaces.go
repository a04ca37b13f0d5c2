package broker

import (
	"context"
	"time"

	rm "github.com/isrbroker/isrbroker/replicamanager"
	"github.com/isrbroker/isrbroker/zkcoord"
)

// Replicas is what the broker needs from the replica manager, which owns all partition
// state (role, leader epoch, ISR, HW, delayed produce and fetch).
type Replicas interface {
	// AppendRecords appends to the leaders of entries. acks is validated by the broker
	// before the call (0, 1, -1). done is called exactly once, possibly on another
	// goroutine, possibly later (acks=-1 waits in the delayed-produce purgatory). The bytes of
	// entries are the connection's: they are appended (or refused) before AppendRecords
	// returns and must not be kept: the connection hands their buffer to a later Produce.
	AppendRecords(timeout time.Duration, acks int16, entries map[rm.TopicPartition][]byte, done func(map[rm.TopicPartition]rm.ProduceResult))
	// FetchMessages reads for a consumer or a follower; it handles min_bytes/max_wait
	// (delayed fetch) itself; done is called exactly once.
	FetchMessages(p rm.FetchParams, done func([]rm.FetchPartitionResult))
	ListOffsets(replicaID int32, isolationLevel int8, parts []rm.ListOffsetsPartition) []rm.ListOffsetsResult
	LastOffsetForLeaderEpoch(replicaID int32, parts []rm.EpochEndOffsetRequest) []rm.EpochEndOffsetResult
	BecomeLeaderOrFollower(req rm.LeaderAndIsrRequest) rm.LeaderAndIsrResult
	StopReplicas(req rm.StopReplicaRequest) rm.StopReplicaResult
	// CheckControllerEpoch validates an UpdateMetadata's controller and broker epochs
	// (K3/KIP-380), caching a newer controller epoch; it returns 0 or
	// STALE_CONTROLLER_EPOCH / STALE_BROKER_EPOCH.
	CheckControllerEpoch(controllerID, controllerEpoch int32, brokerEpoch int64) int16
}

// Admin creates and deletes topics in ZooKeeper; *zkcoord.Coordinator implements it.
type Admin interface {
	CreateTopic(ctx context.Context, spec zkcoord.TopicSpec, validateOnly bool) (map[int32][]int32, error)
	DeleteTopic(ctx context.Context, topic string) error
}
