// Package groupcoord owns the group coordinator of a broker (Kafka's GroupCoordinator and
// GroupMetadataManager, docs/groups.md): the consumer groups whose __consumer_offsets partition
// this broker leads, their members, generations and state machine (Empty, PreparingRebalance,
// CompletingRebalance, Stable, Dead), the delayed joins and heartbeat expirations, the committed
// offsets, and the __consumer_offsets records that persist them.
//
// It serves the group API keys (one handler file per key: 08_offset_commit.go,
// 09_offset_fetch.go, 10_find_coordinator.go, 11_join_group.go, 12_heartbeat.go,
// 13_leave_group.go, 14_sync_group.go, 15_describe_groups.go, 16_list_groups.go,
// 42_delete_groups.go, 47_offset_delete.go). The broker package decodes the requests and
// registers the keys (Keys); request and response bodies are kmsg types.
//
// What it does not own: the __consumer_offsets logs and their replication (the replica manager,
// reached through Replicas: appends go through AppendRecords with
// offsets.commit.required.acks, i.e. the delayed-produce purgatory, and loading reads the local
// log through ReadLocal), the cluster metadata (Metadata, the broker's metadata cache) and topic
// creation in ZooKeeper (Admin).
//
// Structure, along Kafka's lines: Coordinator is GroupCoordinator (request handling, one
// handler file per API key), with its rebalancer (rebalance.go: delayed joins, heartbeat
// expirations, member changes, assignment propagation) and its groupManager, Kafka's
// GroupMetadataManager (group_manager.go: the groups and offsets cache and the owned and loading
// offsets partitions; storage.go: appends to __consumer_offsets; loading.go: loading and
// unloading; expiry.go: offset expiry and group removal). A group (group.go, GroupMetadata)
// holds the state machine and generation, its membership (membership.go) and its offsets
// (group_offsets.go).
//
// Concurrency: every group has its own lock (group.mu) that guards all of its state, its
// membership and offsets included; the group manager's lock (groupMetadataManager.mu) guards
// the group map and the owned and loading partition sets; the coordinator's lock
// (Coordinator.mu) guards only whether it is active and whether __consumer_offsets is being
// created. Order: the manager's and the coordinator's locks are taken while holding no group
// lock only, and never together; a group lock is never held while calling the replica manager
// (appends are queued on the group as deferred actions and run once group.inLock releases the
// lock), because the append's completion callback takes the group lock again. Timers come from
// an injected Clock, so the delayed join, initial rebalance delay, rebalance timeout and
// session expiry are unit-tested without sleeping. Loading and unloading of offsets partitions
// run in order on one goroutine (loadScheduler), off the LeaderAndIsr path, like Kafka's
// group-metadata-manager scheduler thread.
package groupcoord
