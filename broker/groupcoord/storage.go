package groupcoord

import (
	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"

	rm "github.com/isrbroker/isrbroker/replicamanager"
)

// This file is GroupMetadataManager's write side (docs/groups.md §5): appends of group metadata
// and offset commits to __consumer_offsets through the replica manager, and the mapping of
// their errors.

// appendToOffsetsPartition appends one batch to __consumer_offsets-p; done gets the result.
// It must be called without any group lock held.
func (gm *groupMetadataManager) appendToOffsetsPartition(p int32, batch []byte, acks int16, done func(rm.ProduceResult)) {
	key := rm.TopicPartition{Topic: OffsetsTopic, Partition: p}
	gm.replicas.AppendRecords(gm.cfg.OffsetsCommitTimeout, acks, map[rm.TopicPartition][]byte{key: batch}, func(res map[rm.TopicPartition]rm.ProduceResult) {
		r, ok := res[key]
		if !ok {
			r = rm.ProduceResult{ErrorCode: errUnknownServer, BaseOffset: -1}
		}
		done(r)
	})
}

// storeGroupError maps a log append error of group metadata as GroupMetadataManager.storeGroup.
func storeGroupError(code int16) int16 {
	if code == kerr.RequestTimedOut.Code {
		return errRebalanceInProgress
	}
	return appendError(code, errUnknownServer)
}

// storeOffsetsError maps a log append error of offset commits as GroupMetadataManager.storeOffsets.
func storeOffsetsError(code int16) int16 {
	return appendError(code, errInvalidCommitOffsetSize)
}

// appendError is the mapping storeGroup and storeOffsets share; a batch too large for the log
// becomes tooLarge.
func appendError(code, tooLarge int16) int16 {
	switch code {
	case kerr.UnknownTopicOrPartition.Code, kerr.NotEnoughReplicas.Code, kerr.NotEnoughReplicasAfterAppend.Code:
		return errCoordinatorNotAvailable
	case kerr.NotLeaderForPartition.Code, kerr.KafkaStorageError.Code:
		return errNotCoordinator
	case kerr.MessageTooLarge.Code, kerr.RecordListTooLarge.Code, kerr.InvalidFetchSize.Code:
		return tooLarge
	}
	return code
}

// storeGroup persists g's metadata with assignment (member id → bytes). Called with g's lock
// held; the append runs once it is released, and cb runs under the lock again with the
// mapped error.
func (gm *groupMetadataManager) storeGroup(g *group, assignment map[string][]byte, cb func(code int16)) {
	batch := encodeBatch(millis(gm.clock.Now()), []kv{{key: groupMetadataKey(g.id), value: groupMetadataValue(g, assignment)}})
	p := gm.partitionFor(g.id)
	g.deferred = append(g.deferred, func() {
		gm.appendToOffsetsPartition(p, batch, gm.cfg.OffsetsCommitRequiredAcks, func(r rm.ProduceResult) {
			code := storeGroupError(r.ErrorCode)
			g.inLock(func() { cb(code) })
		})
	})
}

// storeOffsets persists a commit (GroupMetadataManager.storeOffsets). Called with g's lock held;
// cb runs under the lock with a code per partition once the ISR has the batch (acks
// offsets.commit.required.acks), and only then are the offsets visible to OffsetFetch.
func (gm *groupMetadataManager) storeOffsets(g *group, memberID string, offsets map[tp]offsetAndMetadata, cb func(map[tp]int16)) {
	valid := make(map[tp]offsetAndMetadata, len(offsets))
	for k, om := range offsets {
		if len(om.metadata) <= int(gm.cfg.OffsetMetadataMaxBytes) {
			valid[k] = om
		}
	}
	status := func(code int16) map[tp]int16 {
		out := make(map[tp]int16, len(offsets))
		for k := range offsets {
			if _, ok := valid[k]; ok {
				out[k] = code
			} else {
				out[k] = errOffsetMetadataTooLarge
			}
		}
		return out
	}
	if len(valid) == 0 {
		cb(status(errNone))
		return
	}
	now := millis(gm.clock.Now())
	records := make([]kv, 0, len(valid))
	for _, k := range sortedTPs(valid) {
		records = append(records, kv{key: offsetCommitKey(g.id, k), value: offsetCommitValue(valid[k])})
	}
	batch := encodeBatch(now, records)
	p := gm.partitionFor(g.id)
	g.offsets.prepareOffsetCommit(valid)
	g.deferred = append(g.deferred, func() {
		gm.appendToOffsetsPartition(p, batch, gm.cfg.OffsetsCommitRequiredAcks, func(r rm.ProduceResult) {
			gm.metrics.offsetCommits.Mark(int64(len(valid)))
			g.inLock(func() {
				code := storeOffsetsError(r.ErrorCode)
				if !g.is(stateDead) {
					for k, om := range valid {
						if code == errNone {
							g.offsets.onOffsetCommitAppend(k, commitEntry{om: om, batchOffset: r.BaseOffset})
						} else {
							g.offsets.failPendingOffsetWrite(k, om)
						}
					}
				}
				if code != errNone {
					groupLog(gm.log, g).WithFields(logrus.Fields{"member": memberID, "error": kerr.ErrorForCode(r.ErrorCode)}).Debug("offset commit failed when appending to the log")
				}
				cb(status(code))
			})
		})
	})
}
