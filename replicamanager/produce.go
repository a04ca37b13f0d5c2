package replicamanager

import (
	"errors"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/isrbroker/isrbroker/logstore"
)

// This file is the produce path (S14.5, K2): appends as leader and the acks=-1 delayed produce.

// appender is the produce path of the replica manager (Kafka's appendRecords).
type appender struct {
	pool       *partitionPool
	purgatory  *purgatory
	topicStats *BrokerTopicStats // the produce side of the BrokerTopicMetrics
	now        func() time.Time
}

// AppendRecords appends produce data to the partitions this broker leads and answers through
// done: at once for acks 0/1, and for acks=-1 once every partition is done — its HW passed the
// last offset, or it lost leadership — or timeout expires (K2, docs/kafka-facts.md §3).
func (a *appender) AppendRecords(timeout time.Duration, acks int16, entries map[TopicPartition][]byte, done func(map[TopicPartition]ProduceResult)) {
	now := a.now()
	results := make(map[TopicPartition]ProduceResult, len(entries))
	pending := make(map[TopicPartition]producePending, len(entries))
	for tp, records := range entries {
		p := a.pool.getPartition(tp)
		if p == nil {
			results[tp] = ProduceResult{ErrorCode: a.pool.notHostedCode(tp), BaseOffset: -1, LogAppendTime: -1, LogStartOffset: -1}
			continue
		}
		info, epoch, code, err := p.appendAsLeader(records, acks, now)
		a.topicStats.markProduce(tp.Topic, code, info.NumRecords, len(records))
		if code != 0 {
			results[tp] = failedProduce(tp, code, err)
			continue
		}
		results[tp] = ProduceResult{BaseOffset: info.FirstOffset, LogAppendTime: info.LogAppendTime, LogStartOffset: p.log.LogStartOffset()}
		pending[tp] = producePending{requiredOffset: info.LastOffset + 1, leaderEpoch: epoch}
		// Wake parked follower fetches (new data) and produces (the HW may have moved).
		a.purgatory.checkAndComplete(tp)
	}
	if acks != -1 || len(pending) == 0 {
		done(results)
		return
	}
	dp := &delayedProduce{pool: a.pool, pending: pending, results: results}
	keys := make([]TopicPartition, 0, len(pending))
	for tp := range pending {
		keys = append(keys, tp)
	}
	op := &delayedOp{keys: keys, try: dp.tryComplete}
	op.complete = func(bool) { done(dp.answer()) }
	if timeout <= 0 {
		timeout = time.Millisecond
	}
	a.purgatory.tryCompleteElseWatch(op, timeout)
}

// failedProduce is the answer of a partition whose append failed with code. When the log
// refused the batch because of one of its records (Kafka's RecordValidationException),
// Kafka 2.4's appendToLocalLog answers the record's index with a null message and the
// exception's message as error_message (docs/kafka-facts.md §13); for any other error both
// stay empty.
func failedProduce(tp TopicPartition, code int16, err error) ProduceResult {
	res := ProduceResult{ErrorCode: code, BaseOffset: -1, LogAppendTime: -1, LogStartOffset: -1}
	var re *logstore.RecordError
	if errors.As(err, &re) {
		res.RecordErrors = []RecordError{{BatchIndex: re.BatchIndex}}
		res.ErrorMessage = re.Message(tp)
	}
	return res
}

// producePending is a partition of a delayed produce whose acknowledgement is still pending:
// the offset the HW must reach and the leader epoch the records were appended in.
type producePending struct {
	requiredOffset int64
	leaderEpoch    int32
}

// delayedProduce is Kafka's DelayedProduce (docs/kafka-facts.md §3): each partition's answer is
// fixed the first time the partition is done (the HW passed its records, or an error such as
// NOT_LEADER_FOR_PARTITION) and never re-evaluated, so a partition that lost leadership keeps
// that answer even if it leads again, with its HW past the offset, before the others are done.
// The partitions still pending at expiry answer REQUEST_TIMED_OUT. try may run on several
// goroutines at once: mu guards the state.
type delayedProduce struct {
	pool     *partitionPool
	mu       sync.Mutex
	pending  map[TopicPartition]producePending
	results  map[TopicPartition]ProduceResult
	answered bool
}

// tryComplete checks the pending partitions and reports whether none is left.
func (dp *delayedProduce) tryComplete() bool {
	dp.mu.Lock()
	defer dp.mu.Unlock()
	if dp.answered {
		return true
	}
	for tp, st := range dp.pending {
		var code int16
		if p := dp.pool.getPartition(tp); p == nil {
			code = dp.pool.notHostedCode(tp)
		} else if ok, c := p.checkEnoughReplicasReachOffset(st.requiredOffset, st.leaderEpoch); ok {
			code = c
		} else {
			continue
		}
		r := dp.results[tp]
		r.ErrorCode = code
		dp.results[tp] = r
		delete(dp.pending, tp)
	}
	return len(dp.pending) == 0
}

// answer fixes the partitions still pending as REQUEST_TIMED_OUT (none when tryComplete
// completed the produce) and returns the results; later tries change nothing.
func (dp *delayedProduce) answer() map[TopicPartition]ProduceResult {
	dp.mu.Lock()
	defer dp.mu.Unlock()
	dp.answered = true
	for tp := range dp.pending {
		r := dp.results[tp]
		r.ErrorCode = kerr.RequestTimedOut.Code
		dp.results[tp] = r
	}
	clear(dp.pending)
	return dp.results
}
