package fetcher

import (
	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/isrbroker/isrbroker/broker/kproto"
)

// This file is the fetcher's OFFSET_OUT_OF_RANGE handling (S19–S21): ListOffsets LATEST, then
// EARLIEST, with PlanOutOfRangeLatest/PlanOutOfRangeEarliest deciding.

// listOffsets asks the leader for timestamp (-1 latest, -2 earliest) of each partition in parts.
// It returns offsets and error codes by partition; a request error is returned as is.
func (t *fetcherThread) listOffsets(parts map[TopicPartition]sentState, timestamp int64) (map[TopicPartition]int64, map[TopicPartition]int16, error) {
	req := kmsg.NewPtrListOffsetsRequest()
	req.SetVersion(listOffsetsVersion)
	req.ReplicaID = t.cfg.BrokerID
	topics := kproto.NewByTopic(&req.Topics, func(topic string) kmsg.ListOffsetsRequestTopic {
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = topic
		return rt
	})
	for tp, ss := range parts {
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition = tp.Partition
		rp.CurrentLeaderEpoch = ss.leaderEpoch
		rp.Timestamp = timestamp
		rt := topics.Topic(tp.Topic)
		rt.Partitions = append(rt.Partitions, rp)
	}
	resp, err := t.leader.ListOffsets(t.ctx, req)
	if err != nil {
		return nil, nil, err
	}
	offsets := make(map[TopicPartition]int64)
	codes := make(map[TopicPartition]int16)
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			tp := TopicPartition{Topic: rt.Topic, Partition: rp.Partition}
			if _, ok := parts[tp]; !ok {
				continue
			}
			if rp.ErrorCode != 0 {
				codes[tp] = rp.ErrorCode
				continue
			}
			offsets[tp] = rp.Offset
		}
	}
	for tp := range parts {
		if _, ok := offsets[tp]; !ok {
			if _, ok := codes[tp]; !ok {
				codes[tp] = kerr.UnknownTopicOrPartition.Code
			}
		}
	}
	return offsets, codes, nil
}

// listOffsetsErrorLocked handles a ListOffsets error during out-of-range handling:
// FENCED_LEADER_EPOCH → failed; anything else → back off and retry.
func (t *fetcherThread) listOffsetsErrorLocked(tp TopicPartition, s *partitionState, code int16) {
	if code == kerr.FencedLeaderEpoch.Code {
		t.failLocked(tp, s, "FENCED_LEADER_EPOCH on ListOffsets")
		return
	}
	t.plog(tp, s).WithField("error", kerr.ErrorForCode(code)).Info("ListOffsets error while handling OFFSET_OUT_OF_RANGE; backing off")
	t.delayLocked(s)
}

// outOfRangeAnswerLocked takes one partition's ListOffsets(which) answer during out-of-range
// handling: it returns the partition's state and local LEO, or ok=false when the partition moved
// on meanwhile, the request failed (back off) or the leader answered an error.
func (t *fetcherThread) outOfRangeAnswerLocked(tp TopicPartition, ss sentState, which string, err error, codes map[TopicPartition]int16) (s *partitionState, localLEO int64, ok bool) {
	s = t.currentLocked(tp, ss, phaseFetching)
	if s == nil {
		return nil, 0, false
	}
	if err != nil {
		t.plog(tp, s).WithError(err).Warnf("ListOffsets(%s) failed; backing off", which)
		t.delayLocked(s)
		return nil, 0, false
	}
	if code, bad := codes[tp]; bad {
		t.listOffsetsErrorLocked(tp, s, code)
		return nil, 0, false
	}
	localLEO, lerr := t.local.LogEndOffset(tp)
	if lerr != nil {
		t.localErrorLocked(tp, s, "LogEndOffset", lerr)
		return nil, 0, false
	}
	return s, localLEO, true
}

// handleOutOfRange is OFFSET_OUT_OF_RANGE handling (fetchOffsetAndTruncate, docs/kafka-facts.md §4).
// It never exits the process (KAFKA-7414).
//   - S19: leader LEO < local LEO (only after an unclean election): truncate to the leader's LEO.
//   - S20: leader log start > local LEO (we were away, the leader deleted segments): empty the
//     local log and start at the leader's log start.
//   - S21: otherwise the leader's LEO grew past ours meanwhile: keep the log, refetch from our LEO.
func (t *fetcherThread) handleOutOfRange(parts map[TopicPartition]sentState) {
	latest, codes, err := t.listOffsets(parts, -1)
	if t.ctx.Err() != nil {
		return
	}
	needEarliest := make(map[TopicPartition]sentState)
	t.mu.Lock()
	for tp, ss := range parts {
		s, localLEO, ok := t.outOfRangeAnswerLocked(tp, ss, "LATEST", err, codes)
		if !ok {
			continue
		}
		leaderLEO := latest[tp]
		if PlanOutOfRangeLatest(leaderLEO, localLEO) == TruncateToLeaderLEO {
			// S19: divergence here is not repaired (unclean election).
			t.plog(tp, s).WithFields(logrus.Fields{"leaderLogEndOffset": leaderLEO, "logEndOffset": localLEO}).
				Warn("fetch offset above the leader's LEO (S19); truncating to the leader's LEO")
			newLEO, terr := t.truncateLocked(tp, s, leaderLEO)
			if terr != nil {
				t.localErrorLocked(tp, s, "TruncateTo", terr)
				continue
			}
			s.fetchOffset = newLEO
			continue
		}
		needEarliest[tp] = ss
	}
	t.mu.Unlock()
	if len(needEarliest) == 0 {
		return
	}

	earliest, codes, err := t.listOffsets(needEarliest, -2)
	if t.ctx.Err() != nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for tp, ss := range needEarliest {
		s, localLEO, ok := t.outOfRangeAnswerLocked(tp, ss, "EARLIEST", err, codes)
		if !ok {
			continue
		}
		leaderStart := earliest[tp]
		if PlanOutOfRangeEarliest(leaderStart, localLEO) == StartAtLeaderLogStart {
			// S20: the leader no longer has what follows our LEO.
			t.plog(tp, s).WithFields(logrus.Fields{"leaderLogStartOffset": leaderStart, "logEndOffset": localLEO}).
				Warn("fetch offset below the leader's log start (S20); emptying the log and starting at the leader's log start")
			if terr := t.local.TruncateFullyAndStartAt(tp, leaderStart); terr != nil {
				t.localErrorLocked(tp, s, "TruncateFullyAndStartAt", terr)
				continue
			}
			s.fetchOffset = leaderStart
			continue
		}
		// S21: the leader's LEO grew past ours while we handled the error: simply refetch.
		t.plog(tp, s).WithFields(logrus.Fields{"leaderLogStartOffset": leaderStart, "logEndOffset": localLEO}).
			Info("leader's LEO grew during out-of-range handling (S21); refetching from our LEO")
		s.fetchOffset = localLEO
	}
}
