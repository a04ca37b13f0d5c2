package replicamanager

import (
	"errors"
	"fmt"

	"github.com/sirupsen/logrus"

	"github.com/isrbroker/isrbroker/fetcher"
	"github.com/isrbroker/isrbroker/logstore"
	"github.com/isrbroker/isrbroker/replicamanager/replevents"
)

// This file implements fetcher.Local: the follower side of replication that the fetcher drives
// (S17–S21, K1). Every call checks that the partition is still a follower; the partition's lock
// serialises fetcher appends with makeLeader/makeFollower.

// followerReplicas implements fetcher.Local over the partitions this broker follows; the replica
// manager hands it to the fetcher manager.
type followerReplicas struct {
	pool *partitionPool
	logs *logstore.Manager // checkpoints a log start offset raised by the leader's
	log  *logrus.Entry
	// purgatory: a follower's HW move completes the consumer fetches parked on it (KIP-392).
	purgatory *purgatory
}

// Followers report their log start offset in their fetches (the low watermark of DeleteRecords
// needs it).
var _ fetcher.LogStartOffsetter = (*followerReplicas)(nil)

// withFollower runs f on tp's partition under its lock (write lock when write), failing with
// ErrNotFollower if this broker does not follow the partition (any more).
func (fr *followerReplicas) withFollower(tp TopicPartition, write bool, f func(p *Partition) error) error {
	p := fr.pool.getPartition(tp)
	if p == nil {
		return notFollowerf(tp, "is not hosted")
	}
	if write {
		p.mu.Lock()
		defer p.mu.Unlock()
	} else {
		p.mu.RLock()
		defer p.mu.RUnlock()
	}
	if p.isLeaderLocked() || p.leaderID < 0 {
		return notFollowerf(tp, "is not a follower")
	}
	return f(p)
}

// LogEndOffset returns the follower's LEO.
func (fr *followerReplicas) LogEndOffset(tp TopicPartition) (leo int64, err error) {
	err = fr.withFollower(tp, false, func(p *Partition) error {
		leo = p.log.LogEndOffset()
		return nil
	})
	return leo, err
}

// LatestEpoch returns the latest leader epoch in the follower's epoch cache (K1).
func (fr *followerReplicas) LatestEpoch(tp TopicPartition) (epoch int32, ok bool, err error) {
	err = fr.withFollower(tp, false, func(p *Partition) error {
		epoch, ok = p.log.LeaderEpochCache().LatestEpoch()
		return nil
	})
	return epoch, ok, err
}

// EndOffsetForEpoch returns the follower's own end offset for epoch (KIP-279).
func (fr *followerReplicas) EndOffsetForEpoch(tp TopicPartition, epoch int32) (found int32, end int64, err error) {
	found, end = -1, -1
	err = fr.withFollower(tp, false, func(p *Partition) error {
		found, end = p.log.LeaderEpochCache().EndOffsetFor(epoch)
		return nil
	})
	return found, end, err
}

// LogStartOffset returns the follower's log start offset, which it reports in its fetch
// requests (Fetch v5+ log_start_offset) so that the leader's low watermark moves (DeleteRecords).
func (fr *followerReplicas) LogStartOffset(tp TopicPartition) (start int64, err error) {
	err = fr.withFollower(tp, false, func(p *Partition) error {
		start = p.log.LogStartOffset()
		return nil
	})
	return start, err
}

// HighWatermark returns the follower's HW.
func (fr *followerReplicas) HighWatermark(tp TopicPartition) (hw int64, err error) {
	err = fr.withFollower(tp, false, func(p *Partition) error {
		hw = p.hw.get()
		return nil
	})
	return hw, err
}

// TruncateTo truncates the follower's log (K1's epoch truncation, S19); the HW follows it down.
func (fr *followerReplicas) TruncateTo(tp TopicPartition, offset int64) error {
	return fr.withFollower(tp, true, func(p *Partition) error {
		return truncated(p, func() error { return p.log.TruncateTo(offset) })
	})
}

// PrepareTruncateTo prepares TruncateTo(tp, offset) without the partition's lock: the copy of
// the kept bytes (logstore's PrepareTruncateTo) runs while LeaderAndIsr, StopReplica and the HW
// checkpoint take the lock as they need; Commit takes it, checks again that this broker follows
// the partition and applies the truncation as TruncateTo does.
func (fr *followerReplicas) PrepareTruncateTo(tp TopicPartition, offset int64) (fetcher.PreparedTruncation, error) {
	var p *Partition
	if err := fr.withFollower(tp, false, func(pp *Partition) error { p = pp; return nil }); err != nil {
		return nil, err
	}
	prep, err := p.log.PrepareTruncateTo(offset)
	if err != nil {
		return nil, err
	}
	return &preparedTruncation{fr: fr, tp: tp, p: p, prep: prep}, nil
}

// preparedTruncation is a follower's prepared truncation (fetcher.PreparedTruncation).
type preparedTruncation struct {
	fr   *followerReplicas
	tp   TopicPartition
	p    *Partition
	prep *logstore.PreparedTruncation
}

// Commit applies the truncation under the partition's lock if this broker still follows the
// partition with the same log, else aborts it (and returns the error withFollower gives).
func (pt *preparedTruncation) Commit() error {
	committed := false
	err := pt.fr.withFollower(pt.tp, true, func(p *Partition) error {
		if p != pt.p {
			return notFollowerf(pt.tp, "was re-created")
		}
		committed = true
		return truncated(p, func() error { return pt.prep.Commit() })
	})
	if !committed {
		pt.prep.Abort()
	}
	return err
}

// Abort drops the prepared truncation.
func (pt *preparedTruncation) Abort() { pt.prep.Abort() }

// truncated runs truncate, a truncation of the follower p's log (p.mu held for writing), and
// makes the HW follow the LEO down.
func truncated(p *Partition, truncate func() error) error {
	before := p.log.LogEndOffset()
	if err := truncate(); err != nil {
		return err
	}
	after := p.log.LogEndOffset()
	p.hw.set(min(p.hw.get(), after))
	if after < before {
		p.logger().WithFields(map[string]any{"from": before, "to": after}).Info("truncated follower log")
		p.record(replevents.Event{Kind: replevents.Truncate, Leader: p.leaderID, LeaderEpoch: p.leaderEpoch,
			FromOffset: before, ToOffset: after, HighWatermark: p.hw.get()})
	}
	return nil
}

// TruncateFullyAndStartAt empties the follower's log and restarts it at offset (S20).
func (fr *followerReplicas) TruncateFullyAndStartAt(tp TopicPartition, offset int64) error {
	return fr.withFollower(tp, true, func(p *Partition) error {
		before := p.log.LogEndOffset()
		if err := p.log.TruncateFullyAndStartAt(offset); err != nil {
			return err
		}
		p.hw.set(offset)
		p.logger().WithField("logStartOffset", offset).Info("emptied follower log; restarting at the leader's log start offset")
		p.record(replevents.Event{Kind: replevents.TruncateFully, Leader: p.leaderID, LeaderEpoch: p.leaderEpoch,
			FromOffset: before, ToOffset: offset, HighWatermark: offset})
		return nil
	})
}

// ProcessPartitionData appends fetched batches as a follower (S18): the leader's offsets and
// epochs are kept, then follower HW = min(leader HW, own LEO) and the log start offset follows
// the leader's.
func (fr *followerReplicas) ProcessPartitionData(tp TopicPartition, fetchOffset int64, records []byte, leaderHW, leaderLogStart int64) (leo int64, err error) {
	startMoved, hwMoved := false, false
	defer func() {
		if startMoved {
			checkpointLogStartOffsets(fr.logs, fr.log) // a DeleteRecords on the leader: keep it across a restart
		}
		if hwMoved && fr.purgatory != nil {
			// Consumers reading from this follower (KIP-392) read up to its HW; Kafka 2.4 lets
			// them wait out max_wait, Kafka 3.4 completes them here (KAFKA-14334).
			fr.purgatory.checkAndComplete(tp)
		}
	}()
	err = fr.withFollower(tp, true, func(p *Partition) error {
		leo = p.log.LogEndOffset()
		if fetchOffset != leo {
			return fmt.Errorf("replicamanager: %s-%d fetch offset %d does not match LEO %d", tp.Topic, tp.Partition, fetchOffset, leo)
		}
		if len(records) > 0 {
			_, err := p.log.AppendAsFollower(records)
			if errors.Is(err, logstore.ErrUnexpectedOffset) && restartEmptyLogAtBatch(p, records) {
				_, err = p.log.AppendAsFollower(records)
			}
			if err != nil {
				leo = p.log.LogEndOffset()
				return err
			}
		}
		leo = p.log.LogEndOffset()
		if before := p.log.LogStartOffset(); leaderLogStart > before && leaderLogStart <= leo {
			p.log.MaybeIncrementLogStartOffset(leaderLogStart)
			startMoved = p.log.LogStartOffset() > before
			p.logger().WithFields(map[string]any{"from": before, "to": p.log.LogStartOffset()}).Info("incremented log start offset to the leader's")
		}
		before := p.hw.get()
		p.hw.set(max(min(leaderHW, leo), p.log.LogStartOffset()))
		hwMoved = p.hw.get() != before
		return nil
	})
	return leo, err
}

// restartEmptyLogAtBatch is Kafka's answer to an UnexpectedAppendOffsetException on an empty
// follower log whose LEO lies inside the fetched record set: the leader's log start is inside a
// batch (a DeleteRecords), the follower started its empty log there, and the leader's read
// returns the whole batch from its first offset. The log is restarted at that first offset, so
// the append fits; the leader's log start is taken again after the append
// (docs/kafka-facts.md §4, "Compaction gaps"). It reports whether it restarted the log (p.mu
// held).
func restartEmptyLogAtBatch(p *Partition, records []byte) bool {
	leo := p.log.LogEndOffset()
	hs, err := logstore.BatchHeaders(records)
	if err != nil || len(hs) == 0 || leo != p.log.LogStartOffset() {
		return false
	}
	first, last := hs[0].BaseOffset, hs[len(hs)-1].LastOffset()
	if first >= leo || last < leo {
		return false
	}
	if err := p.log.TruncateFullyAndStartAt(first); err != nil {
		p.logger().WithError(err).Error("restarting the empty follower log at the fetched batch")
		return false
	}
	p.hw.set(first)
	p.logger().WithFields(map[string]any{"baseOffset": first, "logStartOffset": leo}).
		Info("first fetched batch starts below the empty follower log's start; restarting the log at its first offset")
	p.record(replevents.Event{Kind: replevents.TruncateFully, Leader: p.leaderID, LeaderEpoch: p.leaderEpoch,
		FromOffset: leo, ToOffset: first, HighWatermark: first})
	return true
}

// ErrNotFollower is returned to the fetcher for partitions no longer followed here.
var ErrNotFollower = fetcher.ErrNotFollower

func notFollowerf(tp TopicPartition, why string) error {
	return fmt.Errorf("%w: %s-%d %s", ErrNotFollower, tp.Topic, tp.Partition, why)
}
