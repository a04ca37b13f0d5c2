package replicamanager

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// This file is the produce path (S14.5, K2): appends as leader and the acks=-1 delayed produce.

// AppendRecords appends produce data to the partitions this broker leads and answers through
// done: at once for acks 0/1, and for acks=-1 once the HW passes the last offset, the ISR shrinks
// below min.insync.replicas, leadership moves, or timeout expires (K2).
func (rm *ReplicaManager) AppendRecords(timeout time.Duration, acks int16, entries map[TopicPartition][]byte, done func(map[TopicPartition]ProduceResult)) {
	now := rm.now()
	results := make(map[TopicPartition]ProduceResult, len(entries))
	required := make(map[TopicPartition]int64, len(entries))
	for tp, records := range entries {
		p := rm.getPartition(tp)
		if p == nil {
			results[tp] = ProduceResult{ErrorCode: rm.notHostedCode(tp), BaseOffset: -1, LogAppendTime: -1, LogStartOffset: -1}
			continue
		}
		info, code := p.appendAsLeader(records, acks, now)
		rm.topicStats.markProduce(tp.Topic, code, info.NumRecords, len(records))
		if code != 0 {
			results[tp] = ProduceResult{ErrorCode: code, BaseOffset: -1, LogAppendTime: -1, LogStartOffset: -1}
			continue
		}
		results[tp] = ProduceResult{BaseOffset: info.FirstOffset, LogAppendTime: info.LogAppendTime, LogStartOffset: p.log.LogStartOffset()}
		required[tp] = info.LastOffset + 1
		// Wake parked follower fetches (new data) and produces (the HW may have moved).
		rm.purgatory.checkAndComplete(tp)
	}
	if acks != -1 || len(required) == 0 {
		done(results)
		return
	}
	keys := make([]TopicPartition, 0, len(required))
	for tp := range required {
		keys = append(keys, tp)
	}
	op := &delayedOp{keys: keys}
	op.try = func() bool {
		for tp, off := range required {
			p := rm.getPartition(tp)
			if p == nil {
				continue
			}
			if ok, _ := p.checkEnoughReplicasReachOffset(off); !ok {
				return false
			}
		}
		return true
	}
	op.complete = func(expired bool) {
		for tp, off := range required {
			r := results[tp]
			p := rm.getPartition(tp)
			if p == nil {
				r.ErrorCode = kerr.NotLeaderForPartition.Code
			} else if ok, code := p.checkEnoughReplicasReachOffset(off); ok {
				r.ErrorCode = code
			} else {
				r.ErrorCode = kerr.RequestTimedOut.Code
			}
			results[tp] = r
		}
		done(results)
	}
	if timeout <= 0 {
		timeout = time.Millisecond
	}
	rm.purgatory.tryCompleteElseWatch(op, timeout)
}
