package fetcher

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// memLeaderPartition is one partition the fake leader leads.
type memLeaderPartition struct {
	log   *memLog
	epoch int32
}

// fetchRecord summarises one fetch request the leader received.
type fetchRecord struct {
	offsets map[TopicPartition]int64
	errors  map[TopicPartition]int16 // errors the leader answered
}

// memLeader is an in-memory leader broker: the Leader twin used by the tests. It serves Fetch
// (with a MaxWait long poll), OffsetForLeaderEpoch and ListOffsets from memLogs.
type memLeader struct {
	mu      sync.Mutex
	parts   map[TopicPartition]*memLeaderPartition
	changed chan struct{} // closed and replaced on every change (wakes long polls)

	fetches   []fetchRecord
	epochReqs []kmsg.OffsetForLeaderEpochRequestTopicPartition
	listReqs  []int64 // timestamps asked, in order

	// Injection hooks, called with mu held.
	fetchErr      func(tp TopicPartition, n int) int16 // n = index of the fetch; 0 = no error
	corrupt       func(tp TopicPartition, n int) bool  // flip a CRC byte in the returned data
	beforeList    func(timestamp int64)                // before answering ListOffsets
	sendErr       func(n int) error                    // whole-request failure
	blockFetch    chan struct{}                        // when set, fetches wait for it to close
	truncateReads bool                                 // with corrupt: cut the data to a partial batch

	open int // handles not closed

	wrap func(Leader) Leader // when set, handle returns its wrapping of the handle
}

func newMemLeader() *memLeader {
	return &memLeader{parts: make(map[TopicPartition]*memLeaderPartition), changed: make(chan struct{})}
}

func (m *memLeader) notifyLocked() {
	close(m.changed)
	m.changed = make(chan struct{})
}

// lead makes the leader lead tp at epoch with log l (the new leader records epoch → LEO).
func (m *memLeader) lead(tp TopicPartition, epoch int32, l *memLog) {
	m.mu.Lock()
	defer m.mu.Unlock()
	l.assignEpoch(epoch, l.leo)
	m.parts[tp] = &memLeaderPartition{log: l, epoch: epoch}
	m.notifyLocked()
}

// produce appends values as one batch at the leader's epoch and commits (HW = LEO).
func (m *memLeader) produce(tp TopicPartition, values ...string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := m.parts[tp]
	p.log.appendLeader(p.epoch, values...)
	p.log.hw = p.log.leo
	m.notifyLocked()
}

func (m *memLeader) bumpEpoch(tp TopicPartition) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := m.parts[tp]
	p.epoch++
	p.log.assignEpoch(p.epoch, p.log.leo)
	m.notifyLocked()
}

func (m *memLeader) entries(tp TopicPartition) []entry {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.parts[tp].log.entries()
}

// cloneLog copies tp's log (to hand it to another leader).
func (m *memLeader) cloneLog(tp TopicPartition) *memLog {
	m.mu.Lock()
	defer m.mu.Unlock()
	l := *m.parts[tp].log
	l.batches = append([]memBatch(nil), l.batches...)
	l.epochs = append([]epochEntry(nil), l.epochs...)
	return &l
}

func (m *memLeader) fetchLog() []fetchRecord {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]fetchRecord(nil), m.fetches...)
}

func (m *memLeader) epochLog() []kmsg.OffsetForLeaderEpochRequestTopicPartition {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]kmsg.OffsetForLeaderEpochRequestTopicPartition(nil), m.epochReqs...)
}

func (m *memLeader) listLog() []int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]int64(nil), m.listReqs...)
}

func (m *memLeader) openHandles() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.open
}

// handle returns a Leader for one fetcher.
func (m *memLeader) handle() Leader {
	m.mu.Lock()
	m.open++
	wrap := m.wrap
	m.mu.Unlock()
	if wrap != nil {
		return wrap(&memLeaderHandle{m: m})
	}
	return &memLeaderHandle{m: m}
}

// epochError checks current_leader_epoch like the leader's replica manager.
func epochError(p *memLeaderPartition, current int32) int16 {
	switch {
	case current < 0:
		return 0
	case current < p.epoch:
		return kerr.FencedLeaderEpoch.Code
	case current > p.epoch:
		return kerr.UnknownLeaderEpoch.Code
	}
	return 0
}

func (m *memLeader) fetch(ctx context.Context, req *kmsg.FetchRequest) (*kmsg.FetchResponse, error) {
	deadline := time.Now().Add(time.Duration(req.MaxWaitMillis) * time.Millisecond)
	for {
		m.mu.Lock()
		if b := m.blockFetch; b != nil {
			m.mu.Unlock()
			select {
			case <-b:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			continue
		}
		n := len(m.fetches)
		if m.sendErr != nil {
			if err := m.sendErr(n); err != nil {
				m.fetches = append(m.fetches, fetchRecord{offsets: map[TopicPartition]int64{}})
				m.mu.Unlock()
				return nil, err
			}
		}
		resp := kmsg.NewPtrFetchResponse()
		resp.SetVersion(req.GetVersion())
		rec := fetchRecord{offsets: make(map[TopicPartition]int64), errors: make(map[TopicPartition]int16)}
		bytes, errs := 0, 0
		for _, rt := range req.Topics {
			ot := kmsg.NewFetchResponseTopic()
			ot.Topic = rt.Topic
			for _, rp := range rt.Partitions {
				tp := TopicPartition{Topic: rt.Topic, Partition: rp.Partition}
				rec.offsets[tp] = rp.FetchOffset
				op := kmsg.NewFetchResponseTopicPartition()
				op.Partition = rp.Partition
				p := m.parts[tp]
				switch {
				case p == nil:
					op.ErrorCode = kerr.NotLeaderForPartition.Code
				case m.fetchErr != nil && m.fetchErr(tp, n) != 0:
					op.ErrorCode = m.fetchErr(tp, n)
				default:
					op.ErrorCode = epochError(p, rp.CurrentLeaderEpoch)
				}
				if op.ErrorCode == 0 && (rp.FetchOffset > p.log.leo || rp.FetchOffset < p.log.start) {
					op.ErrorCode = kerr.OffsetOutOfRange.Code
				}
				if op.ErrorCode == 0 {
					op.HighWatermark, op.LastStableOffset, op.LogStartOffset = p.log.hw, p.log.hw, p.log.start
					op.RecordBatches = p.log.read(rp.FetchOffset, rp.PartitionMaxBytes)
					if len(op.RecordBatches) > 0 && m.corrupt != nil && m.corrupt(tp, n) {
						op.RecordBatches = append([]byte(nil), op.RecordBatches...)
						op.RecordBatches[17] ^= 0xff
						if m.truncateReads {
							op.RecordBatches = op.RecordBatches[:20]
						}
					}
					bytes += len(op.RecordBatches)
				} else {
					rec.errors[tp] = op.ErrorCode
					errs++
				}
				ot.Partitions = append(ot.Partitions, op)
			}
			resp.Topics = append(resp.Topics, ot)
		}
		changed := m.changed
		if bytes > 0 || errs > 0 || !time.Now().Before(deadline) {
			m.fetches = append(m.fetches, rec)
			m.mu.Unlock()
			return resp, nil
		}
		m.mu.Unlock()
		timer := time.NewTimer(time.Until(deadline))
		select {
		case <-changed:
		case <-timer.C:
		case <-ctx.Done():
			timer.Stop()
			return nil, ctx.Err()
		}
		timer.Stop()
	}
}

func (m *memLeader) offsetForLeaderEpoch(req *kmsg.OffsetForLeaderEpochRequest) *kmsg.OffsetForLeaderEpochResponse {
	m.mu.Lock()
	defer m.mu.Unlock()
	resp := kmsg.NewPtrOffsetForLeaderEpochResponse()
	resp.SetVersion(req.GetVersion())
	for _, rt := range req.Topics {
		ot := kmsg.NewOffsetForLeaderEpochResponseTopic()
		ot.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			m.epochReqs = append(m.epochReqs, rp)
			op := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
			op.Partition = rp.Partition
			op.LeaderEpoch, op.EndOffset = -1, -1
			p := m.parts[TopicPartition{Topic: rt.Topic, Partition: rp.Partition}]
			if p == nil {
				op.ErrorCode = kerr.NotLeaderForPartition.Code
			} else if op.ErrorCode = epochError(p, rp.CurrentLeaderEpoch); op.ErrorCode == 0 {
				op.LeaderEpoch, op.EndOffset = p.log.endOffsetForEpoch(rp.LeaderEpoch)
			}
			ot.Partitions = append(ot.Partitions, op)
		}
		resp.Topics = append(resp.Topics, ot)
	}
	return resp
}

func (m *memLeader) listOffsets(req *kmsg.ListOffsetsRequest) *kmsg.ListOffsetsResponse {
	m.mu.Lock()
	defer m.mu.Unlock()
	resp := kmsg.NewPtrListOffsetsResponse()
	resp.SetVersion(req.GetVersion())
	for _, rt := range req.Topics {
		ot := kmsg.NewListOffsetsResponseTopic()
		ot.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			m.listReqs = append(m.listReqs, rp.Timestamp)
			if m.beforeList != nil {
				m.beforeList(rp.Timestamp)
			}
			op := kmsg.NewListOffsetsResponseTopicPartition()
			op.Partition = rp.Partition
			p := m.parts[TopicPartition{Topic: rt.Topic, Partition: rp.Partition}]
			if p == nil {
				op.ErrorCode = kerr.NotLeaderForPartition.Code
			} else if op.ErrorCode = epochError(p, rp.CurrentLeaderEpoch); op.ErrorCode == 0 {
				op.Timestamp = -1
				op.LeaderEpoch = p.epoch
				switch rp.Timestamp {
				case -2:
					op.Offset = p.log.start
				case -1:
					op.Offset = p.log.leo // a replica reads up to the LEO
				default:
					op.ErrorCode = kerr.InvalidRequest.Code
				}
			}
			ot.Partitions = append(ot.Partitions, op)
		}
		resp.Topics = append(resp.Topics, ot)
	}
	return resp
}

// memLeaderHandle is one fetcher's connection to a memLeader.
type memLeaderHandle struct {
	m      *memLeader
	mu     sync.Mutex
	closed bool
}

var errHandleClosed = errors.New("memleader: closed")

func (h *memLeaderHandle) check() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return errHandleClosed
	}
	return nil
}

func (h *memLeaderHandle) Fetch(ctx context.Context, req *kmsg.FetchRequest) (*kmsg.FetchResponse, error) {
	if err := h.check(); err != nil {
		return nil, err
	}
	return h.m.fetch(ctx, req)
}

func (h *memLeaderHandle) OffsetForLeaderEpoch(ctx context.Context, req *kmsg.OffsetForLeaderEpochRequest) (*kmsg.OffsetForLeaderEpochResponse, error) {
	if err := h.check(); err != nil {
		return nil, err
	}
	return h.m.offsetForLeaderEpoch(req), nil
}

func (h *memLeaderHandle) ListOffsets(ctx context.Context, req *kmsg.ListOffsetsRequest) (*kmsg.ListOffsetsResponse, error) {
	if err := h.check(); err != nil {
		return nil, err
	}
	return h.m.listOffsets(req), nil
}

func (h *memLeaderHandle) Close() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.closed {
		h.closed = true
		h.m.mu.Lock()
		h.m.open--
		h.m.mu.Unlock()
	}
	return nil
}
