// Package clientquota is Kafka 2.4's client quotas (ClientQuotaManager and
// ClientRequestQuotaManager; docs/quotas.md): producer_byte_rate, consumer_byte_rate and
// request_percentage of /config/users/<user>, /config/clients/<client-id> and
// /config/users/<user>/clients/<client-id>, <default> entities included, chosen by Kafka's
// precedence; the rate of each quota entity measured over quota.window.num samples of
// quota.window.size.seconds; on violation the throttle time of Kafka's formula. A leaf: the
// broker feeds it the configs (zkcoord's change listener) and asks it per request.
package clientquota

import (
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rcrowley/go-metrics"
)

// Quota config keys (Kafka's DynamicConfig.Client and .User) and the default entity's name.
const (
	ProducerByteRate  = "producer_byte_rate"
	ConsumerByteRate  = "consumer_byte_rate"
	RequestPercentage = "request_percentage"
	DefaultEntity     = "<default>"
)

// Type is a quota's kind, Kafka's QuotaType: the metrics' type property.
type Type string

const (
	Produce Type = "Produce"
	Fetch   Type = "Fetch"
	Request Type = "Request"
)

// key is the config key of a type's quota.
func (t Type) key() string {
	switch t {
	case Produce:
		return ProducerByteRate
	case Fetch:
		return ConsumerByteRate
	}
	return RequestPercentage
}

// Config is the static part: quota.window.num, quota.window.size.seconds and the deprecated
// static client-id default (quota.producer.default or quota.consumer.default; <= 0 or
// math.MaxInt64: none).
type Config struct {
	NumWindows    int
	WindowSize    time.Duration
	StaticDefault int64
}

// DefaultConfig is Kafka 2.4's: 11 windows of one second, no static default.
func DefaultConfig() Config { return Config{NumWindows: 11, WindowSize: time.Second} }

// Tags are the user and client-id of a quota entity's metrics (Kafka's quotaMetricTags): the
// clients sharing the tags share one rate. "" is a tag left out.
type Tags struct{ User, ClientID string }

// Manager is one type's quotas (Kafka's ClientQuotaManager for Produce or Fetch,
// ClientRequestQuotaManager for Request); safe for concurrent use.
type Manager struct {
	typ    Type
	cfg    Config
	reg    metrics.Registry
	now    func() time.Time
	static float64 // 0: none

	mu        sync.RWMutex
	overrides map[string]float64 // entity path (users/u, users/u/clients/c, clients/c) → bound
	sensors   map[Tags]*sensor
}

// sensor is one quota entity's rate and its throttle-time average.
type sensor struct {
	mu       sync.Mutex
	rate     sampledStat
	throttle sampledStat
}

// NewManager returns typ's manager; reg (may be nil) receives each quota entity's metrics,
// now (nil: time.Now) is the clock.
func NewManager(typ Type, cfg Config, reg metrics.Registry, now func() time.Time) *Manager {
	if cfg.NumWindows < 1 {
		cfg.NumWindows = 11
	}
	if cfg.WindowSize < time.Millisecond {
		cfg.WindowSize = time.Second
	}
	if now == nil {
		now = time.Now
	}
	m := &Manager{typ: typ, cfg: cfg, reg: reg, now: now, overrides: map[string]float64{}, sensors: map[Tags]*sensor{}}
	if cfg.StaticDefault > 0 && cfg.StaticDefault < math.MaxInt64 {
		m.static = float64(cfg.StaticDefault)
	}
	return m
}

func entityPath(user, client string, hasUser, hasClient bool) string {
	switch {
	case hasUser && hasClient:
		return "users/" + user + "/clients/" + client
	case hasUser:
		return "users/" + user
	}
	return "clients/" + client
}

// set stores (bound > 0) or removes the quota of an entity.
func (m *Manager) set(path string, bound float64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if bound > 0 {
		m.overrides[path] = bound
	} else {
		delete(m.overrides, path)
	}
}

// enabled is Kafka's quotasEnabled: some quota is configured.
func (m *Manager) enabled() bool { return len(m.overrides) > 0 || m.static > 0 }

// Enabled reports whether some quota of m's type is configured: without one Record does
// nothing, so callers may skip computing its value.
func (m *Manager) Enabled() bool {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.enabled()
}

func (m *Manager) has(user, client string, hasUser, hasClient bool) bool {
	_, ok := m.overrides[entityPath(user, client, hasUser, hasClient)]
	return ok
}

// tagsLocked is Kafka's quotaMetricTags: the entity whose quota applies to user and client,
// as the metric tags that name its shared rate. The precedence: user+client-id,
// user+<default> client, user, <default> user+client-id, <default> user+<default> client,
// <default> user, client-id, <default> client, the static default.
func (m *Manager) tagsLocked(user, client string) Tags {
	d := DefaultEntity
	switch {
	case m.has(user, client, true, true), m.has(user, d, true, true):
		return Tags{user, client}
	case m.has(user, "", true, false):
		return Tags{user, ""}
	case m.has(d, client, true, true), m.has(d, d, true, true):
		return Tags{user, client}
	case m.has(d, "", true, false):
		return Tags{user, ""}
	}
	return Tags{"", client}
}

// boundLocked is Kafka's quotaLimit for tags (0: no quota).
func (m *Manager) boundLocked(t Tags) float64 {
	d := DefaultEntity
	var order [][2]string // user, client; "\x00" marks a level left out
	switch {
	case t.User != "" && t.ClientID != "":
		order = [][2]string{{t.User, t.ClientID}, {t.User, d}, {d, t.ClientID}, {d, d}}
	case t.User != "":
		order = [][2]string{{t.User, "\x00"}, {d, "\x00"}}
	case t.ClientID != "":
		order = [][2]string{{"\x00", t.ClientID}, {"\x00", d}}
	}
	for _, e := range order {
		if b, ok := m.overrides[entityPath(e[0], e[1], e[0] != "\x00", e[1] != "\x00")]; ok {
			return b
		}
	}
	if t.User == "" && t.ClientID != "" {
		return m.static
	}
	return 0
}

// Quota returns the tags and bound (bytes/s, or percent of one handler for Request; 0: none)
// that apply to a request of user (the principal's name, ANONYMOUS included) and client.
func (m *Manager) Quota(user, client string) (Tags, float64) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	t := m.tagsLocked(user, client)
	return t, m.boundLocked(t)
}

// Record adds value (bytes, or Request's handler-time percentage) to the rate of user and
// client's quota entity and returns the throttle time Kafka's recordAndGetThrottleTimeMs
// gives (0: within quota, or no quota configured anywhere: then nothing is recorded).
func (m *Manager) Record(user, client string, value float64) time.Duration {
	m.mu.RLock()
	if !m.enabled() {
		m.mu.RUnlock()
		return 0
	}
	t := m.tagsLocked(user, client)
	bound := m.boundLocked(t)
	m.mu.RUnlock()
	s := m.sensor(t)
	now := m.now().UnixMilli()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rate.record(value, now)
	if bound <= 0 {
		return 0
	}
	rate := s.rate.rate(now)
	if rate <= bound {
		return 0
	}
	ms := ThrottleTime(rate, bound, s.rate.windowSize(now))
	if m.typ == Request {
		ms = min(ms, m.cfg.WindowSize.Milliseconds()) // ClientRequestQuotaManager.maxThrottleTimeMs
	}
	return time.Duration(ms) * time.Millisecond
}

// Unrecord takes value back out of the rate without a quota check (Kafka's
// unrecordQuotaSensor: a throttled fetch answers no records).
func (m *Manager) Unrecord(user, client string, value float64) {
	m.mu.RLock()
	if !m.enabled() {
		m.mu.RUnlock()
		return
	}
	t := m.tagsLocked(user, client)
	m.mu.RUnlock()
	s := m.sensor(t)
	s.mu.Lock()
	s.rate.record(-value, m.now().UnixMilli())
	s.mu.Unlock()
}

// RecordThrottle adds a throttle time to the entity's throttle-time average (Kafka's
// throttleTimeSensor, recorded by throttle()).
func (m *Manager) RecordThrottle(user, client string, d time.Duration) {
	m.mu.RLock()
	t := m.tagsLocked(user, client)
	m.mu.RUnlock()
	s := m.sensor(t)
	s.mu.Lock()
	s.throttle.record(float64(d.Milliseconds()), m.now().UnixMilli())
	s.mu.Unlock()
}

// ThrottleTime is Kafka's ClientQuotaManager.throttleTime: how long (ms, rounded) a client
// measured at rate over windowMs must wait for its rate to come back to bound:
// (rate - bound) / bound × windowMs.
func ThrottleTime(rate, bound float64, windowMs int64) int64 {
	return int64(math.Round((rate - bound) / bound * float64(windowMs)))
}

// sensor returns the tags' sensor, registering its metrics when new.
func (m *Manager) sensor(t Tags) *sensor {
	m.mu.RLock()
	s := m.sensors[t]
	m.mu.RUnlock()
	if s != nil {
		return s
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if s = m.sensors[t]; s != nil {
		return s
	}
	w := m.cfg.WindowSize.Milliseconds()
	s = &sensor{rate: sampledStat{window: w, numWindows: m.cfg.NumWindows}, throttle: sampledStat{window: w, numWindows: m.cfg.NumWindows}}
	m.sensors[t] = s
	if m.reg != nil {
		rateName := "byte-rate"
		if m.typ == Request {
			rateName = "request-time"
		}
		_ = m.reg.Register(MetricName(m.typ, t, rateName), metrics.NewFunctionalGaugeFloat64(func() float64 {
			s.mu.Lock()
			defer s.mu.Unlock()
			return s.rate.rate(m.now().UnixMilli())
		}))
		_ = m.reg.Register(MetricName(m.typ, t, "throttle-time"), metrics.NewFunctionalGaugeFloat64(func() float64 {
			s.mu.Lock()
			defer s.mu.Unlock()
			return s.throttle.avg(m.now().UnixMilli())
		}))
	}
	return s
}

// MetricName is the registry name of a quota entity's metric:
// kafka.server:type=<Produce|Fetch|Request>,user=<u>,client-id=<c>,name=<metric>, an empty
// tag left out as Kafka's JMX reporter does.
func MetricName(typ Type, t Tags, name string) string {
	var b strings.Builder
	b.WriteString("kafka.server:type=" + string(typ))
	if t.User != "" {
		b.WriteString(",user=" + quoteJMX(t.User))
	}
	if t.ClientID != "" {
		b.WriteString(",client-id=" + quoteJMX(t.ClientID))
	}
	b.WriteString(",name=" + name)
	return b.String()
}

// quoteJMX quotes a value holding a character JMX reserves in an ObjectName value.
func quoteJMX(v string) string {
	if strings.ContainsAny(v, ",=:\"*?\n") {
		return strconv.Quote(v)
	}
	return v
}
