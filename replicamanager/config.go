package replicamanager

import (
	"strconv"
	"strings"
	"time"

	"github.com/rcrowley/go-metrics"
	"github.com/sirupsen/logrus"

	"github.com/isrbroker/isrbroker/logstore"
)

// Config holds the broker settings the replica manager uses (kafka-zk-reference §6).
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
	LocalAddr                       string // bind address for fetcher connections (fault tests)
	LogDefaults                     logstore.Config
	Registry                        metrics.Registry
	Log                             logrus.FieldLogger
	// Now is the clock; nil means time.Now. Tests inject one to drive lag rules.
	Now func() time.Time
}

func (c *Config) setDefaults() {
	if c.ReplicaLagTimeMax <= 0 {
		c.ReplicaLagTimeMax = 10 * time.Second
	}
	if c.MinInsyncReplicas <= 0 {
		c.MinInsyncReplicas = 1
	}
	if c.HighWatermarkCheckpointInterval <= 0 {
		c.HighWatermarkCheckpointInterval = 5 * time.Second
	}
	if c.NumReplicaFetchers <= 0 {
		c.NumReplicaFetchers = 1
	}
	if c.ReplicaFetchWaitMax <= 0 {
		c.ReplicaFetchWaitMax = 500 * time.Millisecond
	}
	if c.ReplicaFetchMinBytes <= 0 {
		c.ReplicaFetchMinBytes = 1
	}
	if c.ReplicaFetchMaxBytes <= 0 {
		c.ReplicaFetchMaxBytes = 1 << 20
	}
	if c.ReplicaFetchResponseMaxBytes <= 0 {
		c.ReplicaFetchResponseMaxBytes = 10 << 20
	}
	if c.ReplicaFetchBackoff <= 0 {
		c.ReplicaFetchBackoff = time.Second
	}
	if c.ReplicaSocketTimeout <= 0 {
		c.ReplicaSocketTimeout = 30 * time.Second
	}
	if c.Registry == nil {
		c.Registry = metrics.NewRegistry()
	}
	if c.Log == nil {
		c.Log = logrus.StandardLogger()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
}

// topicConfig is the per-topic view of settings that a topic's /config/topics entry may override.
type topicConfig struct {
	log                   logstore.Config
	minInsyncReplicas     int
	uncleanLeaderElection bool
}

// topicOverrides applies Kafka's topic-level keys (segment.bytes, retention.ms, ...) on top of the
// broker defaults. Unparseable values keep the default and are logged: a topic config was already
// validated when it was written, so this only guards against hand-edited znodes.
func (rm *ReplicaManager) topicOverrides(topic string, overrides map[string]string) topicConfig {
	tc := topicConfig{
		log:                   rm.cfg.LogDefaults,
		minInsyncReplicas:     rm.cfg.MinInsyncReplicas,
		uncleanLeaderElection: rm.cfg.UncleanLeaderElection,
	}
	for k, v := range overrides {
		bad := func() {
			rm.log.WithFields(logrus.Fields{"topic": topic, "key": k, "value": v}).Warn("ignoring invalid topic config value")
		}
		i, err := strconv.ParseInt(v, 10, 64)
		switch k {
		case "segment.bytes":
			if err != nil || i <= 0 {
				bad()
				continue
			}
			tc.log.SegmentBytes = i
		case "segment.ms":
			if err != nil || i <= 0 {
				bad()
				continue
			}
			tc.log.SegmentMs = time.Duration(i) * time.Millisecond
		case "retention.ms":
			if err != nil {
				bad()
				continue
			}
			tc.log.RetentionMs = i
		case "retention.bytes":
			if err != nil {
				bad()
				continue
			}
			tc.log.RetentionBytes = i
		case "max.message.bytes":
			if err != nil || i <= 0 || i > 1<<31-1 {
				bad()
				continue
			}
			tc.log.MaxMessageBytes = int32(i)
		case "index.interval.bytes":
			if err != nil || i <= 0 || i > 1<<31-1 {
				bad()
				continue
			}
			tc.log.IndexIntervalBytes = int32(i)
		case "flush.messages":
			if err != nil || i <= 0 {
				bad()
				continue
			}
			tc.log.FlushIntervalMessages = i
		case "flush.ms":
			if err != nil || i < 0 {
				bad()
				continue
			}
			tc.log.FlushInterval = time.Duration(i) * time.Millisecond
		case "cleanup.policy":
			p, ok := logstore.ParseCleanupPolicy(strings.Split(v, ","))
			if !ok {
				bad()
				continue
			}
			tc.log.CleanupPolicy = p
		case "min.cleanable.dirty.ratio":
			f, err := strconv.ParseFloat(v, 64)
			if err != nil || f < 0 || f > 1 {
				bad()
				continue
			}
			tc.log.MinCleanableRatio = f
		case "min.compaction.lag.ms":
			if err != nil || i < 0 {
				bad()
				continue
			}
			tc.log.MinCompactionLagMs = i
		case "max.compaction.lag.ms":
			if err != nil || i < 1 {
				bad()
				continue
			}
			tc.log.MaxCompactionLagMs = i
		case "delete.retention.ms":
			if err != nil || i < 0 {
				bad()
				continue
			}
			tc.log.DeleteRetentionMs = i
		case "min.insync.replicas":
			if err != nil || i < 1 {
				bad()
				continue
			}
			tc.minInsyncReplicas = int(i)
		case "unclean.leader.election.enable":
			b, err := strconv.ParseBool(v)
			if err != nil {
				bad()
				continue
			}
			tc.uncleanLeaderElection = b
		}
	}
	return tc
}
