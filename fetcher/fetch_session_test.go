package fetcher

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/isrbroker/isrbroker/broker/fetchsession"
	"github.com/isrbroker/isrbroker/broker/kproto"
)

// sessionFetch is one Fetch a session leader received and how it answered.
type sessionFetch struct {
	sessionID, epoch int32 // of the request
	sent, forgot     []TopicPartition
	respSession      int32
	errorCode        int16
	answered         []TopicPartition
}

// sessionBroker gives a memLeader the broker's fetch sessions (broker/fetchsession, as the
// Fetch handler uses them): each request is resolved against the cache, the context's
// partitions are read from the memLeader in a sessionless fetch, and the context picks the
// answer's partitions. restart drops every session, as a leader restart does.
type sessionBroker struct {
	mu      sync.Mutex
	cache   *fetchsession.Cache
	fetches []sessionFetch
}

func withSessions(m *memLeader) *sessionBroker {
	b := &sessionBroker{cache: fetchsession.NewCache(10, fetchsession.MinEvictionAge, nil)}
	m.mu.Lock()
	m.wrap = func(h Leader) Leader { return &sessionLeader{Leader: h, b: b} }
	m.mu.Unlock()
	return b
}

func (b *sessionBroker) restart() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.cache = fetchsession.NewCache(10, fetchsession.MinEvictionAge, nil)
}

func (b *sessionBroker) log() []sessionFetch {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]sessionFetch(nil), b.fetches...)
}

type sessionLeader struct {
	Leader
	b *sessionBroker
}

func (l *sessionLeader) Fetch(ctx context.Context, req *kmsg.FetchRequest) (*kmsg.FetchResponse, error) {
	l.b.mu.Lock()
	cache := l.b.cache
	l.b.mu.Unlock()
	rec := sessionFetch{sessionID: req.SessionID, epoch: req.SessionEpoch}
	var fetch []fetchsession.PartitionFetch
	for _, rt := range req.Topics {
		for _, rp := range rt.Partitions {
			tp := TopicPartition{Topic: rt.Topic, Partition: rp.Partition}
			rec.sent = append(rec.sent, tp)
			fetch = append(fetch, fetchsession.PartitionFetch{TopicPartition: tp, PartitionRequest: fetchsession.PartitionRequest{
				FetchOffset: rp.FetchOffset, LogStartOffset: rp.LogStartOffset, MaxBytes: rp.PartitionMaxBytes, CurrentLeaderEpoch: rp.CurrentLeaderEpoch}})
		}
	}
	for _, ft := range req.ForgottenTopics {
		for _, p := range ft.Partitions {
			rec.forgot = append(rec.forgot, TopicPartition{Topic: ft.Topic, Partition: p})
		}
	}
	x := cache.NewContext(time.Now(), req.SessionID, req.SessionEpoch, fetch, rec.forgot, req.ReplicaID >= 0)
	out := kmsg.NewPtrFetchResponse()
	out.SetVersion(req.GetVersion())
	if x.Error() == 0 {
		inner := kmsg.NewPtrFetchRequest()
		*inner = *req
		inner.SessionID, inner.SessionEpoch, inner.Topics, inner.ForgottenTopics = 0, -1, nil, nil
		topics := kproto.NewByTopic(&inner.Topics, func(topic string) kmsg.FetchRequestTopic {
			return kmsg.FetchRequestTopic{Topic: topic}
		})
		for _, p := range x.Partitions() {
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.Partition, rp.FetchOffset, rp.LogStartOffset = p.Partition, p.FetchOffset, p.LogStartOffset
			rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = p.MaxBytes, p.CurrentLeaderEpoch
			rt := topics.Topic(p.Topic)
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp, err := l.Leader.Fetch(ctx, inner)
		if err != nil {
			return nil, err
		}
		byTP := map[TopicPartition]kmsg.FetchResponseTopicPartition{}
		for _, rt := range resp.Topics {
			for _, rp := range rt.Partitions {
				byTP[TopicPartition{Topic: rt.Topic, Partition: rp.Partition}] = rp
			}
		}
		results := make([]fetchsession.PartitionResult, len(x.Partitions()))
		for i, p := range x.Partitions() {
			rp := byTP[p.TopicPartition]
			results[i] = fetchsession.PartitionResult{ErrorCode: rp.ErrorCode, HighWatermark: rp.HighWatermark,
				LastStableOffset: rp.LastStableOffset, LogStartOffset: rp.LogStartOffset, RecordBytes: int64(len(rp.RecordBatches))}
		}
		var keep []bool
		out.SessionID, out.ErrorCode, keep = x.Respond(time.Now(), results)
		answer := kproto.NewByTopic(&out.Topics, func(topic string) kmsg.FetchResponseTopic { return kmsg.FetchResponseTopic{Topic: topic} })
		for i, p := range x.Partitions() {
			if keep[i] {
				rt := answer.Topic(p.Topic)
				rt.Partitions = append(rt.Partitions, byTP[p.TopicPartition])
				rec.answered = append(rec.answered, p.TopicPartition)
			}
		}
	} else {
		out.ErrorCode = x.Error()
	}
	rec.respSession, rec.errorCode = out.SessionID, out.ErrorCode
	l.b.mu.Lock()
	l.b.fetches = append(l.b.fetches, rec)
	l.b.mu.Unlock()
	return out, nil
}

func sameSet(a, b []TopicPartition) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	cmp := func(x, y TopicPartition) int {
		if x.Topic != y.Topic {
			if x.Topic < y.Topic {
				return -1
			}
			return 1
		}
		return int(x.Partition - y.Partition)
	}
	slices.SortFunc(a, cmp)
	slices.SortFunc(b, cmp)
	return slices.Equal(a, b)
}

// TestFollowerFetchSessions: the follower's fetches with a session-serving leader become
// incremental (nothing sent when nothing changed; only the partition whose fetch offset moved;
// answers carrying only changed partitions), start over in full when the leader loses the
// session (a restart: FETCH_SESSION_ID_NOT_FOUND) or a request fails, and survive a leader change
// of one partition: the old leader's session forgets it, the new leader's starts full.
func TestFollowerFetchSessions(t *testing.T) {
	c := newCluster(t, Config{}, 1, 3)
	sb1, sb3 := withSessions(c.leaders[1]), withSessions(c.leaders[3])
	a0, a1, b0 := tp("a", 0), tp("a", 1), tp("b", 0)
	all := []TopicPartition{a0, a1, b0}
	for _, p := range all {
		c.local.log(p)
		c.leaders[1].lead(p, 0, &memLog{})
		c.leaders[1].produce(p, "x")
		c.follow(p, 1, 0)
	}
	for _, p := range all {
		c.waitInSync(p, 1)
	}
	idle := func(b *sessionBroker) func() bool {
		return func() bool {
			l := b.log()
			if len(l) == 0 {
				return false
			}
			last := l[len(l)-1]
			return last.epoch > 1 && last.sessionID != 0 && len(last.sent) == 0 && last.errorCode == 0
		}
	}
	eventually(t, "incremental fetches with nothing to send", idle(sb1))
	log := sb1.log()
	if f := log[0]; f.epoch != 0 || f.sessionID != 0 || f.respSession == 0 {
		t.Fatalf("first fetch: session %d epoch %d answered session %d; want a full fetch creating a session", f.sessionID, f.epoch, f.respSession)
	}
	session := log[len(log)-1].sessionID

	// A record on a-1: the answer carrying it is incremental and carries a-1 only; the next
	// request sends a-1 alone (its fetch offset moved).
	n := len(sb1.log())
	c.leaders[1].produce(a1, "y")
	c.waitInSync(a1, 1)
	eventually(t, "a-1's new fetch offset sent alone", func() bool {
		for _, f := range sb1.log()[n:] {
			if f.epoch > 0 && sameSet(f.sent, []TopicPartition{a1}) {
				return true
			}
		}
		return false
	})
	for _, f := range sb1.log()[n:] {
		if f.epoch <= 0 || f.sessionID != session || f.errorCode != 0 {
			t.Fatalf("fetch %+v: want incremental fetches of session %d", f, session)
		}
		if len(f.answered) > 0 && !sameSet(f.answered, []TopicPartition{a1}) {
			t.Fatalf("incremental answer carries %v; only a-1 changed", f.answered)
		}
	}

	// The leader restarts (its sessions are gone): FETCH_SESSION_ID_NOT_FOUND, then a full fetch
	// of all three partitions gets a new session, then incremental again.
	n = len(sb1.log())
	sb1.restart()
	c.leaders[1].produce(b0, "z")
	c.waitInSync(b0, 1)
	eventually(t, "incremental fetches of a new session", idle(sb1))
	after := sb1.log()[n:] // (a fetch in flight at the restart may still be answered by the old session)
	lost := slices.IndexFunc(after, func(f sessionFetch) bool { return f.errorCode == kerr.FetchSessionIDNotFound.Code })
	if lost < 0 || lost > 1 {
		t.Fatalf("fetches after the restart %+v: want FETCH_SESSION_ID_NOT_FOUND at once", after)
	}
	after = after[lost:]
	if f := after[1]; f.epoch != 0 || f.sessionID != 0 || !sameSet(f.sent, all) || f.respSession == 0 || f.respSession == session {
		t.Fatalf("fetch after FETCH_SESSION_ID_NOT_FOUND: %+v, want a full fetch of %v creating a new session", f, all)
	}
	session = after[1].respSession

	// A failed request: the next fetch is full and closes the session it names.
	n = len(sb1.log())
	c.leaders[1].mu.Lock()
	failAt := len(c.leaders[1].fetches)
	c.leaders[1].sendErr = func(i int) error {
		if i == failAt {
			return context.DeadlineExceeded
		}
		return nil
	}
	c.leaders[1].mu.Unlock()
	eventually(t, "a full fetch closing the session after the failure", func() bool {
		for _, f := range sb1.log()[n:] {
			if f.epoch == 0 && f.sessionID == session && sameSet(f.sent, all) && f.respSession != 0 {
				return true
			}
		}
		return false
	})
	eventually(t, "incremental fetches after the failure", idle(sb1))

	// a-0 moves to leader 3 at epoch 1: leader 1's session forgets it, leader 3's starts full.
	n = len(sb1.log())
	c.leaders[3].lead(a0, 1, c.leaders[1].cloneLog(a0))
	c.mgr.RemoveFetcherForPartitions([]TopicPartition{a0})
	c.follow(a0, 3, 1)
	c.leaders[3].produce(a0, "w")
	c.waitInSync(a0, 3)
	eventually(t, "leader 1's session to forget a-0", func() bool {
		for _, f := range sb1.log()[n:] {
			if f.epoch > 0 && sameSet(f.forgot, []TopicPartition{a0}) && f.errorCode == 0 {
				return true
			}
		}
		return false
	})
	eventually(t, "incremental fetches from leader 3", idle(sb3))
	if f := sb3.log()[0]; f.epoch != 0 || !sameSet(f.sent, []TopicPartition{a0}) || f.respSession == 0 {
		t.Fatalf("leader 3's first fetch %+v, want a full fetch of a-0 creating a session", f)
	}
	c.leaders[1].produce(a1, "v")
	c.waitInSync(a1, 1)
}

// The client side of a session, step by step (Kafka's FetchSessionHandler): what each request
// carries and how each answer moves the session.
func TestFetchSessionHandler(t *testing.T) {
	a0, a1, b0 := tp("a", 0), tp("a", 1), tp("b", 0)
	part := func(p TopicPartition, offset int64) sessionPartition {
		return sessionPartition{tp: p, data: sessionPartitionData{fetchOffset: offset, logStartOffset: -1, maxBytes: 100, leaderEpoch: 1}}
	}
	answer := func(sessionID int32, code int16, parts ...TopicPartition) *kmsg.FetchResponse {
		r := kmsg.NewPtrFetchResponse()
		r.SessionID, r.ErrorCode = sessionID, code
		byTopic := kproto.NewByTopic(&r.Topics, func(topic string) kmsg.FetchResponseTopic { return kmsg.FetchResponseTopic{Topic: topic} })
		for _, p := range parts {
			rt := byTopic.Topic(p.Topic)
			rt.Partitions = append(rt.Partitions, kmsg.FetchResponseTopicPartition{Partition: p.Partition})
		}
		return r
	}
	s := newFetchSession()
	for i, step := range []struct {
		next                 []sessionPartition
		wantID, wantEpoch    int32
		wantSent, wantForgot []TopicPartition
		resp                 *kmsg.FetchResponse // nil: the request fails
		wantOK               bool
	}{
		{[]sessionPartition{part(a0, 0), part(a1, 0)}, 0, 0, []TopicPartition{a0, a1}, nil, answer(7, 0, a0, a1), true},
		{[]sessionPartition{part(a0, 0), part(a1, 0)}, 7, 1, nil, nil, answer(7, 0, a1), true},
		{[]sessionPartition{part(a0, 5), part(b0, 0)}, 7, 2, []TopicPartition{a0, b0}, []TopicPartition{a1}, answer(7, 0), true},
		{[]sessionPartition{part(a0, 5), part(b0, 0)}, 7, 3, nil, nil, answer(7, 0, a1), false},                         // not in the session: re-full, closing 7
		{[]sessionPartition{part(a0, 5), part(b0, 0)}, 7, 0, []TopicPartition{a0, b0}, nil, answer(8, 0, a0, b0), true}, // full, closing 7
		{[]sessionPartition{part(a0, 6), part(b0, 0)}, 8, 1, []TopicPartition{a0}, nil, nil, false},                     // the request fails
		{[]sessionPartition{part(a0, 6), part(b0, 0)}, 8, 0, []TopicPartition{a0, b0}, nil, answer(8, 0, a0), false},    // a full answer missing b-0
		{[]sessionPartition{part(a0, 6), part(b0, 0)}, 0, 0, []TopicPartition{a0, b0}, nil, answer(9, 0, a0, b0), true},
		{[]sessionPartition{part(a0, 6), part(b0, 0)}, 9, 1, nil, nil, answer(0, kerr.FetchSessionIDNotFound.Code), false},
		{[]sessionPartition{part(a0, 6), part(b0, 0)}, 0, 0, []TopicPartition{a0, b0}, nil, answer(0, 0, a0, b0), true}, // no room at the leader
		{[]sessionPartition{part(a0, 6)}, 0, 0, []TopicPartition{a0}, nil, answer(3, 0, a0), true},                      // so full again
		{[]sessionPartition{part(a0, 6)}, 3, 1, nil, nil, answer(3, kerr.InvalidFetchSessionEpoch.Code), false},
		{[]sessionPartition{part(a0, 6)}, 3, 0, []TopicPartition{a0}, nil, answer(4, 0, a0), true},
		{nil, 4, 1, nil, []TopicPartition{a0}, answer(0, 0), true}, // everything forgotten: the leader closes the session
		{nil, 0, 0, nil, nil, nil, false}, // nothing to send
	} {
		req := kmsg.NewPtrFetchRequest()
		send := s.build(req, step.next)
		var sent, forgot []TopicPartition
		for _, rt := range req.Topics {
			for _, rp := range rt.Partitions {
				sent = append(sent, TopicPartition{Topic: rt.Topic, Partition: rp.Partition})
			}
		}
		for _, ft := range req.ForgottenTopics {
			for _, p := range ft.Partitions {
				forgot = append(forgot, TopicPartition{Topic: ft.Topic, Partition: p})
			}
		}
		if req.SessionID != step.wantID || req.SessionEpoch != step.wantEpoch || !sameSet(sent, step.wantSent) || !sameSet(forgot, step.wantForgot) {
			t.Fatalf("step %d: request session %d epoch %d sent %v forgot %v; want %d %d %v %v",
				i, req.SessionID, req.SessionEpoch, sent, forgot, step.wantID, step.wantEpoch, step.wantSent, step.wantForgot)
		}
		if !send {
			if len(step.next) != 0 || step.wantForgot != nil {
				t.Fatalf("step %d: nothing to send", i)
			}
			continue
		}
		if step.resp == nil {
			s.handleError()
			continue
		}
		if ok, problem := s.handleResponse(step.resp); ok != step.wantOK {
			t.Fatalf("step %d: handleResponse = %v (%s), want %v", i, ok, problem, step.wantOK)
		}
	}
}
