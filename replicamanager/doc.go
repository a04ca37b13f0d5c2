// Package replicamanager owns every partition hosted by this broker (S13): its role (leader or
// follower), leader epoch, ISR, high watermark (HW), the leader's view of each follower's log end
// offset (LEO) and lastCaughtUpTime, and the delayed produce and fetch operations waiting on them
// (the purgatory of S14.5). It applies the controller's LeaderAndIsr and StopReplica requests
// (makeLeaders / makeFollowers, S14, S22), starts and stops replica fetchers through the fetcher
// package (S16, S23), runs the leader's ISR-shrink task (S10) and writes ISR changes through an
// IsrWriter that zkcoord implements (K3). It also enforces the reassignment replication throttles
// (quota.go, issue 4) from the dynamic configs a DynamicConfigSource delivers: leader side in the
// follower fetch path, follower side through the fetcher's ReplicaQuota. The logs themselves
// belong to logstore.
//
// The replication rules themselves live in the pure core, package replica (the leader's ISR,
// follower progress, HW, expand/shrink and acks=all decisions, with their invariants); Partition
// is the shell that locks, logs, writes ZooKeeper and asks the core. The follower's truncation
// decisions are the fetcher's pure planners (fetcher.PlanTruncation), the epoch cache's are
// logstore's. The scenario scripts in testdata/ (TestScenarios) drive all of them together.
//
// Structure: ReplicaManager holds the partition pool (partitionPool, Kafka's allPartitions), the
// live configs and the creation of partitions; each request path is a type with its own state
// that holds what it uses, not the ReplicaManager (controllerRequests, leaderReads, appender,
// followerReplicas, deleteRecords, logDirs, backgroundTasks, localView; manager.go lists them).
// Requests (requests.go) is what the broker, the group coordinator and the replication page
// call; followerReplicas is the fetcher's Local. A Partition holds a partitionEnv (what the
// partitions share), and its HW is a highWatermark with its own leaf lock.
//
// Locking: controllerRequests.stateChangeLock serialises controller requests (and taking the
// partitions of an offline log dir offline); partitionPool.mu guards the partition map and the
// cached controller epoch; each Partition.mu (Kafka's leaderIsrUpdateLock) guards that
// partition's leadership, ISR and follower progress: produces append under its read side (the
// log serialises concurrent appends), follower progress updates, ISR changes and follower-side
// log changes take its write side. The highWatermark's lock is a leaf lock for the HW, which
// moves under either side. Order: stateChangeLock → partitionPool.mu → Partition.mu → the HW's
// lock; the purgatory's lock is a leaf and is never held while calling into a partition.
package replicamanager
