package txncoord

import (
	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"

	rm "github.com/isrbroker/isrbroker/replicamanager"
)

// The marker side (TransactionMarkerChannelManager and TransactionMarkerRequestCompletionHandler,
// docs/transactions.md §4): once a PrepareCommit or PrepareAbort record is written, the markers
// go to every partition of the transaction through the MarkerSender, in rounds: a partition
// is done when its leader wrote the marker (or the partition is gone from the metadata), the
// others are sent again after MarkerRetryBackoff. When every partition is done the
// CompleteCommit or CompleteAbort record is written, retried while the log is unavailable.
// Every round first checks that this broker still coordinates the transaction at the same
// coordinator epoch; an unload stops the work (the next leader's load sends the markers again).

type markerManager struct {
	c      *Coordinator
	sender MarkerSender
}

// markerJob is the marker work of one transaction.
type markerJob struct {
	pc        pendingCompletion
	marker    Marker
	remaining map[rm.TopicPartition]bool
	log       logrus.FieldLogger
}

// send starts the markers of pc (addTxnMarkersToSend).
func (mm *markerManager) send(pc pendingCompletion) {
	j := &markerJob{pc: pc, remaining: map[rm.TopicPartition]bool{}}
	pc.m.inLock(func() {
		j.marker = Marker{TransactionalID: pc.m.id, ProducerID: pc.m.producerID, ProducerEpoch: pc.m.producerEpoch,
			Commit: pc.commit, CoordinatorEpoch: pc.coordinatorEpoch}
		for _, p := range sortedPartitions(pc.m.partitions) {
			j.remaining[rm.TopicPartition{Topic: p.topic, Partition: p.partition}] = true
		}
	})
	j.log = mm.c.log.WithFields(logrus.Fields{"transactionalId": pc.m.id, "producerId": j.marker.ProducerID,
		"producerEpoch": j.marker.ProducerEpoch, "coordinatorEpoch": pc.coordinatorEpoch})
	mm.round(j)
}

// current reports whether this broker still coordinates j's transaction at j's epoch.
func (mm *markerManager) current(j *markerJob) bool {
	if mm.c.isClosed() {
		return false
	}
	m, epoch, code := mm.c.state.getState(j.pc.m.id, nil)
	return code == errNone && m == j.pc.m && epoch == j.pc.coordinatorEpoch
}

// round sends the markers of the partitions not yet done.
func (mm *markerManager) round(j *markerJob) {
	if !mm.current(j) {
		j.log.Info("no longer the coordinator of the transaction at this epoch; stopping its markers")
		return
	}
	var parts []rm.TopicPartition
	for _, tp := range sortedTopicPartitions(j.remaining) {
		if meta := mm.c.meta; meta != nil && !meta.HasPartition(tp.Topic, tp.Partition) {
			// No leader known: the partition is most likely deleted (addTxnMarkersToBrokerQueue).
			j.log.WithFields(logrus.Fields{"topic": tp.Topic, "partition": tp.Partition}).Info("skipping the marker of an unknown partition")
			delete(j.remaining, tp)
			continue
		}
		parts = append(parts, tp)
	}
	if len(parts) == 0 {
		mm.complete(j)
		return
	}
	m := j.marker
	m.Partitions = parts
	mm.sender.SendMarkers(m, func(res map[rm.TopicPartition]int16) { mm.onResponse(j, parts, res) })
}

// onResponse is TransactionMarkerRequestCompletionHandler: each partition's code decides.
func (mm *markerManager) onResponse(j *markerJob, sent []rm.TopicPartition, res map[rm.TopicPartition]int16) {
	for _, tp := range sent {
		code, ok := res[tp]
		if !ok {
			code = kerr.NetworkException.Code
		}
		switch code {
		case errNone, kerr.UnsupportedForMessageFormat.Code, kerr.UnsupportedVersion.Code:
			delete(j.remaining, tp)
		case kerr.UnknownTopicOrPartition.Code, kerr.NotLeaderForPartition.Code, kerr.NotEnoughReplicas.Code,
			kerr.NotEnoughReplicasAfterAppend.Code, kerr.RequestTimedOut.Code, kerr.NetworkException.Code:
			// retried in the next round (NETWORK_EXCEPTION: the send failed, Kafka's disconnect)
		case kerr.InvalidProducerEpoch.Code, kerr.TransactionCoordinatorFenced.Code:
			j.log.WithFields(logrus.Fields{"topic": tp.Topic, "partition": tp.Partition, "error": kerr.ErrorForCode(code)}).
				Info("the marker was refused as fenced; stopping the markers of the transaction")
			return
		default:
			j.log.WithFields(logrus.Fields{"topic": tp.Topic, "partition": tp.Partition, "error": kerr.ErrorForCode(code)}).
				Error("unexpected error writing a transaction marker; stopping the markers of the transaction")
			return
		}
	}
	if len(j.remaining) == 0 {
		mm.complete(j)
		return
	}
	mm.later(func() { mm.round(j) })
}

// complete writes the Complete record (tryAppendToLog), again after a backoff while the log is
// not available (the pending state is kept for the retry).
func (mm *markerManager) complete(j *markerJob) {
	if !mm.current(j) {
		j.log.Info("no longer the coordinator of the transaction at this epoch; not completing it")
		return
	}
	retry := func(code int16) bool { return code == errCoordinatorNotAvailable }
	mm.c.state.appendTransactionToLog(j.pc.m.id, j.pc.coordinatorEpoch, j.pc.complete, mm.c.nowMs(), func(code int16) {
		switch code {
		case errNone:
			j.log.WithField("state", j.pc.complete.state.String()).Debug("completed the transaction")
		case errCoordinatorNotAvailable:
			j.log.Info("transaction log not available to complete the transaction; retrying")
			mm.later(func() { mm.complete(j) })
		case errNotCoordinator, errCoordinatorLoadInProgress:
			j.log.WithField("error", kerr.ErrorForCode(code)).Info("not completing the transaction: the partition moved")
		default:
			j.log.WithField("error", kerr.ErrorForCode(code)).Error("unexpected error completing the transaction")
		}
	}, retry)
}

func (mm *markerManager) later(f func()) {
	if mm.c.isClosed() {
		return
	}
	mm.c.clock.AfterFunc(mm.c.cfg.MarkerRetryBackoff, f)
}

func sortedTopicPartitions(set map[rm.TopicPartition]bool) []rm.TopicPartition {
	parts := make(map[topicPartition]struct{}, len(set))
	for tp := range set {
		parts[topicPartition{tp.Topic, tp.Partition}] = struct{}{}
	}
	out := make([]rm.TopicPartition, 0, len(set))
	for _, p := range sortedPartitions(parts) {
		out = append(out, rm.TopicPartition{Topic: p.topic, Partition: p.partition})
	}
	return out
}
