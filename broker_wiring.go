package main

import (
	"github.com/isrbroker/isrbroker/broker"
	"github.com/isrbroker/isrbroker/replicamanager"
	"github.com/isrbroker/isrbroker/zkcoord"
)

// The wire server's collaborators (broker.Deps), checked here at compile time: the packages
// that implement them cannot import broker (layering_test.go), so this is the one place
// that names both sides.
var (
	_ broker.Replicas               = (*replicamanager.ReplicaManager)(nil)
	_ broker.AnyReplicaOffsetLister = (*replicamanager.ReplicaManager)(nil)
	_ broker.RecordsDeleter         = (*replicamanager.ReplicaManager)(nil)
	_ broker.LogDirDescriber        = (*replicamanager.ReplicaManager)(nil)
	_ broker.TopicStatser           = (*replicamanager.ReplicaManager)(nil)

	_ broker.Admin                = (*zkcoord.Coordinator)(nil)
	_ broker.ControlledShutdowner = (*zkcoord.Coordinator)(nil)
	_ broker.ProducerIDAllocator  = (*zkcoord.Coordinator)(nil)
	_ broker.ConfigAdmin          = (*zkcoord.Coordinator)(nil)
	_ broker.PartitionAdder       = (*zkcoord.Coordinator)(nil)
	_ broker.LeaderElector        = (*zkcoord.Coordinator)(nil)
	_ broker.Reassigner           = (*zkcoord.Coordinator)(nil)
)

// brokerDeps wires the wire server to the replica manager and the ZooKeeper coordinator.
func brokerDeps(rmgr *replicamanager.ReplicaManager, zk *zkcoord.Coordinator) broker.Deps {
	return broker.Deps{
		Replicas:           rmgr,
		AnyReplicaOffsets:  rmgr,
		RecordsDeleter:     rmgr,
		LogDirs:            rmgr,
		TopicStats:         rmgr,
		Admin:              zk,
		ControlledShutdown: zk,
		ProducerIDs:        zk,
		Configs:            zk,
		Partitions:         zk,
		Elections:          zk,
		Reassignments:      zk,
	}
}
