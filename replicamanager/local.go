package replicamanager

import (
	"fmt"
)

// This file implements fetcher.Local: the follower side of replication that the fetcher drives
// (S17–S21, K1). Every call checks that the partition is still a follower; the partition's lock
// serialises fetcher appends with makeLeader/makeFollower.

// followerPartition returns the partition if this broker follows it.
func (rm *ReplicaManager) followerPartition(tp TopicPartition) (*Partition, error) {
	p := rm.getPartition(tp)
	if p == nil {
		return nil, notFollowerf(tp, "is not hosted")
	}
	return p, nil
}

func (p *Partition) checkFollowerLocked() error {
	if p.isLeaderLocked() || p.leaderID < 0 {
		return notFollowerf(p.tp, "is not a follower")
	}
	return nil
}

// LogEndOffset returns the follower's LEO.
func (rm *ReplicaManager) LogEndOffset(tp TopicPartition) (int64, error) {
	p, err := rm.followerPartition(tp)
	if err != nil {
		return 0, err
	}
	p.mu.RLock()
	defer p.mu.RUnlock()
	if err := p.checkFollowerLocked(); err != nil {
		return 0, err
	}
	return p.log.LogEndOffset(), nil
}

// LatestEpoch returns the latest leader epoch in the follower's epoch cache (K1).
func (rm *ReplicaManager) LatestEpoch(tp TopicPartition) (int32, bool, error) {
	p, err := rm.followerPartition(tp)
	if err != nil {
		return 0, false, err
	}
	p.mu.RLock()
	defer p.mu.RUnlock()
	if err := p.checkFollowerLocked(); err != nil {
		return 0, false, err
	}
	e, ok := p.log.LatestEpoch()
	return e, ok, nil
}

// EndOffsetForEpoch returns the follower's own end offset for epoch (KIP-279).
func (rm *ReplicaManager) EndOffsetForEpoch(tp TopicPartition, epoch int32) (int32, int64, error) {
	p, err := rm.followerPartition(tp)
	if err != nil {
		return -1, -1, err
	}
	p.mu.RLock()
	defer p.mu.RUnlock()
	if err := p.checkFollowerLocked(); err != nil {
		return -1, -1, err
	}
	e, off := p.log.EndOffsetForEpoch(epoch)
	return e, off, nil
}

// HighWatermark returns the follower's HW.
func (rm *ReplicaManager) HighWatermark(tp TopicPartition) (int64, error) {
	p, err := rm.followerPartition(tp)
	if err != nil {
		return 0, err
	}
	p.mu.RLock()
	defer p.mu.RUnlock()
	if err := p.checkFollowerLocked(); err != nil {
		return 0, err
	}
	return p.hw, nil
}

// TruncateTo truncates the follower's log (K1's epoch truncation, S19); the HW follows it down.
func (rm *ReplicaManager) TruncateTo(tp TopicPartition, offset int64) error {
	p, err := rm.followerPartition(tp)
	if err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.checkFollowerLocked(); err != nil {
		return err
	}
	before := p.log.LogEndOffset()
	if err := p.log.TruncateTo(offset); err != nil {
		return err
	}
	if leo := p.log.LogEndOffset(); p.hw > leo {
		p.hw = leo
	}
	if after := p.log.LogEndOffset(); after < before {
		p.logger().WithFields(map[string]any{"from": before, "to": after}).Info("truncated follower log")
	}
	return nil
}

// TruncateFullyAndStartAt empties the follower's log and restarts it at offset (S20).
func (rm *ReplicaManager) TruncateFullyAndStartAt(tp TopicPartition, offset int64) error {
	p, err := rm.followerPartition(tp)
	if err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.checkFollowerLocked(); err != nil {
		return err
	}
	if err := p.log.TruncateFullyAndStartAt(offset); err != nil {
		return err
	}
	p.hw = offset
	p.logger().WithField("offset", offset).Info("emptied follower log; restarting at the leader's log start offset")
	return nil
}

// ProcessPartitionData appends fetched batches as a follower (S18): the leader's offsets and
// epochs are kept, then follower HW = min(leader HW, own LEO) and the log start offset follows
// the leader's.
func (rm *ReplicaManager) ProcessPartitionData(tp TopicPartition, fetchOffset int64, records []byte, leaderHW, leaderLogStart int64) (int64, error) {
	p, err := rm.followerPartition(tp)
	if err != nil {
		return 0, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.checkFollowerLocked(); err != nil {
		return 0, err
	}
	if leo := p.log.LogEndOffset(); fetchOffset != leo {
		return leo, fmt.Errorf("replicamanager: %s-%d fetch offset %d does not match LEO %d", tp.Topic, tp.Partition, fetchOffset, leo)
	}
	if len(records) > 0 {
		if _, err := p.log.AppendAsFollower(records); err != nil {
			return p.log.LogEndOffset(), err
		}
	}
	leo := p.log.LogEndOffset()
	if leaderLogStart > p.log.LogStartOffset() && leaderLogStart <= leo {
		p.log.MaybeIncrementLogStartOffset(leaderLogStart)
	}
	p.hw = max(min(leaderHW, leo), p.log.LogStartOffset())
	return leo, nil
}
