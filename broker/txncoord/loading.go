package txncoord

import (
	"sync"
	"time"

	"github.com/sirupsen/logrus"

	rm "github.com/isrbroker/isrbroker/replicamanager"
)

// This file is TransactionStateManager's read side (docs/transactions.md §1): loading a
// __transaction_state partition when this broker becomes its leader, unloading it when it
// stops leading it. Loads run in order on one goroutine (loadScheduler), off the LeaderAndIsr
// path, like Kafka's transaction-log-manager scheduler.

// loadScheduler runs loads one at a time, in the order they were scheduled.
type loadScheduler struct {
	mu    sync.Mutex
	queue []func()
	wake  chan struct{}
}

func newLoadScheduler() *loadScheduler { return &loadScheduler{wake: make(chan struct{}, 1)} }

func (s *loadScheduler) schedule(fn func()) {
	s.mu.Lock()
	s.queue = append(s.queue, fn)
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// run runs the queued functions until stop is closed.
func (s *loadScheduler) run(stop <-chan struct{}) {
	for {
		s.mu.Lock()
		var fn func()
		if len(s.queue) > 0 {
			fn = s.queue[0]
			s.queue = s.queue[1:]
		}
		s.mu.Unlock()
		if fn != nil {
			fn()
			continue
		}
		select {
		case <-s.wake:
		case <-stop:
			return
		}
	}
}

// pendingCompletion is a transaction loaded in PrepareCommit or PrepareAbort: its markers are
// sent again and it completes (loadTransactionsForTxnTopicPartition).
type pendingCompletion struct {
	m                *txnMetadata
	coordinatorEpoch int32
	commit           bool
	complete         transit
}

// scheduleLoad is loadTransactionsForTxnTopicPartition: p is loading at coordinatorEpoch from
// now on; the load runs on the scheduler and, if p is still loading at that epoch when it
// ends, replaces p's cache and hands the transactions found in a Prepare state to
// sendMarkers.
func (sm *stateManager) scheduleLoad(p, coordinatorEpoch int32, sendMarkers func(pendingCompletion)) {
	sm.mu.Lock()
	sm.loading[p] = coordinatorEpoch
	sm.mu.Unlock()
	sm.log.WithFields(logrus.Fields{"partition": p, "coordinatorEpoch": coordinatorEpoch}).Info("scheduling loading of transaction metadata")
	sm.scheduler.schedule(func() { sm.load(p, coordinatorEpoch, sendMarkers) })
}

func (sm *stateManager) stillLoading(p, coordinatorEpoch int32) bool {
	sm.mu.RLock()
	defer sm.mu.RUnlock()
	e, ok := sm.loading[p]
	return ok && e == coordinatorEpoch
}

func (sm *stateManager) load(p, coordinatorEpoch int32, sendMarkers func(pendingCompletion)) {
	start := time.Now()
	log := sm.log.WithFields(logrus.Fields{"partition": p, "coordinatorEpoch": coordinatorEpoch})
	loaded, err := sm.readPartition(p, coordinatorEpoch, log)
	if err != nil {
		log.WithError(err).Error("error loading transaction metadata; serving what was read")
	}
	now := sm.cfg.Clock.Now().UnixMilli()
	var pending []pendingCompletion
	sm.mu.Lock()
	if e, ok := sm.loading[p]; !ok || e != coordinatorEpoch {
		sm.mu.Unlock()
		log.Info("leadership changed while loading; discarding the loaded transaction metadata")
		return
	}
	if prev := sm.cache[p]; prev != nil {
		log.WithField("from", prev.coordinatorEpoch).Warn("replacing the transaction metadata of an earlier coordinator epoch")
	}
	sm.cache[p] = &cacheEntry{coordinatorEpoch: coordinatorEpoch, txns: loaded}
	for _, m := range loaded {
		m.inLock(func() {
			if m.state != PrepareCommit && m.state != PrepareAbort {
				return
			}
			t, err := m.prepareComplete(now)
			if err != nil {
				log.WithError(err).WithField("transactionalId", m.id).Error("cannot complete a loaded transaction")
				return
			}
			pending = append(pending, pendingCompletion{m: m, coordinatorEpoch: coordinatorEpoch, commit: m.state == PrepareCommit, complete: t})
		})
	}
	// The partition stops loading before the markers go out, so that the completions they
	// lead to are not refused COORDINATOR_LOAD_IN_PROGRESS.
	delete(sm.loading, p)
	count := len(loaded) // the map is the cache's from now on, guarded by sm.mu
	sm.mu.Unlock()
	for _, pc := range pending {
		sendMarkers(pc)
	}
	log.WithFields(logrus.Fields{"count": count, "duration": time.Since(start).Round(time.Millisecond).String()}).
		Info("finished loading transaction metadata")
}

// readPartition reads the local log of __transaction_state-p from its log start offset to its
// LEO while p is still loading at coordinatorEpoch: the last record per transactional id wins,
// a tombstone deletes.
func (sm *stateManager) readPartition(p, coordinatorEpoch int32, log logrus.FieldLogger) (map[string]*txnMetadata, error) {
	key := rm.TopicPartition{Topic: TransactionStateTopic, Partition: p}
	out := map[string]*txnMetadata{}
	offset := int64(0)
	for sm.stillLoading(p, coordinatorEpoch) {
		res, err := sm.replicas.ReadLocal(key, offset, sm.cfg.LoadBufferSize)
		if err != nil {
			return out, err
		}
		offset = max(offset, res.LogStartOffset)
		if offset >= res.LogEndOffset || len(res.Records) == 0 {
			break
		}
		batches, skipped, derr := decodeBatches(res.Records)
		for _, s := range skipped {
			log.WithError(s).Warn("skipping a batch of __transaction_state that isrbroker cannot decode")
		}
		for _, b := range batches {
			offset = b.nextOffset
			if b.control {
				continue
			}
			for _, r := range b.records {
				applyRecord(out, r, log)
			}
		}
		if derr != nil {
			return out, derr
		}
		if len(batches) == 0 {
			break
		}
	}
	return out, nil
}

func applyRecord(out map[string]*txnMetadata, r kv, log logrus.FieldLogger) {
	id, err := parseKey(r.key)
	if err != nil {
		log.WithError(err).Warn("skipping a record of __transaction_state with an unknown key")
		return
	}
	if r.value == nil {
		delete(out, id)
		return
	}
	v, err := parseValue(r.value)
	if err != nil {
		log.WithError(err).WithField("transactionalId", id).Warn("skipping a transaction log value that does not decode")
		return
	}
	out[id] = metadataFromRecord(id, v)
}

// removePartition is removeTransactionsForTxnTopicPartition: p's cache is dropped at once; a
// load of p at coordinatorEpoch or before stops (every load when coordinatorEpoch < 0, a
// StopReplica). Marker work of p's transactions stops at its next step, when it finds the
// coordinator epoch gone (markers.go).
func (sm *stateManager) removePartition(p, coordinatorEpoch int32) {
	sm.mu.Lock()
	if e, ok := sm.loading[p]; ok && (coordinatorEpoch < 0 || e <= coordinatorEpoch) {
		delete(sm.loading, p)
	}
	prev := sm.cache[p]
	delete(sm.cache, p)
	sm.mu.Unlock()
	l := sm.log.WithFields(logrus.Fields{"partition": p, "coordinatorEpoch": coordinatorEpoch})
	if prev == nil {
		l.Debug("no cached transaction metadata to unload")
		return
	}
	l.WithField("count", len(prev.txns)).Info("unloaded transaction metadata")
}
