package replicamanager

import (
	"math"
	"time"

	"github.com/rcrowley/go-metrics"
	"github.com/sirupsen/logrus"

	"github.com/isrbroker/isrbroker/broker/config/configdef"
	"github.com/isrbroker/isrbroker/broker/kproto"
	"github.com/isrbroker/isrbroker/logstore"
	"github.com/isrbroker/isrbroker/replicamanager/replevents"
)

// Config holds the broker settings the replica manager uses (docs/kafka-facts.md §7).
type Config struct {
	BrokerID                        int32
	ReplicaLagTimeMax               time.Duration // replica.lag.time.max.ms (S5b, S10)
	MinInsyncReplicas               int           // min.insync.replicas broker default (K2)
	HighWatermarkCheckpointInterval time.Duration // replica.high.watermark.checkpoint.interval.ms
	NumReplicaFetchers              int           // num.replica.fetchers (S15)
	ReplicaFetchWaitMax             time.Duration
	ReplicaFetchMinBytes            int32
	ReplicaFetchMaxBytes            int32
	ReplicaFetchResponseMaxBytes    int32
	ReplicaFetchBackoff             time.Duration
	ReplicaSocketTimeout            time.Duration
	UncleanLeaderElection           bool
	// ReplicaSelector is replica.selector.class (KIP-392): "" (consumers read from the leader)
	// or configdef.RackAwareReplicaSelector.
	ReplicaSelector string
	LocalAddr       string // bind address for fetcher connections (fault tests)
	LogDefaults     logstore.Config
	Registry        metrics.Registry
	Log             logrus.FieldLogger
	// Now is the clock; nil means time.Now. Tests inject one to drive lag rules.
	Now func() time.Time
	// Events records ISR changes, role changes and truncations for the replication page
	// (docs/replication-page.md); nil keeps a recorder of its own.
	Events *replevents.Recorder
	// InterBrokerSecurity secures the fetchers' connections (TLS, SASL of the inter-broker
	// listener); the zero value is PLAINTEXT.
	InterBrokerSecurity kproto.Security
}

// setDefaults fills unset (zero or negative) settings with the configdef table's defaults;
// main passes every setting from server.properties, tests only some.
func (c *Config) setDefaults() {
	b := configdef.Broker
	dur := func(d *time.Duration, key string) {
		if *d <= 0 {
			*d = configdef.DurationDefault(key, b)
		}
	}
	i32 := func(v *int32, key string) {
		if *v <= 0 {
			*v = int32(configdef.IntDefault(key, b))
		}
	}
	dur(&c.ReplicaLagTimeMax, "replica.lag.time.max.ms")
	dur(&c.HighWatermarkCheckpointInterval, "replica.high.watermark.checkpoint.interval.ms")
	dur(&c.ReplicaFetchWaitMax, "replica.fetch.wait.max.ms")
	dur(&c.ReplicaFetchBackoff, "replica.fetch.backoff.ms")
	dur(&c.ReplicaSocketTimeout, "replica.socket.timeout.ms")
	if c.MinInsyncReplicas <= 0 {
		c.MinInsyncReplicas = int(configdef.IntDefault("min.insync.replicas", b))
	}
	if c.NumReplicaFetchers <= 0 {
		c.NumReplicaFetchers = int(configdef.IntDefault("num.replica.fetchers", b))
	}
	i32(&c.ReplicaFetchMinBytes, "replica.fetch.min.bytes")
	i32(&c.ReplicaFetchMaxBytes, "replica.fetch.max.bytes")
	i32(&c.ReplicaFetchResponseMaxBytes, "replica.fetch.response.max.bytes")
	if c.Registry == nil {
		c.Registry = metrics.NewRegistry()
	}
	if c.Log == nil {
		c.Log = logrus.StandardLogger()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Events == nil {
		c.Events = replevents.New(c.BrokerID, 0)
	}
}

// topicConfig is the per-topic view of settings that a topic's /config/topics entry may override.
type topicConfig struct {
	log                   logstore.Config
	minInsyncReplicas     int
	uncleanLeaderElection bool
}

// topicOverrides applies Kafka's topic-level keys (segment.bytes, retention.ms, ...) on top of the
// broker defaults. Each value is typed and validated by its configdef topic key; an invalid value
// keeps the default and is logged: a topic config is validated when it is written (CreateTopics,
// `topics --config`), so this only guards against hand-edited znodes. Topic keys isrbroker does
// not use are ignored here.
func (rm *ReplicaManager) topicOverrides(topic string, overrides map[string]string) topicConfig {
	rm.live.mu.Lock()
	base := rm.live.base
	rm.live.mu.Unlock()
	return rm.topicOverridesOn(base, topic, overrides)
}

// staticTopicDefaults is the broker level of every topic config from server.properties (and
// the configdef defaults): the bottom of the precedence (live_config.go).
func (rm *ReplicaManager) staticTopicDefaults() topicConfig {
	return topicConfig{
		log:                   rm.cfg.LogDefaults,
		minInsyncReplicas:     rm.cfg.MinInsyncReplicas,
		uncleanLeaderElection: rm.cfg.UncleanLeaderElection,
	}
}

// topicOverridesOn applies a topic's overrides on top of base, the broker level.
func (rm *ReplicaManager) topicOverridesOn(base topicConfig, topic string, overrides map[string]string) topicConfig {
	tc := base
	for k, raw := range overrides {
		key, ok := configdef.Lookup(k, configdef.Topic)
		if !ok {
			continue
		}
		v, err := key.ParseValid(raw)
		if err != nil {
			rm.log.WithFields(logrus.Fields{"topic": topic, "key": k, "value": raw}).WithError(err).Warn("ignoring invalid topic config value")
			continue
		}
		applyTopicConfig(&tc, k, v)
	}
	return tc
}

// applyTopicConfig stores one typed, valid topic config value.
func applyTopicConfig(tc *topicConfig, k string, v any) {
	ms := func() time.Duration { return configdef.Scale(v.(int64), time.Millisecond) }
	switch k {
	case "segment.bytes":
		tc.log.SegmentBytes = v.(int64)
	case "segment.ms":
		tc.log.SegmentMs = ms()
	case "retention.ms":
		tc.log.RetentionMs = v.(int64)
	case "retention.bytes":
		tc.log.RetentionBytes = v.(int64)
	case "max.message.bytes":
		tc.log.MaxMessageBytes = int32(v.(int64))
	case "index.interval.bytes":
		tc.log.IndexIntervalBytes = int32(v.(int64))
	case "flush.messages":
		tc.log.FlushIntervalMessages = max(v.(int64), 1) // 0 and 1 both flush every append
	case "flush.ms":
		tc.log.FlushInterval = ms()
		if v.(int64) == configdef.IntDefault("flush.ms", configdef.Topic) {
			tc.log.FlushInterval = 0 // Long.MaxValue: never by time
		}
	case "file.delete.delay.ms":
		tc.log.FileDeleteDelay = ms()
	case "cleanup.policy":
		tc.log.CleanupPolicy, _ = logstore.ParseCleanupPolicy(v.([]string)) // validated by configdef
	case "min.cleanable.dirty.ratio":
		tc.log.MinCleanableRatio = v.(float64)
	case "min.compaction.lag.ms":
		tc.log.MinCompactionLagMs = v.(int64)
	case "max.compaction.lag.ms":
		tc.log.MaxCompactionLagMs = v.(int64)
	case "delete.retention.ms":
		tc.log.DeleteRetentionMs = v.(int64)
	case "message.timestamp.type":
		tc.log.TimestampType, _ = logstore.ParseTimestampType(v.(string)) // validated by configdef
	case "message.timestamp.difference.max.ms":
		tc.log.TimestampDiffMaxMs = v.(int64)
		tc.log.TimestampDiffLimited = v.(int64) != math.MaxInt64 // Long.MaxValue: no check
	case "min.insync.replicas":
		tc.minInsyncReplicas = int(v.(int64))
	case "unclean.leader.election.enable":
		tc.uncleanLeaderElection = v.(bool)
	}
}
