package txncoord

import (
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"

	rm "github.com/isrbroker/isrbroker/replicamanager"
)

// The periodic tasks (docs/transactions.md §5): the abort of timed-out transactions
// (TransactionCoordinator.abortTimedOutTransactions, every
// transaction.abort.timed.out.transaction.cleanup.interval.ms) and the expiration of idle
// transactional ids (TransactionStateManager.enableTransactionalIdExpiration, every
// transaction.remove.expired.transaction.cleanup.interval.ms).

func (c *Coordinator) isClosed() bool {
	select {
	case <-c.closed:
		return true
	default:
		return false
	}
}

// reschedule sets *t to a new timer of d running f, unless the coordinator is closed.
func (c *Coordinator) reschedule(t *Timer, d time.Duration, f func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.active {
		return
	}
	*t = c.clock.AfterFunc(d, f)
}

func (c *Coordinator) abortTimedOutTick() {
	c.AbortTimedOutTransactions()
	c.reschedule(&c.abortTimer, c.cfg.AbortTimedOutInterval, c.abortTimedOutTick)
}

func (c *Coordinator) expiryTick() {
	c.ExpireTransactionalIDs()
	c.reschedule(&c.expiryTimer, c.cfg.RemoveExpiredInterval, c.expiryTick)
}

// AbortTimedOutTransactions aborts every Ongoing transaction without a pending transition
// whose start + timeout has passed: it fences the producer (epoch+1) and aborts at that epoch,
// so the timed-out producer's next request gets INVALID_PRODUCER_EPOCH.
func (c *Coordinator) AbortTimedOutTransactions() {
	for _, m := range c.state.timedOutTransactions(c.nowMs()) {
		var t transit
		var err error
		skip := false
		m.inLock(func() {
			if m.hasPending || m.state != Ongoing {
				skip = true
				return
			}
			t, err = m.prepareFenceProducerEpoch()
		})
		log := txnLog(c.log, m.id)
		if skip {
			continue
		}
		if err != nil {
			log.WithError(err).Error("cannot fence a timed-out transaction")
			continue
		}
		log.WithFields(logrus.Fields{"producerId": t.producerID, "producerEpoch": t.producerEpoch}).Info("aborting a timed-out transaction")
		c.endTransaction(m.id, t.producerID, t.producerEpoch, false, func(code int16) {
			switch code {
			case errNone:
				log.Info("completed the rollback of a timed-out transaction")
			case errInvalidProducerIDMapping, errInvalidProducerEpoch, errConcurrentTransactions:
				log.WithField("error", kerr.ErrorForCode(code)).Debug("rollback of a timed-out transaction cancelled")
			default:
				log.WithField("error", kerr.ErrorForCode(code)).Warn("rollback of a timed-out transaction failed")
			}
		})
	}
}

// expiring is one transactional id about to be tombstoned.
type expiring struct {
	m                *txnMetadata
	coordinatorEpoch int32
	producerEpoch    int16
}

// ExpireTransactionalIDs tombstones the transactional ids in Empty, CompleteCommit or
// CompleteAbort whose last update is transactional.id.expiration.ms old, one batch per
// partition, and drops them from the cache once the tombstones are written.
func (c *Coordinator) ExpireTransactionalIDs() {
	now := c.nowMs()
	horizon := now - c.cfg.TransactionalIDExpiration.Milliseconds()
	byPartition := map[int32][]expiring{}
	c.state.mu.RLock()
	for p, e := range c.state.cache {
		for _, m := range e.txns {
			m.inLock(func() {
				switch m.state {
				case Empty, CompleteCommit, CompleteAbort:
				default:
					return
				}
				if m.hasPending || m.lastUpdate > horizon {
					return
				}
				if _, err := m.prepareDead(); err != nil {
					return
				}
				byPartition[p] = append(byPartition[p], expiring{m: m, coordinatorEpoch: e.coordinatorEpoch, producerEpoch: m.producerEpoch})
			})
		}
	}
	c.state.mu.RUnlock()
	for p, list := range byPartition {
		records := make([]kv, 0, len(list))
		for _, x := range list {
			records = append(records, kv{key: keyBytes(x.m.id)})
		}
		key := rm.TopicPartition{Topic: TransactionStateTopic, Partition: p}
		list := list
		c.state.replicas.AppendRecords(c.cfg.RequestTimeout, -1, map[rm.TopicPartition][]byte{key: encodeBatch(now, records)}, func(res map[rm.TopicPartition]rm.ProduceResult) {
			r, ok := res[key]
			if !ok {
				r.ErrorCode = errUnknownServer
			}
			c.afterTombstones(list, r.ErrorCode)
		})
	}
}

// afterTombstones is enableTransactionalIdExpiration's removeFromCacheCallback.
func (c *Coordinator) afterTombstones(list []expiring, code int16) {
	for _, x := range list {
		m := x.m
		ok := false
		m.inLock(func() {
			ok = code == errNone && m.hasPending && m.pending == Dead && m.producerEpoch == x.producerEpoch
			if !ok {
				m.hasPending = false
			}
		})
		log := txnLog(c.log, m.id)
		if ok && c.state.removeIf(m, x.coordinatorEpoch) {
			log.Info("expired transactional id removed")
			continue
		}
		if ok {
			m.inLock(func() { m.hasPending = false })
		}
		log.WithField("error", kerr.ErrorForCode(code)).Warn("failed to remove an expired transactional id from the cache")
	}
}
