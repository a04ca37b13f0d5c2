package configdef

import (
	"strconv"
	"time"
)

// Builders for the table; each returns the key for chaining.

func broker(name string, t Type, def string, v *Validator, doc string) *Key {
	return &Key{Name: name, Type: t, Default: def, Valid: v, Scope: Broker, Doc: doc}
}

func topic(name string, t Type, v *Validator, synonym, doc string) *Key {
	return &Key{Name: name, Type: t, Valid: v, Scope: Topic, Synonym: synonym, Doc: doc}
}

func (k *Key) ms() *Key      { k.Unit = time.Millisecond; return k }
func (k *Key) seconds() *Key { k.Unit = time.Second; return k }
func (k *Key) minutes() *Key { k.Unit = time.Minute; return k }
func (k *Key) hours() *Key   { k.Unit = time.Hour; return k }
func (k *Key) dyn(d Dynamic) *Key {
	k.Dynamic = d
	return k
}
func (k *Key) required() *Key         { k.Required = true; return k }
func (k *Key) def(d string) *Key      { k.Default = d; return k }
func (k *Key) synonym(s string) *Key  { k.Synonym = s; return k }
func (k *Key) unused(why string) *Key { k.Status, k.Reason = Unused, why; return k }
func (k *Key) unsupported(why string) *Key {
	k.Status, k.Reason = Unsupported, why
	return k
}

// RackAwareReplicaSelector is the one replica.selector.class Kafka 2.4 ships (KIP-392; 2.4 has
// no LeaderReplicaSelector: an empty value means the leader).
const RackAwareReplicaSelector = "org.apache.kafka.common.replica.RackAwareReplicaSelector"

// Kafka's numeric limits as written in its documentation.
var (
	longMax = strconv.FormatInt(1<<63-1, 10)
	intMax  = strconv.FormatInt(1<<31-1, 10)
)

// Reasons shared by groups of keys isrbroker does not use.
const (
	whyTokens       = "isrbroker has no delegation tokens and no dynamically encoded passwords"
	whyKerberos     = "isrbroker does not support GSSAPI (Kerberos); sasl.enabled.mechanisms must not enable it"
	whyJSSE         = "isrbroker's TLS is Go's crypto/tls, not a Java security provider"
	whySASLPlugins  = "isrbroker cannot load Java plug-in classes: SASL uses the built-in PLAIN, SCRAM and unsecured OAUTHBEARER"
	whyThreads      = "isrbroker serves each connection and background task on its own goroutine; there are no fixed thread pools or request queues"
	whyTransactions = "isrbroker has no transactions (idempotent producers only)"
	whyReplQuotas   = "isrbroker's replication throttle measures its rate over a fixed one-second window"
	whyMetrics      = "isrbroker exports its metrics over HTTP at metrics.listen"
	whyPurgatory    = "isrbroker removes a delayed operation from its purgatory as soon as it completes"
	whySockets      = "isrbroker uses the operating system's socket buffer sizes"
	whyVersions     = "isrbroker speaks Kafka 2.4's protocol and v2 record batches only"
	whyIDs          = "isrbroker does not generate broker ids; broker.id is required"
	whyAlterLogDirs = "isrbroker does not move replicas between log directories"
	whyPlugins      = "isrbroker cannot load Java plug-in classes"
)

// declared is the table: every Kafka 2.4.1 broker key (KafkaConfig), every topic key
// (LogConfig), the dynamic-only broker keys (DynamicConfig.Broker) and isrbroker's own keys.
// Kafka's names, types, defaults and KIP-226 modes are facts from Kafka 2.4.1; validators
// are Kafka's, tightened where isrbroker needs more (a timer interval of 0).
func declared() []*Key {
	return []*Key{
		// ---- General ----
		broker("broker.id", Int, "", AtLeast(0, "isrbroker does not generate broker ids"),
			"The id of this broker, unique in the cluster; required (>= 0).").required(),
		broker("broker.rack", String, "", nil, "The rack of this broker, recorded in its registration for clients."),
		broker("broker.id.generation.enable", Boolean, "true", nil, "Generate broker ids from ZooKeeper when broker.id is unset.").unused(whyIDs),
		broker("reserved.broker.max.id", Int, "1000", AtLeast(0), "Highest broker id reserved for configured ids.").unused(whyIDs),
		broker("metrics.listen", String, "", nil,
			"isrbroker's own: host:port of the HTTP endpoint serving Prometheus text at /metrics; empty disables it."),
		broker("metrics.advertised.listen", String, "", nil,
			"isrbroker's own: host:port at which other brokers and browsers reach metrics.listen (the replication page gathers every broker's state through it); empty: metrics.listen, with its host replaced by the first advertised listener's host when it is a wildcard."),
		broker("isrbroker.pprof.enable", Boolean, "false", nil,
			"isrbroker's own: serve Go's net/http/pprof profiles (CPU, heap, allocs, mutex, block, goroutine) at /debug/pprof/ on metrics.listen, and sample mutex and block events for them; needs metrics.listen (docs/performance.md, \"Profiling a broker\")."),
		broker("isrbroker.local.address", String, "", nil,
			"isrbroker's own: the IP every outgoing connection (fetchers, controller channel, ZooKeeper) binds as its source; empty lets the kernel choose."),
		broker("isrbroker.log.format", String, "text", OneOf("text", "json"),
			"isrbroker's own: the format of the broker's log lines on stderr: text (logrus key=value) or json (one JSON object per line with time, level, msg, component and the fields of docs/logging.md); the --log-format flag of `isrbroker broker` wins over it."),

		// ---- ZooKeeper ----
		broker("zookeeper.connect", String, "", nil,
			"ZooKeeper connection string host:port[,host:port][/chroot]; required.").required(),
		broker("zookeeper.session.timeout.ms", Int, "6000", Positive(),
			"ZooKeeper session timeout; a broker whose session expires is dead to the controller.").ms(),
		broker("zookeeper.connection.timeout.ms", Int, "", Positive(),
			"How long to wait for the ZooKeeper connection at start-up; default zookeeper.session.timeout.ms.").ms(),
		broker("zookeeper.max.in.flight.requests", Int, "10", AtLeast(1), "Unacknowledged requests the ZooKeeper client sends before blocking.").
			unused("isrbroker's ZooKeeper client pipelines requests without a configurable bound"),
		broker("zookeeper.sync.time.ms", Int, "2000", nil, "How far a ZooKeeper follower may be behind its leader.").ms().unused("not used by Kafka 2.4 either"),
		broker("zookeeper.set.acl", Boolean, "false", nil, "Write znodes with secure ACLs.").
			unsupported("isrbroker writes znodes with open ACLs"),

		// ---- Sockets and listeners ----
		broker("listeners", String, "PLAINTEXT://127.0.0.1:9092", nil,
			"Listeners NAME://host:port[,...]; without it the deprecated host.name and port. isrbroker's default binds 127.0.0.1.").dyn(PerBroker),
		broker("advertised.listeners", String, "", nil,
			"Listeners published in ZooKeeper for clients and other brokers; default listeners. 0.0.0.0 and port 0 cannot be advertised.").dyn(PerBroker),
		broker("listener.security.protocol.map", String, "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL", nil,
			"Security protocol of each listener name: PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL (docs/security.md, \"Listeners\").").dyn(PerBroker),
		broker("inter.broker.listener.name", String, "", nil,
			"Listener other brokers use to reach this one; default the listener named after security.inter.broker.protocol."),
		broker("security.inter.broker.protocol", String, "PLAINTEXT", OneOf("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"),
			"Security protocol between brokers; the inter-broker listener is the one of that name. Exclusive with inter.broker.listener.name."),
		broker("port", Int, "9092", nil, "Deprecated: port of the PLAINTEXT listener when listeners is unset."),
		broker("host.name", String, "", nil, "Deprecated: host of the PLAINTEXT listener when listeners is unset."),
		broker("advertised.host.name", String, "", nil, "Deprecated: advertised host when advertised.listeners is unset."),
		broker("advertised.port", Int, "", nil, "Deprecated: advertised port when advertised.listeners is unset."),
		broker("control.plane.listener.name", String, "", nil, "A separate listener for controller requests (KIP-291).").
			unused("isrbroker's controller requests share the inter-broker listener"),
		broker("socket.request.max.bytes", Int, "104857600", AtLeast(1),
			"Largest request a connection may send; a larger size closes the connection."),
		broker("socket.send.buffer.bytes", Int, "102400", nil, "SO_SNDBUF of client connections.").unused(whySockets),
		broker("socket.receive.buffer.bytes", Int, "102400", nil, "SO_RCVBUF of client connections.").unused(whySockets),
		broker("replica.socket.receive.buffer.bytes", Int, "65536", nil, "SO_RCVBUF of replica fetcher connections.").unused(whySockets),
		broker("max.connections", Int, intMax, AtLeast(0),
			"Connections the broker holds, all listeners together; at the limit it stops accepting until one closes (the inter-broker listener excepted when there are others).").dyn(ClusterWide),
		broker("max.connections.per.ip", Int, intMax, AtLeast(0),
			"Connections from one IP address; the one over the limit is accepted and closed. 0 only with max.connections.per.ip.overrides.").dyn(ClusterWide),
		broker("max.connections.per.ip.overrides", String, "", nil, "Per-host limits overriding max.connections.per.ip: host:count,host:count.").dyn(ClusterWide),
		broker("connections.max.idle.ms", Long, "600000", nil, "A connection with nothing read or written and no request in progress for this long is closed.").ms(),
		broker("request.timeout.ms", Int, "30000", nil, "Timeout of requests the broker itself sends as a client (Kafka: transaction markers).").ms().
			unused("isrbroker's own requests are bounded by replica.socket.timeout.ms and controller.socket.timeout.ms"),
		broker("queued.max.requests", Int, "500", AtLeast(1), "Requests queued for the I/O threads.").unused(whyThreads),
		broker("queued.max.request.bytes", Long, "-1", nil, "Bytes of queued requests.").unused(whyThreads),
		broker("num.network.threads", Int, "3", AtLeast(1), "Network threads.").dyn(ClusterWide).unused(whyThreads),
		broker("num.io.threads", Int, "8", AtLeast(1), "Request handler threads.").dyn(ClusterWide).unused(whyThreads),
		broker("background.threads", Int, "10", AtLeast(1), "Background task threads.").dyn(ClusterWide).unused(whyThreads),
		broker("num.recovery.threads.per.data.dir", Int, "1", AtLeast(1), "Threads per log directory for recovery and flush at shutdown.").dyn(ClusterWide).unused(whyThreads),
		broker("num.replica.alter.log.dirs.threads", Int, "", nil, "Threads moving replicas between log directories.").unused(whyAlterLogDirs),
		broker("max.incremental.fetch.session.cache.slots", Int, "1000", AtLeast(0), "Incremental fetch sessions kept (KIP-227); 0 answers every fetch sessionless. A full cache evicts a session unused for 120 s, else a smaller or consumer one (broker/fetchsession)."),
		broker("fetch.purgatory.purge.interval.requests", Int, "1000", nil, "Purge interval of the fetch purgatory.").unused(whyPurgatory),
		broker("producer.purgatory.purge.interval.requests", Int, "1000", nil, "Purge interval of the produce purgatory.").unused(whyPurgatory),
		broker("delete.records.purgatory.purge.interval.requests", Int, "1", nil, "Purge interval of the delete-records purgatory.").unused(whyPurgatory),

		// ---- Topics ----
		broker("num.partitions", Int, "1", AtLeast(1), "Partitions of an auto-created topic, and of CreateTopics with num_partitions -1."),
		broker("default.replication.factor", Int, "1", AtLeast(1), "Replication factor of auto-created topics and of CreateTopics with replication_factor -1."),
		broker("auto.create.topics.enable", Boolean, "true", nil, "Create a topic on first metadata request or produce for it."),
		broker("delete.topic.enable", Boolean, "true", nil, "Let DeleteTopics and `topics --delete` delete topics."),
		broker("message.max.bytes", Int, "1000012", Positive(), "Largest record batch a produce may append (topic: max.message.bytes).").dyn(ClusterWide),
		broker("min.insync.replicas", Int, "1", AtLeast(1), "With acks=all, a produce fails with NOT_ENOUGH_REPLICAS below this ISR size.").dyn(ClusterWide),
		broker("unclean.leader.election.enable", Boolean, "false", nil, "Elect an out-of-sync replica as leader when no ISR member is alive (data loss).").dyn(ClusterWide),
		broker("compression.type", String, "producer", OneOf("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"),
			"Final compression of the topic's batches; producer keeps the producer's.").dyn(ClusterWide).
			unsupported("isrbroker stores record batches exactly as the producer sent them"),
		broker("create.topic.policy.class.name", Class, "", nil, "A CreateTopicPolicy plug-in.").unsupported(whyPlugins),
		broker("alter.config.policy.class.name", Class, "", nil, "An AlterConfigPolicy plug-in.").unsupported(whyPlugins),
		broker("authorizer.class.name", String, "", OneOf("", "kafka.security.authorizer.AclAuthorizer", "kafka.security.auth.SimpleAclAuthorizer"),
			"The authorizer: empty (none: every client may do everything) or one of Kafka 2.4's two names of its ACL authorizer (docs/acls.md)."),
		broker("super.users", String, "", superUsers(), "Principals the ACL authorizer lets do everything, ';'-separated (User:admin;User:CN=b1,O=Acme)."),
		broker("allow.everyone.if.no.acl.found", Boolean, "false", nil, "With the ACL authorizer: a resource without any ACL is open to every principal."),

		// ---- Log ----
		broker("log.dirs", String, "", nil, "Comma-separated log directories; default log.dir. One of the two is required in isrbroker."),
		broker("log.dir", String, "", nil, "A single log directory, used when log.dirs is unset (isrbroker has no default directory: one of the two is required)."),
		broker("log.segment.bytes", Int, "1073741824", AtLeast(14, "one legacy record overhead"), "Size at which a segment is rolled.").synonym("segment.bytes").dyn(ClusterWide),
		broker("log.roll.ms", Long, "", AtLeast(1), "Age of a segment's first batch at which it is rolled; default log.roll.hours.").synonym("segment.ms").ms().dyn(ClusterWide),
		broker("log.roll.hours", Int, "168", AtLeast(1), "log.roll.ms in hours.").hours(),
		broker("log.roll.jitter.ms", Long, "", nil, "Random jitter subtracted from the roll time.").synonym("segment.jitter.ms").ms().dyn(ClusterWide).
			unused("isrbroker rolls at exactly log.roll.ms"),
		broker("log.roll.jitter.hours", Int, "0", AtLeast(0), "log.roll.jitter.ms in hours.").hours().unused("isrbroker rolls at exactly log.roll.ms"),
		broker("log.retention.ms", Long, "", UnlimitedOrAtLeast1(), "Age after which segments are deleted; -1 unlimited; default log.retention.minutes.").synonym("retention.ms").ms().dyn(ClusterWide),
		broker("log.retention.minutes", Int, "", nil, "log.retention.ms in minutes; default log.retention.hours.").minutes(),
		broker("log.retention.hours", Int, "168", nil, "log.retention.ms in hours.").hours(),
		broker("log.retention.bytes", Long, "-1", nil, "Size per partition above which the oldest segments are deleted; -1 unlimited.").synonym("retention.bytes").dyn(ClusterWide),
		broker("log.retention.check.interval.ms", Long, "300000", AtLeast(1), "How often retention runs.").ms(),
		broker("log.index.interval.bytes", Int, "4096", AtLeast(0), "Bytes between offset index entries.").synonym("index.interval.bytes").dyn(ClusterWide),
		broker("log.index.size.max.bytes", Int, "10485760", AtLeast(4), "Largest offset index file.").synonym("segment.index.bytes").dyn(ClusterWide).
			unused("isrbroker's indexes grow with their segment"),
		broker("log.flush.interval.messages", Long, longMax, AtLeast(1), "fsync after this many appended messages; default never.").synonym("flush.messages").dyn(ClusterWide),
		broker("log.flush.interval.ms", Long, "", AtLeast(0), "fsync when the oldest unflushed message is this old; default log.flush.scheduler.interval.ms.").synonym("flush.ms").ms().dyn(ClusterWide),
		broker("log.flush.scheduler.interval.ms", Long, longMax, nil, "Default of log.flush.interval.ms.").ms(),
		broker("log.flush.offset.checkpoint.interval.ms", Int, "60000", AtLeast(1, "isrbroker runs it on a timer"),
			"How often recovery-point-offset-checkpoint and log-start-offset-checkpoint are written.").ms(),
		broker("log.flush.start.offset.checkpoint.interval.ms", Int, "60000", AtLeast(0), "How often log-start-offset-checkpoint is written.").ms().
			unused("isrbroker writes log-start-offset-checkpoint with the recovery point, every log.flush.offset.checkpoint.interval.ms"),
		broker("log.segment.delete.delay.ms", Long, "60000", AtLeast(0), "Delay before a deleted segment's files are removed.").synonym("file.delete.delay.ms").ms().dyn(ClusterWide),
		broker("log.preallocate", Boolean, "false", nil, "Preallocate segment files.").synonym("preallocate").dyn(ClusterWide).unused("isrbroker does not preallocate segment files"),
		broker("log.message.format.version", String, "2.4-IV1", nil, "Record format version of appended batches.").synonym("message.format.version").unused(whyVersions),
		broker("log.message.timestamp.type", String, "CreateTime", OneOf("CreateTime", "LogAppendTime"), "Timestamp type of appended batches.").
			synonym("message.timestamp.type").dyn(ClusterWide),
		broker("log.message.timestamp.difference.max.ms", Long, longMax, AtLeast(0), "Largest allowed difference between a batch's timestamp and the broker's clock.").
			synonym("message.timestamp.difference.max.ms").ms().dyn(ClusterWide),
		broker("log.message.downconversion.enable", Boolean, "true", nil, "Down-convert batches for old fetch versions.").
			synonym("message.downconversion.enable").dyn(ClusterWide).unused(whyVersions),
		broker("inter.broker.protocol.version", String, "2.4-IV1", nil, "Protocol version between brokers.").unused(whyVersions),

		// ---- Log cleaner ----
		broker("log.cleanup.policy", List, "delete", ListOf("policy", "delete", "compact"), "Default cleanup policy: delete (retention), compact, or both.").synonym("cleanup.policy").dyn(ClusterWide),
		broker("log.cleaner.enable", Boolean, "true", nil, "Run the log cleaner (needed by compacted topics such as __consumer_offsets)."),
		broker("log.cleaner.threads", Int, "1", AtLeast(0), "Log cleaner goroutines.").dyn(ClusterWide),
		broker("log.cleaner.min.cleanable.ratio", Double, "0.5", Between(0, 1), "Dirty share of a log above which it is cleaned.").synonym("min.cleanable.dirty.ratio").dyn(ClusterWide),
		broker("log.cleaner.min.compaction.lag.ms", Long, "0", AtLeast(0), "Minimum age of a record before it may be compacted.").synonym("min.compaction.lag.ms").ms().dyn(ClusterWide),
		broker("log.cleaner.max.compaction.lag.ms", Long, longMax, AtLeast(1), "Maximum age of an uncompacted record.").synonym("max.compaction.lag.ms").ms().dyn(ClusterWide),
		broker("log.cleaner.delete.retention.ms", Long, "86400000", AtLeast(0), "How long tombstones are kept after cleaning.").synonym("delete.retention.ms").ms().dyn(ClusterWide),
		broker("log.cleaner.backoff.ms", Long, "15000", AtLeast(0), "Pause of the cleaner when no log needs cleaning.").ms().dyn(ClusterWide),
		broker("log.cleaner.dedupe.buffer.size", Long, "134217728", AtLeast(1<<20), "Memory of the cleaner's key → offset map, over all threads.").dyn(ClusterWide),
		broker("log.cleaner.io.buffer.size", Int, "524288", AtLeast(0), "I/O buffer memory of the cleaner.").dyn(ClusterWide).unused("isrbroker's cleaner sizes its buffers to the batches"),
		broker("log.cleaner.io.buffer.load.factor", Double, "0.9", nil, "Load factor of the dedupe map.").dyn(ClusterWide).unused("isrbroker's offset map has a fixed load factor"),
		broker("log.cleaner.io.max.bytes.per.second", Double, "1.7976931348623157E308", nil, "I/O throttle of the cleaner.").dyn(ClusterWide).unused("isrbroker's cleaner is not throttled"),

		// ---- Replication ----
		broker("replica.lag.time.max.ms", Long, "10000", Positive(), "A follower not caught up with the leader's LEO for this long leaves the ISR.").ms(),
		broker("num.replica.fetchers", Int, "1", AtLeast(1), "Fetcher threads per source broker.").dyn(ClusterWide),
		broker("replica.fetch.backoff.ms", Int, "1000", AtLeast(0), "Pause of a fetcher after a fetch error.").ms(),
		broker("replica.fetch.wait.max.ms", Int, "500", AtLeast(0), "Long-poll time of a follower's fetch.").ms(),
		broker("replica.fetch.min.bytes", Int, "1", AtLeast(0), "Bytes a follower's fetch waits for."),
		broker("replica.fetch.max.bytes", Int, "1048576", AtLeast(0), "Bytes fetched per partition by a follower."),
		broker("replica.fetch.response.max.bytes", Int, "10485760", AtLeast(0), "Bytes of a follower's whole fetch response."),
		broker("replica.socket.timeout.ms", Int, "30000", Positive(), "Socket timeout of a follower's fetch.").ms(),
		broker("replica.high.watermark.checkpoint.interval.ms", Long, "5000", AtLeast(1, "isrbroker runs it on a timer"), "How often replication-offset-checkpoint (the HWs) is written.").ms(),
		broker("replica.selector.class", String, "", EmptyOrOneOf("empty: consumers read from the leader; isrbroker cannot load other Java classes", RackAwareReplicaSelector),
			"The preferred read replica of a consumer's fetch (KIP-392, fetch from follower): empty, the leader; RackAwareReplicaSelector, a replica in the consumer's rack (docs/kafka-facts.md §15)."),
		broker("replication.quota.window.num", Int, "11", AtLeast(1), "Samples of the replication quota.").unused(whyReplQuotas),
		broker("replication.quota.window.size.seconds", Int, "1", AtLeast(1), "Sample length of the replication quota.").seconds().unused(whyReplQuotas),
		broker("alter.log.dirs.replication.quota.window.num", Int, "11", AtLeast(1), "Samples of the alter-log-dirs quota.").unused(whyAlterLogDirs),
		broker("alter.log.dirs.replication.quota.window.size.seconds", Int, "1", AtLeast(1), "Sample length of the alter-log-dirs quota.").seconds().unused(whyAlterLogDirs),

		// ---- Controller ----
		broker("controller.socket.timeout.ms", Int, "30000", Positive(), "Timeout of the controller's requests to brokers, and of a ControlledShutdown request.").ms(),
		broker("auto.leader.rebalance.enable", Boolean, "true", nil, "Move leadership back to preferred replicas when a broker is imbalanced."),
		broker("leader.imbalance.check.interval.seconds", Long, "300", AtLeast(1), "How often the controller checks leader imbalance.").seconds(),
		broker("leader.imbalance.per.broker.percentage", Int, "10", Between(0, 100), "Share of non-preferred leaders on a broker that triggers a rebalance."),
		broker("controlled.shutdown.enable", Boolean, "true", nil, "Move leaderships away before a broker stops."),
		broker("controlled.shutdown.max.retries", Int, "3", AtLeast(0), "Retries of a failed controlled shutdown."),
		broker("controlled.shutdown.retry.backoff.ms", Long, "5000", AtLeast(0), "Pause between controlled shutdown attempts.").ms(),

		// ---- Group coordinator ----
		broker("offsets.topic.num.partitions", Int, "50", AtLeast(1), "Partitions of __consumer_offsets (fixed once created)."),
		broker("offsets.topic.replication.factor", Short, "3", AtLeast(1), "Replication factor of __consumer_offsets."),
		broker("offsets.topic.segment.bytes", Int, "104857600", AtLeast(1), "segment.bytes of __consumer_offsets."),
		broker("offsets.topic.compression.codec", Int, "0", nil, "Compression of offset commits.").unused("isrbroker writes offset commits uncompressed"),
		broker("offsets.commit.required.acks", Short, "-1", nil, "acks of offset commit writes; between -1 and offsets.topic.replication.factor."),
		broker("offsets.commit.timeout.ms", Int, "5000", AtLeast(1), "How long an offset commit waits for its acks.").ms(),
		broker("offsets.retention.minutes", Int, "10080", AtLeast(1), "Committed offsets of an empty group expire after this long.").minutes(),
		broker("offsets.retention.check.interval.ms", Long, "600000", AtLeast(1), "How often expired offsets are removed.").ms(),
		broker("offsets.load.buffer.size", Int, "5242880", AtLeast(1), "Read size when loading __consumer_offsets."),
		broker("offset.metadata.max.bytes", Int, "4096", AtLeast(0), "Largest metadata string of an offset commit."),
		broker("group.min.session.timeout.ms", Int, "6000", AtLeast(0), "Smallest session timeout a member may ask for.").ms(),
		broker("group.max.session.timeout.ms", Int, "1800000", nil, "Largest session timeout a member may ask for; at least group.min.session.timeout.ms.").ms(),
		broker("group.initial.rebalance.delay.ms", Int, "3000", AtLeast(0), "Delay of the first rebalance of an empty group.").ms(),
		broker("group.max.size", Int, intMax, AtLeast(1), "Largest number of members of one group."),

		// ---- Transactions ----
		broker("transactional.id.expiration.ms", Int, "604800000", AtLeast(1), "Expiry of an idle transactional id.").ms().unused(whyTransactions),
		broker("transaction.max.timeout.ms", Int, "900000", AtLeast(1), "Largest transaction timeout.").ms().unused(whyTransactions),
		broker("transaction.state.log.min.isr", Int, "2", AtLeast(1), "min.insync.replicas of __transaction_state.").unused(whyTransactions),
		broker("transaction.state.log.load.buffer.size", Int, "5242880", AtLeast(1), "Read size when loading __transaction_state.").unused(whyTransactions),
		broker("transaction.state.log.replication.factor", Short, "3", AtLeast(1), "Replication factor of __transaction_state.").unused(whyTransactions),
		broker("transaction.state.log.num.partitions", Int, "50", AtLeast(1), "Partitions of __transaction_state.").unused(whyTransactions),
		broker("transaction.state.log.segment.bytes", Int, "104857600", AtLeast(1), "segment.bytes of __transaction_state.").unused(whyTransactions),
		broker("transaction.abort.timed.out.transaction.cleanup.interval.ms", Int, "60000", AtLeast(1), "How often timed-out transactions are aborted.").ms().unused(whyTransactions),
		broker("transaction.remove.expired.transaction.cleanup.interval.ms", Int, "3600000", AtLeast(1), "How often expired transactional ids are removed.").ms().unused(whyTransactions),

		// ---- Quotas ----
		broker("quota.producer.default", Long, longMax, AtLeast(1), "Deprecated default produce quota."),
		broker("quota.consumer.default", Long, longMax, AtLeast(1), "Deprecated default fetch quota."),
		broker("quota.window.num", Int, "11", AtLeast(1), "Samples of client quotas."),
		broker("quota.window.size.seconds", Int, "1", AtLeast(1), "Sample length of client quotas.").seconds(),
		broker("client.quota.callback.class", Class, "", nil, "Client quota callback plug-in.").unsupported(whyPlugins),

		// ---- Metrics ----
		broker("metric.reporters", List, "", nil, "Metrics reporter classes.").dyn(ClusterWide).unused(whyMetrics),
		broker("metrics.num.samples", Int, "2", AtLeast(1), "Samples of a metric.").unused(whyMetrics),
		broker("metrics.sample.window.ms", Long, "30000", AtLeast(1), "Sample length of a metric.").ms().unused(whyMetrics),
		broker("metrics.recording.level", String, "INFO", nil, "Highest recording level of metrics.").unused(whyMetrics),
		broker("kafka.metrics.reporters", List, "", nil, "Yammer metrics reporter classes.").unused(whyMetrics),
		broker("kafka.metrics.polling.interval.secs", Int, "10", AtLeast(1), "Polling interval of the Yammer reporters.").seconds().unused(whyMetrics),

		// ---- Security (docs/security.md) ----
		broker("principal.builder.class", Class, "", nil, "KafkaPrincipalBuilder plug-in.").dyn(PerBroker).unused(whyPlugins),
		broker("security.providers", String, "", nil, "Security provider creator classes.").unused(whyJSSE),
		broker("connections.max.reauth.ms", Long, "0", nil, "Longest SASL session before the client must re-authenticate (KIP-368; SaslAuthenticate v1's session_lifetime_ms); 0 or less: never. Per listener and mechanism as listener.name.<l>.<mechanism>.connections.max.reauth.ms.").ms(),
		broker("connection.failed.authentication.delay.ms", Int, "100", AtLeast(0), "How long a connection whose authentication failed stays open after the failure's answer before it is closed.").ms(),
		broker("ssl.protocol", String, "TLS", nil, "TLS protocol of the SSLContext: TLS, TLSv1.2, ...; checked, the enabled protocols decide.").dyn(PerBroker),
		broker("ssl.provider", String, "", nil, "Security provider of the SSLContext.").dyn(PerBroker).unused(whyJSSE),
		broker("ssl.enabled.protocols", List, "TLSv1.2", nil, "Enabled TLS protocols (a contiguous range; isrbroker's default when unset: TLSv1.2,TLSv1.1,TLSv1, as Kafka 2.4).").dyn(PerBroker),
		broker("ssl.keystore.type", String, "JKS", nil, "Key store format: JKS, PKCS12 or PEM.").dyn(PerBroker),
		broker("ssl.keystore.location", String, "", nil, "Key store file; required on SSL and SASL_SSL listeners.").dyn(PerBroker),
		broker("ssl.keystore.password", Password, "", nil, "Key store password (JKS, PKCS12).").dyn(PerBroker),
		broker("ssl.key.password", Password, "", nil, "Private key password; default the key store password.").dyn(PerBroker),
		broker("ssl.truststore.type", String, "JKS", nil, "Trust store format: JKS, PKCS12 or PEM.").dyn(PerBroker),
		broker("ssl.truststore.location", String, "", nil, "Trust store file; default the system roots.").dyn(PerBroker),
		broker("ssl.truststore.password", Password, "", nil, "Trust store password.").dyn(PerBroker),
		broker("ssl.keymanager.algorithm", String, "SunX509", nil, "Key manager factory algorithm.").dyn(PerBroker).unused(whyJSSE),
		broker("ssl.trustmanager.algorithm", String, "PKIX", nil, "Trust manager factory algorithm.").dyn(PerBroker).unused(whyJSSE),
		broker("ssl.endpoint.identification.algorithm", String, "https", nil, "https: the broker as a TLS client checks the peer's host name; empty: the chain only.").dyn(PerBroker),
		broker("ssl.secure.random.implementation", String, "", nil, "SecureRandom implementation.").dyn(PerBroker).unused(whyJSSE),
		broker("ssl.client.auth", String, "none", OneOf("required", "requested", "none"), "Client certificates on SSL listeners: required, requested or none (SASL_SSL: always none, as Kafka 2.4).").dyn(PerBroker),
		broker("ssl.cipher.suites", List, "", nil, "Enabled cipher suites (IANA names); default Go's.").dyn(PerBroker),
		broker("ssl.principal.mapping.rules", String, "DEFAULT", nil, "Rules mapping a client certificate's DN to the principal on SSL listeners (DEFAULT or RULE:pattern/replacement/[LU])."),
		broker("sasl.mechanism.inter.broker.protocol", String, "GSSAPI", nil, "SASL mechanism between brokers; must be enabled on the inter-broker listener when it is SASL_PLAINTEXT or SASL_SSL.").dyn(PerBroker),
		broker("sasl.jaas.config", Password, "", nil, "JAAS login context.").dyn(PerBroker).unused("a broker reads JAAS per listener and mechanism, listener.name.<l>.<mechanism>.sasl.jaas.config; the unprefixed key is ignored, as in Kafka"),
		broker("sasl.enabled.mechanisms", List, "GSSAPI", nil, "Enabled SASL mechanisms of SASL listeners: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER. Kafka's default GSSAPI needs a Kerberos KDC: isrbroker refuses to start a SASL listener with it.").dyn(PerBroker),
		broker("sasl.server.callback.handler.class", Class, "", nil, "SASL server callback handler.").unused(whySASLPlugins),
		broker("sasl.client.callback.handler.class", Class, "", nil, "SASL client callback handler.").unused(whySASLPlugins),
		broker("sasl.login.class", Class, "", nil, "SASL Login class.").unused(whySASLPlugins),
		broker("sasl.login.callback.handler.class", Class, "", nil, "SASL login callback handler.").unused(whySASLPlugins),
		broker("sasl.kerberos.service.name", String, "", nil, "Kerberos principal name of Kafka.").dyn(PerBroker).unused(whyKerberos),
		broker("sasl.kerberos.kinit.cmd", String, "/usr/bin/kinit", nil, "Kerberos kinit path.").dyn(PerBroker).unused(whyKerberos),
		broker("sasl.kerberos.ticket.renew.window.factor", Double, "0.8", nil, "Kerberos ticket renewal point.").dyn(PerBroker).unused(whyKerberos),
		broker("sasl.kerberos.ticket.renew.jitter", Double, "0.05", nil, "Kerberos ticket renewal jitter.").dyn(PerBroker).unused(whyKerberos),
		broker("sasl.kerberos.min.time.before.relogin", Long, "60000", nil, "Kerberos relogin pause.").ms().dyn(PerBroker).unused(whyKerberos),
		broker("sasl.kerberos.principal.to.local.rules", List, "DEFAULT", nil, "Kerberos principal mapping rules.").dyn(PerBroker).unused(whyKerberos),
		broker("sasl.login.refresh.window.factor", Double, "0.8", nil, "OAUTHBEARER refresh point.").dyn(PerBroker).unused("client-side token refresh of OAUTHBEARER logins; the broker's inter-broker client does not refresh tokens"),
		broker("sasl.login.refresh.window.jitter", Double, "0.05", nil, "OAUTHBEARER refresh jitter.").dyn(PerBroker).unused("client-side token refresh of OAUTHBEARER logins; the broker's inter-broker client does not refresh tokens"),
		broker("sasl.login.refresh.min.period.seconds", Short, "60", nil, "OAUTHBEARER minimum refresh period.").seconds().dyn(PerBroker).unused("client-side token refresh of OAUTHBEARER logins; the broker's inter-broker client does not refresh tokens"),
		broker("sasl.login.refresh.buffer.seconds", Short, "300", nil, "OAUTHBEARER refresh buffer.").seconds().dyn(PerBroker).unused("client-side token refresh of OAUTHBEARER logins; the broker's inter-broker client does not refresh tokens"),
		broker("delegation.token.master.key", Password, "", nil, "Delegation token master key.").unused(whyTokens),
		broker("delegation.token.max.lifetime.ms", Long, "604800000", AtLeast(1), "Largest delegation token lifetime.").ms().unused(whyTokens),
		broker("delegation.token.expiry.time.ms", Long, "86400000", AtLeast(1), "Delegation token validity before renewal.").ms().unused(whyTokens),
		broker("delegation.token.expiry.check.interval.ms", Long, "3600000", AtLeast(1), "How often expired delegation tokens are removed.").ms().unused(whyTokens),
		broker("password.encoder.secret", Password, "", nil, "Secret encoding dynamically configured passwords.").unused(whyTokens),
		broker("password.encoder.old.secret", Password, "", nil, "Previous password.encoder.secret.").unused(whyTokens),
		broker("password.encoder.keyfactory.algorithm", String, "", nil, "Key factory of the password encoder.").unused(whyTokens),
		broker("password.encoder.cipher.algorithm", String, "AES/CBC/PKCS5Padding", nil, "Cipher of the password encoder.").unused(whyTokens),
		broker("password.encoder.key.length", Int, "128", AtLeast(8), "Key length of the password encoder.").unused(whyTokens),
		broker("password.encoder.iterations", Int, "4096", AtLeast(1024), "Iterations of the password encoder.").unused(whyTokens),

		// ---- Dynamic-only broker keys (DynamicConfig.Broker; /config/brokers only) ----
		{Name: "leader.replication.throttled.rate", Type: Long, Default: longMax, Valid: AtLeast(0), Scope: DynamicBroker, Dynamic: ClusterWide,
			Doc: "Bytes/s a leader serves to throttled followers (topic key leader.replication.throttled.replicas)."},
		{Name: "follower.replication.throttled.rate", Type: Long, Default: longMax, Valid: AtLeast(0), Scope: DynamicBroker, Dynamic: ClusterWide,
			Doc: "Bytes/s a follower fetches for throttled partitions (topic key follower.replication.throttled.replicas)."},
		{Name: "replica.alter.log.dirs.io.max.bytes.per.second", Type: Long, Default: longMax, Valid: AtLeast(0), Scope: DynamicBroker, Dynamic: ClusterWide,
			Doc: "Throttle of moves between log directories.", Status: Unused, Reason: whyAlterLogDirs},

		// ---- Topic keys (LogConfig); defaults come from the broker synonym ----
		topic("segment.bytes", Int, AtLeast(14), "log.segment.bytes", "Size at which a segment is rolled."),
		topic("segment.ms", Long, AtLeast(1), "log.roll.ms", "Age of a segment's first batch at which it is rolled.").def("604800000").ms(),
		topic("segment.jitter.ms", Long, AtLeast(0), "log.roll.jitter.ms", "Random jitter subtracted from the roll time.").def("0").ms().
			unused("isrbroker rolls at exactly segment.ms"),
		topic("segment.index.bytes", Int, AtLeast(0), "log.index.size.max.bytes", "Largest offset index file.").unused("isrbroker's indexes grow with their segment"),
		topic("flush.messages", Long, AtLeast(0), "log.flush.interval.messages", "fsync after this many appended messages (0 or 1: every append)."),
		topic("flush.ms", Long, AtLeast(0), "log.flush.interval.ms", "fsync when the oldest unflushed message is this old.").def(longMax).ms(),
		topic("retention.bytes", Long, nil, "log.retention.bytes", "Size above which the oldest segments are deleted; -1 unlimited."),
		topic("retention.ms", Long, AtLeast(-1), "log.retention.ms", "Age after which segments are deleted; -1 unlimited.").def("604800000").ms(),
		topic("max.message.bytes", Int, AtLeast(0), "message.max.bytes", "Largest record batch a produce may append."),
		topic("index.interval.bytes", Int, AtLeast(0), "log.index.interval.bytes", "Bytes between offset index entries."),
		topic("delete.retention.ms", Long, AtLeast(0), "log.cleaner.delete.retention.ms", "How long tombstones are kept after cleaning.").ms(),
		topic("min.compaction.lag.ms", Long, AtLeast(0), "log.cleaner.min.compaction.lag.ms", "Minimum age of a record before it may be compacted.").ms(),
		topic("max.compaction.lag.ms", Long, AtLeast(1), "log.cleaner.max.compaction.lag.ms", "Maximum age of an uncompacted record.").ms(),
		topic("file.delete.delay.ms", Long, AtLeast(0), "log.segment.delete.delay.ms", "Delay before a deleted segment's files are removed.").ms(),
		topic("min.cleanable.dirty.ratio", Double, Between(0, 1), "log.cleaner.min.cleanable.ratio", "Dirty share of the log above which it is cleaned."),
		topic("cleanup.policy", List, ListOf("policy", "delete", "compact"), "log.cleanup.policy", "delete (retention), compact, or both."),
		topic("unclean.leader.election.enable", Boolean, nil, "unclean.leader.election.enable", "Elect an out-of-sync replica as leader when no ISR member is alive."),
		topic("min.insync.replicas", Int, AtLeast(1), "min.insync.replicas", "With acks=all, a produce fails with NOT_ENOUGH_REPLICAS below this ISR size."),
		topic("compression.type", String, OneOf("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"), "compression.type", "Final compression of the topic's batches.").
			unsupported("isrbroker stores record batches exactly as the producer sent them"),
		topic("preallocate", Boolean, nil, "log.preallocate", "Preallocate segment files.").unused("isrbroker does not preallocate segment files"),
		topic("message.format.version", String, nil, "log.message.format.version", "Record format version of appended batches.").unused(whyVersions),
		topic("message.timestamp.type", String, OneOf("CreateTime", "LogAppendTime"), "log.message.timestamp.type", "Timestamp type of appended batches: the producer's (CreateTime) or the leader's clock (LogAppendTime)."),
		topic("message.timestamp.difference.max.ms", Long, AtLeast(0), "log.message.timestamp.difference.max.ms", "Largest allowed difference between a batch's timestamp and the broker's clock (CreateTime; isrbroker checks the batch's first and max timestamps).").ms(),
		topic("message.downconversion.enable", Boolean, nil, "log.message.downconversion.enable", "Down-convert batches for old fetch versions.").unused(whyVersions),
		topic("leader.replication.throttled.replicas", List, ThrottledReplicas(), "", "Replicas (partition:broker or *) whose leader side is throttled by leader.replication.throttled.rate."),
		topic("follower.replication.throttled.replicas", List, ThrottledReplicas(), "", "Replicas (partition:broker or *) whose follower side is throttled by follower.replication.throttled.rate."),
	}
}
