package fetcher

// ReplicaQuota is the follower-side replication throttle the fetcher consults (Kafka's
// ReplicaQuota trait; buildFetch; docs/kafka-facts.md §4, "Throttled partitions").
// The replica manager implements it from follower.replication.throttled.replicas and
// follower.replication.throttled.rate, so the fetcher stays free of ZooKeeper. Implementations
// must be cheap and must not block: the fetcher calls them while holding its partition-state
// lock.
type ReplicaQuota interface {
	// IsThrottled reports whether tp is listed as a throttled replica on this broker.
	IsThrottled(tp TopicPartition) bool
	// IsQuotaExceeded reports whether the throttled replication traffic is over the rate.
	IsQuotaExceeded() bool
	// Record counts bytes of throttled replication traffic against the rate.
	Record(bytes int64)
}

// shouldFollowerThrottleLocked is Kafka's ReplicaFetcherThread.shouldFollowerThrottle: a
// partition that is not in sync (its fetch offset was below the leader's HW at the last
// response, the fetcher's proxy for "not in the ISR"), listed as throttled, while the quota is
// exceeded, is left out of the next fetch request. In-sync partitions are never throttled.
func (t *fetcherThread) shouldFollowerThrottleLocked(tp TopicPartition, s *partitionState) bool {
	q := t.cfg.Quota
	return q != nil && !s.inSync() && q.IsThrottled(tp) && q.IsQuotaExceeded()
}

// inSync is Kafka's FetcherLagStats.isReplicaInSync: lag (leader HW − fetch offset at the last
// response) is zero. A partition with no response yet counts as in sync.
func (s *partitionState) inSync() bool { return s.lag <= 0 }
