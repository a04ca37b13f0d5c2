package fetchsession

import (
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/rcrowley/go-metrics"
	"github.com/twmb/franz-go/pkg/kerr"
)

var t0 = time.Unix(1_000_000, 0)

func tp(topic string, p int32) TopicPartition { return TopicPartition{Topic: topic, Partition: p} }

func pf(topic string, p int32, offset int64) PartitionFetch {
	return PartitionFetch{TopicPartition: tp(topic, p), PartitionRequest: PartitionRequest{FetchOffset: offset, LogStartOffset: -1, MaxBytes: 1 << 20, CurrentLeaderEpoch: 3}}
}

func parts(n int) []PartitionFetch {
	out := make([]PartitionFetch, n)
	for i := range out {
		out[i] = pf("t", int32(i), 0)
	}
	return out
}

// unchanged answers every partition with HW 10 and log start 0 and no records.
func unchanged(n int) []PartitionResult {
	out := make([]PartitionResult, n)
	for i := range out {
		out[i] = PartitionResult{HighWatermark: 10, LastStableOffset: 10}
	}
	return out
}

// sequentialIDs makes the cache's session ids 1, 2, 3, ... (the order tests read evictions in).
func sequentialIDs(c *Cache) {
	next := int32(0)
	c.newID = func() int32 { next++; return next }
}

// create makes a session of n partitions at now and returns its id (0 if none was created).
func create(t *testing.T, c *Cache, now time.Time, follower bool, n int) int32 {
	t.Helper()
	x := c.NewContext(now, 0, InitialEpoch, parts(n), nil, follower)
	if x.Kind() != Full {
		t.Fatalf("epoch 0: kind %v", x.Kind())
	}
	id, code, _ := x.Respond(now, unchanged(n))
	if code != 0 {
		t.Fatalf("full fetch: error %d", code)
	}
	return id
}

func TestNextEpoch(t *testing.T) {
	for _, c := range []struct{ prev, want int32 }{
		{FinalEpoch, FinalEpoch}, {-7, FinalEpoch}, {InitialEpoch, 1}, {1, 2}, {math.MaxInt32 - 1, math.MaxInt32}, {math.MaxInt32, 1},
	} {
		if got := NextEpoch(c.prev); got != c.want {
			t.Errorf("NextEpoch(%d) = %d, want %d", c.prev, got, c.want)
		}
	}
}

func TestContextKinds(t *testing.T) {
	c := NewCache(10, MinEvictionAge, nil)
	id := create(t, c, t0, false, 2) // expects epoch 1 next
	for _, k := range []struct {
		name          string
		sessionID     int32
		epoch         int32
		kind          Kind
		err           int16
		sessionsAfter int
	}{
		{"sessionless", 0, FinalEpoch, Sessionless, 0, 1},
		{"new session (answered below: a second session)", 0, InitialEpoch, Full, 0, 1},
		{"unknown id", id + 1000, 1, SessionError, kerr.FetchSessionIDNotFound.Code, 2},
		{"id 0 incremental", 0, 1, SessionError, kerr.FetchSessionIDNotFound.Code, 2},
		{"wrong epoch", id, 2, SessionError, kerr.InvalidFetchSessionEpoch.Code, 2},
		{"epoch below -1", id, -2, SessionError, kerr.InvalidFetchSessionEpoch.Code, 2},
		{"incremental", id, 1, Incremental, 0, 2},
		{"previous epoch again", id, 1, SessionError, kerr.InvalidFetchSessionEpoch.Code, 2},
		{"next epoch", id, 2, Incremental, 0, 2},
		{"full fetch closes it", id, InitialEpoch, Full, 0, 1},
	} {
		x := c.NewContext(t0, k.sessionID, k.epoch, parts(2), nil, false)
		if x.Kind() != k.kind || x.Error() != k.err || c.Len() != k.sessionsAfter {
			t.Errorf("%s: kind %v error %d sessions %d; want %v %d %d", k.name, x.Kind(), x.Error(), c.Len(), k.kind, k.err, k.sessionsAfter)
		}
		if sid, code, keep := x.Respond(t0, nil); k.kind == SessionError && (sid != 0 || code != k.err || keep != nil) {
			t.Errorf("%s: Respond = %d, %d, %v", k.name, sid, code, keep)
		}
	}
	// A sessionless fetch naming a session closes it too.
	id = create(t, c, t0, false, 1)
	if x := c.NewContext(t0, id, FinalEpoch, parts(1), nil, false); x.Kind() != Sessionless || c.get(id) != nil {
		t.Errorf("epoch -1 naming session %d: kind %v, session kept %v", id, x.Kind(), c.get(id) != nil)
	}
}

func TestFullContextAnswersEverythingAndSetsID(t *testing.T) {
	c := NewCache(10, MinEvictionAge, nil)
	x := c.NewContext(t0, 0, InitialEpoch, []PartitionFetch{pf("a", 0, 1), pf("b", 0, 2), pf("a", 0, 5)}, nil, false)
	want := []PartitionFetch{pf("a", 0, 5), pf("b", 0, 2)} // a duplicate keeps its place and its last values
	if got := x.Partitions(); !reflect.DeepEqual(got, want) {
		t.Fatalf("partitions %v, want %v", got, want)
	}
	id, code, keep := x.Respond(t0, unchanged(2))
	if id == InvalidSessionID || code != 0 || !reflect.DeepEqual(keep, []bool{true, true}) {
		t.Fatalf("Respond = %d, %d, %v", id, code, keep)
	}
	if c.Len() != 1 || c.TotalPartitions() != 2 {
		t.Fatalf("cache holds %d sessions, %d partitions", c.Len(), c.TotalPartitions())
	}
	// Sessionless: everything, no id, nothing cached.
	x = c.NewContext(t0, 0, FinalEpoch, parts(3), nil, false)
	if id, _, keep := x.Respond(t0, unchanged(3)); id != 0 || len(keep) != 3 || !keep[0] || !keep[1] || !keep[2] || c.Len() != 1 {
		t.Fatalf("sessionless Respond = %d, %v; %d sessions", id, keep, c.Len())
	}
}

func TestZeroSlotsCreatesNoSession(t *testing.T) {
	c := NewCache(0, MinEvictionAge, nil)
	if id := create(t, c, t0, true, 3); id != InvalidSessionID || c.Len() != 0 {
		t.Fatalf("session %d created in a cache of 0 slots", id)
	}
}

func TestSessionIDsAreRandomNonZeroAndUnique(t *testing.T) {
	c := NewCache(100, MinEvictionAge, nil)
	draws := []int32{0, 7, 7, 0, 9}
	c.newID = func() int32 { d := draws[0]; draws = draws[1:]; return d }
	if a, b := create(t, c, t0, false, 1), create(t, c, t0, false, 1); a != 7 || b != 9 {
		t.Fatalf("ids %d, %d; want 7 then 9 (0 and the used 7 redrawn)", a, b)
	}
	c = NewCache(100, MinEvictionAge, nil)
	seen := map[int32]bool{}
	for i := 0; i < 100; i++ {
		id := create(t, c, t0, false, 1)
		if id <= 0 || seen[id] {
			t.Fatalf("session id %d (seen before: %v)", id, seen[id])
		}
		seen[id] = true
	}
}

func TestEviction(t *testing.T) {
	age := MinEvictionAge
	type existing struct {
		follower bool
		size     int
		created  time.Duration // before now
		used     time.Duration // before now (the last incremental fetch)
	}
	for _, k := range []struct {
		name     string
		existing []existing
		follower bool
		size     int
		evicted  int32 // id evicted (ids are 1, 2, ... in order), 0 = none and no session
	}{
		{"stale consumer session, by a consumer", []existing{{false, 5, 10 * age, 3 * age}, {false, 5, 10 * age, 0}}, false, 1, 1},
		{"stale follower session, by a consumer", []existing{{true, 50, 10 * age, 2 * age}, {false, 5, 0, 0}}, false, 1, 1},
		{"least recently used goes first when stale", []existing{{false, 5, 10 * age, 2 * age}, {false, 5, 10 * age, 3 * age}}, false, 1, 2},
		{"young sessions: a consumer evicts nothing", []existing{{false, 1, 0, 0}, {false, 1, 0, 0}}, false, 100, 0},
		{"young consumer session, by a follower", []existing{{true, 1, 0, 0}, {false, 100, 0, 0}}, true, 1, 2},
		{"young follower sessions: a follower evicts nothing", []existing{{true, 1, 0, 0}, {true, 1, 0, 0}}, true, 100, 0},
		{"old follower session, by a larger follower one", []existing{{true, 1, 2 * age, 0}, {true, 9, 2 * age, 0}}, true, 5, 1},
		{"old sessions, recently used: the smallest, by a larger consumer", []existing{{false, 9, 2 * age, 0}, {false, 3, 2 * age, 0}}, false, 4, 2},
		{"old sessions: a smaller consumer evicts nothing", []existing{{false, 9, 2 * age, 0}, {false, 3, 2 * age, 0}}, false, 2, 0},
		{"old sessions: an equal size does not evict", []existing{{false, 3, 2 * age, 0}, {false, 3, 2 * age, 0}}, false, 3, 0},
		{"old consumer before old follower, even a smaller follower", []existing{{true, 1, 2 * age, 0}, {false, 8, 2 * age, 0}}, true, 2, 2},
		{"old follower session: a consumer does not evict it", []existing{{true, 1, 2 * age, 0}, {true, 1, 2 * age, 0}}, false, 50, 0},
	} {
		t.Run(k.name, func(t *testing.T) {
			reg := metrics.NewRegistry()
			c := NewCache(len(k.existing), age, reg)
			sequentialIDs(c)
			now := t0.Add(20 * age)
			for _, e := range k.existing {
				id := create(t, c, now.Add(-e.created), e.follower, e.size)
				if e.used != e.created {
					if x := c.NewContext(now.Add(-e.used), id, 1, nil, nil, e.follower); x.Kind() != Incremental {
						t.Fatalf("touch of %d: %v", id, x.Kind())
					}
				}
			}
			before := c.TotalPartitions()
			id := create(t, c, now, k.follower, k.size)
			if k.evicted == 0 {
				if id != InvalidSessionID || c.Len() != len(k.existing) || c.Evictions() != 0 {
					t.Fatalf("created %d (sessions %d, evictions %d), want none", id, c.Len(), c.Evictions())
				}
				return
			}
			if id == InvalidSessionID || c.get(k.evicted) != nil || c.get(id) == nil || c.Evictions() != 1 {
				t.Fatalf("created %d; session %d kept %v; evictions %d", id, k.evicted, c.get(k.evicted) != nil, c.Evictions())
			}
			wantParts := before - int64(k.existing[k.evicted-1].size) + int64(k.size)
			if g := reg.Get(MetricNumIncrementalFetchPartitionsCached).(metrics.Gauge).Value(); g != wantParts {
				t.Errorf("%s = %d, want %d", MetricNumIncrementalFetchPartitionsCached, g, wantParts)
			}
			if g := reg.Get(MetricNumIncrementalFetchSessions).(metrics.Gauge).Value(); g != int64(len(k.existing)) {
				t.Errorf("%s = %d", MetricNumIncrementalFetchSessions, g)
			}
			if m := reg.Get(MetricIncrementalFetchSessionEvictionsPerSec).(metrics.Meter).Count(); m != 1 {
				t.Errorf("%s = %d", MetricIncrementalFetchSessionEvictionsPerSec, m)
			}
		})
	}
}
