// Package controller is isrbroker's controller (S9), built from Kafka 2.4's parts
// (core/src/main/scala/kafka/controller): one event goroutine fed by ZooKeeper watches,
// session changes, timers and broker requests (Controller, events.go); the controller's cached
// view of the cluster (controllerContext); a partition state machine and a replica state
// machine with Kafka's states and valid transitions (partition_sm.go, replica_sm.go); leader
// elections as pure functions (election.go); the channel manager, one request queue and
// sender per live broker, fed by a batch that puts at most one LeaderAndIsr, one
// UpdateMetadata and one StopReplica per broker and flag into each send (channel.go,
// batch.go); the topic deletion manager (deletion.go); partition reassignment (reassign.go);
// preferred elections and the automatic leader rebalance (preferred.go); and the controller's
// side of controlled shutdown (shutdown.go, K7).
//
// The controller owns the controller znodes' writes: every write is a multi fenced by the
// zkVersion of /controller_epoch (K3, KAFKA-6082). It reads and writes ZooKeeper only through
// zkcoord/zkclient.Conn and the paths and JSON of zkcoord/zkdata, so its unit tests run on the
// in-memory double zkcoord/zkmem. docs/design.md, "Controller", lists the states, transitions
// and events.
package controller
