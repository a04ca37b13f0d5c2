package fetchsession

import (
	"math"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/rcrowley/go-metrics"
)

// Defaults of Kafka 2.4: max.incremental.fetch.session.cache.slots, and KafkaServer's
// MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS (a constant, not a config).
const (
	DefaultCacheSlots = 1000
	MinEvictionAge    = 120 * time.Second
)

// Kafka's metric names (docs/metrics.md).
const (
	MetricNumIncrementalFetchSessions            = "kafka.server:type=FetchSessionCache,name=NumIncrementalFetchSessions"
	MetricNumIncrementalFetchPartitionsCached    = "kafka.server:type=FetchSessionCache,name=NumIncrementalFetchPartitionsCached"
	MetricIncrementalFetchSessionEvictionsPerSec = "kafka.server:type=FetchSessionCache,name=IncrementalFetchSessionEvictionsPerSec"
)

// Cache is the broker's FetchSessionCache. It is safe for concurrent use.
type Cache struct {
	maxEntries int
	evictAge   time.Duration
	evictions  metrics.Meter

	mu            sync.Mutex
	sessions      map[int32]*session
	numPartitions int64
	newID         func() int32 // a random id in [1, MaxInt32)
}

// NewCache returns a cache of maxEntries sessions (0: no sessions are created) in which a session
// unused for longer than evictAge may be evicted by any new one. Its gauges and meter are
// registered in reg (replacing ones of the same names); reg nil registers nothing.
func NewCache(maxEntries int, evictAge time.Duration, reg metrics.Registry) *Cache {
	c := &Cache{
		maxEntries: max(maxEntries, 0),
		evictAge:   evictAge,
		evictions:  metrics.NewMeter(),
		sessions:   make(map[int32]*session),
		newID:      func() int32 { return 1 + rand.Int32N(math.MaxInt32-1) },
	}
	if reg != nil {
		for name, m := range map[string]any{
			MetricNumIncrementalFetchSessions:            metrics.NewFunctionalGauge(func() int64 { return int64(c.Len()) }),
			MetricNumIncrementalFetchPartitionsCached:    metrics.NewFunctionalGauge(c.TotalPartitions),
			MetricIncrementalFetchSessionEvictionsPerSec: c.evictions,
		} {
			reg.Unregister(name)
			_ = reg.Register(name, m)
		}
	}
	return c
}

// Len is the number of sessions in the cache.
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.sessions)
}

// TotalPartitions is the number of partitions cached over all sessions (as of each session's
// last use).
func (c *Cache) TotalPartitions() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.numPartitions
}

// Evictions is the number of sessions evicted so far.
func (c *Cache) Evictions() int64 { return c.evictions.Count() }

func (c *Cache) get(id int32) *session {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sessions[id]
}

// newSessionIDLocked draws a random id, non-zero and not in use.
func (c *Cache) newSessionIDLocked() int32 {
	for {
		if id := c.newID(); id != InvalidSessionID {
			if _, used := c.sessions[id]; !used {
				return id
			}
		}
	}
}

// maybeCreate creates a session of parts if there is room or an entry can be evicted for it
// (Kafka's maybeCreateSession) and returns its id, or InvalidSessionID.
func (c *Cache) maybeCreate(now time.Time, privileged bool, parts []*cachedPartition) int32 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.sessions) >= c.maxEntries && !c.tryEvictLocked(evictKey{privileged: privileged, size: len(parts)}, now) {
		return InvalidSessionID
	}
	s := newSession(c.newSessionIDLocked(), privileged, now)
	for _, p := range parts {
		s.add(p)
	}
	c.sessions[s.id] = s
	c.touchLocked(s, now)
	return s.id
}

// tryEvictLocked evicts one session to make room for a new one with key (Kafka's tryEvict): the
// least recently used session if it has been unused for longer than the eviction age; otherwise
// the least valuable evictable session (as of its last use) if it is worth less than the new one.
// A follower's new session looks among the consumer sessions of any age and the follower
// sessions older than the eviction age; a consumer's only among sessions older than it.
func (c *Cache) tryEvictLocked(key evictKey, now time.Time) bool {
	var lru, victim *session
	var victimKey evictKey
	for _, s := range c.sessions {
		if lru == nil || s.lastUsed.Before(lru.lastUsed) || (s.lastUsed.Equal(lru.lastUsed) && s.id < lru.id) {
			lru = s
		}
		if ok := s.evictableByAll || (key.privileged && s.evictableByPrivileged); ok {
			k := evictKey{privileged: s.privileged, size: s.cachedSize, id: s.id}
			if victim == nil || k.less(victimKey) {
				victim, victimKey = s, k
			}
		}
	}
	switch {
	case lru == nil:
		return false
	case now.Sub(lru.lastUsed) > c.evictAge:
		victim = lru
	case victim == nil || key.less(victimKey):
		return false
	}
	c.removeLocked(victim)
	c.evictions.Mark(1)
	return true
}

// remove takes a session out of the cache (a full fetch naming it, or a session left empty).
func (c *Cache) remove(s *session) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.removeLocked(s)
}

func (c *Cache) removeLocked(s *session) {
	if c.sessions[s.id] != s {
		return
	}
	delete(c.sessions, s.id)
	c.numPartitions -= int64(s.cachedSize)
	s.cachedSize = -1
}

// touchLocked records a use of s at now (Kafka's touch): its last-used time, its size, and
// whether it may be evicted: by anyone once older than the eviction age, by a follower's new
// session also when it is a consumer session. s.mu must be held or s not yet shared.
func (c *Cache) touchLocked(s *session, now time.Time) {
	s.lastUsed = now
	if s.cachedSize >= 0 {
		c.numPartitions -= int64(s.cachedSize)
	}
	s.cachedSize = len(s.parts)
	c.numPartitions += int64(s.cachedSize)
	old := now.Sub(s.creation) > c.evictAge
	s.evictableByAll = old
	s.evictableByPrivileged = old || !s.privileged
}
