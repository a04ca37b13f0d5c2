// Package admin is zkcoord's admin API, apart from the broker-side agents and the
// controller: topic creation and deletion requests, partition addition, partition
// reassignment requests and their replication throttles, preferred election requests
// (Admin), and the reads of the cluster's state used by the broker, operator tools and tests
// (Reader). It writes only the request znodes and configs the controller and the brokers act
// on; it owns no state besides its connection. Session (session.go) is an operator tool's
// own ZooKeeper session with a Reader and an Admin over it, so the tools need neither the
// broker's coordinator nor the controller.
package admin

import (
	"errors"

	"github.com/isrbroker/isrbroker/zkcoord/zkdata"
)

// Sentinel errors. They map 1:1 to Kafka protocol errors at the broker edge.
var (
	ErrTopicExists                 = errors.New("zkcoord: topic already exists")
	ErrUnknownTopic                = zkdata.ErrUnknownTopic
	ErrInvalidPartitions           = errors.New("zkcoord: invalid number of partitions")
	ErrInvalidReplicationFactor    = errors.New("zkcoord: invalid replication factor")
	ErrInvalidReplicaAssignment    = errors.New("zkcoord: invalid replica assignment")
	ErrInvalidTopic                = errors.New("zkcoord: invalid topic name")
	ErrTopicDeletionDisabled       = errors.New("zkcoord: topic deletion is disabled (delete.topic.enable=false)")
	ErrReassignmentInProgress      = errors.New("zkcoord: there is an existing assignment running")
	ErrPreferredElectionInProgress = errors.New("zkcoord: There is an existing preferred replica election in progress")
	errClosed                      = errors.New("zkcoord: closed")
)

// Types of the znodes, shared with zkcoord/zkdata.
type (
	TopicPartition        = zkdata.TopicPartition
	BrokerInfo            = zkdata.BrokerInfo
	PartitionState        = zkdata.PartitionState
	PartitionReassignment = zkdata.PartitionReassignment
)
