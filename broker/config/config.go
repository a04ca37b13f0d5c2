// Package config owns the broker's server.properties: Java .properties parsing, --override,
// the typed Config and its validation. Every key's name, type, default, validator and status
// comes from the one table in package configdef; this package binds the used keys to Config
// fields (struct tags), applies Kafka's precedence rules (log.retention.ms > .minutes > .hours,
// listeners > port/host.name, ...), warns once per known Kafka setting isrbroker does not use,
// and stops start-up on an unknown key with the nearest known key as a hint, so that a typo
// such as `zookeeper.session.tmeout.ms` is never silently ignored. docs/configuration.md is
// generated from the table (TestConfigurationDoc; `go test ./broker/config -update`).
package config

import (
	"errors"
	"fmt"
	"math"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/isrbroker/isrbroker/broker/config/configdef"
)

// Listener is one entry of listeners / advertised.listeners: NAME://host:port.
type Listener struct {
	Name             string // listener name, upper case (Kafka normalises it)
	Host             string // empty = all interfaces (listeners only)
	Port             int
	SecurityProtocol string // from listener.security.protocol.map
}

// String renders the listener the way it is written in server.properties.
func (l Listener) String() string {
	return l.Name + "://" + net.JoinHostPort(l.Host, strconv.Itoa(l.Port))
}

// Config is the typed broker configuration. A field tagged `key:"name"` is bound to that key
// of the configdef table, which gives its type, default, validator and documentation
// (docs/configuration.md); Parse and Default fill it and Validate checks it from the table.
// Untagged fields come from keys with a precedence rule or a derived default (parseComposite).
// Duration fields hold the key's number in the key's unit (ms, s, min).
type Config struct {
	// General.
	BrokerID   int32  // broker.id (required, >= 0: isrbroker does not generate ids)
	BrokerRack string `key:"broker.rack"`

	// Authorization (docs/acls.md).
	AuthorizerClassName       string `key:"authorizer.class.name"` // "" or one of Kafka's two ACL authorizer names
	SuperUsers                string `key:"super.users"`
	AllowEveryoneIfNoACLFound bool   `key:"allow.everyone.if.no.acl.found"`

	// Sockets.
	Listeners                    []Listener        // listeners, else port/host.name
	AdvertisedListeners          []Listener        // advertised.listeners, else advertised.host.name/port, else listeners
	ListenerSecurityProtocolMap  map[string]string // listener.security.protocol.map
	InterBrokerListenerName      string            // inter.broker.listener.name, else security.inter.broker.protocol
	SocketRequestMaxBytes        int32             `key:"socket.request.max.bytes"`
	MaxConnections               int32             `key:"max.connections"`
	MaxConnectionsPerIP          int32             `key:"max.connections.per.ip"`
	MaxConnectionsPerIPOverrides string            `key:"max.connections.per.ip.overrides"` // host:count,host:count (PerIPOverrides)
	ConnectionsMaxIdle           time.Duration     `key:"connections.max.idle.ms"`

	// Fetch sessions (KIP-227).
	MaxIncrementalFetchSessionCacheSlots int32 `key:"max.incremental.fetch.session.cache.slots"`
	// Security (security.go: the per-listener ssl.*, sasl.enabled.mechanisms, JAAS and
	// connections.max.reauth.ms keys are read from Props).
	SaslMechanismInterBrokerProtocol    string        `key:"sasl.mechanism.inter.broker.protocol"`
	ConnectionFailedAuthenticationDelay time.Duration `key:"connection.failed.authentication.delay.ms"`

	// ZooKeeper.
	ZookeeperConnect           string        // zookeeper.connect (required) host:port[,host:port][/chroot]
	ZookeeperServers           []string      // the host:port list of ZookeeperConnect
	ZookeeperChroot            string        // the /chroot of ZookeeperConnect, "" if none
	ZookeeperSessionTimeout    time.Duration `key:"zookeeper.session.timeout.ms"`
	ZookeeperConnectionTimeout time.Duration `key:"zookeeper.connection.timeout.ms"` // default: the session timeout

	// Topics.
	NumPartitions                 int32 `key:"num.partitions"`
	DefaultReplicationFactor      int16 `key:"default.replication.factor"` // S24
	OffsetsTopicReplicationFactor int16 `key:"offsets.topic.replication.factor"`
	AutoCreateTopicsEnable        bool  `key:"auto.create.topics.enable"`
	DeleteTopicEnable             bool  `key:"delete.topic.enable"`
	MessageMaxBytes               int32 `key:"message.max.bytes"`              // the log enforces it (logstore MaxMessageBytes)
	MinInsyncReplicas             int   `key:"min.insync.replicas"`            // K2
	UncleanLeaderElectionEnable   bool  `key:"unclean.leader.election.enable"` // K6

	// Log layer.
	LogDirs                          []string      // log.dirs, else log.dir (required)
	LogSegmentBytes                  int32         `key:"log.segment.bytes"`
	LogRollMs                        int64         `key:"log.roll.ms"`      // else log.roll.hours
	LogRetentionMs                   int64         `key:"log.retention.ms"` // else .minutes, else .hours; -1 = unlimited
	LogRetentionBytes                int64         `key:"log.retention.bytes"`
	LogRetentionCheckInterval        time.Duration `key:"log.retention.check.interval.ms"`
	LogIndexIntervalBytes            int32         `key:"log.index.interval.bytes"`
	LogFlushIntervalMessages         int64         `key:"log.flush.interval.messages"`
	LogFlushIntervalMs               int64         `key:"log.flush.interval.ms"` // else log.flush.scheduler.interval.ms
	LogFlushOffsetCheckpointInterval time.Duration `key:"log.flush.offset.checkpoint.interval.ms"`
	FileDeleteDelay                  time.Duration `key:"log.segment.delete.delay.ms"`
	LogMessageTimestampType          string        `key:"log.message.timestamp.type"`              // CreateTime or LogAppendTime
	LogMessageTimestampDiffMaxMs     int64         `key:"log.message.timestamp.difference.max.ms"` // Long.MaxValue: no check

	// Replication.
	ReplicaLagTimeMax                      time.Duration `key:"replica.lag.time.max.ms"` // S5b
	NumReplicaFetchers                     int           `key:"num.replica.fetchers"`    // S15
	ReplicaFetchBackoff                    time.Duration `key:"replica.fetch.backoff.ms"`
	ReplicaFetchWaitMax                    time.Duration `key:"replica.fetch.wait.max.ms"`
	ReplicaFetchMinBytes                   int32         `key:"replica.fetch.min.bytes"`
	ReplicaFetchMaxBytes                   int32         `key:"replica.fetch.max.bytes"`
	ReplicaFetchResponseMaxBytes           int32         `key:"replica.fetch.response.max.bytes"`
	ReplicaSocketTimeout                   time.Duration `key:"replica.socket.timeout.ms"`
	ReplicaHighWatermarkCheckpointInterval time.Duration `key:"replica.high.watermark.checkpoint.interval.ms"`
	ReplicaSelectorClass                   string        `key:"replica.selector.class"` // KIP-392: "" (the leader) or configdef.RackAwareReplicaSelector

	// Group coordinator and __consumer_offsets (docs/groups.md).
	OffsetsTopicNumPartitions     int32         `key:"offsets.topic.num.partitions"`
	OffsetsTopicSegmentBytes      int32         `key:"offsets.topic.segment.bytes"`
	OffsetsCommitRequiredAcks     int16         `key:"offsets.commit.required.acks"`
	OffsetsCommitTimeout          time.Duration `key:"offsets.commit.timeout.ms"`
	OffsetsRetention              time.Duration `key:"offsets.retention.minutes"`
	OffsetsRetentionCheckInterval time.Duration `key:"offsets.retention.check.interval.ms"`
	OffsetsLoadBufferSize         int32         `key:"offsets.load.buffer.size"`
	OffsetMetadataMaxBytes        int32         `key:"offset.metadata.max.bytes"`
	GroupMinSessionTimeout        time.Duration `key:"group.min.session.timeout.ms"`
	GroupMaxSessionTimeout        time.Duration `key:"group.max.session.timeout.ms"`
	GroupInitialRebalanceDelay    time.Duration `key:"group.initial.rebalance.delay.ms"`
	GroupMaxSize                  int32         `key:"group.max.size"`

	// Log cleaner: compaction of topics with cleanup.policy=compact (docs/compaction.md).
	LogCleanupPolicy             []string      `key:"log.cleanup.policy"`
	LogCleanerEnable             bool          `key:"log.cleaner.enable"`
	LogCleanerThreads            int           `key:"log.cleaner.threads"`
	LogCleanerMinCleanableRatio  float64       `key:"log.cleaner.min.cleanable.ratio"`
	LogCleanerMinCompactionLagMs int64         `key:"log.cleaner.min.compaction.lag.ms"`
	LogCleanerMaxCompactionLagMs int64         `key:"log.cleaner.max.compaction.lag.ms"`
	LogCleanerDeleteRetentionMs  int64         `key:"log.cleaner.delete.retention.ms"`
	LogCleanerBackoff            time.Duration `key:"log.cleaner.backoff.ms"`
	LogCleanerDedupeBufferSize   int64         `key:"log.cleaner.dedupe.buffer.size"`

	// Client quotas (docs/quotas.md).
	QuotaProducerDefault int64         `key:"quota.producer.default"` // deprecated static default
	QuotaConsumerDefault int64         `key:"quota.consumer.default"` // deprecated static default
	QuotaWindowNum       int           `key:"quota.window.num"`
	QuotaWindowSize      time.Duration `key:"quota.window.size.seconds"`

	// Controller.
	ControllerSocketTimeout            time.Duration `key:"controller.socket.timeout.ms"`
	AutoLeaderRebalanceEnable          bool          `key:"auto.leader.rebalance.enable"` // K7
	LeaderImbalanceCheckInterval       time.Duration `key:"leader.imbalance.check.interval.seconds"`
	LeaderImbalancePerBrokerPercentage int           `key:"leader.imbalance.per.broker.percentage"`
	ControlledShutdownEnable           bool          `key:"controlled.shutdown.enable"` // K7
	ControlledShutdownMaxRetries       int           `key:"controlled.shutdown.max.retries"`
	ControlledShutdownRetryBackoff     time.Duration `key:"controlled.shutdown.retry.backoff.ms"`

	// isrbroker's own.
	// LogFormat is isrbroker.log.format: "text" or "json" (docs/logging.md); the broker
	// command's --log-format flag wins over it.
	LogFormat     string `key:"isrbroker.log.format"`
	MetricsListen string `key:"metrics.listen"` // HTTP address of /metrics, "" = disabled
	// MetricsAdvertisedListen is metrics.advertised.listen: the host:port at which peers and
	// browsers reach metrics.listen (the replication page, docs/replication-page.md); "" derives
	// it (MetricsAdvertisedAddress).
	MetricsAdvertisedListen string `key:"metrics.advertised.listen"`
	// LocalAddress is isrbroker.local.address: the IP every outgoing connection of the broker
	// (inter-broker fetchers, the controller channel, the ZooKeeper session) binds as its
	// source address; "" lets the kernel choose. The fault-injection harness gives each broker
	// its own loopback address so iptables rules can cut one link between two brokers.
	LocalAddress string `key:"isrbroker.local.address"`
	// PprofEnable is isrbroker.pprof.enable: net/http/pprof at /debug/pprof/ on the metrics
	// listener, with mutex and block sampling on (docs/performance.md, "Profiling a broker").
	PprofEnable bool `key:"isrbroker.pprof.enable"`

	// Props are the properties as given (file, then --override), Kafka's
	// originalsFromThisConfig: DescribeConfigs reports them as STATIC_BROKER_CONFIG.
	Props map[string]string
}

// NeverMs is Long.MaxValue, Kafka's "never" for the flush settings.
const NeverMs = math.MaxInt64

// Default returns the defaults of the configdef table. It is not valid by itself: broker.id,
// zookeeper.connect and log.dirs have no default.
func Default() *Config {
	c := &Config{BrokerID: -1}
	for _, b := range bindings {
		if b.key.Default == "" {
			continue
		}
		if err := b.set(c, b.key.Default); err != nil {
			panic("broker/config: default of " + b.key.Name + ": " + err.Error())
		}
	}
	// Defaults derived from another key, as in KafkaConfig.
	c.ListenerSecurityProtocolMap = defaultProtocolMap()
	ls, err := parseListenerList(defaultOf("listeners"))
	if err != nil {
		panic("broker/config: default listeners: " + err.Error())
	}
	for i := range ls {
		ls[i].SecurityProtocol = c.ListenerSecurityProtocolMap[ls[i].Name]
	}
	c.Listeners = ls
	c.AdvertisedListeners = append([]Listener(nil), ls...)
	c.InterBrokerListenerName = defaultOf("security.inter.broker.protocol")
	c.ZookeeperConnectionTimeout = c.ZookeeperSessionTimeout
	c.LogRollMs = configdef.IntDefault("log.roll.hours", configdef.Broker) * 3600 * 1000
	c.LogRetentionMs = configdef.IntDefault("log.retention.hours", configdef.Broker) * 3600 * 1000
	c.LogFlushIntervalMs = configdef.IntDefault("log.flush.scheduler.interval.ms", configdef.Broker)
	return c
}

func defaultOf(key string) string { return configdef.MustLookup(key, configdef.Broker).Default }

func defaultProtocolMap() map[string]string {
	m, err := parseProtocolMap(defaultOf("listener.security.protocol.map"))
	if err != nil {
		panic("broker/config: default listener.security.protocol.map: " + err.Error())
	}
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

// Validate checks the required keys, every bound key against its configdef validator, and the
// cross-key rules (Kafka's KafkaConfig.validateValues plus isrbroker's limits). The error
// names the property and the value.
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
	if err := c.validateSecurity(); err != nil {
		return err
	}

	if err := c.validateBound(); err != nil {
		return err
	}
	// Cross-key rules (KafkaConfig.validateValues and the group coordinator's).
	type check struct {
		ok     bool
		key    string
		value  string
		reason string
	}
	checks := []check{
		{c.OffsetsCommitRequiredAcks >= -1 && c.OffsetsCommitRequiredAcks <= c.OffsetsTopicReplicationFactor, "offsets.commit.required.acks", itoa(c.OffsetsCommitRequiredAcks),
			"must be between -1 and offsets.topic.replication.factor (" + itoa(c.OffsetsTopicReplicationFactor) + ")"},
		{c.GroupMaxSessionTimeout >= c.GroupMinSessionTimeout, "group.max.session.timeout.ms", ms(c.GroupMaxSessionTimeout),
			"must be at least group.min.session.timeout.ms (" + ms(c.GroupMinSessionTimeout) + ")"},
		// A follower's long poll must end before its socket times out, and before the leader
		// would consider it lagging (S5b).
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
	if c.PprofEnable && c.MetricsListen == "" {
		return invalid("isrbroker.pprof.enable", "true", "needs metrics.listen: the profiles are served on the metrics listener")
	}
	if c.MetricsAdvertisedListen != "" {
		if err := checkHostPort(c.MetricsAdvertisedListen); err != nil {
			return invalid("metrics.advertised.listen", c.MetricsAdvertisedListen, "%v", err)
		}
	}
	overrides, err := ParsePerIPOverrides(c.MaxConnectionsPerIPOverrides)
	if err != nil {
		return invalid("max.connections.per.ip.overrides", c.MaxConnectionsPerIPOverrides, "%v", err)
	}
	if c.MaxConnectionsPerIP == 0 && len(overrides) == 0 {
		// KafkaConfig.validateValues.
		return invalid("max.connections.per.ip", "0", "can be set to zero only if max.connections.per.ip.overrides is set")
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
	if _, ok := c.ListenerSecurityProtocolMap[l.Name]; !ok {
		return fmt.Errorf("listener name %s has no entry in listener.security.protocol.map", l.Name)
	}
	return nil
}

// ParsePerIPOverrides parses max.connections.per.ip.overrides, "host:count,host:count"
// (Kafka's parseCsvMap; the count follows the last colon, so an IPv6 address may be given,
// bracketed or not).
func ParsePerIPOverrides(s string) (map[string]int, error) {
	out := map[string]int{}
	for _, e := range strings.Split(s, ",") {
		e = strings.TrimSpace(e)
		if e == "" {
			continue
		}
		i := strings.LastIndexByte(e, ':')
		if i <= 0 {
			return nil, fmt.Errorf("%q is not host:count", e)
		}
		host := strings.Trim(strings.TrimSpace(e[:i]), "[]")
		n, err := strconv.Atoi(strings.TrimSpace(e[i+1:]))
		if err != nil || n < 0 || host == "" {
			return nil, fmt.Errorf("%q is not host:count with a count >= 0", e)
		}
		out[host] = n
	}
	return out, nil
}
