package broker

import "github.com/isrbroker/isrbroker/zkcoord"

// The coordinator serves ElectLeaders and CreatePartitions (43_elect_leaders.go,
// 37_create_partitions.go).
var (
	_ LeaderElector  = (*zkcoord.Coordinator)(nil)
	_ PartitionAdder = (*zkcoord.Coordinator)(nil)
)
