package txncoord

import (
	"fmt"
	"math"
	"sort"
	"sync"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TxnState is a transaction's state (TransactionMetadata.scala 2.4.1, docs/transactions.md §3):
// kmsg's TransactionState, whose bytes are those Kafka writes.
type TxnState = kmsg.TransactionState

// The states.
const (
	Empty             = kmsg.TransactionStateEmpty
	Ongoing           = kmsg.TransactionStateOngoing
	PrepareCommit     = kmsg.TransactionStatePrepareCommit
	PrepareAbort      = kmsg.TransactionStatePrepareAbort
	CompleteCommit    = kmsg.TransactionStateCompleteCommit
	CompleteAbort     = kmsg.TransactionStateCompleteAbort
	Dead              = kmsg.TransactionStateDead
	PrepareEpochFence = kmsg.TransactionStatePrepareEpochFence
)

// noProducerEpoch is RecordBatch.NO_PRODUCER_EPOCH.
const noProducerEpoch int16 = -1

// validPreviousStates is TransactionMetadata.validPreviousStates.
var validPreviousStates = map[kmsg.TransactionState][]kmsg.TransactionState{
	Empty:             {Empty, CompleteCommit, CompleteAbort},
	Ongoing:           {Ongoing, Empty, CompleteCommit, CompleteAbort},
	PrepareCommit:     {Ongoing},
	PrepareAbort:      {Ongoing, PrepareEpochFence},
	CompleteCommit:    {PrepareCommit},
	CompleteAbort:     {PrepareAbort},
	Dead:              {Empty, CompleteAbort, CompleteCommit},
	PrepareEpochFence: {Ongoing},
}

// isValidTransition is TransactionMetadata.isValidTransition.
func isValidTransition(from, to kmsg.TransactionState) bool {
	for _, s := range validPreviousStates[to] {
		if s == from {
			return true
		}
	}
	return false
}

// transit is TxnTransitMetadata: the target of a transition, written to the log before the
// cached metadata takes it (completeTransitionTo).
type transit struct {
	producerID    int64
	producerEpoch int16
	timeoutMs     int32
	state         kmsg.TransactionState
	partitions    map[topicPartition]struct{}
	start         int64
	lastUpdate    int64
}

func (t transit) record() txnRecord {
	return txnRecord{producerID: t.producerID, producerEpoch: t.producerEpoch, timeoutMs: t.timeoutMs,
		state: t.state, partitions: t.partitions, lastUpdate: t.lastUpdate, start: t.start}
}

// txnMetadata is TransactionMetadata: one transactional id's producer id and epoch, state,
// partitions and timestamps, and the pending state of a transition whose record is being
// written. mu guards every field but id.
type txnMetadata struct {
	id string

	mu            sync.Mutex
	producerID    int64
	producerEpoch int16
	timeoutMs     int32
	state         kmsg.TransactionState
	pending       kmsg.TransactionState
	hasPending    bool
	partitions    map[topicPartition]struct{}
	start         int64 // txnStartTimestamp, -1: none
	lastUpdate    int64 // txnLastUpdateTimestamp
}

func newTxnMetadata(id string, producerID int64, epoch int16, timeoutMs int32, state kmsg.TransactionState, now int64) *txnMetadata {
	return &txnMetadata{id: id, producerID: producerID, producerEpoch: epoch, timeoutMs: timeoutMs, state: state,
		partitions: map[topicPartition]struct{}{}, start: -1, lastUpdate: now}
}

func metadataFromRecord(id string, r txnRecord) *txnMetadata {
	m := newTxnMetadata(id, r.producerID, r.producerEpoch, r.timeoutMs, r.state, r.lastUpdate)
	m.start = r.start
	for p := range r.partitions {
		m.partitions[p] = struct{}{}
	}
	return m
}

func (m *txnMetadata) inLock(f func()) {
	m.mu.Lock()
	defer m.mu.Unlock()
	f()
}

// errIllegalTransition is a transition Kafka refuses with an IllegalStateException: a bug,
// logged and answered UNKNOWN_SERVER_ERROR instead of a panic (docs/design.md, Conventions).
type errIllegalTransition struct{ msg string }

func (e *errIllegalTransition) Error() string { return e.msg }

func illegal(format string, args ...any) error {
	return &errIllegalTransition{msg: fmt.Sprintf(format, args...)}
}

func copyParts(p map[topicPartition]struct{}) map[topicPartition]struct{} {
	out := make(map[topicPartition]struct{}, len(p))
	for k := range p {
		out[k] = struct{}{}
	}
	return out
}

// isProducerEpochExhausted: an epoch of Short.MaxValue-1 or more is never handed out again,
// so that the coordinator can always fence with epoch+1.
func (m *txnMetadata) isProducerEpochExhausted() bool { return m.producerEpoch >= math.MaxInt16-1 }

// prepareTransitionTo is TransactionMetadata.prepareTransitionTo: it sets the pending state.
func (m *txnMetadata) prepareTransitionTo(to kmsg.TransactionState, pid int64, epoch int16, timeoutMs int32,
	parts map[topicPartition]struct{}, start, now int64) (transit, error) {
	if m.hasPending {
		return transit{}, illegal("transactional id %s: preparing transition to %s while %s is pending", m.id, to, m.pending)
	}
	if pid < 0 || epoch < 0 {
		return transit{}, illegal("transactional id %s: illegal producer id %d or epoch %d", m.id, pid, epoch)
	}
	if !isValidTransition(m.state, to) {
		return transit{}, illegal("transactional id %s: %s is not a valid previous state of %s", m.id, m.state, to)
	}
	m.pending, m.hasPending = to, true
	return transit{producerID: pid, producerEpoch: epoch, timeoutMs: timeoutMs, state: to, partitions: parts, start: start, lastUpdate: now}, nil
}

// prepareFenceProducerEpoch bumps the epoch in a pending PrepareEpochFence (an Ongoing
// transaction about to be aborted by InitProducerId or its timeout).
func (m *txnMetadata) prepareFenceProducerEpoch() (transit, error) {
	if m.producerEpoch == math.MaxInt16 {
		return transit{}, illegal("transactional id %s: cannot fence producer epoch %d", m.id, m.producerEpoch)
	}
	return m.prepareTransitionTo(PrepareEpochFence, m.producerID, m.producerEpoch+1, m.timeoutMs, copyParts(m.partitions), m.start, m.lastUpdate)
}

// prepareIncrementProducerEpoch is InitProducerId on Empty or Complete*: epoch+1 (0 for a new
// id), the new timeout, no partitions.
func (m *txnMetadata) prepareIncrementProducerEpoch(timeoutMs int32, now int64) (transit, error) {
	if m.isProducerEpochExhausted() {
		return transit{}, illegal("transactional id %s: producer id %d has no epochs left", m.id, m.producerID)
	}
	next := m.producerEpoch + 1
	if m.producerEpoch == noProducerEpoch {
		next = 0
	}
	return m.prepareTransitionTo(Empty, m.producerID, next, timeoutMs, map[topicPartition]struct{}{}, -1, now)
}

// prepareProducerIDRotation is InitProducerId once the epoch is exhausted: a new producer id
// with epoch 0.
func (m *txnMetadata) prepareProducerIDRotation(pid int64, timeoutMs int32, now int64) (transit, error) {
	if m.state == Ongoing || m.state == PrepareAbort || m.state == PrepareCommit {
		return transit{}, illegal("transactional id %s: cannot rotate producer ids in %s", m.id, m.state)
	}
	return m.prepareTransitionTo(Empty, pid, 0, timeoutMs, map[topicPartition]struct{}{}, -1, now)
}

// prepareAddPartitions moves to Ongoing with the partitions added; the transaction starts now
// when it was not Ongoing.
func (m *txnMetadata) prepareAddPartitions(add map[topicPartition]struct{}, now int64) (transit, error) {
	start := m.start
	switch m.state {
	case Empty, CompleteAbort, CompleteCommit:
		start = now
	}
	parts := copyParts(m.partitions)
	for p := range add {
		parts[p] = struct{}{}
	}
	return m.prepareTransitionTo(Ongoing, m.producerID, m.producerEpoch, m.timeoutMs, parts, start, now)
}

func (m *txnMetadata) prepareAbortOrCommit(to kmsg.TransactionState, now int64) (transit, error) {
	return m.prepareTransitionTo(to, m.producerID, m.producerEpoch, m.timeoutMs, copyParts(m.partitions), m.start, now)
}

// prepareComplete is the CompleteCommit/CompleteAbort that follows the markers.
func (m *txnMetadata) prepareComplete(now int64) (transit, error) {
	to := CompleteAbort
	if m.state == PrepareCommit {
		to = CompleteCommit
	}
	return m.prepareTransitionTo(to, m.producerID, m.producerEpoch, m.timeoutMs, map[topicPartition]struct{}{}, m.start, now)
}

// prepareDead is the in-memory transition of an expiring transactional id (its record is a
// tombstone).
func (m *txnMetadata) prepareDead() (transit, error) {
	return m.prepareTransitionTo(Dead, m.producerID, m.producerEpoch, m.timeoutMs, map[topicPartition]struct{}{}, m.start, m.lastUpdate)
}

// completeTransitionTo is TransactionMetadata.completeTransitionTo, after the record of t was
// written: the sanity checks of each target state, then the cached metadata takes t.
func (m *txnMetadata) completeTransitionTo(t transit) error {
	if !m.hasPending {
		return illegal("transactional id %s: completing a transition to %s without a pending state", m.id, t.state)
	}
	fail := func() error {
		return illegal("transactional id %s: unexpected transition from %s (producer %d epoch %d) to %+v", m.id, m.state, m.producerID, m.producerEpoch, t)
	}
	if m.pending != t.state {
		return fail()
	}
	sameEpoch := t.producerEpoch == m.producerEpoch && t.producerID == m.producerID
	switch t.state {
	case Empty:
		bump := t.producerEpoch == m.producerEpoch+1 || (t.producerEpoch == 0 && t.producerID != m.producerID)
		if (m.producerEpoch != t.producerEpoch && !bump) || len(t.partitions) > 0 || t.start != -1 {
			return fail()
		}
		m.timeoutMs, m.producerEpoch, m.producerID = t.timeoutMs, t.producerEpoch, t.producerID
	case Ongoing:
		if !sameEpoch || !subset(m.partitions, t.partitions) || m.timeoutMs != t.timeoutMs || m.start > t.start {
			return fail()
		}
		m.start = t.start
		for p := range t.partitions {
			m.partitions[p] = struct{}{}
		}
	case PrepareAbort, PrepareCommit:
		if !sameEpoch || !subset(m.partitions, t.partitions) || len(m.partitions) != len(t.partitions) ||
			m.timeoutMs != t.timeoutMs || m.start != t.start {
			return fail()
		}
	case CompleteAbort, CompleteCommit:
		if !sameEpoch || m.timeoutMs != t.timeoutMs || t.start == -1 {
			return fail()
		}
		m.start = t.start
		m.partitions = map[topicPartition]struct{}{}
	default: // PrepareEpochFence and Dead are never completed
		return fail()
	}
	m.lastUpdate = t.lastUpdate
	m.hasPending = false
	m.state = t.state
	return nil
}

func subset(a, b map[topicPartition]struct{}) bool {
	for p := range a {
		if _, ok := b[p]; !ok {
			return false
		}
	}
	return true
}

// sortedPartitions lists parts by topic then partition.
func sortedPartitions(parts map[topicPartition]struct{}) []topicPartition {
	out := make([]topicPartition, 0, len(parts))
	for p := range parts {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].topic != out[j].topic {
			return out[i].topic < out[j].topic
		}
		return out[i].partition < out[j].partition
	})
	return out
}
