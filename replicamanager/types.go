package replicamanager

import (
	"time"

	"github.com/isrbroker/isrbroker/logstore/record"
)

// TopicPartition names one partition (the log layer's type, shared).
type TopicPartition = record.TopicPartition

// PartitionState is one partition's entry of a LeaderAndIsr request from the controller
// (docs/kafka-facts.md §2, LeaderAndIsrRequest.json).
type PartitionState struct {
	TopicPartition
	ControllerEpoch int32
	Leader          int32
	LeaderEpoch     int32
	ISR             []int32
	ZkVersion       int32
	Replicas        []int32
	IsNew           bool
}

// LeaderAndIsrRequest is the broker-independent form of a LeaderAndIsr request.
type LeaderAndIsrRequest struct {
	ControllerID    int32
	ControllerEpoch int32
	BrokerEpoch     int64
	Partitions      []PartitionState
	// LiveLeaders maps the broker ids of the leaders named in Partitions to their
	// inter-broker address ("host:port").
	LiveLeaders map[int32]string
}

// LeaderAndIsrResult answers a LeaderAndIsr request. ErrorCode is for the whole request
// (STALE_CONTROLLER_EPOCH, STALE_BROKER_EPOCH); Partitions holds a code per partition.
type LeaderAndIsrResult struct {
	ErrorCode  int16
	Partitions map[TopicPartition]int16
}

// StopReplicaRequest is the broker-independent form of a StopReplica request (S22).
type StopReplicaRequest struct {
	ControllerID     int32
	ControllerEpoch  int32
	BrokerEpoch      int64
	DeletePartitions bool
	Partitions       []TopicPartition
}

// StopReplicaResult answers a StopReplica request.
type StopReplicaResult struct {
	ErrorCode  int16
	Partitions map[TopicPartition]int16
}

// ProduceResult is one partition's answer to a produce.
type ProduceResult struct {
	ErrorCode      int16
	BaseOffset     int64
	LogAppendTime  int64 // -1 unless the topic uses LogAppendTime
	LogStartOffset int64
	// RecordErrors and ErrorMessage are ProduceResponse v8's record_errors and error_message
	// (KIP-467): filled, as Kafka 2.4's appendToLocalLog fills them, only when the log refused
	// the batch because of one of its records (logstore.RecordError, Kafka's
	// RecordValidationException); otherwise empty and "" (null).
	RecordErrors []RecordError
	ErrorMessage string
}

// RecordError names a record that made the log refuse its batch: its index in the batch
// (batch_index) and its own message, which Kafka 2.4 leaves null ("").
type RecordError struct {
	BatchIndex int32
	Message    string
}

// FetchPartition is one partition of a fetch request.
type FetchPartition struct {
	TopicPartition
	FetchOffset        int64
	LogStartOffset     int64 // follower's log start offset (replica fetches), else -1
	PartitionMaxBytes  int32
	CurrentLeaderEpoch int32 // -1 when the client does not send it
}

// FetchParams is a whole fetch request.
type FetchParams struct {
	ReplicaID int32 // >= 0 for a follower (reads up to the LEO, S7); -1 for a consumer
	MaxWait   time.Duration
	MinBytes  int32
	MaxBytes  int32
	// FileRecords asks for the records as regions of the segment files (Files) instead of
	// bytes in memory (Records), for a response that sends them with sendfile
	// (docs/performance.md, "Zero-copy reads").
	FileRecords bool
	Partitions  []FetchPartition
	// Client is a consumer fetch's client metadata (Fetch v11+, KIP-392); nil for followers and
	// older versions, which read from the leader only. With it a follower serves the consumer up
	// to its HW, and a leader with a replica selector may name a preferred read replica.
	Client *ClientMetadata
}

// ClientMetadata is what a consumer's fetch tells the replica selector (Kafka's
// ClientMetadata): its rack (rack_id, "" when it has none) and the listener it came in on,
// whose endpoints decide which replicas it can reach.
type ClientMetadata struct {
	RackID   string
	Listener string
}

// FetchPartitionResult is one partition's answer to a fetch. Records holds raw record
// batches exactly as stored (no decoding, S1); with FetchParams.FileRecords, Files holds the
// same batches as regions of the segment files and Records is nil.
type FetchPartitionResult struct {
	TopicPartition
	ErrorCode        int16
	HighWatermark    int64
	LastStableOffset int64
	LogStartOffset   int64
	Records          []byte
	Files            record.FileRecords
	// HasPreferredReadReplica: the leader's replica selector sent the consumer to
	// PreferredReadReplica (KIP-392); the partition then has no records.
	HasPreferredReadReplica bool
	PreferredReadReplica    int32
}

// ListOffsetsPartition asks for an offset by timestamp: -2 earliest, -1 latest, else the
// first offset whose timestamp is >= Timestamp.
type ListOffsetsPartition struct {
	TopicPartition
	Timestamp          int64
	CurrentLeaderEpoch int32
}

// ListOffsetsResult answers one ListOffsetsPartition.
type ListOffsetsResult struct {
	TopicPartition
	ErrorCode   int16
	Timestamp   int64
	Offset      int64
	LeaderEpoch int32
}

// EpochEndOffsetRequest asks for the end offset of LeaderEpoch (OffsetForLeaderEpoch, K1).
type EpochEndOffsetRequest struct {
	TopicPartition
	CurrentLeaderEpoch int32
	LeaderEpoch        int32
}

// EpochEndOffsetResult answers OffsetForLeaderEpoch: the largest epoch <= the requested one
// and its end offset (KIP-279).
type EpochEndOffsetResult struct {
	TopicPartition
	ErrorCode   int16
	LeaderEpoch int32
	EndOffset   int64
}
