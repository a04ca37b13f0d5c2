package main

import (
	"fmt"

	"github.com/isrbroker/isrbroker/broker"
	"github.com/isrbroker/isrbroker/broker/config"
	"github.com/isrbroker/isrbroker/broker/groupcoord"
	"github.com/isrbroker/isrbroker/broker/security/acl"
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
	_ broker.ACLs                   = aclAuthorizer{}
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
func brokerDeps(rmgr *replicamanager.ReplicaManager, zk *zkcoord.Coordinator, acls broker.ACLs) broker.Deps {
	return broker.Deps{
		ACLs:               acls,
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
		Quotas:             zk.ConfigListener, // OnQuotaConfig (docs/quotas.md)
	}
}

// aclAuthorizer is broker.ACLs: the authorizer's cache, kept by zk's ACL store (loaded at start,
// then following the change notifications), and the writes of CreateAcls/DeleteAcls, which
// reach the cache at once (Kafka's AclAuthorizer updates its own cache before answering).
type aclAuthorizer struct {
	a     *acl.Authorizer
	store *agent.ACLStore
}

func (z aclAuthorizer) Authorizer() *acl.Authorizer { return z.a }

func (z aclAuthorizer) UpdateACLs(r acl.Resource, change func([]acl.Entry) []acl.Entry) ([]acl.Entry, error) {
	entries, err := z.store.Update(r, change)
	if err != nil {
		return nil, err
	}
	z.a.SetACLs(r, entries)
	return entries, nil
}

// newAuthorizer builds the authorizer authorizer.class.name asks for (nil: none) and fills it
// from ZooKeeper before the broker serves its first request.
func newAuthorizer(cfg *config.Config, zk *zkcoord.Coordinator) (broker.ACLs, error) {
	if cfg.AuthorizerClassName == "" {
		return nil, nil
	}
	supers, err := acl.ParseSuperUsers(cfg.SuperUsers)
	if err != nil {
		return nil, err
	}
	a := acl.New(acl.Config{SuperUsers: supers, AllowEveryoneIfNoACLFound: cfg.AllowEveryoneIfNoACLFound})
	if err := zk.ACLs.Load(a); err != nil {
		return nil, fmt.Errorf("loading the ACLs from ZooKeeper: %w", err)
	}
	zk.ACLs.Watch(a)
	return aclAuthorizer{a: a, store: zk.ACLs}, nil
}

// scramCredentials is the SCRAM credential store of the SASL listeners (sasl.CredentialStore):
// the broker's cache of /config/users, loaded by zkcoord.Connect and kept current through
// /config/changes (docs/sasl.md §3).
func scramCredentials(zk *zkcoord.Coordinator) sasl.CredentialStore { return zk.Credentials }

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
