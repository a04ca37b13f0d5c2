package fetcher

import (
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/isrbroker/isrbroker/broker/kproto"
)

// This file is the fetcher's truncation phase (K1, KIP-101/KIP-279): OffsetForLeaderEpoch for the
// Truncating partitions, PlanTruncation's answer carried out on the local log.

// truncateLocked truncates the local log to offset and returns the new LEO (fetch offset).
func (t *fetcherThread) truncateLocked(tp TopicPartition, s *partitionState, offset int64) (int64, error) {
	if err := t.local.TruncateTo(tp, offset); err != nil {
		return 0, err
	}
	leo, err := t.local.LogEndOffset(tp)
	if err != nil {
		return 0, err
	}
	t.plog(tp, s).WithFields(logrus.Fields{"targetOffset": offset, "logEndOffset": leo}).Info("truncated log")
	return leo, nil
}

// maybeTruncate runs epoch truncation (K1, KIP-101/KIP-279) for the ready Truncating
// partitions. It reports whether it did anything.
func (t *fetcherThread) maybeTruncate() bool {
	now := time.Now()
	t.mu.Lock()
	if !t.anyReadyToTruncateLocked(now) {
		// The common case, on every turn of a fetcher that is only fetching: build nothing.
		t.mu.Unlock()
		return false
	}
	did := false
	sent := make(map[TopicPartition]sentState)
	req := kmsg.NewPtrOffsetForLeaderEpochRequest()
	req.SetVersion(offsetForLeaderEpochVersion)
	req.ReplicaID = t.cfg.BrokerID
	topics := kproto.NewByTopic(&req.Topics, func(topic string) kmsg.OffsetForLeaderEpochRequestTopic {
		rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
		rt.Topic = topic
		return rt
	})

	for _, tp := range append([]TopicPartition(nil), t.order...) {
		s := t.parts[tp]
		if s == nil || s.phase != phaseTruncating || !s.ready(now) {
			continue
		}
		epoch, ok, err := t.local.LatestEpoch(tp)
		if err != nil {
			t.localErrorLocked(tp, s, "LatestEpoch", err)
			continue
		}
		if !ok {
			// No leader epochs locally (an old-format log): truncate to the HW, which is the
			// initial fetch offset.
			did = true
			leo, err := t.truncateLocked(tp, s, s.fetchOffset)
			if err != nil {
				t.localErrorLocked(tp, s, "TruncateTo", err)
				continue
			}
			s.fetchOffset, s.phase = leo, phaseFetching
			continue
		}
		sent[tp] = sentState{fetchOffset: s.fetchOffset, leaderEpoch: s.leaderEpoch, askedEpoch: epoch}
		rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
		rp.Partition = tp.Partition
		rp.CurrentLeaderEpoch = s.leaderEpoch
		rp.LeaderEpoch = epoch
		rt := topics.Topic(tp.Topic)
		rt.Partitions = append(rt.Partitions, rp)
	}
	t.mu.Unlock()
	if len(sent) == 0 {
		return did
	}

	resp, err := t.leader.OffsetForLeaderEpoch(t.ctx, req)
	if t.ctx.Err() != nil {
		return true
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if err != nil {
		backoffWarnings.Warn(t.log.WithError(err), t.warnKey, "OffsetForLeaderEpoch failed; backing off")
		for tp, ss := range sent {
			if s := t.currentLocked(tp, ss, phaseTruncating); s != nil {
				t.delayLocked(s)
			}
		}
		return true
	}
	answered := make(map[TopicPartition]bool, len(sent))
	var truncations []plannedTruncation
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			tp := TopicPartition{Topic: rt.Topic, Partition: rp.Partition}
			ss, ok := sent[tp]
			if !ok || answered[tp] {
				continue
			}
			answered[tp] = true
			s := t.currentLocked(tp, ss, phaseTruncating)
			if s == nil {
				continue // removed, re-added or moved on meanwhile: drop the reply
			}
			if pt, ok := t.applyEpochEndOffsetLocked(tp, s, ss.askedEpoch, rp); ok {
				pt.sent = ss
				truncations = append(truncations, pt)
			}
		}
	}
	for tp, ss := range sent {
		if !answered[tp] {
			if s := t.currentLocked(tp, ss, phaseTruncating); s != nil {
				t.plog(tp, s).Warn("leader did not answer OffsetForLeaderEpoch for partition; backing off")
				t.delayLocked(s)
			}
		}
	}
	t.applyTruncationsLocked(truncations)
	return true
}

// anyReadyToTruncateLocked reports whether some partition is Truncating and not backing off.
func (t *fetcherThread) anyReadyToTruncateLocked(now time.Time) bool {
	for _, tp := range t.order {
		if s := t.parts[tp]; s != nil && s.phase == phaseTruncating && s.ready(now) {
			return true
		}
	}
	return false
}

// applyEpochEndOffsetLocked applies a leader's OffsetForLeaderEpoch answer to one partition
// (getOffsetTruncationState, docs/kafka-facts.md §5): PlanTruncation decides, and the truncation
// to carry out is returned (applyTruncationsLocked).
func (t *fetcherThread) applyEpochEndOffsetLocked(tp TopicPartition, s *partitionState, asked int32, rp kmsg.OffsetForLeaderEpochResponseTopicPartition) (plannedTruncation, bool) {
	switch rp.ErrorCode {
	case 0:
	case kerr.FencedLeaderEpoch.Code:
		t.failLocked(tp, s, "FENCED_LEADER_EPOCH on OffsetForLeaderEpoch")
		return plannedTruncation{}, false
	default:
		t.plog(tp, s).WithField("error", kerr.ErrorForCode(rp.ErrorCode)).Info("OffsetForLeaderEpoch error; backing off")
		t.delayLocked(s)
		return plannedTruncation{}, false
	}
	leo, err := t.local.LogEndOffset(tp)
	if err != nil {
		t.localErrorLocked(tp, s, "LogEndOffset", err)
		return plannedTruncation{}, false
	}
	in := TruncationInput{
		AskedEpoch: asked,
		Leader:     EpochEndOffset{LeaderEpoch: rp.LeaderEpoch, EndOffset: rp.EndOffset},
		Local:      EpochEndOffset{LeaderEpoch: -1, EndOffset: -1},
		LEO:        leo,
		InitOffset: s.fetchOffset,
	}
	if rp.EndOffset >= 0 && rp.LeaderEpoch >= 0 {
		found, end, err := t.local.EndOffsetForEpoch(tp, rp.LeaderEpoch)
		if err != nil {
			t.localErrorLocked(tp, s, "EndOffsetForEpoch", err)
			return plannedTruncation{}, false
		}
		in.Local = EpochEndOffset{LeaderEpoch: found, EndOffset: end}
	}
	plan := PlanTruncation(in)
	if plan.Action == BackOff {
		t.plog(tp, s).WithFields(logrus.Fields{"requestLeaderEpoch": asked, "responseLeaderEpoch": rp.LeaderEpoch, "responseEndOffset": rp.EndOffset}).
			Warn("epoch truncation made no progress; backing off")
		t.delayLocked(s)
		return plannedTruncation{}, false
	}
	return plannedTruncation{tp: tp, offset: plan.Offset, fetch: plan.Action == TruncateAndFetch}, true
}

// plannedTruncation is an epoch truncation decided for a partition, to carry out.
type plannedTruncation struct {
	tp     TopicPartition
	sent   sentState // the partition's state it was decided for
	offset int64
	fetch  bool // the partition starts fetching after it (TruncateAndFetch)
}

// applyTruncationsLocked carries out the planned truncations. When Local prepares truncations
// (TruncationPreparer), their copies run without the partition-state lock (it is released and
// taken again), and each is committed only if its partition is still in the state it was
// planned for, else aborted.
func (t *fetcherThread) applyTruncationsLocked(planned []plannedTruncation) {
	if len(planned) == 0 {
		return
	}
	preparer, ok := t.local.(TruncationPreparer)
	if !ok {
		for _, pt := range planned {
			if s := t.currentLocked(pt.tp, pt.sent, phaseTruncating); s != nil {
				leo, err := t.truncateLocked(pt.tp, s, pt.offset)
				t.truncatedLocked(pt, s, leo, err)
			}
		}
		return
	}
	prepared := make([]PreparedTruncation, len(planned))
	errs := make([]error, len(planned))
	t.mu.Unlock()
	for i, pt := range planned {
		prepared[i], errs[i] = preparer.PrepareTruncateTo(pt.tp, pt.offset)
	}
	t.mu.Lock()
	for i, pt := range planned {
		s := t.currentLocked(pt.tp, pt.sent, phaseTruncating)
		if errs[i] != nil {
			if s != nil {
				t.localErrorLocked(pt.tp, s, "TruncateTo", errs[i])
			}
			continue
		}
		if s == nil {
			prepared[i].Abort() // removed, re-added or moved on meanwhile
			continue
		}
		err := prepared[i].Commit()
		var leo int64
		if err == nil {
			leo, err = t.local.LogEndOffset(pt.tp)
			if err == nil {
				t.plog(pt.tp, s).WithFields(logrus.Fields{"targetOffset": pt.offset, "logEndOffset": leo}).Info("truncated log")
			}
		}
		t.truncatedLocked(pt, s, leo, err)
	}
}

// truncatedLocked moves a partition on after its planned truncation to newLEO (or its error).
func (t *fetcherThread) truncatedLocked(pt plannedTruncation, s *partitionState, newLEO int64, err error) {
	if err != nil {
		t.localErrorLocked(pt.tp, s, "TruncateTo", err)
		return
	}
	s.fetchOffset = newLEO
	if pt.fetch {
		s.phase = phaseFetching
	}
}
