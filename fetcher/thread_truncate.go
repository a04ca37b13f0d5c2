package fetcher

import (
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/isrbroker/isrbroker/logstore/kproto"
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
		backoffWarnings.Warn(t.log.WithError(err), t.warnKey(), "OffsetForLeaderEpoch failed; backing off")
		for tp, ss := range sent {
			if s := t.currentLocked(tp, ss, phaseTruncating); s != nil {
				t.delayLocked(s)
			}
		}
		return true
	}
	answered := make(map[TopicPartition]bool, len(sent))
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
			t.applyEpochEndOffsetLocked(tp, s, ss.askedEpoch, rp)
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
// (getOffsetTruncationState, docs/kafka-facts.md §5): PlanTruncation decides, this carries it out.
func (t *fetcherThread) applyEpochEndOffsetLocked(tp TopicPartition, s *partitionState, asked int32, rp kmsg.OffsetForLeaderEpochResponseTopicPartition) {
	switch rp.ErrorCode {
	case 0:
	case kerr.FencedLeaderEpoch.Code:
		t.failLocked(tp, s, "FENCED_LEADER_EPOCH on OffsetForLeaderEpoch")
		return
	default:
		t.plog(tp, s).WithField("error", kerr.ErrorForCode(rp.ErrorCode)).Info("OffsetForLeaderEpoch error; backing off")
		t.delayLocked(s)
		return
	}
	leo, err := t.local.LogEndOffset(tp)
	if err != nil {
		t.localErrorLocked(tp, s, "LogEndOffset", err)
		return
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
			return
		}
		in.Local = EpochEndOffset{LeaderEpoch: found, EndOffset: end}
	}
	plan := PlanTruncation(in)
	if plan.Action == BackOff {
		t.plog(tp, s).WithFields(logrus.Fields{"requestLeaderEpoch": asked, "responseLeaderEpoch": rp.LeaderEpoch, "responseEndOffset": rp.EndOffset}).
			Warn("epoch truncation made no progress; backing off")
		t.delayLocked(s)
		return
	}
	newLEO, err := t.truncateLocked(tp, s, plan.Offset)
	if err != nil {
		t.localErrorLocked(tp, s, "TruncateTo", err)
		return
	}
	s.fetchOffset = newLEO
	if plan.Action == TruncateAndFetch {
		s.phase = phaseFetching
	}
}
