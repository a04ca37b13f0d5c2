package fetcher

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/rcrowley/go-metrics"
	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// fetchPhase is a partition's state inside a fetcher (Kafka's PartitionFetchState.state).
type fetchPhase int8

const (
	phaseTruncating fetchPhase = iota // waiting for epoch truncation (K1) before fetching
	phaseFetching
)

func (p fetchPhase) String() string {
	if p == phaseTruncating {
		return "Truncating"
	}
	return "Fetching"
}

// partitionState is one partition's fetch state.
type partitionState struct {
	fetchOffset int64 // next offset to fetch; equals the local LEO while Fetching
	leaderEpoch int32 // current leader epoch from LeaderAndIsr (sent as current_leader_epoch)
	phase       fetchPhase
	delayUntil  time.Time // backoff after an error (S17): not fetched/truncated before
	lag         int64     // leader HW − fetch offset after the last fetch, in messages
}

func (s *partitionState) ready(now time.Time) bool { return !now.Before(s.delayUntil) }

// PartitionFetchState is an observable snapshot of one partition's fetch state.
type PartitionFetchState struct {
	FetchOffset int64
	LeaderEpoch int32
	Truncating  bool
	Delayed     bool
	Lag         int64
}

// sentState remembers what a request was built from, to drop replies to a state that changed.
type sentState struct {
	fetchOffset int64
	leaderEpoch int32
	askedEpoch  int32 // OffsetForLeaderEpoch: the local latest epoch asked about
}

// fetcherThread is one "ReplicaFetcherThread-<fetcherId>-<leaderId>" goroutine (S17).
type fetcherThread struct {
	name      string
	fetcherID int
	source    BrokerEndPoint
	cfg       Config
	local     Local
	leader    Leader
	log       logrus.FieldLogger
	mgr       *Manager

	mu    sync.Mutex // guards parts and order; held while calling Local (see package doc)
	parts map[TopicPartition]*partitionState
	order []TopicPartition // fetch order; partitions that got data move to the end

	// partitionCount is the FetcherStats PartitionCount gauge (MetricPartitionCount). It is a
	// plain gauge set under mu whenever parts changes, so rendering the registry never waits
	// for a fetcher busy inside Local.
	partitionCountGauge metrics.Gauge
	metricName          string

	wake   chan struct{}
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}
}

func newFetcherThread(m *Manager, fetcherID int, source BrokerEndPoint, leader Leader) *fetcherThread {
	ctx, cancel := context.WithCancel(context.Background())
	name := FetcherThreadName(fetcherID, source.ID)
	return &fetcherThread{
		name:      name,
		fetcherID: fetcherID,
		source:    source,
		cfg:       m.cfg,
		local:     m.local,
		leader:    leader,
		log:       m.cfg.Log.WithFields(logrus.Fields{"fetcher": name, "leader": source.ID, "broker": m.cfg.BrokerID}),
		mgr:       m,
		parts:     make(map[TopicPartition]*partitionState),
		wake:      make(chan struct{}, 1),
		ctx:       ctx,
		cancel:    cancel,
		done:      make(chan struct{}),

		partitionCountGauge: metrics.NewGauge(),
		metricName:          MetricPartitionCount(fetcherID, source.ID),
	}
}

// start registers the PartitionCount gauge (replacing a stale one of the same name) and starts
// the goroutine.
func (t *fetcherThread) start() {
	t.cfg.Registry.Unregister(t.metricName)
	_ = t.cfg.Registry.Register(t.metricName, t.partitionCountGauge)
	go t.run()
}

// shutdown stops the goroutine, waits for it, closes the leader connection and unregisters the
// PartitionCount gauge (idle fetchers disappear from the metrics, S23).
func (t *fetcherThread) shutdown() {
	t.cancel()
	<-t.done
	_ = t.leader.Close()
	if t.cfg.Registry.Get(t.metricName) == t.partitionCountGauge {
		t.cfg.Registry.Unregister(t.metricName)
	}
	t.log.Info("fetcher shut down")
}

// countChangedLocked publishes len(parts) to the PartitionCount gauge; call it with mu held
// after every change of parts.
func (t *fetcherThread) countChangedLocked() {
	t.partitionCountGauge.Update(int64(len(t.parts)))
}

func (t *fetcherThread) signal() {
	select {
	case t.wake <- struct{}{}:
	default:
	}
}

func (t *fetcherThread) plog(tp TopicPartition, s *partitionState) logrus.FieldLogger {
	l := t.log.WithFields(logrus.Fields{"topic": tp.Topic, "partition": tp.Partition})
	if s != nil {
		l = l.WithField("leaderEpoch", s.leaderEpoch)
	}
	return l
}

// addPartitions implements AbstractFetcherThread.addPartitions: a partition already present at
// the same leader epoch keeps its state; otherwise it starts Truncating at InitOffset.
func (t *fetcherThread) addPartitions(parts map[TopicPartition]InitialFetchState) {
	t.mu.Lock()
	for tp, init := range parts {
		if s, ok := t.parts[tp]; ok {
			if s.leaderEpoch == init.CurrentLeaderEpoch {
				continue
			}
		} else {
			t.order = append(t.order, tp)
		}
		t.parts[tp] = &partitionState{fetchOffset: init.InitOffset, leaderEpoch: init.CurrentLeaderEpoch, phase: phaseTruncating}
		t.plog(tp, t.parts[tp]).WithField("initOffset", init.InitOffset).Info("added partition, truncating")
	}
	t.countChangedLocked()
	t.mu.Unlock()
	t.signal()
}

// restore adds partitions with their states as they were (moving them from a replaced fetcher).
func (t *fetcherThread) restore(states map[TopicPartition]partitionState) {
	t.mu.Lock()
	for tp, s := range states {
		if _, ok := t.parts[tp]; ok {
			continue
		}
		s := s
		t.parts[tp] = &s
		t.order = append(t.order, tp)
	}
	t.countChangedLocked()
	t.mu.Unlock()
	t.signal()
}

// takeStates removes and returns all partition states.
func (t *fetcherThread) takeStates() map[TopicPartition]partitionState {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make(map[TopicPartition]partitionState, len(t.parts))
	for tp, s := range t.parts {
		out[tp] = *s
	}
	t.parts = make(map[TopicPartition]*partitionState)
	t.order = nil
	t.countChangedLocked()
	return out
}

// removePartitions removes partitions (S22). It waits for any in-progress truncation or append,
// so nothing more is written to their logs once it returns (S14.3).
func (t *fetcherThread) removePartitions(parts []TopicPartition) {
	t.mu.Lock()
	for _, tp := range parts {
		t.deleteLocked(tp)
	}
	t.mu.Unlock()
	t.signal()
}

func (t *fetcherThread) deleteLocked(tp TopicPartition) {
	if _, ok := t.parts[tp]; !ok {
		return
	}
	delete(t.parts, tp)
	for i, o := range t.order {
		if o == tp {
			t.order = append(t.order[:i], t.order[i+1:]...)
			break
		}
	}
	t.countChangedLocked()
}

func (t *fetcherThread) moveToEndLocked(tp TopicPartition) {
	for i, o := range t.order {
		if o == tp {
			copy(t.order[i:], t.order[i+1:])
			t.order[len(t.order)-1] = tp
			return
		}
	}
}

func (t *fetcherThread) partitions() []TopicPartition {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]TopicPartition(nil), t.order...)
}

func (t *fetcherThread) partitionCount() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.parts)
}

func (t *fetcherThread) state(tp TopicPartition) (PartitionFetchState, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	s, ok := t.parts[tp]
	if !ok {
		return PartitionFetchState{}, false
	}
	return PartitionFetchState{
		FetchOffset: s.fetchOffset,
		LeaderEpoch: s.leaderEpoch,
		Truncating:  s.phase == phaseTruncating,
		Delayed:     !s.ready(time.Now()),
		Lag:         s.lag,
	}, true
}

func (t *fetcherThread) maxLag() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	var m int64
	for _, s := range t.parts {
		if s.lag > m {
			m = s.lag
		}
	}
	return m
}

// current returns the state of tp only if it is unchanged since a request was built from sent
// and still in phase.
func (t *fetcherThread) currentLocked(tp TopicPartition, sent sentState, phase fetchPhase) *partitionState {
	s, ok := t.parts[tp]
	if !ok || s.leaderEpoch != sent.leaderEpoch || s.fetchOffset != sent.fetchOffset || s.phase != phase {
		return nil
	}
	return s
}

// delayLocked backs a partition off for replica.fetch.backoff.ms (S17).
func (t *fetcherThread) delayLocked(s *partitionState) {
	s.delayUntil = time.Now().Add(t.cfg.FetchBackoff)
}

// failLocked marks a partition failed until it is added again (FENCED_LEADER_EPOCH: our epoch
// is older than the leader's; wait for the LeaderAndIsr that carries the new one).
func (t *fetcherThread) failLocked(tp TopicPartition, s *partitionState, why string) {
	t.plog(tp, s).WithField("reason", why).Warn("partition failed; awaiting a new LeaderAndIsr before fetching again")
	t.deleteLocked(tp)
	t.mgr.markFailed(tp)
}

// localErrorLocked handles an error of the Local side: not a follower any more → back off
// (the next LeaderAndIsr removes or re-adds the partition); anything else → log and back off.
func (t *fetcherThread) localErrorLocked(tp TopicPartition, s *partitionState, op string, err error) {
	l := t.plog(tp, s).WithError(err).WithField("op", op)
	if errors.Is(err, ErrNotFollower) {
		l.Debug("partition is no longer a follower at this epoch; backing off")
	} else {
		l.Error("local replica error; backing off")
	}
	t.delayLocked(s)
}

// run is doWork in a loop: maybeTruncate, then maybeFetch; when nothing was ready, wait for the
// backoff, an earlier end of a partition's delay, or an Add/Remove (S17).
func (t *fetcherThread) run() {
	defer close(t.done)
	t.log.Info("fetcher started")
	for t.ctx.Err() == nil {
		truncated := t.maybeTruncate()
		fetched := t.maybeFetch()
		if !truncated && !fetched {
			t.idle()
		}
	}
}

func (t *fetcherThread) idle() {
	wait := t.cfg.FetchBackoff
	now := time.Now()
	t.mu.Lock()
	for _, s := range t.parts {
		if d := s.delayUntil.Sub(now); d > 0 && d < wait {
			wait = d
		}
	}
	t.mu.Unlock()
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-t.ctx.Done():
	case <-t.wake:
	case <-timer.C:
	}
}

// truncateLocked truncates the local log to offset and returns the new LEO (fetch offset).
func (t *fetcherThread) truncateLocked(tp TopicPartition, s *partitionState, offset int64) (int64, error) {
	if err := t.local.TruncateTo(tp, offset); err != nil {
		return 0, err
	}
	leo, err := t.local.LogEndOffset(tp)
	if err != nil {
		return 0, err
	}
	t.plog(tp, s).WithFields(logrus.Fields{"truncateTo": offset, "logEndOffset": leo}).Info("truncated log")
	return leo, nil
}

// maybeTruncate runs epoch truncation (K1, KIP-101/KIP-279) for the ready Truncating
// partitions. It reports whether it did anything.
func (t *fetcherThread) maybeTruncate() bool {
	now := time.Now()
	did := false
	sent := make(map[TopicPartition]sentState)
	req := kmsg.NewPtrOffsetForLeaderEpochRequest()
	req.SetVersion(offsetForLeaderEpochVersion)
	req.ReplicaID = t.cfg.BrokerID
	topics := make(map[string]int)

	t.mu.Lock()
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
		i, ok := topics[tp.Topic]
		if !ok {
			i = len(req.Topics)
			topics[tp.Topic] = i
			rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
			rt.Topic = tp.Topic
			req.Topics = append(req.Topics, rt)
		}
		rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
		rp.Partition = tp.Partition
		rp.CurrentLeaderEpoch = s.leaderEpoch
		rp.LeaderEpoch = epoch
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
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
		t.log.WithError(err).Warn("OffsetForLeaderEpoch failed; backing off")
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
		t.plog(tp, s).WithFields(logrus.Fields{"askedEpoch": asked, "replyEpoch": rp.LeaderEpoch, "replyEndOffset": rp.EndOffset}).
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

// maybeFetch sends one Fetch for the ready Fetching partitions and processes the response
// (S17; processFetchRequest, docs/kafka-facts.md §4). It reports whether it sent anything.
func (t *fetcherThread) maybeFetch() bool {
	now := time.Now()
	sent := make(map[TopicPartition]sentState)
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(fetchVersion)
	req.ReplicaID = t.cfg.BrokerID
	req.MaxWaitMillis = int32(t.cfg.FetchWaitMax / time.Millisecond)
	req.MinBytes = t.cfg.FetchMinBytes
	req.MaxBytes = t.cfg.FetchResponseMaxBytes
	req.SessionID = 0
	req.SessionEpoch = -1 // full fetch, no incremental session (KIP-227 FINAL_EPOCH)
	topics := make(map[string]int)
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
		i, ok := topics[tp.Topic]
		if !ok {
			i = len(req.Topics)
			topics[tp.Topic] = i
			rt := kmsg.NewFetchRequestTopic()
			rt.Topic = tp.Topic
			req.Topics = append(req.Topics, rt)
		}
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition = tp.Partition
		rp.CurrentLeaderEpoch = s.leaderEpoch
		rp.FetchOffset = s.fetchOffset
		rp.LogStartOffset = logStart
		rp.PartitionMaxBytes = t.cfg.FetchMaxBytes
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
	}
	t.mu.Unlock()
	if len(sent) == 0 {
		return false
	}

	resp, err := t.leader.Fetch(t.ctx, req)
	if t.ctx.Err() != nil {
		return true
	}
	if err == nil && resp.ErrorCode != 0 {
		err = kerr.ErrorForCode(resp.ErrorCode)
	}
	if err != nil {
		// S17: on a send error, wait before the next fetch; every partition is delayed.
		t.log.WithError(err).Warn("error in fetch response; backing off")
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

// listOffsets asks the leader for timestamp (-1 latest, -2 earliest) of each partition in parts.
// It returns offsets and error codes by partition; a request error is returned as is.
func (t *fetcherThread) listOffsets(parts map[TopicPartition]sentState, timestamp int64) (map[TopicPartition]int64, map[TopicPartition]int16, error) {
	req := kmsg.NewPtrListOffsetsRequest()
	req.SetVersion(listOffsetsVersion)
	req.ReplicaID = t.cfg.BrokerID
	topics := make(map[string]int)
	for tp, ss := range parts {
		i, ok := topics[tp.Topic]
		if !ok {
			i = len(req.Topics)
			topics[tp.Topic] = i
			rt := kmsg.NewListOffsetsRequestTopic()
			rt.Topic = tp.Topic
			req.Topics = append(req.Topics, rt)
		}
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition = tp.Partition
		rp.CurrentLeaderEpoch = ss.leaderEpoch
		rp.Timestamp = timestamp
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
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
