package replicamanager

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/isrbroker/isrbroker/logstore"
)

// This file is the DeleteRecords path (KIP-107, docs/delete-records.md): the leader
// raises its log start offset, then the request waits in the purgatory until the partition's low
// watermark — the smallest log start offset of the leader and of its followers on live brokers —
// reaches the requested offset. Followers learn the leader's log start offset from their fetch
// responses (ProcessPartitionData) and report theirs in their fetch requests (LogStartOffset),
// which moves the low watermark (fetchRead re-checks the purgatory when it changes).

// DeleteRecordsPartition asks to delete the records of a partition below Offset (-1: the HW).
type DeleteRecordsPartition struct {
	TopicPartition
	Offset int64
}

// DeleteRecordsResult answers one DeleteRecordsPartition: the partition's low watermark, or an
// error code (LowWatermark -1).
type DeleteRecordsResult struct {
	TopicPartition
	ErrorCode    int16
	LowWatermark int64
}

// internalTopics are the topics whose records DeleteRecords refuses (Kafka's Topic.isInternal).
var internalTopics = map[string]bool{"__consumer_offsets": true, "__transaction_state": true}

// deleteRecords is the DeleteRecords path of the replica manager (Kafka's deleteRecords and
// DelayedDeleteRecords).
type deleteRecords struct {
	pool      *partitionPool
	purgatory *purgatory
	logs      *logstore.Manager
	log       *logrus.Entry

	// aliveBroker tells whether a broker is live: only the followers on live brokers count in
	// the low watermark (Kafka's Partition.lowWatermarkIfLeader); set by main (SetAliveBroker).
	aliveBroker atomic.Pointer[func(int32) bool]
}

func (d *deleteRecords) brokerAlive(id int32) bool {
	f := d.aliveBroker.Load()
	return f == nil || (*f)(id)
}

// DeleteRecords deletes the records below each partition's requested offset on the partitions
// this broker leads (ReplicaManager.deleteRecords) and answers through done: at once when every
// partition errored or its low watermark already reached the offset, else when they all did,
// leadership moved, or timeout passed (REQUEST_TIMED_OUT for the partitions still waiting). The
// new log start offsets are checkpointed before the answer, so a restart keeps them.
func (d *deleteRecords) DeleteRecords(timeout time.Duration, parts []DeleteRecordsPartition, done func([]DeleteRecordsResult)) {
	results := make([]DeleteRecordsResult, len(parts))
	required := make(map[int]int64) // index in parts → offset the low watermark must reach
	moved := false
	for i, part := range parts {
		r := &results[i]
		r.TopicPartition, r.LowWatermark = part.TopicPartition, -1
		if internalTopics[part.Topic] {
			r.ErrorCode = kerr.InvalidTopicException.Code
			continue
		}
		p := d.pool.getPartition(part.TopicPartition)
		if p == nil {
			r.ErrorCode = d.pool.notHostedCode(part.TopicPartition)
			continue
		}
		offset, lw, code := d.onLeader(p, part.Offset)
		if code != 0 {
			r.ErrorCode = code
			continue
		}
		moved = true
		r.LowWatermark = lw
		if lw < offset {
			required[i] = offset
		}
	}
	if moved {
		checkpointLogStartOffsets(d.logs, d.log)
	}
	if len(required) == 0 {
		done(results)
		return
	}
	keys := make([]TopicPartition, 0, len(required))
	for i := range required {
		keys = append(keys, parts[i].TopicPartition)
	}
	// As Kafka's DelayedDeleteRecords, each partition's answer is fixed the first time it is
	// done (its low watermark reached the offset, or an error such as NOT_LEADER_FOR_PARTITION)
	// and never re-evaluated, even if it leads again before the others are done; the partitions
	// still pending at expiry answer REQUEST_TIMED_OUT. try may run on several goroutines at
	// once: mu guards required and results.
	var mu sync.Mutex
	answered := false
	op := &delayedOp{keys: keys}
	op.try = func() bool {
		mu.Lock()
		defer mu.Unlock()
		if answered {
			return true
		}
		for i, offset := range required {
			lw, code := d.lowWatermark(parts[i].TopicPartition)
			switch {
			case code != 0:
				results[i].ErrorCode, results[i].LowWatermark = code, -1
			case lw >= offset:
				results[i].LowWatermark = lw
			default:
				continue
			}
			delete(required, i)
		}
		return len(required) == 0
	}
	op.complete = func(bool) {
		mu.Lock()
		answered = true
		for i := range required {
			results[i].ErrorCode = kerr.RequestTimedOut.Code
		}
		clear(required)
		mu.Unlock()
		done(results)
	}
	if timeout <= 0 {
		timeout = time.Millisecond
	}
	d.purgatory.tryCompleteElseWatch(op, timeout)
}

// lowWatermark returns tp's low watermark when this broker leads it, else the error of
// DelayedDeleteRecords.tryComplete.
func (d *deleteRecords) lowWatermark(tp TopicPartition) (int64, int16) {
	p := d.pool.getPartition(tp)
	if p == nil {
		return -1, kerr.UnknownTopicOrPartition.Code
	}
	p.mu.RLock()
	defer p.mu.RUnlock()
	if !p.isLeaderLocked() || p.leader == nil {
		return -1, kerr.NotLeaderForPartition.Code
	}
	return d.lowWatermarkLocked(p), 0
}

// checkpointLogStartOffsets writes log-start-offset-checkpoint now, so that a log start offset
// raised by DeleteRecords survives even an unclean restart (Kafka waits for the next periodic
// checkpoint; isrbroker writes it at once: DeleteRecords is rare).
func checkpointLogStartOffsets(logs *logstore.Manager, log *logrus.Entry) {
	if err := logs.Checkpoint(); err != nil {
		log.WithError(err).Warn("writing log-start-offset-checkpoint after a log start offset change")
	}
}

// onLeader raises the leader p's log start offset to offset (-1: the HW) as Kafka's
// Partition.deleteRecordsOnLeader: NOT_LEADER_FOR_PARTITION when not leading,
// POLICY_VIOLATION when the topic's cleanup.policy lacks delete, OFFSET_OUT_OF_RANGE for a
// negative offset or one above the HW (Log.maybeIncrementLogStartOffset). It returns the
// requested offset and the low watermark after the change.
func (d *deleteRecords) onLeader(p *Partition, offset int64) (int64, int64, int16) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if !p.isLeaderLocked() || p.leader == nil {
		return -1, -1, kerr.NotLeaderForPartition.Code
	}
	if !p.log.Config().CleanupPolicy.Delete() {
		return -1, -1, kerr.PolicyViolation.Code
	}
	hw := p.hw.get()
	if offset == -1 {
		offset = hw
	}
	if offset < 0 || offset > hw {
		return -1, -1, kerr.OffsetOutOfRange.Code
	}
	before := p.log.LogStartOffset()
	p.log.MaybeIncrementLogStartOffset(offset)
	if after := p.log.LogStartOffset(); after > before {
		p.logger().WithFields(logrus.Fields{"from": before, "to": after}).Info("incremented log start offset (DeleteRecords)")
	}
	return offset, d.lowWatermarkLocked(p), 0
}

// lowWatermarkLocked is Kafka's Partition.lowWatermarkIfLeader for p: the smallest log start
// offset of the leader and of the followers on live brokers (a follower that has not fetched in
// this leader epoch counts with its unknown log start, so the low watermark waits for its first
// fetch). Callers hold p.mu and lead the partition.
func (d *deleteRecords) lowWatermarkLocked(p *Partition) int64 {
	lw := p.log.LogStartOffset()
	for _, id := range p.leader.Assigned() {
		if !p.leader.IsFollower(id) || !d.brokerAlive(id) {
			continue
		}
		if pr, ok := p.leader.Progress(id); ok {
			start := pr.LogStartOffset
			if pr.LEO < 0 {
				start = -1
			}
			lw = min(lw, start)
		}
	}
	return lw
}

// followerLogStartChangedLocked reports whether a follower's fetch carries a log start offset
// other than the one the leader knows: then the low watermark may move and parked DeleteRecords
// are re-checked. Callers hold p.mu.
func followerLogStartChangedLocked(p *Partition, id int32, logStart int64) bool {
	if p.leader == nil {
		return false
	}
	pr, ok := p.leader.Progress(id)
	return ok && (pr.LEO < 0 || pr.LogStartOffset != logStart)
}
