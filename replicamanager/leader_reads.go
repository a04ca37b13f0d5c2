package replicamanager

import (
	"slices"
	"sync/atomic"
	"time"

	"github.com/isrbroker/isrbroker/logstore/record"
	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
)

// leaderReads is the read path of a leader: Fetch from consumers and followers (with the
// delayed fetch of S14.5 and the leader-side replication throttle of issue 4), ListOffsets and
// OffsetForLeaderEpoch (K1). Consumers' fetches with client metadata (Fetch v11+) are also
// served on a follower, and on the leader may be sent to a preferred read replica (KIP-392,
// read_replica.go). Follower fetches also record the follower's progress, which may
// advance the HW. It also reads the local replica whatever its role: ReadLocal (leadership.go)
// and the debugging ListOffsetsAnyReplica (debug_offsets.go).
type leaderReads struct {
	pool      *partitionPool
	brokerID  int32
	now       func() time.Time
	quota     *replicationQuota // the leader side of the replication throttle (quota.go)
	purgatory *purgatory
	log       *logrus.Entry
	rackAware bool                            // replica.selector.class is RackAwareReplicaSelector (KIP-392)
	endpoint  atomic.Pointer[ReplicaEndpoint] // the metadata cache's replica endpoints; nil: none chosen
}

// fetchRead reads every partition of a fetch once. Consumers read below the HW, followers up to
// the LEO (S7). A consumer fetch with client metadata (KIP-392) may also read on a follower, up to
// the follower's HW, and on the leader may get a preferred read replica and no records. When updateFollowers is set and the fetch comes from a follower, the leader records
// the follower's fetch offset as its LEO (docs/kafka-facts.md §3). throttledBytes is the part of
// bytes read for leader-throttled replicas outside the ISR (issue 4), to be recorded against the
// leader quota once the response is sent.
func (lr *leaderReads) fetchRead(fp FetchParams, updateFollowers bool) (results []FetchPartitionResult, bytes int, errored bool, throttledBytes int) {
	fromFollower := fp.ReplicaID >= 0
	// Kafka's fetchOnlyFromLeader: followers, and consumers without client metadata (before v11).
	onlyLeader := fromFollower || fp.Client == nil
	remaining := int64(fp.MaxBytes)
	if remaining <= 0 {
		remaining = 1<<31 - 1
	}
	minOne := true // KIP-74: the first batch is returned whole even when larger than the limits
	now := lr.now()
	results = make([]FetchPartitionResult, len(fp.Partitions))
	for i, part := range fp.Partitions {
		r := &results[i]
		r.TopicPartition = part.TopicPartition
		r.HighWatermark, r.LastStableOffset, r.LogStartOffset = -1, -1, -1
		p := lr.pool.getPartition(part.TopicPartition)
		if p == nil {
			r.ErrorCode = lr.pool.notHostedCode(part.TopicPartition)
			errored = true
			continue
		}
		p.mu.RLock()
		if p.offline {
			p.mu.RUnlock()
			r.ErrorCode = storageErrorCode
			errored = true
			continue
		}
		if onlyLeader && !p.isLeaderLocked() {
			p.mu.RUnlock()
			r.ErrorCode = kerr.NotLeaderForPartition.Code
			errored = true
			continue
		}
		if code := p.checkLeaderEpochLocked(part.CurrentLeaderEpoch); code != 0 {
			p.mu.RUnlock()
			r.ErrorCode = code
			errored = true
			continue
		}
		hw, leo, logStart := p.hw.get(), p.log.LogEndOffset(), p.log.LogStartOffset()
		if !fromFollower && p.isLeaderLocked() {
			if id, ok := lr.preferredReadReplicaLocked(p, fp.Client, part.FetchOffset, now); ok {
				// KIP-392: no read; the offsets as the leader knows them (fetchOffsetSnapshot).
				p.mu.RUnlock()
				r.HighWatermark, r.LastStableOffset, r.LogStartOffset = hw, hw, logStart
				r.HasPreferredReadReplica, r.PreferredReadReplica = true, id
				continue
			}
		}
		throttled := fromFollower && lr.throttledFollowerLocked(p, fp.ReplicaID)
		// Only an assigned follower reads to the LEO and counts as a follower's progress;
		// Kafka answers any other replica_id >= 0 with no records (updateFollowerFetchState
		// fails, withEmptyFetchInfo).
		unassigned := fromFollower && (p.leader == nil || !p.leader.IsFollower(fp.ReplicaID))
		logStartChanged := fromFollower && followerLogStartChangedLocked(p, fp.ReplicaID, part.LogStartOffset)
		p.mu.RUnlock()
		maxOffset := hw
		if fromFollower {
			maxOffset = leo
		}
		limit := min(int64(part.PartitionMaxBytes), remaining)
		if part.PartitionMaxBytes <= 0 {
			limit = remaining
		}
		var records []byte
		var files record.FileRecords
		var err error
		if unassigned {
			lr.log.WithFields(logrus.Fields{"topic": part.Topic, "partition": part.Partition, "replica": fp.ReplicaID}).
				Warn("fetch from a replica id that is not an assigned follower; answering with no records")
			records = nil
		} else if throttled && lr.quota.IsQuotaExceeded() {
			// Issue 4 (shouldLeaderThrottle): a throttled replica outside the ISR gets no records
			// while the leader quota is exceeded; not an error, its fetch state is still updated.
			records = nil
		} else if fp.FileRecords {
			files, err = p.log.ReadRegions(part.FetchOffset, int32(limit), maxOffset, minOne)
		} else {
			records, err = p.log.Read(part.FetchOffset, int32(limit), maxOffset, minOne)
		}
		r.HighWatermark, r.LastStableOffset, r.LogStartOffset = hw, hw, logStart
		if err != nil {
			r.ErrorCode = logErrorCode(err)
			errored = true
			continue
		}
		r.Records, r.Files = records, files
		if n := len(records) + int(files.Len); n > 0 {
			minOne = false
			remaining -= int64(n)
			bytes += n
			if throttled {
				throttledBytes += n
			}
		}
		if fromFollower && updateFollowers && !unassigned {
			if p.updateFollowerFetchState(fp.ReplicaID, part.FetchOffset, part.LogStartOffset, leo, now) || logStartChanged {
				// The HW moved: acks=-1 produces and consumer fetches may complete (architecture
				// step 5); or the follower's log start moved: so may DeleteRecords (low watermark).
				lr.purgatory.checkAndComplete(part.TopicPartition)
			}
		}
	}
	return results, bytes, errored, throttledBytes
}

// throttledFollowerLocked is the first half of Kafka's shouldLeaderThrottle: the follower
// replicaID is not in the ISR and p is listed in leader.replication.throttled.replicas for this
// broker (with a leader rate set). Callers hold p.mu.
func (lr *leaderReads) throttledFollowerLocked(p *Partition, replicaID int32) bool {
	return (p.leader == nil || !p.leader.InISR(replicaID)) && lr.quota.IsThrottled(p.tp)
}

// FetchMessages serves a fetch from a consumer or a follower. It answers at once when max_wait is
// zero, enough bytes are readable, or a partition errored; otherwise it parks in the purgatory until
// new data arrives (an append for followers, a HW move for consumers), leadership changes, or
// max_wait expires (S14.5's delayed fetch).
func (lr *leaderReads) FetchMessages(fp FetchParams, done func([]FetchPartitionResult)) {
	results, bytes, errored, throttledBytes := lr.fetchRead(fp, true)
	minBytes := max(int(fp.MinBytes), 1)
	// A preferred read replica answers at once (KAFKA-13767; Kafka 2.4 parked such a fetch until
	// max_wait, docs/kafka-facts.md §15).
	redirected := slices.ContainsFunc(results, func(r FetchPartitionResult) bool { return r.HasPreferredReadReplica })
	if fp.MaxWait <= 0 || len(fp.Partitions) == 0 || bytes >= minBytes || errored || redirected {
		lr.quota.Record(int64(throttledBytes))
		done(results)
		return
	}
	fromFollower := fp.ReplicaID >= 0
	onlyLeader := fromFollower || fp.Client == nil
	keys := make([]TopicPartition, len(fp.Partitions))
	for i, part := range fp.Partitions {
		keys[i] = part.TopicPartition
	}
	op := &delayedOp{keys: keys}
	op.try = func() bool {
		ready := false
		for _, part := range fp.Partitions {
			p := lr.pool.getPartition(part.TopicPartition)
			if p == nil {
				return true
			}
			v := p.view()
			if (onlyLeader && !v.isLeader) || (part.CurrentLeaderEpoch >= 0 && part.CurrentLeaderEpoch != v.leaderEpoch) {
				return true
			}
			end := v.hw
			if fromFollower {
				if fp.ReplicaID == lr.brokerID || !slices.Contains(v.assigned, fp.ReplicaID) {
					continue // never anything to answer but no records (fetchRead)
				}
				end = v.leo
			}
			if part.FetchOffset > v.leo || part.FetchOffset < v.logStart {
				return true // now out of range: answer with the error
			}
			if fromFollower && !slices.Contains(v.isr, fp.ReplicaID) && lr.quota.IsThrottled(part.TopicPartition) &&
				lr.quota.IsQuotaExceeded() {
				continue // issue 4: throttled data does not complete the delayed fetch (DelayedFetch)
			}
			if end > part.FetchOffset {
				ready = true
			}
		}
		if !ready {
			return false
		}
		if minBytes <= 1 {
			return true
		}
		_, n, errored, _ := lr.fetchRead(fp, false)
		return errored || n >= minBytes
	}
	op.complete = func(bool) {
		results, _, _, throttledBytes := lr.fetchRead(fp, false)
		lr.quota.Record(int64(throttledBytes))
		done(results)
	}
	lr.purgatory.tryCompleteElseWatch(op, fp.MaxWait)
}

// leaderPartition returns tp's partition and a consistent view of it when this broker leads it
// at the client's current_leader_epoch (KIP-320), else the error code to answer.
func (lr *leaderReads) leaderPartition(tp TopicPartition, currentLeaderEpoch int32) (*Partition, partitionView, int16) {
	p := lr.pool.getPartition(tp)
	if p == nil {
		return nil, partitionView{}, lr.pool.notHostedCode(tp)
	}
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.offline {
		return nil, partitionView{}, storageErrorCode
	}
	if !p.isLeaderLocked() {
		return nil, partitionView{}, kerr.NotLeaderForPartition.Code
	}
	if code := p.checkLeaderEpochLocked(currentLeaderEpoch); code != 0 {
		return nil, partitionView{}, code
	}
	return p, p.viewLocked(), 0
}

// ListOffsets answers earliest (-2), latest (-1) and by-timestamp lookups on partitions led here.
// Consumers' latest is the HW; a replica's is the LEO.
func (lr *leaderReads) ListOffsets(replicaID int32, isolationLevel int8, parts []ListOffsetsPartition) []ListOffsetsResult {
	out := make([]ListOffsetsResult, len(parts))
	for i, part := range parts {
		r := &out[i]
		r.TopicPartition = part.TopicPartition
		r.Timestamp, r.Offset, r.LeaderEpoch = -1, -1, -1
		p, v, code := lr.leaderPartition(part.TopicPartition, part.CurrentLeaderEpoch)
		if code != 0 {
			r.ErrorCode = code
			continue
		}
		hw, leo, start, epoch := v.hw, v.leo, v.logStart, v.leaderEpoch
		end := hw
		if replicaID >= 0 {
			end = leo
		}
		r.LeaderEpoch = epoch
		switch part.Timestamp {
		case -2:
			r.Offset = start
		case -1:
			r.Offset = end
		default:
			off, ts, ok := p.log.OffsetForTimestamp(part.Timestamp)
			if ok && off < end {
				r.Offset, r.Timestamp = off, ts
			}
		}
	}
	return out
}

// LastOffsetForLeaderEpoch answers OffsetForLeaderEpoch (K1, KIP-279): the largest epoch <= the
// requested one and its end offset, from the leader's epoch cache.
func (lr *leaderReads) LastOffsetForLeaderEpoch(replicaID int32, parts []EpochEndOffsetRequest) []EpochEndOffsetResult {
	out := make([]EpochEndOffsetResult, len(parts))
	for i, part := range parts {
		r := &out[i]
		r.TopicPartition = part.TopicPartition
		r.LeaderEpoch, r.EndOffset = -1, -1
		p, _, code := lr.leaderPartition(part.TopicPartition, part.CurrentLeaderEpoch)
		if code != 0 {
			r.ErrorCode = code
			continue
		}
		r.LeaderEpoch, r.EndOffset = p.log.LeaderEpochCache().EndOffsetFor(part.LeaderEpoch)
	}
	return out
}
