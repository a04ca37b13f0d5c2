package groupcoord

import (
	"encoding/binary"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	rm "github.com/isrbroker/isrbroker/replicamanager"
)

// fakeClock fires timers only when the test advances it, on the test's goroutine.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*fakeTimer
}

type fakeTimer struct {
	c       *fakeClock
	at      time.Time
	f       func()
	stopped bool
	fired   bool
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Unix(1_700_000_000, 0)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) AfterFunc(d time.Duration, f func()) Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTimer{c: c, at: c.now.Add(d), f: f}
	c.timers = append(c.timers, t)
	return t
}

func (t *fakeTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	was := !t.stopped && !t.fired
	t.stopped = true
	return was
}

// Advance moves the clock by d, firing due timers in deadline order (timers they schedule
// fire too when due).
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	end := c.now.Add(d)
	c.mu.Unlock()
	for {
		c.mu.Lock()
		var next *fakeTimer
		for _, t := range c.timers {
			if t.stopped || t.fired || t.at.After(end) {
				continue
			}
			if next == nil || t.at.Before(next.at) {
				next = t
			}
		}
		if next == nil {
			c.now = end
			c.mu.Unlock()
			return
		}
		next.fired = true
		if next.at.After(c.now) {
			c.now = next.at
		}
		c.mu.Unlock()
		next.f()
	}
}

// fakeReplicas is an in-memory __consumer_offsets: appends get offsets at once; with hold set,
// their completion waits until release (the ISR has not caught up).
type fakeReplicas struct {
	mu       sync.Mutex
	logs     map[rm.TopicPartition][][]byte
	next     map[rm.TopicPartition]int64
	failCode int16
	hold     bool
	held     []func()
	appends  int
}

func newFakeReplicas() *fakeReplicas {
	return &fakeReplicas{logs: map[rm.TopicPartition][][]byte{}, next: map[rm.TopicPartition]int64{}}
}

func (f *fakeReplicas) AppendRecords(_ time.Duration, _ int16, entries map[rm.TopicPartition][]byte, done func(map[rm.TopicPartition]rm.ProduceResult)) {
	f.mu.Lock()
	res := map[rm.TopicPartition]rm.ProduceResult{}
	for k, b := range entries {
		if f.failCode != 0 {
			res[k] = rm.ProduceResult{ErrorCode: f.failCode, BaseOffset: -1}
			continue
		}
		base := f.next[k]
		cp := append([]byte(nil), b...)
		binary.BigEndian.PutUint64(cp, uint64(base))
		last := int64(int32(binary.BigEndian.Uint32(cp[23:])))
		f.next[k] = base + last + 1
		f.logs[k] = append(f.logs[k], cp)
		f.appends++
		res[k] = rm.ProduceResult{BaseOffset: base}
	}
	hold := f.hold
	if hold {
		f.held = append(f.held, func() { done(res) })
	}
	f.mu.Unlock()
	if !hold {
		done(res)
	}
}

func (f *fakeReplicas) release() {
	f.mu.Lock()
	held := f.held
	f.held = nil
	f.hold = false
	f.mu.Unlock()
	for _, d := range held {
		d()
	}
}

func (f *fakeReplicas) ReadLocal(t rm.TopicPartition, offset int64, maxBytes int32) (rm.LocalRead, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := rm.LocalRead{LogEndOffset: f.next[t]}
	for _, b := range f.logs[t] {
		base := int64(binary.BigEndian.Uint64(b))
		last := base + int64(int32(binary.BigEndian.Uint32(b[23:])))
		if last < offset {
			continue
		}
		if len(out.Records) > 0 && len(out.Records)+len(b) > int(maxBytes) {
			break
		}
		out.Records = append(out.Records, b...)
	}
	return out, nil
}

// records decodes every record of partition p: keys and values (nil: tombstone).
func (f *fakeReplicas) records(t *testing.T, p int32) []kv {
	t.Helper()
	f.mu.Lock()
	var raw []byte
	for _, b := range f.logs[rm.TopicPartition{Topic: OffsetsTopic, Partition: p}] {
		raw = append(raw, b...)
	}
	f.mu.Unlock()
	batches, skipped, err := decodeBatches(raw)
	if err != nil || len(skipped) > 0 {
		t.Fatalf("decoding the fake log: %v %v", err, skipped)
	}
	var out []kv
	for _, b := range batches {
		out = append(out, b.records...)
	}
	return out
}

type fakeMeta struct {
	partitions map[string]int32
	alive      int
}

func (m *fakeMeta) PartitionCount(topic string) int32 { return m.partitions[topic] }
func (m *fakeMeta) HasPartition(topic string, p int32) bool {
	n, ok := m.partitions[topic]
	return ok && p < n
}
func (m *fakeMeta) Leader(string, int32, string) (Node, bool) {
	return Node{ID: 1, Host: "h", Port: 9092}, true
}
func (m *fakeMeta) AliveBrokers() int { return m.alive }

type env struct {
	t     *testing.T
	c     *Coordinator
	clock *fakeClock
	reps  *fakeReplicas
	meta  *fakeMeta
}

const (
	testSession   = 10 * time.Second
	testRebalance = 30 * time.Second
	testDelay     = 3 * time.Second
)

// newEnv starts a coordinator over one offsets partition (every group maps to 0) and makes it
// the partition's leader.
func newEnv(t *testing.T, mod ...func(*Config)) *env {
	t.Helper()
	e := &env{t: t, clock: newFakeClock(), reps: newFakeReplicas(),
		meta: &fakeMeta{partitions: map[string]int32{OffsetsTopic: 1, "t": 3, "u": 1}, alive: 3}}
	cfg := Config{
		BrokerID: 1, OffsetsTopicNumPartitions: 1, OffsetMetadataMaxBytes: 4096,
		GroupMinSessionTimeout: time.Second, GroupMaxSessionTimeout: time.Minute,
		GroupInitialRebalanceDelay: testDelay, OffsetsRetention: time.Hour, OffsetsRetentionCheckInterval: time.Hour,
		Clock: e.clock,
	}
	for _, m := range mod {
		m(&cfg)
	}
	e.c = New(cfg, e.reps, e.meta, nil)
	e.c.Start()
	t.Cleanup(e.c.Close)
	e.elect(0)
	return e
}

// elect makes the broker leader of offsets partition p and waits for the load.
func (e *env) elect(p int32) {
	e.t.Helper()
	e.c.OnLeadershipChange([]rm.TopicPartition{{Topic: OffsetsTopic, Partition: p}}, nil)
	e.waitLoaded(p)
}

func (e *env) waitLoaded(p int32) {
	e.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		e.c.groupManager.mu.RLock()
		ok := e.c.groupManager.owned[p] && !e.c.groupManager.loading[p]
		e.c.groupManager.mu.RUnlock()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("offsets partition %d not loaded", p)
		}
		time.Sleep(time.Millisecond) // polling the loader goroutine with a deadline
	}
}

// joinCall is a JoinGroup whose answer may come later.
type joinCall struct {
	mu  sync.Mutex
	res *joinResult
}

func (j *joinCall) get() (joinResult, bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.res == nil {
		return joinResult{}, false
	}
	return *j.res, true
}

func (e *env) join(group, memberID string, instanceID *string, version int16, meta string) *joinCall {
	return e.joinWith(joinParams{groupID: group, memberID: memberID, instanceID: instanceID, requireKnownID: version >= 4 && instanceID == nil,
		clientID: "client", clientHost: "/127.0.0.1", rebalanceTimeout: testRebalance, sessionTimeout: testSession,
		protocolType: "consumer", protocols: []protocol{{name: "range", metadata: []byte(meta)}}})
}

func (e *env) joinWith(p joinParams) *joinCall {
	j := &joinCall{}
	e.c.JoinGroup(p, func(r joinResult) {
		j.mu.Lock()
		defer j.mu.Unlock()
		if j.res != nil {
			e.t.Errorf("JoinGroup answered twice")
		}
		j.res = &r
	})
	return j
}

// mustJoined returns the answer of j, failing if there is none yet.
func (e *env) mustJoined(j *joinCall) joinResult {
	e.t.Helper()
	r, ok := j.get()
	if !ok {
		e.t.Fatalf("JoinGroup not answered")
	}
	return r
}

func (e *env) mustParked(j *joinCall) {
	e.t.Helper()
	if r, ok := j.get(); ok {
		e.t.Fatalf("JoinGroup answered early: %+v", r)
	}
}

type syncCall struct {
	mu  sync.Mutex
	res *syncResult
}

func (s *syncCall) get() (syncResult, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.res == nil {
		return syncResult{}, false
	}
	return *s.res, true
}

func (e *env) sync(group string, gen int32, memberID string, instanceID *string, assignment map[string][]byte) *syncCall {
	s := &syncCall{}
	e.c.SyncGroup(group, gen, memberID, instanceID, assignment, func(r syncResult) {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.res = &r
	})
	return s
}

func (e *env) state(group string) groupState {
	g := e.c.groupManager.getGroup(group)
	if g == nil {
		return -1
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.state
}

func (e *env) members(group string) []string {
	g := e.c.groupManager.getGroup(group)
	if g == nil {
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	ids := g.sortedMemberIDs()
	sort.Strings(ids)
	return ids
}

// stableSingle brings group to Stable with one dynamic member (v4 join) and returns its id and
// generation.
func (e *env) stableSingle(group string) (string, int32) {
	e.t.Helper()
	j := e.join(group, "", nil, 4, "m")
	r := e.mustJoined(j)
	if r.err != errMemberIDRequired {
		e.t.Fatalf("first v4 join: error %d, want MEMBER_ID_REQUIRED", r.err)
	}
	j = e.join(group, r.memberID, nil, 4, "m")
	e.clock.Advance(testDelay)
	r = e.mustJoined(j)
	if r.err != errNone {
		e.t.Fatalf("join: error %d", r.err)
	}
	s := e.sync(group, r.generation, r.memberID, nil, map[string][]byte{r.memberID: []byte("assign")})
	if res, ok := s.get(); !ok || res.err != errNone {
		e.t.Fatalf("sync: %+v %v", res, ok)
	}
	return r.memberID, r.generation
}

func str(s string) *string { return &s }

func assertCode(t *testing.T, what string, got, want int16) {
	t.Helper()
	if got != want {
		t.Fatalf("%s: error code %d, want %d", what, got, want)
	}
}

var _ = fmt.Sprint
var _ = kmsg.NewOffsetCommitKey
