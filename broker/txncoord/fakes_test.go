package txncoord

import (
	"encoding/binary"
	"sync"
	"testing"
	"time"

	rm "github.com/isrbroker/isrbroker/replicamanager"
)

// fakeClock fires timers only when the test advances it, on the test's goroutine.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*fakeTimer
}

type fakeTimer struct {
	c             *fakeClock
	at            time.Time
	f             func()
	stopped, done bool
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
	was := !t.stopped && !t.done
	t.stopped = true
	return was
}

// Advance moves the clock by d, firing due timers in deadline order (and those they schedule).
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	end := c.now.Add(d)
	c.mu.Unlock()
	for {
		c.mu.Lock()
		var next *fakeTimer
		for _, t := range c.timers {
			if t.stopped || t.done || t.at.After(end) {
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
		next.done = true
		if next.at.After(c.now) {
			c.now = next.at
		}
		c.mu.Unlock()
		next.f()
	}
}

// fakeReplicas is an in-memory __transaction_state: appends get offsets at once; failCode
// fails them; with hold set their completion waits for release.
type fakeReplicas struct {
	mu       sync.Mutex
	logs     map[rm.TopicPartition][][]byte
	next     map[rm.TopicPartition]int64
	failCode int16
	hold     bool
	held     []func()
	acks     []int16
}

func newFakeReplicas() *fakeReplicas {
	return &fakeReplicas{logs: map[rm.TopicPartition][][]byte{}, next: map[rm.TopicPartition]int64{}}
}

func (f *fakeReplicas) AppendRecords(_ time.Duration, acks int16, entries map[rm.TopicPartition][]byte, done func(map[rm.TopicPartition]rm.ProduceResult)) {
	f.mu.Lock()
	f.acks = append(f.acks, acks)
	res := map[rm.TopicPartition]rm.ProduceResult{}
	for k, b := range entries {
		if f.failCode != 0 {
			res[k] = rm.ProduceResult{ErrorCode: f.failCode, BaseOffset: -1}
			continue
		}
		f.appendLocked(k, b)
		res[k] = rm.ProduceResult{BaseOffset: f.next[k] - 1}
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

func (f *fakeReplicas) appendLocked(k rm.TopicPartition, b []byte) {
	base := f.next[k]
	cp := append([]byte(nil), b...)
	binary.BigEndian.PutUint64(cp, uint64(base))
	last := int64(int32(binary.BigEndian.Uint32(cp[23:])))
	f.next[k] = base + last + 1
	f.logs[k] = append(f.logs[k], cp)
}

func (f *fakeReplicas) setFail(code int16) {
	f.mu.Lock()
	f.failCode = code
	f.mu.Unlock()
}

func (f *fakeReplicas) setHold() {
	f.mu.Lock()
	f.hold = true
	f.mu.Unlock()
}

func (f *fakeReplicas) release() {
	f.mu.Lock()
	held := f.held
	f.held, f.hold = nil, false
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

// records decodes every record of partition p.
func (f *fakeReplicas) records(t *testing.T, p int32) []kv {
	t.Helper()
	f.mu.Lock()
	var raw []byte
	for _, b := range f.logs[rm.TopicPartition{Topic: TransactionStateTopic, Partition: p}] {
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

// lastValue is the last record of id in partition p (nil: a tombstone or none).
func (f *fakeReplicas) lastValue(t *testing.T, p int32, id string) *txnRecord {
	t.Helper()
	var out *txnRecord
	for _, r := range f.records(t, p) {
		k, err := parseKey(r.key)
		if err != nil || k != id {
			continue
		}
		if r.value == nil {
			out = nil
			continue
		}
		v, err := parseValue(r.value)
		if err != nil {
			t.Fatal(err)
		}
		out = &v
	}
	return out
}

type fakePIDs struct {
	mu   sync.Mutex
	next int64
	err  error
}

func (p *fakePIDs) GenerateProducerID() (int64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err != nil {
		return -1, p.err
	}
	id := p.next
	p.next++
	return id, nil
}

// fakeMarkers answers each partition with the next scripted code (NONE when none is left).
type fakeMarkers struct {
	mu     sync.Mutex
	script map[rm.TopicPartition][]int16
	sent   []Marker
}

func newFakeMarkers() *fakeMarkers { return &fakeMarkers{script: map[rm.TopicPartition][]int16{}} }

func (f *fakeMarkers) SendMarkers(m Marker, done func(map[rm.TopicPartition]int16)) {
	f.mu.Lock()
	f.sent = append(f.sent, m)
	res := map[rm.TopicPartition]int16{}
	for _, tp := range m.Partitions {
		if s := f.script[tp]; len(s) > 0 {
			res[tp] = s[0]
			f.script[tp] = s[1:]
		} else {
			res[tp] = 0
		}
	}
	f.mu.Unlock()
	done(res)
}

func (f *fakeMarkers) fail(tp rm.TopicPartition, codes ...int16) {
	f.mu.Lock()
	f.script[tp] = append(f.script[tp], codes...)
	f.mu.Unlock()
}

func (f *fakeMarkers) sends() []Marker {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Marker(nil), f.sent...)
}

type fakeMeta struct {
	mu    sync.Mutex
	known map[topicPartition]bool
}

func (m *fakeMeta) PartitionCount(topic string) int32 {
	if topic == TransactionStateTopic {
		return 1
	}
	return 0
}

func (m *fakeMeta) HasPartition(topic string, p int32) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.known[topicPartition{topic, p}]
}

func (m *fakeMeta) forget(topic string, p int32) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.known, topicPartition{topic, p})
}

type groupsInZero struct{}

func (groupsInZero) PartitionFor(string) int32 { return 0 }
