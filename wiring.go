package main

import (
	"github.com/isrbroker/isrbroker/broker"
	"github.com/isrbroker/isrbroker/broker/groupcoord"
	"github.com/isrbroker/isrbroker/broker/security/sasl"
	"github.com/isrbroker/isrbroker/replicamanager"
	"github.com/isrbroker/isrbroker/zkcoord"
	"github.com/isrbroker/isrbroker/zkcoord/admin"
	"github.com/isrbroker/isrbroker/zkcoord/agent"
)

// The composition root's adapters and checks: each consumer of ZooKeeper gets the roles of
// the coordinator it needs (zkcoord.Coordinator exposes them as fields, it embeds none),
// and every interface a consumer declares is asserted here at compile time against what
// implements it. The implementing packages cannot import their consumers (layering_test.go),
// so this is the one place that names both sides.

// The wire server's collaborators (broker.Deps).
var (
	_ broker.Replicas               = (*replicamanager.Requests)(nil)
	_ broker.AnyReplicaOffsetLister = (*replicamanager.Requests)(nil)
	_ broker.RecordsDeleter         = (*replicamanager.Requests)(nil)
	_ broker.LogDirDescriber        = (*replicamanager.Requests)(nil)
	_ broker.TopicStatser           = (*replicamanager.Requests)(nil)

	_ broker.Admin                = (*admin.Admin)(nil)
	_ broker.ControlledShutdowner = (*zkcoord.Coordinator)(nil)
	_ broker.ProducerIDAllocator  = (*agent.ProducerIDs)(nil)
	_ broker.ConfigAdmin          = configAdmin{}
	_ broker.PartitionAdder       = partitionAdmin{}
	_ broker.LeaderElector        = (*zkcoord.Coordinator)(nil)
	_ broker.Reassigner           = (*zkcoord.Coordinator)(nil)
)

// The replica manager's ZooKeeper: replicamanager.Coordinator, and the two capabilities it
// looks for on it (LogDirFailureNotifier, DynamicConfigSource).
var (
	_ replicamanager.Coordinator           = replicaCoordinator{}
	_ replicamanager.LogDirFailureNotifier = replicaCoordinator{}
	_ replicamanager.DynamicConfigSource   = replicaCoordinator{}
)

// The group coordinator's topic creation, and the controlled shutdown's reads.
var (
	_ groupcoord.Admin  = (*admin.Admin)(nil)
	_ controllerLocator = shutdownLocator{}
)

// brokerDeps wires the wire server to the replica manager and the ZooKeeper coordinator's
// roles.
func brokerDeps(rmgr *replicamanager.ReplicaManager, zk *zkcoord.Coordinator) broker.Deps {
	return broker.Deps{
		Replicas:           rmgr.Requests(),
		AnyReplicaOffsets:  rmgr.Requests(),
		RecordsDeleter:     rmgr.Requests(),
		LogDirs:            rmgr.Requests(),
		TopicStats:         rmgr.Requests(),
		Admin:              zk.Admin,
		ControlledShutdown: zk,
		ProducerIDs:        zk.ProducerIDs,
		Configs:            configAdmin{zk.Reader, zk.Admin},
		Partitions:         partitionAdmin{zk.Reader, zk.Admin, zk},
		Elections:          zk,
		Reassignments:      zk,
	}
}

// scramCredentials is the SCRAM credential store of the SASL listeners (sasl.CredentialStore:
// the broker's cache of /config/users, docs/sasl.md §3). nil until the ZooKeeper-backed store is
// wired here: a listener enabling SCRAM-SHA-256 or SCRAM-SHA-512 then stops start-up with
// "SASL mechanism ... needs a SCRAM credential store".
func scramCredentials(*zkcoord.Coordinator) sasl.CredentialStore { return nil }

// configAdmin is broker.ConfigAdmin: the config reads and the config writes.
type configAdmin struct {
	*admin.Reader // TopicConfig, BrokerEntityConfig
	*admin.Admin  // AlterTopicConfig, AlterBrokerConfig
}

// partitionAdmin is broker.PartitionAdder: CreatePartitions on the active controller.
type partitionAdmin struct {
	*admin.Reader // TopicAssignment, TopicsMarkedForDeletion, ReassignmentInProgress
	*admin.Admin  // AddPartitions
	zk            *zkcoord.Coordinator
}

func (p partitionAdmin) IsController() bool { return p.zk.IsController() }

// replicaCoordinator is what the replica manager reaches ZooKeeper through.
type replicaCoordinator struct {
	*agent.IsrWriter      // UpdateLeaderAndIsr, ReadLeaderAndIsr
	*admin.Reader         // TopicConfig
	*agent.LogDirEvents   // PropagateLogDirEvent
	*agent.ConfigListener // OnDynamicConfig
}

func replicaCoordinatorOf(zk *zkcoord.Coordinator) replicaCoordinator {
	return replicaCoordinator{zk.IsrWriter, zk.Reader, zk.LogDirEvents, zk.ConfigListener}
}

// shutdownLocator is what the controlled shutdown client reads: the controller and the live
// brokers, and this broker's epoch.
type shutdownLocator struct {
	*admin.Reader    // ControllerID, LiveBrokers
	*agent.Registrar // BrokerEpoch
}
