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

// Admin creates and deletes topics in ZooKeeper; *zkcoord/admin.Admin implements it.
type Admin interface {
	CreateTopic(ctx context.Context, spec zkcoord.TopicSpec, validateOnly bool) (map[int32][]int32, error)
	DeleteTopic(ctx context.Context, topic string) error
}

// Deps are the wire server's collaborators: every capability a handler uses, named here
// so that the composition root (main's broker wiring) states what implements each one and a
// compile-time assertion there checks it. Replicas is required; Admin is required by the
// topic APIs and auto-creation. Every other field may be nil (unit-test fakes); the field
// says what the handlers answer then.
type Deps struct {
	Replicas Replicas
	// Admin creates and deletes topics. nil: Metadata never auto-creates a topic.
	Admin Admin

	// AnyReplicaOffsets serves ListOffsets from the debugging replica id (-2) on any
	// replica. nil: that request is answered as a consumer's, by Replicas.ListOffsets.
	AnyReplicaOffsets AnyReplicaOffsetLister
	// RecordsDeleter serves DeleteRecords. nil: every known partition gets
	// UNKNOWN_SERVER_ERROR.
	RecordsDeleter RecordsDeleter
	// LogDirs serves DescribeLogDirs. nil: an empty response (no log dirs).
	LogDirs LogDirDescriber
	// TopicStats shares the replica manager's BrokerTopicMetrics with the fetch path. nil
	// (or nil stats): the server registers its own over Config.Registry.
	TopicStats TopicStatser

	// ControlledShutdown is this broker's controller side of ControlledShutdown (K7). nil:
	// NOT_CONTROLLER.
	ControlledShutdown ControlledShutdowner
	// ProducerIDs allocates InitProducerId's producer-id blocks. nil:
	// COORDINATOR_NOT_AVAILABLE.
	ProducerIDs ProducerIDAllocator
	// Configs reads and writes the dynamic configs (DescribeConfigs, AlterConfigs,
	// IncrementalAlterConfigs, CreateTopics' configs). nil: those requests fail as without a
	// ZooKeeper coordinator (errNoConfigAdmin).
	Configs ConfigAdmin
	// Partitions serves CreatePartitions on the active controller. nil: NOT_CONTROLLER.
	Partitions PartitionAdder
	// Elections serves ElectLeaders on this broker's controller. nil: NOT_CONTROLLER.
	Elections LeaderElector
	// Reassignments serves AlterPartitionReassignments and ListPartitionReassignments on
	// this broker's controller. nil: NOT_CONTROLLER.
	Reassignments Reassigner
	// ACLs is the authorizer (authorizer.class.name) and its ZooKeeper store (authz.go). nil:
	// no authorizer, every request is allowed and the ACL APIs answer SECURITY_DISABLED.
	ACLs ACLs
	// Quotas delivers the client quota entities (client_quotas.go). nil: only the static
	// defaults of Config.ClientQuotas apply.
	Quotas QuotaConfigSource
}
