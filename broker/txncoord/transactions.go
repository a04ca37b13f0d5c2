package txncoord

import (
	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
)

// This file is TransactionCoordinator's request side (docs/transactions.md §4): InitProducerId
// with a transactional id, AddPartitionsToTxn (and AddOffsetsToTxn through it), EndTxn.

// InitResult is InitProducerIdResult.
type InitResult struct {
	ProducerID    int64
	ProducerEpoch int16
	ErrorCode     int16
}

func initError(code int16) InitResult {
	return InitResult{ProducerID: -1, ProducerEpoch: -1, ErrorCode: code}
}

// InitProducerID is TransactionCoordinator.handleInitProducerId; cb is called exactly once.
//   - A nil transactional id gets a new producer id with epoch 0; "" is INVALID_REQUEST;
//     a timeout outside (0, transaction.max.timeout.ms] is INVALID_TRANSACTION_TIMEOUT.
//   - An unknown id gets a producer id and starts Empty at epoch -1, bumped to 0 below.
//   - A pending transition, PrepareCommit or PrepareAbort: CONCURRENT_TRANSACTIONS.
//   - Empty, CompleteCommit, CompleteAbort: epoch+1 (a new producer id at epoch 0 once the
//     epoch is exhausted), the new timeout, written as Empty.
//   - Ongoing: the producer is fenced: epoch+1 and the transaction aborted with it; the answer
//     is CONCURRENT_TRANSACTIONS, and the client's retry bumps the epoch again.
func (c *Coordinator) InitProducerID(transactionalID *string, timeoutMs int32, cb func(InitResult)) {
	if transactionalID == nil {
		pid, err := c.pids.GenerateProducerID()
		if err != nil {
			c.log.WithError(err).Warn("cannot allocate a producer id")
			cb(initError(errCoordinatorNotAvailable))
			return
		}
		cb(InitResult{ProducerID: pid, ProducerEpoch: 0})
		return
	}
	id := *transactionalID
	switch {
	case id == "":
		cb(initError(errInvalidRequest))
		return
	case timeoutMs <= 0 || int64(timeoutMs) > c.cfg.MaxTimeout.Milliseconds():
		cb(initError(errInvalidTransactionTimeout))
		return
	}
	m, coordEpoch, code := c.state.getState(id, nil)
	if code == errNone && m == nil {
		pid, err := c.pids.GenerateProducerID()
		if err != nil {
			c.log.WithError(err).Warn("cannot allocate a producer id")
			cb(initError(errCoordinatorNotAvailable))
			return
		}
		m, coordEpoch, code = c.state.getState(id, newTxnMetadata(id, pid, noProducerEpoch, timeoutMs, Empty, c.nowMs()))
	}
	if code != errNone {
		cb(initError(code))
		return
	}
	var t transit
	var err error
	m.inLock(func() { t, code, err = c.prepareInitProducerIDTransit(m, timeoutMs) })
	switch {
	case err != nil:
		txnLog(c.log, id).WithError(err).Error("refusing an invalid transaction state transition")
		cb(initError(errUnknownServer))
		return
	case code != errNone:
		cb(initError(code))
		return
	}
	if t.state == PrepareEpochFence {
		c.endTransaction(id, t.producerID, t.producerEpoch, false, func(code int16) {
			if code == errNone {
				code = errConcurrentTransactions
			}
			cb(initError(code))
		})
		return
	}
	c.state.appendTransactionToLog(id, coordEpoch, t, c.nowMs(), func(code int16) {
		if code != errNone {
			txnLog(c.log, id).WithField("error", kerr.ErrorForCode(code)).Info("returning an error to InitProducerId")
			cb(initError(code))
			return
		}
		txnLog(c.log, id).WithFields(logrus.Fields{"producerId": t.producerID, "producerEpoch": t.producerEpoch}).Info("initialized transactional id")
		cb(InitResult{ProducerID: t.producerID, ProducerEpoch: t.producerEpoch})
	}, nil)
}

// prepareInitProducerIDTransit runs under m's lock.
func (c *Coordinator) prepareInitProducerIDTransit(m *txnMetadata, timeoutMs int32) (transit, int16, error) {
	if m.hasPending {
		return transit{}, errConcurrentTransactions, nil
	}
	switch m.state {
	case PrepareAbort, PrepareCommit:
		return transit{}, errConcurrentTransactions, nil
	case CompleteAbort, CompleteCommit, Empty:
		if m.isProducerEpochExhausted() {
			pid, err := c.pids.GenerateProducerID()
			if err != nil {
				c.log.WithError(err).Warn("cannot allocate a producer id")
				return transit{}, errCoordinatorNotAvailable, nil
			}
			t, err := m.prepareProducerIDRotation(pid, timeoutMs, c.nowMs())
			return t, errNone, err
		}
		t, err := m.prepareIncrementProducerEpoch(timeoutMs, c.nowMs())
		return t, errNone, err
	case Ongoing:
		t, err := m.prepareFenceProducerEpoch()
		return t, errNone, err
	}
	return transit{}, errNone, illegal("transactional id %s found in state %s", m.id, m.state)
}

// AddPartitions is TransactionCoordinator.handleAddPartitionsToTransaction (partitions already
// checked by the handler); cb gets one error code for all of them.
func (c *Coordinator) AddPartitions(transactionalID string, producerID int64, producerEpoch int16, partitions []topicPartition, cb func(int16)) {
	if transactionalID == "" {
		cb(errInvalidRequest)
		return
	}
	m, coordEpoch, code := c.state.getState(transactionalID, nil)
	switch {
	case code != errNone:
		cb(code)
		return
	case m == nil:
		cb(errInvalidProducerIDMapping)
		return
	}
	add := make(map[topicPartition]struct{}, len(partitions))
	for _, p := range partitions {
		add[p] = struct{}{}
	}
	var t transit
	var err error
	m.inLock(func() {
		switch {
		case m.producerID != producerID:
			code = errInvalidProducerIDMapping
		case m.producerEpoch != producerEpoch:
			code = errInvalidProducerEpoch
		case m.hasPending, m.state == PrepareCommit, m.state == PrepareAbort:
			code = errConcurrentTransactions
		case m.state == Ongoing && subset(add, m.partitions):
			code = -1 // already there: success without a write
		default:
			t, err = m.prepareAddPartitions(add, c.nowMs())
		}
	})
	switch {
	case code == -1:
		cb(errNone)
	case code != errNone:
		cb(code)
	case err != nil:
		txnLog(c.log, transactionalID).WithError(err).Error("refusing an invalid transaction state transition")
		cb(errUnknownServer)
	default:
		c.state.appendTransactionToLog(transactionalID, coordEpoch, t, c.nowMs(), cb, nil)
	}
}

// EndTxn is TransactionCoordinator.handleEndTransaction; cb is called once the Prepare record
// is in the ISR (before the markers are written).
func (c *Coordinator) EndTxn(transactionalID string, producerID int64, producerEpoch int16, commit bool, cb func(int16)) {
	c.endTransaction(transactionalID, producerID, producerEpoch, commit, cb)
}

func (c *Coordinator) endTransaction(id string, producerID int64, producerEpoch int16, commit bool, cb func(int16)) {
	if id == "" {
		cb(errInvalidRequest)
		return
	}
	m, coordEpoch, code := c.state.getState(id, nil)
	switch {
	case code != errNone:
		cb(code)
		return
	case m == nil:
		cb(errInvalidProducerIDMapping)
		return
	}
	var t transit
	var err error
	m.inLock(func() { t, code, err = c.prepareEndTransit(m, producerID, producerEpoch, commit) })
	switch {
	case code == -1:
		cb(errNone)
		return
	case code != errNone:
		cb(code)
		return
	case err != nil:
		txnLog(c.log, id).WithError(err).Error("refusing an invalid transaction state transition")
		cb(errUnknownServer)
		return
	}
	c.state.appendTransactionToLog(id, coordEpoch, t, c.nowMs(), func(code int16) {
		if code != errNone {
			txnLog(c.log, id).WithField("error", kerr.ErrorForCode(code)).Info("not sending transaction markers: the Prepare record was not written")
			cb(code)
			return
		}
		c.afterPrepare(id, producerID, producerEpoch, commit, coordEpoch, cb)
	}, nil)
}

// prepareEndTransit runs under m's lock; code -1 is success without a write (a retried
// EndTxn of a completed transaction).
func (c *Coordinator) prepareEndTransit(m *txnMetadata, producerID int64, producerEpoch int16, commit bool) (transit, int16, error) {
	switch {
	case m.producerID != producerID:
		return transit{}, errInvalidProducerIDMapping, nil
	case producerEpoch < m.producerEpoch:
		// Kafka 2.4 accepts a larger epoch (KAFKA-9600 tightened this later).
		return transit{}, errInvalidProducerEpoch, nil
	case m.hasPending && m.pending != PrepareEpochFence:
		return transit{}, errConcurrentTransactions, nil
	}
	switch m.state {
	case Ongoing:
		next := PrepareAbort
		if commit {
			next = PrepareCommit
		}
		if next == PrepareAbort && m.hasPending && m.pending == PrepareEpochFence {
			// The fence: the pending state makes way for PrepareAbort at the bumped epoch.
			m.hasPending = false
			m.producerEpoch = producerEpoch
		}
		t, err := m.prepareAbortOrCommit(next, c.nowMs())
		return t, errNone, err
	case CompleteCommit:
		if commit {
			return transit{}, -1, nil
		}
	case CompleteAbort:
		if !commit {
			return transit{}, -1, nil
		}
	case PrepareCommit:
		if commit {
			return transit{}, errConcurrentTransactions, nil
		}
	case PrepareAbort:
		if !commit {
			return transit{}, errConcurrentTransactions, nil
		}
	case Empty:
	default:
		return transit{}, errNone, illegal("transactional id %s found in state %s", m.id, m.state)
	}
	return transit{}, errInvalidTxnState, nil
}

// afterPrepare is handleEndTransaction's sendTxnMarkersCallback: the Prepare record is written;
// unless the metadata moved meanwhile the client is answered NONE and the markers go out.
func (c *Coordinator) afterPrepare(id string, producerID int64, producerEpoch int16, commit bool, coordEpoch int32, cb func(int16)) {
	m, epoch, code := c.state.getState(id, nil)
	switch {
	case code != errNone:
		cb(code)
		return
	case m == nil || epoch != coordEpoch:
		cb(errNotCoordinator)
		return
	}
	var t transit
	var err error
	m.inLock(func() {
		switch {
		case m.producerID != producerID:
			code = errInvalidProducerIDMapping
		case m.producerEpoch != producerEpoch:
			code = errInvalidProducerEpoch
		case m.hasPending:
			code = errConcurrentTransactions
		case commit && m.state == PrepareCommit, !commit && m.state == PrepareAbort:
			t, err = m.prepareComplete(c.nowMs())
		default:
			code = errInvalidTxnState
		}
	})
	switch {
	case code != errNone:
		cb(code)
		return
	case err != nil:
		txnLog(c.log, id).WithError(err).Error("refusing an invalid transaction state transition")
		cb(errUnknownServer)
		return
	}
	cb(errNone)
	c.markers.send(pendingCompletion{m: m, coordinatorEpoch: coordEpoch, commit: commit, complete: t})
}
