// Package config owns the broker's server.properties: Java .properties parsing, Kafka 2.4
// broker config names and defaults (kafka-zk-reference §5–6), typing and validation, and the
// classification of every key into used by isrbroker, known Kafka setting that isrbroker does
// not use yet (accepted with one warning), or unknown (a typo: start-up stops with the nearest
// known key as a hint — the Jepsen `zookeeper.session.tmeout.ms` lesson, style.md guideline 9).
package config

import (
	"errors"
	"fmt"
	"math"
	"net"
	"strconv"
	"strings"
	"time"
)

// Listener is one entry of listeners / advertised.listeners: NAME://host:port.
type Listener struct {
	Name             string // listener name, upper case (Kafka normalises it)
	Host             string // empty = all interfaces (listeners only)
	Port             int
	SecurityProtocol string // from listener.security.protocol.map; always PLAINTEXT here
}

// String renders the listener the way it is written in server.properties.
func (l Listener) String() string {
	return l.Name + "://" + net.JoinHostPort(l.Host, strconv.Itoa(l.Port))
}

// Config is the typed broker configuration. Field comments give the Kafka property and its
// Kafka 2.4 default. Durations are whole milliseconds in the file.
type Config struct {
	// General.
	BrokerID   int32  // broker.id (required, >= 0: isrbroker does not generate ids)
	BrokerRack string // broker.rack (default none)

	// Sockets.
	Listeners                   []Listener        // listeners (default PLAINTEXT://127.0.0.1:9092; see also port/host.name)
	AdvertisedListeners         []Listener        // advertised.listeners (default: listeners)
	ListenerSecurityProtocolMap map[string]string // listener.security.protocol.map
	InterBrokerListenerName     string            // inter.broker.listener.name (default PLAINTEXT)
	SocketRequestMaxBytes       int32             // socket.request.max.bytes 104857600
	RequestTimeout              time.Duration     // request.timeout.ms 30000

	// ZooKeeper.
	ZookeeperConnect             string        // zookeeper.connect (required) host:port[,host:port][/chroot]
	ZookeeperServers             []string      // the host:port list of ZookeeperConnect
	ZookeeperChroot              string        // the /chroot of ZookeeperConnect, "" if none
	ZookeeperSessionTimeout      time.Duration // zookeeper.session.timeout.ms 6000 (2.4)
	ZookeeperConnectionTimeout   time.Duration // zookeeper.connection.timeout.ms (default: session timeout)
	ZookeeperMaxInFlightRequests int           // zookeeper.max.in.flight.requests 10

	// Topics.
	NumPartitions                 int32 // num.partitions 1
	DefaultReplicationFactor      int16 // default.replication.factor 1 (S24)
	OffsetsTopicReplicationFactor int16 // offsets.topic.replication.factor 3
	AutoCreateTopicsEnable        bool  // auto.create.topics.enable true
	DeleteTopicEnable             bool  // delete.topic.enable true
	MessageMaxBytes               int32 // message.max.bytes 1000012
	MinInsyncReplicas             int   // min.insync.replicas 1 (K2)
	UncleanLeaderElectionEnable   bool  // unclean.leader.election.enable false (K6)

	// Log layer (kafka-zk-reference §5).
	LogDirs                               []string      // log.dirs, else log.dir (required)
	LogSegmentBytes                       int32         // log.segment.bytes 1073741824
	LogRollMs                             int64         // log.roll.ms, else log.roll.hours 168
	LogRetentionMs                        int64         // log.retention.ms > .minutes > .hours 168; -1 = unlimited
	LogRetentionBytes                     int64         // log.retention.bytes -1 (per partition)
	LogRetentionCheckInterval             time.Duration // log.retention.check.interval.ms 300000
	LogIndexIntervalBytes                 int32         // log.index.interval.bytes 4096
	LogFlushIntervalMessages              int64         // log.flush.interval.messages Long.MaxValue (never)
	LogFlushIntervalMs                    int64         // log.flush.interval.ms, else log.flush.scheduler.interval.ms Long.MaxValue (never)
	LogFlushOffsetCheckpointInterval      time.Duration // log.flush.offset.checkpoint.interval.ms 60000
	LogFlushStartOffsetCheckpointInterval time.Duration // log.flush.start.offset.checkpoint.interval.ms 60000
	FileDeleteDelay                       time.Duration // log.segment.delete.delay.ms 60000 (topic-level: file.delete.delay.ms)

	// Replication (kafka-zk-reference §6).
	ReplicaLagTimeMax                      time.Duration // replica.lag.time.max.ms 10000 (2.4; S5b)
	NumReplicaFetchers                     int           // num.replica.fetchers 1 (S15)
	ReplicaFetchBackoff                    time.Duration // replica.fetch.backoff.ms 1000 (S17)
	ReplicaFetchWaitMax                    time.Duration // replica.fetch.wait.max.ms 500
	ReplicaFetchMinBytes                   int32         // replica.fetch.min.bytes 1
	ReplicaFetchMaxBytes                   int32         // replica.fetch.max.bytes 1048576
	ReplicaFetchResponseMaxBytes           int32         // replica.fetch.response.max.bytes 10485760
	ReplicaSocketTimeout                   time.Duration // replica.socket.timeout.ms 30000
	ReplicaHighWatermarkCheckpointInterval time.Duration // replica.high.watermark.checkpoint.interval.ms 5000

	// Group coordinator and __consumer_offsets (docs/groups.md).
	OffsetsTopicNumPartitions     int32         // offsets.topic.num.partitions 50
	OffsetsTopicSegmentBytes      int32         // offsets.topic.segment.bytes 104857600
	OffsetsCommitRequiredAcks     int16         // offsets.commit.required.acks -1
	OffsetsCommitTimeout          time.Duration // offsets.commit.timeout.ms 5000
	OffsetsRetention              time.Duration // offsets.retention.minutes 10080 (7 days)
	OffsetsRetentionCheckInterval time.Duration // offsets.retention.check.interval.ms 600000
	OffsetsLoadBufferSize         int32         // offsets.load.buffer.size 5242880
	OffsetMetadataMaxBytes        int32         // offset.metadata.max.bytes 4096
	GroupMinSessionTimeout        time.Duration // group.min.session.timeout.ms 6000
	GroupMaxSessionTimeout        time.Duration // group.max.session.timeout.ms 1800000
	GroupInitialRebalanceDelay    time.Duration // group.initial.rebalance.delay.ms 3000
	GroupMaxSize                  int32         // group.max.size 2147483647

	// Log cleaner: compaction of topics with cleanup.policy=compact (docs/compaction.md).
	LogCleanupPolicy             []string      // log.cleanup.policy [delete]; each "delete" or "compact"
	LogCleanerEnable             bool          // log.cleaner.enable true
	LogCleanerThreads            int           // log.cleaner.threads 1
	LogCleanerMinCleanableRatio  float64       // log.cleaner.min.cleanable.ratio 0.5
	LogCleanerMinCompactionLagMs int64         // log.cleaner.min.compaction.lag.ms 0
	LogCleanerMaxCompactionLagMs int64         // log.cleaner.max.compaction.lag.ms Long.MaxValue
	LogCleanerDeleteRetentionMs  int64         // log.cleaner.delete.retention.ms 86400000
	LogCleanerBackoff            time.Duration // log.cleaner.backoff.ms 15000
	LogCleanerDedupeBufferSize   int64         // log.cleaner.dedupe.buffer.size 134217728

	// Controller.
	ControllerSocketTimeout            time.Duration // controller.socket.timeout.ms 30000
	AutoLeaderRebalanceEnable          bool          // auto.leader.rebalance.enable true (K7)
	LeaderImbalanceCheckInterval       time.Duration // leader.imbalance.check.interval.seconds 300
	LeaderImbalancePerBrokerPercentage int           // leader.imbalance.per.broker.percentage 10
	ControlledShutdownEnable           bool          // controlled.shutdown.enable true (K7)
	ControlledShutdownMaxRetries       int           // controlled.shutdown.max.retries 3
	ControlledShutdownRetryBackoff     time.Duration // controlled.shutdown.retry.backoff.ms 5000

	// isrbroker's own.
	MetricsListen string // metrics.listen: HTTP address of /metrics, "" = disabled
	// LocalAddress is isrbroker.local.address: the IP every outgoing connection of the broker
	// (inter-broker fetchers, the controller channel, the ZooKeeper session) binds as its
	// source address; "" lets the kernel choose. The fault-injection harness gives each broker
	// its own loopback address so iptables rules can cut one link between two brokers.
	LocalAddress string
}

// Kafka 2.4 defaults that are not simply a field value.
const (
	DefaultListeners           = "PLAINTEXT://127.0.0.1:9092"
	DefaultSecurityProtocolMap = "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL"
	// NeverMs is Long.MaxValue, Kafka's "never" for the flush settings.
	NeverMs = math.MaxInt64
)

// Default returns the Kafka 2.4 defaults. It is not valid by itself: broker.id,
// zookeeper.connect and log.dirs have no default.
func Default() *Config {
	l := Listener{Name: "PLAINTEXT", Host: "127.0.0.1", Port: 9092, SecurityProtocol: "PLAINTEXT"}
	return &Config{
		BrokerID:                    -1,
		Listeners:                   []Listener{l},
		AdvertisedListeners:         []Listener{l},
		ListenerSecurityProtocolMap: defaultProtocolMap(),
		InterBrokerListenerName:     "PLAINTEXT",
		SocketRequestMaxBytes:       100 * 1024 * 1024,
		RequestTimeout:              30 * time.Second,

		ZookeeperSessionTimeout:      6 * time.Second,
		ZookeeperConnectionTimeout:   6 * time.Second,
		ZookeeperMaxInFlightRequests: 10,

		NumPartitions:                 1,
		DefaultReplicationFactor:      1,
		OffsetsTopicReplicationFactor: 3,
		AutoCreateTopicsEnable:        true,
		DeleteTopicEnable:             true,
		MessageMaxBytes:               1000000 + 12, // + Records.LOG_OVERHEAD
		MinInsyncReplicas:             1,
		UncleanLeaderElectionEnable:   false,

		LogSegmentBytes:                       1 << 30,
		LogRollMs:                             168 * 3600 * 1000,
		LogRetentionMs:                        168 * 3600 * 1000,
		LogRetentionBytes:                     -1,
		LogRetentionCheckInterval:             300 * time.Second,
		LogIndexIntervalBytes:                 4096,
		LogFlushIntervalMessages:              NeverMs,
		LogFlushIntervalMs:                    NeverMs,
		LogFlushOffsetCheckpointInterval:      60 * time.Second,
		LogFlushStartOffsetCheckpointInterval: 60 * time.Second,
		FileDeleteDelay:                       60 * time.Second,

		ReplicaLagTimeMax:                      10 * time.Second,
		NumReplicaFetchers:                     1,
		ReplicaFetchBackoff:                    time.Second,
		ReplicaFetchWaitMax:                    500 * time.Millisecond,
		ReplicaFetchMinBytes:                   1,
		ReplicaFetchMaxBytes:                   1 << 20,
		ReplicaFetchResponseMaxBytes:           10 << 20,
		ReplicaSocketTimeout:                   30 * time.Second,
		ReplicaHighWatermarkCheckpointInterval: 5 * time.Second,

		OffsetsTopicNumPartitions:     50,
		OffsetsTopicSegmentBytes:      100 << 20,
		OffsetsCommitRequiredAcks:     -1,
		OffsetsCommitTimeout:          5 * time.Second,
		OffsetsRetention:              7 * 24 * time.Hour,
		OffsetsRetentionCheckInterval: 600 * time.Second,
		OffsetsLoadBufferSize:         5 << 20,
		OffsetMetadataMaxBytes:        4096,
		GroupMinSessionTimeout:        6 * time.Second,
		GroupMaxSessionTimeout:        1800 * time.Second,
		GroupInitialRebalanceDelay:    3 * time.Second,
		GroupMaxSize:                  math.MaxInt32,

		LogCleanupPolicy:             []string{"delete"},
		LogCleanerEnable:             true,
		LogCleanerThreads:            1,
		LogCleanerMinCleanableRatio:  0.5,
		LogCleanerMinCompactionLagMs: 0,
		LogCleanerMaxCompactionLagMs: math.MaxInt64,
		LogCleanerDeleteRetentionMs:  24 * 3600 * 1000,
		LogCleanerBackoff:            15 * time.Second,
		LogCleanerDedupeBufferSize:   128 << 20,

		ControllerSocketTimeout:            30 * time.Second,
		AutoLeaderRebalanceEnable:          true,
		LeaderImbalanceCheckInterval:       300 * time.Second,
		LeaderImbalancePerBrokerPercentage: 10,
		ControlledShutdownEnable:           true,
		ControlledShutdownMaxRetries:       3,
		ControlledShutdownRetryBackoff:     5 * time.Second,
	}
}

func defaultProtocolMap() map[string]string {
	m, _ := parseProtocolMap(DefaultSecurityProtocolMap)
	return m
}

// LogFlushInterval is log.flush.interval.ms as a duration; 0 means never (Kafka's default
// Long.MaxValue does not fit a time.Duration).
func (c *Config) LogFlushInterval() time.Duration {
	if c.LogFlushIntervalMs >= math.MaxInt64/int64(time.Millisecond) {
		return 0
	}
	return time.Duration(c.LogFlushIntervalMs) * time.Millisecond
}

// LogRoll is log.roll.ms as a duration, saturating at the largest time.Duration.
func (c *Config) LogRoll() time.Duration {
	if c.LogRollMs >= math.MaxInt64/int64(time.Millisecond) {
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(c.LogRollMs) * time.Millisecond
}

// InterBrokerListener returns the advertised listener other brokers use to reach this one.
func (c *Config) InterBrokerListener() (Listener, bool) {
	for _, l := range c.AdvertisedListeners {
		if l.Name == c.InterBrokerListenerName {
			return l, true
		}
	}
	return Listener{}, false
}

// Sentinels, for errors.Is on an *Error.
var (
	ErrUnknownKey   = errors.New("unknown config key")
	ErrInvalidValue = errors.New("invalid config value")
	ErrMissing      = errors.New("missing required config")
)

// Error is a configuration error. It always names the key, and the value when there is one.
type Error struct {
	Kind   error  // ErrUnknownKey, ErrInvalidValue or ErrMissing
	Key    string // the property as the operator wrote it
	Value  string // the offending value (ErrInvalidValue)
	Reason string // why the value is invalid, or what is missing
	Hint   string // nearest known key (ErrUnknownKey)
}

func (e *Error) Error() string {
	switch e.Kind {
	case ErrUnknownKey:
		s := fmt.Sprintf("unknown config key %q", e.Key)
		if e.Hint != "" {
			s += fmt.Sprintf(" (did you mean %q?)", e.Hint)
		}
		if e.Reason != "" {
			s += ": " + e.Reason
		}
		return s
	case ErrMissing:
		s := fmt.Sprintf("missing required config %q", e.Key)
		if e.Reason != "" {
			s += ": " + e.Reason
		}
		return s
	default:
		return fmt.Sprintf("invalid value %q for %q: %s", e.Value, e.Key, e.Reason)
	}
}

// Unwrap lets errors.Is match the Kind sentinel.
func (e *Error) Unwrap() error { return e.Kind }

func invalid(key, value, reason string, args ...any) *Error {
	return &Error{Kind: ErrInvalidValue, Key: key, Value: value, Reason: fmt.Sprintf(reason, args...)}
}

func ms(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }
func itoa[T ~int | ~int16 | ~int32 | ~int64](v T) string {
	return strconv.FormatInt(int64(v), 10)
}

// Validate checks ranges and cross-field rules (Kafka's KafkaConfig.validateValues plus
// isrbroker's limits). The error names the property and the value.
func (c *Config) Validate() error {
	if strings.TrimSpace(c.ZookeeperConnect) == "" {
		return &Error{Kind: ErrMissing, Key: "zookeeper.connect", Reason: "the ZooKeeper connection string host:port[,host:port][/chroot] (Kafka requires it)"}
	}
	if _, _, err := parseZkConnect(c.ZookeeperConnect); err != nil {
		return invalid("zookeeper.connect", c.ZookeeperConnect, "%v", err)
	}
	if c.BrokerID < 0 {
		if c.BrokerID == -1 {
			return &Error{Kind: ErrMissing, Key: "broker.id", Reason: "a broker id >= 0 (isrbroker does not generate broker ids)"}
		}
		return invalid("broker.id", itoa(c.BrokerID), "must be at least 0 (isrbroker does not generate broker ids)")
	}
	if len(c.LogDirs) == 0 {
		return &Error{Kind: ErrMissing, Key: "log.dirs", Reason: "at least one log directory must be set in log.dirs or log.dir"}
	}
	seen := map[string]bool{}
	for _, d := range c.LogDirs {
		if strings.TrimSpace(d) == "" {
			return invalid("log.dirs", strings.Join(c.LogDirs, ","), "empty directory name")
		}
		if seen[d] {
			return invalid("log.dirs", strings.Join(c.LogDirs, ","), "duplicate log directory %q", d)
		}
		seen[d] = true
	}
	if err := c.validateListeners(); err != nil {
		return err
	}

	type check struct {
		ok     bool
		key    string
		value  string
		reason string
	}
	checks := []check{
		{c.SocketRequestMaxBytes >= 1, "socket.request.max.bytes", itoa(c.SocketRequestMaxBytes), "must be at least 1"},
		{c.RequestTimeout > 0, "request.timeout.ms", ms(c.RequestTimeout), "must be greater than 0"},
		{c.ZookeeperSessionTimeout > 0, "zookeeper.session.timeout.ms", ms(c.ZookeeperSessionTimeout), "must be greater than 0"},
		{c.ZookeeperConnectionTimeout > 0, "zookeeper.connection.timeout.ms", ms(c.ZookeeperConnectionTimeout), "must be greater than 0"},
		{c.ZookeeperMaxInFlightRequests >= 1, "zookeeper.max.in.flight.requests", itoa(c.ZookeeperMaxInFlightRequests), "must be at least 1"},
		{c.NumPartitions >= 1, "num.partitions", itoa(c.NumPartitions), "must be at least 1"},
		{c.DefaultReplicationFactor >= 1, "default.replication.factor", itoa(c.DefaultReplicationFactor), "must be at least 1"},
		{c.OffsetsTopicReplicationFactor >= 1, "offsets.topic.replication.factor", itoa(c.OffsetsTopicReplicationFactor), "must be at least 1"},
		{c.MessageMaxBytes > 0, "message.max.bytes", itoa(c.MessageMaxBytes), "must be greater than 0"},
		{c.MinInsyncReplicas >= 1, "min.insync.replicas", itoa(c.MinInsyncReplicas), "must be at least 1"},
		{c.LogSegmentBytes >= 14, "log.segment.bytes", itoa(c.LogSegmentBytes), "must be at least 14 (one legacy record overhead)"},
		{c.LogRollMs >= 1, "log.roll.ms", itoa(c.LogRollMs), "must be at least 1"},
		{c.LogRetentionMs >= 1 || c.LogRetentionMs == -1, "log.retention.ms", itoa(c.LogRetentionMs), "must be unlimited (-1) or at least 1"},
		{c.LogRetentionCheckInterval > 0, "log.retention.check.interval.ms", ms(c.LogRetentionCheckInterval), "must be at least 1"},
		{c.LogIndexIntervalBytes >= 0, "log.index.interval.bytes", itoa(c.LogIndexIntervalBytes), "must be at least 0"},
		{c.LogFlushIntervalMessages >= 1, "log.flush.interval.messages", itoa(c.LogFlushIntervalMessages), "must be at least 1"},
		{c.LogFlushIntervalMs >= 0, "log.flush.interval.ms", itoa(c.LogFlushIntervalMs), "must be at least 0"},
		{c.LogFlushOffsetCheckpointInterval > 0, "log.flush.offset.checkpoint.interval.ms", ms(c.LogFlushOffsetCheckpointInterval), "must be at least 1 (isrbroker runs it on a timer)"},
		{c.LogFlushStartOffsetCheckpointInterval > 0, "log.flush.start.offset.checkpoint.interval.ms", ms(c.LogFlushStartOffsetCheckpointInterval), "must be at least 1 (isrbroker runs it on a timer)"},
		{c.FileDeleteDelay >= 0, "log.segment.delete.delay.ms", ms(c.FileDeleteDelay), "must be at least 0"},
		{c.ReplicaLagTimeMax > 0, "replica.lag.time.max.ms", ms(c.ReplicaLagTimeMax), "must be greater than 0"},
		{c.NumReplicaFetchers >= 1, "num.replica.fetchers", itoa(c.NumReplicaFetchers), "must be at least 1"},
		{c.ReplicaFetchBackoff >= 0, "replica.fetch.backoff.ms", ms(c.ReplicaFetchBackoff), "must be at least 0"},
		{c.ReplicaFetchWaitMax >= 0, "replica.fetch.wait.max.ms", ms(c.ReplicaFetchWaitMax), "must be at least 0"},
		{c.ReplicaFetchMinBytes >= 0, "replica.fetch.min.bytes", itoa(c.ReplicaFetchMinBytes), "must be at least 0"},
		{c.ReplicaFetchMaxBytes >= 0, "replica.fetch.max.bytes", itoa(c.ReplicaFetchMaxBytes), "must be at least 0"},
		{c.ReplicaFetchResponseMaxBytes >= 0, "replica.fetch.response.max.bytes", itoa(c.ReplicaFetchResponseMaxBytes), "must be at least 0"},
		{c.ReplicaSocketTimeout > 0, "replica.socket.timeout.ms", ms(c.ReplicaSocketTimeout), "must be greater than 0"},
		{c.ReplicaHighWatermarkCheckpointInterval > 0, "replica.high.watermark.checkpoint.interval.ms", ms(c.ReplicaHighWatermarkCheckpointInterval), "must be at least 1 (isrbroker runs it on a timer)"},
		{c.OffsetsTopicNumPartitions >= 1, "offsets.topic.num.partitions", itoa(c.OffsetsTopicNumPartitions), "must be at least 1"},
		{c.OffsetsTopicSegmentBytes >= 1, "offsets.topic.segment.bytes", itoa(c.OffsetsTopicSegmentBytes), "must be at least 1"},
		{c.OffsetsCommitRequiredAcks >= -1 && c.OffsetsCommitRequiredAcks <= c.OffsetsTopicReplicationFactor, "offsets.commit.required.acks", itoa(c.OffsetsCommitRequiredAcks),
			"must be between -1 and offsets.topic.replication.factor (" + itoa(c.OffsetsTopicReplicationFactor) + ")"},
		{c.OffsetsCommitTimeout > 0, "offsets.commit.timeout.ms", ms(c.OffsetsCommitTimeout), "must be at least 1"},
		{c.OffsetsRetention >= time.Minute, "offsets.retention.minutes", itoa(int64(c.OffsetsRetention / time.Minute)), "must be at least 1"},
		{c.OffsetsRetentionCheckInterval > 0, "offsets.retention.check.interval.ms", ms(c.OffsetsRetentionCheckInterval), "must be at least 1"},
		{c.OffsetsLoadBufferSize >= 1, "offsets.load.buffer.size", itoa(c.OffsetsLoadBufferSize), "must be at least 1"},
		{c.OffsetMetadataMaxBytes >= 0, "offset.metadata.max.bytes", itoa(c.OffsetMetadataMaxBytes), "must be at least 0"},
		{c.GroupMinSessionTimeout >= 0, "group.min.session.timeout.ms", ms(c.GroupMinSessionTimeout), "must be at least 0"},
		{c.GroupMaxSessionTimeout >= c.GroupMinSessionTimeout, "group.max.session.timeout.ms", ms(c.GroupMaxSessionTimeout),
			"must be at least group.min.session.timeout.ms (" + ms(c.GroupMinSessionTimeout) + ")"},
		{c.GroupInitialRebalanceDelay >= 0, "group.initial.rebalance.delay.ms", ms(c.GroupInitialRebalanceDelay), "must be at least 0"},
		{c.GroupMaxSize >= 1, "group.max.size", itoa(c.GroupMaxSize), "must be at least 1"},
		{c.LogCleanerThreads >= 0, "log.cleaner.threads", itoa(c.LogCleanerThreads), "must be at least 0"},
		{c.LogCleanerMinCleanableRatio >= 0 && c.LogCleanerMinCleanableRatio <= 1, "log.cleaner.min.cleanable.ratio",
			strconv.FormatFloat(c.LogCleanerMinCleanableRatio, 'g', -1, 64), "must be between 0 and 1"},
		{c.LogCleanerMinCompactionLagMs >= 0, "log.cleaner.min.compaction.lag.ms", itoa(c.LogCleanerMinCompactionLagMs), "must be at least 0"},
		{c.LogCleanerMaxCompactionLagMs >= 1, "log.cleaner.max.compaction.lag.ms", itoa(c.LogCleanerMaxCompactionLagMs), "must be at least 1"},
		{c.LogCleanerDeleteRetentionMs >= 0, "log.cleaner.delete.retention.ms", itoa(c.LogCleanerDeleteRetentionMs), "must be at least 0"},
		{c.LogCleanerBackoff >= 0, "log.cleaner.backoff.ms", ms(c.LogCleanerBackoff), "must be at least 0"},
		{c.LogCleanerDedupeBufferSize >= 1<<20, "log.cleaner.dedupe.buffer.size", itoa(c.LogCleanerDedupeBufferSize), "must be at least 1048576"},
		{c.ControllerSocketTimeout > 0, "controller.socket.timeout.ms", ms(c.ControllerSocketTimeout), "must be greater than 0"},
		{c.LeaderImbalanceCheckInterval >= time.Second, "leader.imbalance.check.interval.seconds", itoa(int64(c.LeaderImbalanceCheckInterval / time.Second)), "must be at least 1"},
		{c.LeaderImbalancePerBrokerPercentage >= 0 && c.LeaderImbalancePerBrokerPercentage <= 100, "leader.imbalance.per.broker.percentage", itoa(c.LeaderImbalancePerBrokerPercentage), "must be between 0 and 100"},
		{c.ControlledShutdownMaxRetries >= 0, "controlled.shutdown.max.retries", itoa(c.ControlledShutdownMaxRetries), "must be at least 0"},
		{c.ControlledShutdownRetryBackoff >= 0, "controlled.shutdown.retry.backoff.ms", ms(c.ControlledShutdownRetryBackoff), "must be at least 0"},
		// KafkaConfig.validateValues: a follower's long poll must end before its socket
		// times out, and before the leader would consider it lagging (S5b).
		{c.ReplicaFetchWaitMax <= c.ReplicaSocketTimeout, "replica.fetch.wait.max.ms", ms(c.ReplicaFetchWaitMax),
			"must be at most replica.socket.timeout.ms (" + ms(c.ReplicaSocketTimeout) + ") to prevent unnecessary socket timeouts"},
		{c.ReplicaFetchWaitMax <= c.ReplicaLagTimeMax, "replica.fetch.wait.max.ms", ms(c.ReplicaFetchWaitMax),
			"must be at most replica.lag.time.max.ms (" + ms(c.ReplicaLagTimeMax) + ") to prevent frequent ISR changes"},
	}
	for _, ch := range checks {
		if !ch.ok {
			return invalid(ch.key, ch.value, "%s", ch.reason)
		}
	}
	if c.MetricsListen != "" {
		if err := checkHostPort(c.MetricsListen); err != nil {
			return invalid("metrics.listen", c.MetricsListen, "%v", err)
		}
	}
	if c.LocalAddress != "" && net.ParseIP(c.LocalAddress) == nil {
		return invalid("isrbroker.local.address", c.LocalAddress, "not an IP address")
	}
	return nil
}

func checkHostPort(s string) error {
	_, port, err := net.SplitHostPort(s)
	if err != nil {
		return fmt.Errorf("not host:port")
	}
	p, err := strconv.Atoi(port)
	if err != nil || p < 0 || p > 65535 {
		return fmt.Errorf("port %q is not a number between 0 and 65535", port)
	}
	return nil
}

func (c *Config) validateListeners() error {
	render := func(ls []Listener) string {
		parts := make([]string, len(ls))
		for i, l := range ls {
			parts[i] = l.String()
		}
		return strings.Join(parts, ",")
	}
	if len(c.Listeners) == 0 {
		return invalid("listeners", "", "at least one listener NAME://host:port is required")
	}
	names := map[string]bool{}
	for _, l := range c.Listeners {
		if err := c.checkListener(l); err != nil {
			return invalid("listeners", render(c.Listeners), "%v", err)
		}
		if names[l.Name] {
			return invalid("listeners", render(c.Listeners), "listener name %s is used more than once", l.Name)
		}
		names[l.Name] = true
	}
	if len(c.AdvertisedListeners) == 0 {
		return invalid("advertised.listeners", "", "at least one listener NAME://host:port is required")
	}
	adv := map[string]bool{}
	for _, l := range c.AdvertisedListeners {
		v := render(c.AdvertisedListeners)
		if err := c.checkListener(l); err != nil {
			return invalid("advertised.listeners", v, "%v", err)
		}
		if adv[l.Name] {
			return invalid("advertised.listeners", v, "listener name %s is used more than once", l.Name)
		}
		adv[l.Name] = true
		if !names[l.Name] {
			return invalid("advertised.listeners", v, "listener name %s is not defined in listeners", l.Name)
		}
		switch l.Host {
		case "0.0.0.0", "::", "":
			return invalid("advertised.listeners", v, "host %q is not advertisable (the non-routable meta-address); use a routable address", l.Host)
		}
		if l.Port == 0 {
			return invalid("advertised.listeners", v, "port 0 cannot be advertised; set a fixed port")
		}
	}
	if !adv[c.InterBrokerListenerName] {
		return invalid("inter.broker.listener.name", c.InterBrokerListenerName, "must be a listener name defined in advertised.listeners (%s)", render(c.AdvertisedListeners))
	}
	return nil
}

func (c *Config) checkListener(l Listener) error {
	if l.Name == "" {
		return fmt.Errorf("empty listener name")
	}
	if l.Port < 0 || l.Port > 65535 {
		return fmt.Errorf("port %d is not between 0 and 65535", l.Port)
	}
	proto, ok := c.ListenerSecurityProtocolMap[l.Name]
	if !ok {
		return fmt.Errorf("listener name %s has no entry in listener.security.protocol.map", l.Name)
	}
	if proto != "PLAINTEXT" {
		return fmt.Errorf("listener %s uses security protocol %s; isrbroker supports PLAINTEXT only", l.Name, proto)
	}
	return nil
}
