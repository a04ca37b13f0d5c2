// Package fetcher owns replica fetching on a follower: the ReplicaFetcherManager (Manager), the
// fetcher goroutines ("ReplicaFetcherThread-<fetcherId>-<leaderId>"), one per (leader broker,
// fetcher id), and each partition's fetch state (Truncating → Fetching, fetch offset, current
// leader epoch, backoff delay). It copies the leader's log as Kafka 2.4 does in ZooKeeper mode
// (S15–S23 and K1 of docs/requirements.md; docs/kafka-facts.md §4–5).
//
// The fetcher never touches ZooKeeper and never imports zkcoord or replicamanager. It talks to:
//   - leaders, over the Kafka protocol (Fetch v11, OffsetForLeaderEpoch v3, ListOffsets v5 with
//     replica_id set), through the small Leader interface; RemoteLeader implements it over
//     broker/kproto.Conn and tests use an in-memory twin; each fetcher keeps a KIP-227
//     incremental fetch session with its leader (fetch_session.go), as Kafka's
//     ReplicaFetcherThread does from IBP 1.1: full first, then incremental, full again after a
//     session error, a failed request or an answer that does not match the session;
//   - the local replica, only through the Local interface, which the replica manager implements;
//   - the follower replication throttle, only through the optional ReplicaQuota (Config.Quota):
//     a throttled partition that is not in sync is left out of fetches while the quota is
//     exceeded (issue 4).
//
// Locking contract for the implementer of Local: a fetcher calls Local's methods while holding
// its own partition-state lock, so that RemoveFetcherForPartitions returning guarantees no
// further truncation or append happens for the removed partitions (S14.3). The replica manager
// must therefore not hold a lock that Local's methods need while it calls
// AddFetcherForPartitions, RemoveFetcherForPartitions, ShutdownIdleFetcherThreads or Close.
// The exception is TruncationPreparer.PrepareTruncateTo, called without the lock: it changes
// nothing the partition shows (it copies the bytes an epoch truncation keeps), and the fetcher
// commits it under the lock only if the partition is still in the state it was planned for.
package fetcher
