package fetchsession

import (
	"container/list"
	"math"
	"sync"
	"time"

	"github.com/isrbroker/isrbroker/logstore/record"
)

// TopicPartition names one partition (the record leaf's type).
type TopicPartition = record.TopicPartition

// The session metadata of a Fetch request (Kafka's FetchMetadata).
const (
	InvalidSessionID int32 = 0  // no session
	InitialEpoch     int32 = 0  // a full fetch creating a session
	FinalEpoch       int32 = -1 // a sessionless full fetch
)

// NextEpoch is the epoch expected after prev: FINAL_EPOCH stays final, and the epoch wraps from
// MaxInt32 to 1 (0 only ever starts a session).
func NextEpoch(prev int32) int32 {
	switch {
	case prev < 0:
		return FinalEpoch
	case prev == math.MaxInt32:
		return 1
	default:
		return prev + 1
	}
}

// PartitionRequest is what a fetch asks of one partition, the part of it a session caches.
type PartitionRequest struct {
	FetchOffset        int64
	LogStartOffset     int64 // the fetcher's (a follower's log start; -1 for consumers)
	MaxBytes           int32
	CurrentLeaderEpoch int32
}

// PartitionFetch is one partition to fetch and its request.
type PartitionFetch struct {
	TopicPartition
	PartitionRequest
}

// PartitionResult is what the read of one partition returned, as far as deciding whether an
// incremental answer must carry it.
type PartitionResult struct {
	ErrorCode        int16
	HighWatermark    int64
	LastStableOffset int64
	LogStartOffset   int64 // the leader's
	RecordBytes      int64 // bytes of records in the answer
}

// cachedPartition is one partition of a session (Kafka's CachedPartition): the request as last
// sent and the answer as last returned.
type cachedPartition struct {
	tp                  TopicPartition
	req                 PartitionRequest
	highWatermark       int64
	lastStableOffset    int64
	localLogStartOffset int64
}

// mustRespond reports whether an incremental answer must carry the partition: records, an
// error, or a changed HW, LSO or log start offset. With update it records the answer; an error
// sets the cached HW to -1 so that the partition is sent again once the error is gone.
func (p *cachedPartition) mustRespond(r PartitionResult, update bool) bool {
	must := r.RecordBytes > 0
	if p.highWatermark != r.HighWatermark {
		must = true
		if update {
			p.highWatermark = r.HighWatermark
		}
	}
	if p.lastStableOffset != r.LastStableOffset {
		must = true
		if update {
			p.lastStableOffset = r.LastStableOffset
		}
	}
	if p.localLogStartOffset != r.LogStartOffset {
		must = true
		if update {
			p.localLogStartOffset = r.LogStartOffset
		}
	}
	if r.ErrorCode != 0 {
		must = true
		if update {
			p.highWatermark = -1
		}
	}
	return must
}

// session is one incremental fetch session (Kafka's FetchSession). Its mu guards parts, order
// and epoch; the cache's bookkeeping fields (lastUsed, cachedSize and the evictable flags) are
// read and written only with the cache's mu held.
type session struct {
	id         int32
	privileged bool // created by a follower
	creation   time.Time

	mu    sync.Mutex
	parts map[TopicPartition]*list.Element // of *cachedPartition, in order
	order *list.List                       // fetch order; answered partitions move to the back
	epoch int32                            // the next epoch expected

	lastUsed time.Time

	cachedSize            int  // partitions as of the last touch; -1 when not in the cache
	evictableByAll        bool // as of the last touch: older than the eviction age
	evictableByPrivileged bool // as of the last touch: a consumer session, or evictableByAll
}

func newSession(id int32, privileged bool, now time.Time) *session {
	return &session{
		id: id, privileged: privileged, creation: now, lastUsed: now,
		parts: make(map[TopicPartition]*list.Element), order: list.New(),
		epoch: NextEpoch(InitialEpoch), cachedSize: -1,
	}
}

func (s *session) cached(tp TopicPartition) *cachedPartition {
	if e := s.parts[tp]; e != nil {
		return e.Value.(*cachedPartition)
	}
	return nil
}

func (s *session) add(p *cachedPartition) {
	s.parts[p.tp] = s.order.PushBack(p)
}

// update applies an incremental request (Kafka's FetchSession.update): new partitions join at
// the back, known ones take the new request values, forgotten ones leave. It returns the counts
// added, updated and removed.
func (s *session) update(fetch []PartitionFetch, forget []TopicPartition) (added, updated, removed int) {
	for _, f := range fetch {
		if p := s.cached(f.TopicPartition); p != nil {
			p.req = f.PartitionRequest
			updated++
			continue
		}
		s.add(&cachedPartition{tp: f.TopicPartition, req: f.PartitionRequest, highWatermark: -1, lastStableOffset: -1, localLogStartOffset: -1})
		added++
	}
	for _, tp := range forget {
		if e := s.parts[tp]; e != nil {
			s.order.Remove(e)
			delete(s.parts, tp)
			removed++
		}
	}
	return added, updated, removed
}

// partitions lists the cached partitions in fetch order with their cached requests.
func (s *session) partitions() []PartitionFetch {
	out := make([]PartitionFetch, 0, s.order.Len())
	for e := s.order.Front(); e != nil; e = e.Next() {
		p := e.Value.(*cachedPartition)
		out = append(out, PartitionFetch{TopicPartition: p.tp, PartitionRequest: p.req})
	}
	return out
}

// evictKey orders sessions by value for eviction: consumer sessions before follower ones, then
// fewer partitions first, then the lower id (Kafka's EvictableKey).
type evictKey struct {
	privileged bool
	size       int
	id         int32
}

// less reports k < o.
func (k evictKey) less(o evictKey) bool {
	if k.privileged != o.privileged {
		return !k.privileged
	}
	if k.size != o.size {
		return k.size < o.size
	}
	return k.id < o.id
}
