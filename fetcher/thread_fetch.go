package fetcher

import (
	"errors"
	"fmt"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// This file is the fetcher's fetch phase (S17, S18): one Fetch for the Fetching partitions and the
// processing of its response, partition by partition.

// maybeFetch sends one Fetch for the ready Fetching partitions and processes the response
// (S17; processFetchRequest, docs/kafka-facts.md §4). It reports whether it sent anything. The
// fetch is one of the incremental fetch session with the leader (fetch_session.go): partitions
// not ready this time leave the session and join it again when they are.
func (t *fetcherThread) maybeFetch() bool {
	now := time.Now()
	sent := make(map[TopicPartition]sentState)
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(fetchVersion)
	req.ReplicaID = t.cfg.BrokerID
	req.MaxWaitMillis = int32(t.cfg.FetchWaitMax / time.Millisecond)
	req.MinBytes = t.cfg.FetchMinBytes
	req.MaxBytes = t.cfg.FetchResponseMaxBytes
	var next []sessionPartition
	lso, hasLSO := t.local.(LogStartOffsetter)

	t.mu.Lock()
	for _, tp := range t.order {
		s := t.parts[tp]
		if s == nil || s.phase != phaseFetching || !s.ready(now) {
			continue
		}
		if t.shouldFollowerThrottleLocked(tp, s) {
			continue // issue 4: throttled and over the follower quota; fetched again once under it
		}
		logStart := int64(-1)
		if hasLSO {
			if v, err := lso.LogStartOffset(tp); err == nil {
				logStart = v
			}
		}
		sent[tp] = sentState{fetchOffset: s.fetchOffset, leaderEpoch: s.leaderEpoch}
		next = append(next, sessionPartition{tp: tp, data: sessionPartitionData{
			fetchOffset: s.fetchOffset, logStartOffset: logStart, maxBytes: t.cfg.FetchMaxBytes, leaderEpoch: s.leaderEpoch,
		}})
	}
	t.mu.Unlock()
	if !t.session.build(req, next) {
		return false
	}

	resp, err := t.leader.Fetch(t.ctx, req)
	if t.ctx.Err() != nil {
		return true
	}
	if err != nil {
		t.session.handleError()
	} else if ok, problem := t.session.handleResponse(resp); !ok {
		if resp.ErrorCode == 0 || resp.ErrorCode == kerr.FetchSessionIDNotFound.Code || resp.ErrorCode == kerr.InvalidFetchSessionEpoch.Code {
			// Kafka's fetcher processes nothing of this answer and fetches again at once, in
			// full: the leader lost the session (restart, eviction) or the answer did not
			// match it.
			t.log.WithField("reason", problem).Info("fetch session reset; the next fetch is full")
			return true
		}
		err = kerr.ErrorForCode(resp.ErrorCode)
	}
	if err != nil {
		// S17: on a send error, wait before the next fetch; every partition is delayed.
		backoffWarnings.Warn(t.log.WithError(err), t.warnKey, "error in fetch response; backing off")
		t.mu.Lock()
		for tp, ss := range sent {
			if s := t.currentLocked(tp, ss, phaseFetching); s != nil {
				t.delayLocked(s)
			}
		}
		t.mu.Unlock()
		return true
	}

	outOfRange := make(map[TopicPartition]sentState)
	answered := make(map[TopicPartition]bool, len(sent))
	t.mu.Lock()
	for _, rt := range resp.Topics {
		for i := range rt.Partitions {
			rp := &rt.Partitions[i]
			tp := TopicPartition{Topic: rt.Topic, Partition: rp.Partition}
			ss, ok := sent[tp]
			if !ok || answered[tp] {
				continue
			}
			answered[tp] = true
			// Use the response only if the fetch offset is unchanged and the partition is
			// still Fetching (it may have been removed, re-added or truncated meanwhile).
			s := t.currentLocked(tp, ss, phaseFetching)
			if s == nil {
				continue
			}
			switch rp.ErrorCode {
			case 0:
				t.processPartitionDataLocked(tp, s, rp)
			case kerr.OffsetOutOfRange.Code:
				outOfRange[tp] = ss
			case kerr.FencedLeaderEpoch.Code:
				t.failLocked(tp, s, "FENCED_LEADER_EPOCH on Fetch")
			default:
				// NOT_LEADER_FOR_PARTITION, UNKNOWN_LEADER_EPOCH, UNKNOWN_TOPIC_OR_PARTITION, …:
				// back off this partition only; the others keep fetching (S17).
				t.plog(tp, s).WithField("error", kerr.ErrorForCode(rp.ErrorCode)).Info("fetch error for partition; backing off")
				t.delayLocked(s)
			}
		}
	}
	t.mu.Unlock()
	if len(outOfRange) > 0 {
		t.handleOutOfRange(outOfRange)
	}
	return true
}

// processPartitionDataLocked is S18: check the size, append keeping the leader's offsets and
// epochs, then the follower HW = min(leader HW, LEO) (done by Local).
func (t *fetcherThread) processPartitionDataLocked(tp TopicPartition, s *partitionState, rp *kmsg.FetchResponseTopicPartition) {
	records, n, oversize, err := completeBatches(rp.RecordBatches, t.cfg.FetchMaxBytes)
	if oversize {
		t.plog(tp, s).WithFields(logrus.Fields{"bytes": len(records), "batches": n, "limit": t.cfg.FetchMaxBytes}).
			Warn("leader returned more than replica.fetch.max.bytes")
	}
	if err == nil && n == 0 && len(rp.RecordBatches) > 0 {
		err = fmt.Errorf("%w: %d bytes without a complete batch", errCorruptResponse, len(rp.RecordBatches))
	}
	if err != nil {
		t.plog(tp, s).WithError(err).Warn("discarding fetched data; backing off")
		t.delayLocked(s)
		return
	}
	newLEO, err := t.local.ProcessPartitionData(tp, s.fetchOffset, records, rp.HighWatermark, rp.LogStartOffset)
	if err != nil {
		t.localErrorLocked(tp, s, "ProcessPartitionData", err)
		if !errors.Is(err, ErrNotFollower) {
			// The append was refused (corrupt batch, offset mismatch): re-establish the fetch
			// position from the local LEO through epoch truncation before fetching again.
			if leo, lerr := t.local.LogEndOffset(tp); lerr == nil {
				s.fetchOffset, s.phase = leo, phaseTruncating
			}
		}
		return
	}
	if len(records) > 0 {
		t.mgr.bytesIn.Mark(int64(len(records)))
		t.moveToEndLocked(tp)
		// Issue 4: a not-in-sync throttled partition's bytes count against the follower quota
		// (in-sync replicas are never throttled, so their traffic is not counted either).
		if q := t.cfg.Quota; q != nil && !s.inSync() && q.IsThrottled(tp) {
			q.Record(int64(len(records)))
		}
	}
	s.fetchOffset = newLEO
	s.lag = max(0, rp.HighWatermark-newLEO)
}
