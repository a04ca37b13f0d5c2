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
// Locking: ReplicaManager.stateChangeLock serialises controller requests; ReplicaManager.mu guards
// the partition map; each Partition.mu (Kafka's leaderIsrUpdateLock) guards that partition's
// leadership, ISR and follower states. Order: stateChangeLock → mu → Partition.mu; the purgatory's
// lock is a leaf and is never held while calling into a partition.
package replicamanager
