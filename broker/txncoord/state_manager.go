package txncoord

import (
	"sync"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/isrbroker/isrbroker/broker/kproto"
	rm "github.com/isrbroker/isrbroker/replicamanager"
)

// stateManager is Kafka's TransactionStateManager (docs/transactions.md §1): the cache of the
// transactional ids of the __transaction_state partitions this broker leads, each partition
// with its coordinator epoch (its leader epoch), the partitions being loaded, and the appends
// that persist transitions (appendTransactionToLog). Loading and unloading are in loading.go.
//
// Concurrency: mu guards cache and loading. Order: mu → txnMetadata.mu; no lock of this
// package is held while calling the replica manager, because an append's completion may run
// before AppendRecords returns and takes them again.
type stateManager struct {
	cfg      Config
	log      logrus.FieldLogger
	replicas Replicas
	meta     Metadata

	mu      sync.RWMutex
	cache   map[int32]*cacheEntry // partition → its transactional ids
	loading map[int32]int32       // partition → coordinator epoch being loaded

	scheduler *loadScheduler
}

// cacheEntry is TxnMetadataCacheEntry: one loaded partition.
type cacheEntry struct {
	coordinatorEpoch int32
	txns             map[string]*txnMetadata
}

func newStateManager(cfg Config, log logrus.FieldLogger, replicas Replicas, meta Metadata) *stateManager {
	return &stateManager{cfg: cfg, log: log, replicas: replicas, meta: meta,
		cache: map[int32]*cacheEntry{}, loading: map[int32]int32{}, scheduler: newLoadScheduler()}
}

// numPartitions is the partition count of __transaction_state: the topic's when the metadata
// knows it, else transaction.state.log.num.partitions.
func (sm *stateManager) numPartitions() int32 {
	if sm.meta != nil {
		if n := sm.meta.PartitionCount(TransactionStateTopic); n > 0 {
			return n
		}
	}
	return sm.cfg.NumPartitions
}

func (sm *stateManager) partitionFor(id string) int32 {
	return kproto.JavaAbs(kproto.JavaStringHashCode(id)) % sm.numPartitions()
}

// getState is getAndMaybeAddTransactionState: the cached metadata of id and its partition's
// coordinator epoch; created (when not nil) is put in the cache if id is absent. code is
// COORDINATOR_LOAD_IN_PROGRESS while the partition loads, NOT_COORDINATOR when this broker
// does not lead it; m is nil when id is unknown and nothing was created.
func (sm *stateManager) getState(id string, created *txnMetadata) (m *txnMetadata, coordinatorEpoch int32, code int16) {
	p := sm.partitionFor(id)
	if created == nil {
		sm.mu.RLock()
		defer sm.mu.RUnlock()
	} else {
		sm.mu.Lock()
		defer sm.mu.Unlock()
	}
	if _, ok := sm.loading[p]; ok {
		return nil, -1, errCoordinatorLoadInProgress
	}
	e := sm.cache[p]
	if e == nil {
		return nil, -1, errNotCoordinator
	}
	m = e.txns[id]
	if m == nil && created != nil {
		e.txns[id] = created
		m = created
	}
	return m, e.coordinatorEpoch, errNone
}

// appendError maps a log append error as appendTransactionToLog (docs/transactions.md §4).
func appendError(code int16) int16 {
	switch code {
	case kerr.UnknownTopicOrPartition.Code, kerr.NotEnoughReplicas.Code, kerr.NotEnoughReplicasAfterAppend.Code, kerr.RequestTimedOut.Code:
		return errCoordinatorNotAvailable
	case kerr.NotLeaderForPartition.Code, kerr.KafkaStorageError.Code:
		return errNotCoordinator
	case kerr.MessageTooLarge.Code, kerr.RecordListTooLarge.Code:
		return errUnknownServer
	}
	return code
}

// appendTransactionToLog is TransactionStateManager.appendTransactionToLog: t's record is
// appended to id's partition with acks=all; once the ISR has it the cached metadata takes t
// (unless the partition moved to another coordinator epoch meanwhile: NOT_COORDINATOR), and cb
// gets the mapped error. On an error the pending state is cleared unless retry says the caller
// retries the same transition.
func (sm *stateManager) appendTransactionToLog(id string, coordinatorEpoch int32, t transit, now int64, cb func(int16), retry func(int16) bool) {
	value, err := t.record().encode()
	if err != nil {
		sm.log.WithError(err).WithField("transactionalId", id).Error("cannot encode a transaction log record")
		cb(errUnknownServer)
		return
	}
	m, epoch, code := sm.getState(id, nil)
	switch {
	case code != errNone:
		cb(code)
		return
	case m == nil || epoch != coordinatorEpoch:
		cb(errNotCoordinator)
		return
	}
	key := rm.TopicPartition{Topic: TransactionStateTopic, Partition: sm.partitionFor(id)}
	batch := encodeBatch(now, []kv{{key: keyBytes(id), value: value}})
	timeout := msDuration(t.timeoutMs)
	sm.replicas.AppendRecords(timeout, -1, map[rm.TopicPartition][]byte{key: batch}, func(res map[rm.TopicPartition]rm.ProduceResult) {
		r, ok := res[key]
		if !ok {
			r.ErrorCode = errUnknownServer
		}
		cb(sm.completeAppend(id, coordinatorEpoch, t, appendError(r.ErrorCode), retry))
	})
}

// completeAppend is appendTransactionToLog's updateCacheCallback.
func (sm *stateManager) completeAppend(id string, coordinatorEpoch int32, t transit, code int16, retry func(int16) bool) int16 {
	log := sm.log.WithFields(logrus.Fields{"transactionalId": id, "state": t.state.String(), "coordinatorEpoch": coordinatorEpoch})
	m, epoch, gcode := sm.getState(id, nil)
	if code == errNone {
		switch {
		case gcode != errNone:
			log.WithField("error", kerr.ErrorForCode(gcode)).Info("transaction metadata unavailable after the append; aborting the transition")
			return gcode
		case m == nil || epoch != coordinatorEpoch:
			log.Info("coordinator epoch changed after the append; aborting the transition")
			return errNotCoordinator
		}
		var err error
		m.inLock(func() { err = m.completeTransitionTo(t) })
		if err != nil {
			log.WithError(err).Error("refusing an invalid transaction state transition")
			return errUnknownServer
		}
		return errNone
	}
	if gcode == errNone && m != nil && epoch == coordinatorEpoch && (retry == nil || !retry(code)) {
		m.inLock(func() { m.hasPending = false })
	}
	log.WithField("error", kerr.ErrorForCode(code)).Info("appending a transition to the transaction log failed")
	return code
}

// timedOutTransactions is TransactionStateManager.timedOutTransactions: the Ongoing
// transactions without a pending transition whose start + timeout is before now.
func (sm *stateManager) timedOutTransactions(now int64) []*txnMetadata {
	sm.mu.RLock()
	defer sm.mu.RUnlock()
	var out []*txnMetadata
	for _, e := range sm.cache {
		for _, m := range e.txns {
			m.inLock(func() {
				if !m.hasPending && m.state == Ongoing && m.start+int64(m.timeoutMs) < now {
					out = append(out, m)
				}
			})
		}
	}
	return out
}

// removeIf drops m from its partition's cache if it is still cached there at coordinatorEpoch.
func (sm *stateManager) removeIf(m *txnMetadata, coordinatorEpoch int32) bool {
	p := sm.partitionFor(m.id)
	sm.mu.Lock()
	defer sm.mu.Unlock()
	e := sm.cache[p]
	if e == nil || e.coordinatorEpoch != coordinatorEpoch || e.txns[m.id] != m {
		return false
	}
	delete(e.txns, m.id)
	return true
}

// shutdown empties the cache and the loading set.
func (sm *stateManager) shutdown() {
	sm.mu.Lock()
	defer sm.mu.Unlock()
	sm.cache = map[int32]*cacheEntry{}
	sm.loading = map[int32]int32{}
}

func (r txnRecord) encode() ([]byte, error) { return valueBytes(r) }
