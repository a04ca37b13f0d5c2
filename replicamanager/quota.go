package replicamanager

import (
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rcrowley/go-metrics"
	"github.com/sirupsen/logrus"

	"github.com/isrbroker/isrbroker/fetcher"
)

// Replication throttles (issue 4; docs/kafka-facts.md §4 and §8). A reassignment started with
// --throttle writes leader/follower.replication.throttled.rate on the brokers and
// leader/follower.replication.throttled.replicas on the topics; zkcoord delivers those configs
// through DynamicConfigSource. As in Kafka's ReplicationQuotaManager, throttling applies only to
// replicas outside the ISR (shouldLeaderThrottle / shouldFollowerThrottle): the leader returns no
// records for a throttled partition to a follower that is not in the ISR while the leader quota
// is exceeded, and the follower leaves a throttled, not-in-sync partition out of its fetch while
// the follower quota is exceeded.

// Dynamic config keys (Kafka's DynamicConfig.Broker and LogConfig names).
const (
	leaderThrottledRateKey       = "leader.replication.throttled.rate"
	followerThrottledRateKey     = "follower.replication.throttled.rate"
	leaderThrottledReplicasKey   = "leader.replication.throttled.replicas"
	followerThrottledReplicasKey = "follower.replication.throttled.replicas"
)

// Metric names of the replication quotas' measured throttled byte rates (bytes/s).
const (
	MetricLeaderReplicationByteRate   = "kafka.server:type=LeaderReplication,name=byte-rate"
	MetricFollowerReplicationByteRate = "kafka.server:type=FollowerReplication,name=byte-rate"
)

// DynamicConfigSource delivers dynamic configuration (/config/brokers/<id>,
// /config/brokers/<default>, /config/topics/<t>) and its changes; zkcoord implements it with
// Kafka's /config/changes notification listener. Each call of f carries the entity
// ("brokers/<id>", "brokers/<default>" or "topics/<t>") and its complete current config (empty
// when the znode is gone). f is called from one goroutine at a time and must not block.
type DynamicConfigSource interface {
	OnDynamicConfig(f func(entity string, cfg map[string]string))
}

// rateLimiter is a token bucket over a one-second window: it holds at most one second's worth of
// bytes (rate), refills continuously and may go negative after a large read, which then waits for
// the refill. A rate <= 0 means unlimited. It also measures the recorded byte rate over a sliding
// one-second window for the byte-rate gauges.
type rateLimiter struct {
	now func() time.Time

	mu     sync.Mutex
	rate   float64 // bytes per second; <= 0: unlimited
	tokens float64
	last   time.Time // last refill

	winStart  time.Time // start of the current measurement second
	cur, prev int64     // bytes recorded in the current and the previous second
}

func newRateLimiter(now func() time.Time) *rateLimiter {
	if now == nil {
		now = time.Now
	}
	return &rateLimiter{now: now}
}

// refillLocked adds the tokens accrued since the last refill, capped at one second's worth.
func (l *rateLimiter) refillLocked(now time.Time) {
	if l.rate <= 0 {
		l.last = now
		return
	}
	if el := now.Sub(l.last); el > 0 {
		l.tokens = math.Min(l.rate, l.tokens+l.rate*el.Seconds())
	}
	l.last = now
}

// SetRate changes the rate (bytes/s; <= 0 removes the limit). Switching from unlimited to a
// limit starts with a full bucket (one second's worth); otherwise the balance is kept, capped
// at the new bucket size.
func (l *rateLimiter) SetRate(rate int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	l.refillLocked(now)
	r := float64(rate)
	if rate <= 0 {
		r = 0
	}
	if l.rate <= 0 && r > 0 {
		l.tokens = r
	}
	l.rate = r
	l.tokens = math.Min(l.tokens, r)
	l.last = now
}

// Rate returns the configured rate (0: unlimited).
func (l *rateLimiter) Rate() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return int64(l.rate)
}

// Exceeded reports whether the bucket is empty: nothing more may be sent until it refills.
func (l *rateLimiter) Exceeded() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.rate <= 0 {
		return false
	}
	l.refillLocked(l.now())
	return l.tokens <= 0
}

// Record takes n bytes from the bucket and counts them in the measured rate.
func (l *rateLimiter) Record(n int64) {
	if n <= 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	l.rollLocked(now)
	l.cur += n
	if l.rate > 0 {
		l.refillLocked(now)
		l.tokens -= float64(n)
	}
}

// rollLocked advances the measurement window to the second containing now.
func (l *rateLimiter) rollLocked(now time.Time) {
	if l.winStart.IsZero() {
		l.winStart = now
		return
	}
	el := now.Sub(l.winStart)
	switch {
	case el < time.Second:
	case el < 2*time.Second:
		l.prev, l.cur = l.cur, 0
		l.winStart = l.winStart.Add(time.Second)
	default:
		l.prev, l.cur = 0, 0
		l.winStart = now
	}
}

// MeasuredRate is the recorded bytes per second over the last second (the previous second's
// bytes weighted by its part still inside the window, plus the current second's).
func (l *rateLimiter) MeasuredRate() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.winStart.IsZero() {
		return 0
	}
	now := l.now()
	l.rollLocked(now)
	frac := now.Sub(l.winStart).Seconds()
	return int64(float64(l.prev)*(1-frac) + float64(l.cur))
}

// throttledSet is a parsed leader/follower.replication.throttled.replicas value for one topic
// and this broker: "*" (every partition) or the partitions p listed as "p:<this broker>".
type throttledSet struct {
	all   bool
	parts map[int32]struct{}
}

func (s throttledSet) empty() bool { return !s.all && len(s.parts) == 0 }

func (s throttledSet) has(p int32) bool {
	if s.all {
		return true
	}
	_, ok := s.parts[p]
	return ok
}

// parseThrottledReplicas is Kafka's QuotaUtils/TopicConfigHandler.parseThrottledPartitions:
// "*" throttles every partition; otherwise the "p:b" entries whose broker b is this broker.
// Malformed entries are skipped (and reported through bad).
func parseThrottledReplicas(v string, brokerID int32, bad func(entry string)) throttledSet {
	v = strings.TrimSpace(v)
	if v == "" {
		return throttledSet{}
	}
	if v == "*" {
		return throttledSet{all: true}
	}
	out := throttledSet{parts: map[int32]struct{}{}}
	for _, e := range strings.Split(v, ",") {
		e = strings.TrimSpace(e)
		if e == "" {
			continue
		}
		ps, bs, ok := strings.Cut(e, ":")
		p, perr := strconv.ParseInt(strings.TrimSpace(ps), 10, 32)
		b, berr := strconv.ParseInt(strings.TrimSpace(bs), 10, 32)
		if !ok || perr != nil || berr != nil || p < 0 {
			if bad != nil {
				bad(e)
			}
			continue
		}
		if int32(b) == brokerID {
			out.parts[int32(p)] = struct{}{}
		}
	}
	return out
}

// throttles holds this broker's dynamic replication throttle settings: the rates from
// /config/brokers/<id> (over /config/brokers/<default>) and the throttled replica lists per topic.
type throttles struct {
	brokerID int32
	log      logrus.FieldLogger

	leader, follower *replicationQuota

	mu            sync.RWMutex
	brokerCfg     map[string]string // /config/brokers/<id>
	defaultCfg    map[string]string // /config/brokers/<default>
	leaderTopics  map[string]throttledSet
	followerTopic map[string]throttledSet
	// fromListener holds the topics whose config the DynamicConfigSource delivered: for them
	// it is authoritative and a topic config read at partition creation is not applied.
	fromListener map[string]bool
}

// replicationQuota is one side's quota (Kafka's ReplicationQuotaManager): the rate limiter and
// the throttled-replica test. It implements fetcher.ReplicaQuota.
type replicationQuota struct {
	lim       *rateLimiter
	throttled func(TopicPartition) bool
}

var _ fetcher.ReplicaQuota = (*replicationQuota)(nil)

// IsThrottled reports whether tp is listed as a throttled replica on this broker and a rate is set.
func (q *replicationQuota) IsThrottled(tp TopicPartition) bool {
	return q.lim.Rate() > 0 && q.throttled(tp)
}

// IsQuotaExceeded reports whether throttled traffic used up the rate.
func (q *replicationQuota) IsQuotaExceeded() bool { return q.lim.Exceeded() }

// Record counts throttled replication bytes.
func (q *replicationQuota) Record(n int64) { q.lim.Record(n) }

func newThrottles(brokerID int32, now func() time.Time, log logrus.FieldLogger, reg metrics.Registry) *throttles {
	t := &throttles{
		brokerID:      brokerID,
		log:           log,
		leaderTopics:  map[string]throttledSet{},
		followerTopic: map[string]throttledSet{},
		fromListener:  map[string]bool{},
	}
	t.leader = &replicationQuota{lim: newRateLimiter(now), throttled: func(tp TopicPartition) bool { return t.isThrottled(t.leaderTopics, tp) }}
	t.follower = &replicationQuota{lim: newRateLimiter(now), throttled: func(tp TopicPartition) bool { return t.isThrottled(t.followerTopic, tp) }}
	if reg != nil {
		reg.Unregister(MetricLeaderReplicationByteRate)
		_ = reg.Register(MetricLeaderReplicationByteRate, metrics.NewFunctionalGauge(t.leader.lim.MeasuredRate))
		reg.Unregister(MetricFollowerReplicationByteRate)
		_ = reg.Register(MetricFollowerReplicationByteRate, metrics.NewFunctionalGauge(t.follower.lim.MeasuredRate))
	}
	return t
}

func (t *throttles) isThrottled(m map[string]throttledSet, tp TopicPartition) bool {
	t.mu.RLock()
	defer t.mu.RUnlock()
	s, ok := m[tp.Topic]
	return ok && s.has(tp.Partition)
}

// applyTopicConfigRead takes a topic's config as read when one of its partitions is created
// here. A topic created with throttle settings has no change notification, so this is how
// they reach the broker; once the listener delivered the topic, its (newer) view wins.
func (t *throttles) applyTopicConfigRead(topic string, cfg map[string]string) {
	t.mu.RLock()
	known := t.fromListener[topic]
	t.mu.RUnlock()
	if known {
		return
	}
	if _, ok := cfg[leaderThrottledReplicasKey]; !ok {
		if _, ok := cfg[followerThrottledReplicasKey]; !ok {
			return
		}
	}
	t.applyTopic(topic, cfg, false)
}

// apply takes one dynamic config entity and its full current config (DynamicConfigSource).
func (t *throttles) apply(entity string, cfg map[string]string) {
	kind, name, ok := strings.Cut(entity, "/")
	if !ok || name == "" {
		return
	}
	switch kind {
	case "brokers":
		t.mu.Lock()
		switch name {
		case "<default>":
			t.defaultCfg = cfg
		case strconv.Itoa(int(t.brokerID)):
			t.brokerCfg = cfg
		default:
			t.mu.Unlock()
			return
		}
		lr := t.rateLocked(leaderThrottledRateKey)
		fr := t.rateLocked(followerThrottledRateKey)
		t.mu.Unlock()
		if lr != t.leader.lim.Rate() || fr != t.follower.lim.Rate() {
			t.log.WithFields(logrus.Fields{"leaderRate": lr, "followerRate": fr}).Info("replication throttle rates changed")
		}
		t.leader.lim.SetRate(lr)
		t.follower.lim.SetRate(fr)
	case "topics":
		t.applyTopic(name, cfg, true)
	}
}

// applyTopic parses a topic's throttled replica lists for this broker.
func (t *throttles) applyTopic(name string, cfg map[string]string, fromListener bool) {
	bad := func(key string) func(string) {
		return func(e string) {
			t.log.WithFields(logrus.Fields{"topic": name, "key": key, "entry": e}).Warn("ignoring malformed throttled replica entry")
		}
	}
	l := parseThrottledReplicas(cfg[leaderThrottledReplicasKey], t.brokerID, bad(leaderThrottledReplicasKey))
	f := parseThrottledReplicas(cfg[followerThrottledReplicasKey], t.brokerID, bad(followerThrottledReplicasKey))
	t.mu.Lock()
	if !fromListener && t.fromListener[name] {
		t.mu.Unlock()
		return
	}
	if fromListener {
		t.fromListener[name] = true
	}
	_, hadL := t.leaderTopics[name]
	_, hadF := t.followerTopic[name]
	setOrDelete(t.leaderTopics, name, l)
	setOrDelete(t.followerTopic, name, f)
	t.mu.Unlock()
	if hadL || hadF || !l.empty() || !f.empty() {
		t.log.WithFields(logrus.Fields{"topic": name, "leaderThrottled": cfg[leaderThrottledReplicasKey], "followerThrottled": cfg[followerThrottledReplicasKey]}).
			Info("replication throttled replicas changed")
	}
}

func setOrDelete(m map[string]throttledSet, k string, s throttledSet) {
	if s.empty() {
		delete(m, k)
		return
	}
	m[k] = s
}

// rateLocked returns a rate setting: the broker's own value, else the cluster default, else
// unlimited (0). Invalid values count as unset and are logged.
func (t *throttles) rateLocked(key string) int64 {
	for _, cfg := range []map[string]string{t.brokerCfg, t.defaultCfg} {
		v, ok := cfg[key]
		if !ok {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil || n <= 0 {
			t.log.WithFields(logrus.Fields{"key": key, "value": v}).Warn("ignoring invalid replication throttle rate")
			continue
		}
		return n
	}
	return 0
}
