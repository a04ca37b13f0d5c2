package config

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/isrbroker/isrbroker/broker/config/configdef"
)

// base is the smallest valid property set.
func base() map[string]string {
	return map[string]string{
		"broker.id":         "1",
		"zookeeper.connect": "127.0.0.1:2181",
		"log.dirs":          "data/broker-1",
	}
}

func with(kv ...string) map[string]string {
	p := base()
	for i := 0; i+1 < len(kv); i += 2 {
		p[kv[i]] = kv[i+1]
	}
	return p
}

func without(k string) map[string]string {
	p := base()
	delete(p, k)
	return p
}

func TestParseProperties(t *testing.T) {
	in := "# comment\n" +
		"! also a comment\n" +
		"   \n" +
		"a=1\n" +
		"b : 2\n" +
		"c 3\n" +
		"  d\t=\t  spaced value  \n" +
		"e=first\\\n" +
		"    second\\\n" +
		"\tthird\n" +
		"f=tab\\there\\nnl\n" +
		"g\\=h=key with escaped equals\n" +
		"i=\\u0041\\u00e9\n" +
		"j=\n" +
		"k=c:\\\\dir\n" +
		"a=override\r\n" +
		"l=ends in escaped backslash\\\\\n" +
		"m=next line is not continued\n" +
		"# n=commented\n" +
		"o==leading equals\n"
	got, err := ParseProperties(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"a":   "override",
		"b":   "2",
		"c":   "3",
		"d":   "spaced value",
		"e":   "firstsecondthird",
		"f":   "tab\there\nnl",
		"g=h": "key with escaped equals",
		"i":   "Aé",
		"j":   "",
		"k":   `c:\dir`,
		"l":   `ends in escaped backslash\`,
		"m":   "next line is not continued",
		"o":   "=leading equals",
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %#v\nwant %#v", got, want)
	}
}

func TestParsePropertiesErrors(t *testing.T) {
	for _, in := range []string{"a=\\u12\n", "a=\\uZZZZ\n"} {
		_, err := ParseProperties(strings.NewReader(in))
		if err == nil || !strings.Contains(err.Error(), "line 1") {
			t.Errorf("%q: got %v, want a malformed-escape error naming line 1", in, err)
		}
	}
	// Continuation at end of input and odd inputs never panic.
	for _, in := range []string{"a=\\", "\\", "=", ":", "\\u", "a\\", "x=\\\n"} {
		if _, err := ParseProperties(strings.NewReader(in)); err != nil {
			t.Logf("%q: %v", in, err)
		}
	}
}

func TestDefaults(t *testing.T) {
	c, warnings, err := Parse(base())
	if err != nil {
		t.Fatal(err)
	}
	if len(warnings) != 0 {
		t.Fatalf("unexpected warnings %v", warnings)
	}
	// Kafka 2.4 values (docs/kafka-facts.md §7).
	checks := []struct {
		name      string
		got, want any
	}{
		{"broker.id", c.BrokerID, int32(1)},
		{"listeners", c.Listeners, []Listener{{"PLAINTEXT", "127.0.0.1", 9092, "PLAINTEXT"}}},
		{"advertised.listeners", c.AdvertisedListeners, c.Listeners},
		{"inter.broker.listener.name", c.InterBrokerListenerName, "PLAINTEXT"},
		{"zookeeper servers", c.ZookeeperServers, []string{"127.0.0.1:2181"}},
		{"zookeeper.session.timeout.ms", c.ZookeeperSessionTimeout, 6 * time.Second},
		{"zookeeper.connection.timeout.ms", c.ZookeeperConnectionTimeout, 6 * time.Second},
		{"num.partitions", c.NumPartitions, int32(1)},
		{"default.replication.factor", c.DefaultReplicationFactor, int16(1)},
		{"offsets.topic.replication.factor", c.OffsetsTopicReplicationFactor, int16(3)},
		{"offsets.topic.num.partitions", c.OffsetsTopicNumPartitions, int32(50)},
		{"offsets.topic.segment.bytes", c.OffsetsTopicSegmentBytes, int32(104857600)},
		{"offsets.commit.required.acks", c.OffsetsCommitRequiredAcks, int16(-1)},
		{"offsets.commit.timeout.ms", c.OffsetsCommitTimeout, 5 * time.Second},
		{"offsets.retention.minutes", c.OffsetsRetention, 10080 * time.Minute},
		{"offsets.retention.check.interval.ms", c.OffsetsRetentionCheckInterval, 600 * time.Second},
		{"group.min.session.timeout.ms", c.GroupMinSessionTimeout, 6 * time.Second},
		{"group.max.session.timeout.ms", c.GroupMaxSessionTimeout, 1800 * time.Second},
		{"group.initial.rebalance.delay.ms", c.GroupInitialRebalanceDelay, 3 * time.Second},
		{"group.max.size", c.GroupMaxSize, int32(2147483647)},
		{"log.cleanup.policy", c.LogCleanupPolicy, []string{"delete"}},
		{"log.cleaner.enable", c.LogCleanerEnable, true},
		{"log.cleaner.threads", c.LogCleanerThreads, 1},
		{"log.cleaner.min.cleanable.ratio", c.LogCleanerMinCleanableRatio, 0.5},
		{"log.cleaner.delete.retention.ms", c.LogCleanerDeleteRetentionMs, int64(86400000)},
		{"log.cleaner.backoff.ms", c.LogCleanerBackoff, 15 * time.Second},
		{"auto.create.topics.enable", c.AutoCreateTopicsEnable, true},
		{"delete.topic.enable", c.DeleteTopicEnable, true},
		{"message.max.bytes", c.MessageMaxBytes, int32(1000012)},
		{"socket.request.max.bytes", c.SocketRequestMaxBytes, int32(104857600)},
		{"log.dirs", c.LogDirs, []string{"data/broker-1"}},
		{"log.segment.bytes", c.LogSegmentBytes, int32(1073741824)},
		{"log.roll.ms", c.LogRollMs, int64(168 * 3600 * 1000)},
		{"log.retention.ms", c.LogRetentionMs, int64(604800000)},
		{"log.retention.bytes", c.LogRetentionBytes, int64(-1)},
		{"log.retention.check.interval.ms", c.LogRetentionCheckInterval, 300 * time.Second},
		{"log.index.interval.bytes", c.LogIndexIntervalBytes, int32(4096)},
		{"log.flush.interval.messages", c.LogFlushIntervalMessages, int64(NeverMs)},
		{"log.flush.interval", c.LogFlushInterval(), time.Duration(0)},
		{"log.flush.offset.checkpoint.interval.ms", c.LogFlushOffsetCheckpointInterval, time.Minute},
		{"log.segment.delete.delay.ms", c.FileDeleteDelay, time.Minute},
		{"replica.lag.time.max.ms", c.ReplicaLagTimeMax, 10 * time.Second},
		{"num.replica.fetchers", c.NumReplicaFetchers, 1},
		{"replica.fetch.backoff.ms", c.ReplicaFetchBackoff, time.Second},
		{"replica.fetch.wait.max.ms", c.ReplicaFetchWaitMax, 500 * time.Millisecond},
		{"replica.fetch.min.bytes", c.ReplicaFetchMinBytes, int32(1)},
		{"replica.fetch.max.bytes", c.ReplicaFetchMaxBytes, int32(1048576)},
		{"replica.fetch.response.max.bytes", c.ReplicaFetchResponseMaxBytes, int32(10485760)},
		{"replica.socket.timeout.ms", c.ReplicaSocketTimeout, 30 * time.Second},
		{"replica.high.watermark.checkpoint.interval.ms", c.ReplicaHighWatermarkCheckpointInterval, 5 * time.Second},
		{"unclean.leader.election.enable", c.UncleanLeaderElectionEnable, false},
		{"min.insync.replicas", c.MinInsyncReplicas, 1},
		{"controller.socket.timeout.ms", c.ControllerSocketTimeout, 30 * time.Second},
		{"quota.window.num", c.QuotaWindowNum, 11},
		{"quota.window.size.seconds", c.QuotaWindowSize, time.Second},
		{"quota.producer.default", c.QuotaProducerDefault, int64(math.MaxInt64)},
		{"auto.leader.rebalance.enable", c.AutoLeaderRebalanceEnable, true},
		{"leader.imbalance.check.interval.seconds", c.LeaderImbalanceCheckInterval, 300 * time.Second},
		{"leader.imbalance.per.broker.percentage", c.LeaderImbalancePerBrokerPercentage, 10},
		{"controlled.shutdown.enable", c.ControlledShutdownEnable, true},
		{"controlled.shutdown.max.retries", c.ControlledShutdownMaxRetries, 3},
		{"controlled.shutdown.retry.backoff.ms", c.ControlledShutdownRetryBackoff, 5 * time.Second},
		{"metrics.listen", c.MetricsListen, ""},
		{"metrics.advertised.listen", c.MetricsAdvertisedListen, ""},
		{"isrbroker.local.address", c.LocalAddress, ""},
		{"isrbroker.log.format", c.LogFormat, "text"},
		{"broker.rack", c.BrokerRack, ""},
		{"replica.selector.class", c.ReplicaSelectorClass, ""},
	}
	for _, ch := range checks {
		if !reflect.DeepEqual(ch.got, ch.want) {
			t.Errorf("%s: got %v, want %v", ch.name, ch.got, ch.want)
		}
	}
}

func TestEveryUsedKeyIsTyped(t *testing.T) {
	p := with(
		"broker.rack", "r1",
		"replica.selector.class", "org.apache.kafka.common.replica.RackAwareReplicaSelector",
		"listeners", "PLAINTEXT://127.0.0.1:9093,INTERNAL://127.0.0.1:19093",
		"advertised.listeners", "PLAINTEXT://localhost:9093,INTERNAL://127.0.0.1:19093",
		"listener.security.protocol.map", "PLAINTEXT:PLAINTEXT,INTERNAL:PLAINTEXT",
		"inter.broker.listener.name", "internal",
		"socket.request.max.bytes", "1000",
		"zookeeper.connect", "zk1:2181,zk2,[::1]:2182/kafka/a",
		"zookeeper.session.timeout.ms", "18000",
		"zookeeper.connection.timeout.ms", "7000",
		"num.partitions", "6",
		"default.replication.factor", "3",
		"offsets.topic.replication.factor", "2",
		"auto.create.topics.enable", "FALSE",
		"delete.topic.enable", "false",
		"message.max.bytes", "2000000",
		"min.insync.replicas", "2",
		"unclean.leader.election.enable", "True",
		"log.dirs", " a , b ",
		"log.segment.bytes", "1048576",
		"log.roll.ms", "60000",
		"log.retention.ms", "120000",
		"log.retention.bytes", "1000000",
		"log.retention.check.interval.ms", "1000",
		"log.index.interval.bytes", "100",
		"log.flush.interval.messages", "10",
		"log.flush.interval.ms", "250",
		"log.flush.offset.checkpoint.interval.ms", "1500",
		"log.segment.delete.delay.ms", "0",
		"replica.lag.time.max.ms", "30000",
		"num.replica.fetchers", "4",
		"replica.fetch.backoff.ms", "50",
		"replica.fetch.wait.max.ms", "100",
		"replica.fetch.min.bytes", "0",
		"replica.fetch.max.bytes", "2048",
		"replica.fetch.response.max.bytes", "4096",
		"replica.socket.timeout.ms", "2000",
		"replica.high.watermark.checkpoint.interval.ms", "100",
		"controller.socket.timeout.ms", "3000",
		"auto.leader.rebalance.enable", "false",
		"leader.imbalance.check.interval.seconds", "5",
		"leader.imbalance.per.broker.percentage", "0",
		"controlled.shutdown.enable", "false",
		"controlled.shutdown.max.retries", "0",
		"controlled.shutdown.retry.backoff.ms", "10",
		"isrbroker.log.format", "json",
		"metrics.listen", "127.0.0.1:9101",
		"metrics.advertised.listen", "broker1:9101",
		"isrbroker.local.address", "127.0.0.11",
		"isrbroker.pprof.enable", "true",
		"offsets.topic.num.partitions", "10",
		"offsets.topic.segment.bytes", "2000000",
		"offsets.commit.required.acks", "1",
		"offsets.commit.timeout.ms", "700",
		"offsets.retention.minutes", "60",
		"offsets.retention.check.interval.ms", "800",
		"offsets.load.buffer.size", "4096",
		"offset.metadata.max.bytes", "10",
		"group.min.session.timeout.ms", "100",
		"group.max.session.timeout.ms", "200",
		"group.initial.rebalance.delay.ms", "0",
		"group.max.size", "7",
		"log.cleanup.policy", "compact, delete",
		"log.cleaner.enable", "false",
		"log.cleaner.threads", "2",
		"log.cleaner.min.cleanable.ratio", "0.25",
		"log.cleaner.min.compaction.lag.ms", "11",
		"log.cleaner.max.compaction.lag.ms", "12",
		"log.cleaner.delete.retention.ms", "13",
		"log.cleaner.backoff.ms", "14",
		"log.cleaner.dedupe.buffer.size", "2097152",
		"log.message.timestamp.type", "LogAppendTime",
		"log.message.timestamp.difference.max.ms", "3600000",
		"max.connections", "1000",
		"max.connections.per.ip", "50",
		"max.connections.per.ip.overrides", "127.0.0.1:200, [::1]:0",
		"connections.max.idle.ms", "30000",
		"authorizer.class.name", "kafka.security.authorizer.AclAuthorizer",
		"super.users", "User:admin;User:CN=b1,O=Acme",
		"allow.everyone.if.no.acl.found", "true",
		"max.incremental.fetch.session.cache.slots", "0",
		"sasl.mechanism.inter.broker.protocol", "PLAIN",
		"connection.failed.authentication.delay.ms", "250",
		"quota.producer.default", "1000",
		"quota.consumer.default", "2000",
		"quota.window.num", "5",
		"quota.window.size.seconds", "2",
	)
	for _, b := range bindings {
		if _, ok := p[b.key.Name]; !ok {
			t.Errorf("bound key %q is not exercised", b.key.Name)
		}
	}
	c, warnings, err := Parse(p)
	if err != nil {
		t.Fatal(err)
	}
	if len(warnings) != 0 {
		t.Fatalf("unexpected warnings %v", warnings)
	}
	want := *Default()
	want.BrokerID = 1
	want.BrokerRack = "r1"
	want.ReplicaSelectorClass = "org.apache.kafka.common.replica.RackAwareReplicaSelector"
	want.Listeners = []Listener{{"PLAINTEXT", "127.0.0.1", 9093, "PLAINTEXT"}, {"INTERNAL", "127.0.0.1", 19093, "PLAINTEXT"}}
	want.AdvertisedListeners = []Listener{{"PLAINTEXT", "localhost", 9093, "PLAINTEXT"}, {"INTERNAL", "127.0.0.1", 19093, "PLAINTEXT"}}
	want.ListenerSecurityProtocolMap = map[string]string{"PLAINTEXT": "PLAINTEXT", "INTERNAL": "PLAINTEXT"}
	want.InterBrokerListenerName = "INTERNAL"
	want.SocketRequestMaxBytes = 1000
	want.MaxConnections = 1000
	want.AuthorizerClassName = "kafka.security.authorizer.AclAuthorizer"
	want.SuperUsers = "User:admin;User:CN=b1,O=Acme"
	want.AllowEveryoneIfNoACLFound = true
	want.MaxConnectionsPerIP = 50
	want.MaxConnectionsPerIPOverrides = "127.0.0.1:200, [::1]:0"
	want.ConnectionsMaxIdle = 30 * time.Second
	want.MaxIncrementalFetchSessionCacheSlots = 0
	want.ZookeeperConnect = "zk1:2181,zk2,[::1]:2182/kafka/a"
	want.ZookeeperServers = []string{"zk1:2181", "zk2:2181", "[::1]:2182"}
	want.ZookeeperChroot = "/kafka/a"
	want.ZookeeperSessionTimeout = 18 * time.Second
	want.ZookeeperConnectionTimeout = 7 * time.Second
	want.NumPartitions = 6
	want.DefaultReplicationFactor = 3
	want.OffsetsTopicReplicationFactor = 2
	want.AutoCreateTopicsEnable = false
	want.DeleteTopicEnable = false
	want.MessageMaxBytes = 2000000
	want.MinInsyncReplicas = 2
	want.UncleanLeaderElectionEnable = true
	want.LogDirs = []string{"a", "b"}
	want.LogSegmentBytes = 1048576
	want.LogRollMs = 60000
	want.LogRetentionMs = 120000
	want.LogRetentionBytes = 1000000
	want.LogRetentionCheckInterval = time.Second
	want.LogIndexIntervalBytes = 100
	want.LogFlushIntervalMessages = 10
	want.LogFlushIntervalMs = 250
	want.LogFlushOffsetCheckpointInterval = 1500 * time.Millisecond
	want.FileDeleteDelay = 0
	want.LogMessageTimestampType = "LogAppendTime"
	want.LogMessageTimestampDiffMaxMs = 3600000
	want.ReplicaLagTimeMax = 30 * time.Second
	want.NumReplicaFetchers = 4
	want.ReplicaFetchBackoff = 50 * time.Millisecond
	want.ReplicaFetchWaitMax = 100 * time.Millisecond
	want.ReplicaFetchMinBytes = 0
	want.ReplicaFetchMaxBytes = 2048
	want.ReplicaFetchResponseMaxBytes = 4096
	want.ReplicaSocketTimeout = 2 * time.Second
	want.ReplicaHighWatermarkCheckpointInterval = 100 * time.Millisecond
	want.ControllerSocketTimeout = 3 * time.Second
	want.QuotaProducerDefault, want.QuotaConsumerDefault = 1000, 2000
	want.QuotaWindowNum, want.QuotaWindowSize = 5, 2*time.Second
	want.AutoLeaderRebalanceEnable = false
	want.LeaderImbalanceCheckInterval = 5 * time.Second
	want.LeaderImbalancePerBrokerPercentage = 0
	want.ControlledShutdownEnable = false
	want.ControlledShutdownMaxRetries = 0
	want.ControlledShutdownRetryBackoff = 10 * time.Millisecond
	want.MetricsListen = "127.0.0.1:9101"
	want.SaslMechanismInterBrokerProtocol = "PLAIN"
	want.ConnectionFailedAuthenticationDelay = 250 * time.Millisecond
	want.MetricsAdvertisedListen = "broker1:9101"
	want.LogFormat = "json"
	want.PprofEnable = true
	want.LocalAddress = "127.0.0.11"
	want.OffsetsTopicNumPartitions = 10
	want.OffsetsTopicSegmentBytes = 2000000
	want.OffsetsCommitRequiredAcks = 1
	want.OffsetsCommitTimeout = 700 * time.Millisecond
	want.OffsetsRetention = time.Hour
	want.OffsetsRetentionCheckInterval = 800 * time.Millisecond
	want.OffsetsLoadBufferSize = 4096
	want.OffsetMetadataMaxBytes = 10
	want.GroupMinSessionTimeout = 100 * time.Millisecond
	want.GroupMaxSessionTimeout = 200 * time.Millisecond
	want.GroupInitialRebalanceDelay = 0
	want.GroupMaxSize = 7
	want.LogCleanupPolicy = []string{"compact", "delete"}
	want.LogCleanerEnable = false
	want.LogCleanerThreads = 2
	want.LogCleanerMinCleanableRatio = 0.25
	want.LogCleanerMinCompactionLagMs = 11
	want.LogCleanerMaxCompactionLagMs = 12
	want.LogCleanerDeleteRetentionMs = 13
	want.LogCleanerBackoff = 14 * time.Millisecond
	want.LogCleanerDedupeBufferSize = 2097152
	// Props keeps the properties as given (DescribeConfigs' STATIC_BROKER_CONFIG).
	if c.Props["broker.id"] != "1" || c.Props["log.cleaner.threads"] != "2" {
		t.Fatalf("Props do not keep the given properties: %v", c.Props)
	}
	want.Props = c.Props
	if !reflect.DeepEqual(*c, want) {
		t.Fatalf("got  %+v\nwant %+v", *c, want)
	}
	if c.LogFlushInterval() != 250*time.Millisecond {
		t.Fatalf("LogFlushInterval = %v", c.LogFlushInterval())
	}
	if l, ok := c.InterBrokerListener(); !ok || l.Port != 19093 {
		t.Fatalf("InterBrokerListener = %v %v", l, ok)
	}
}

func TestErrors(t *testing.T) {
	cases := []struct {
		name  string
		props map[string]string
		kind  error
		want  string // exact message
	}{
		// Unknown keys: typo hints by edit distance.
		{"typo", with("zookeeper.session.tmeout.ms", "1000"), ErrUnknownKey,
			`unknown config key "zookeeper.session.tmeout.ms" (did you mean "zookeeper.session.timeout.ms"?)`},
		{"typo replica", with("replica.lag.time.max", "1000"), ErrUnknownKey,
			`unknown config key "replica.lag.time.max" (did you mean "replica.lag.time.max.ms"?)`},
		{"typo metrics", with("metrics.listn", "1"), ErrUnknownKey,
			`unknown config key "metrics.listn" (did you mean "metrics.listen"?)`},
		{"no hint", with("completely.unrelated.thing", "1"), ErrUnknownKey,
			`unknown config key "completely.unrelated.thing"`},
		{"topic-level key", with("file.delete.delay.ms", "1"), ErrUnknownKey,
			`unknown config key "file.delete.delay.ms" (did you mean "log.segment.delete.delay.ms"?): it is a topic-level setting; the broker-wide default is "log.segment.delete.delay.ms"`},
		{"2.5+ key", with("zookeeper.ssl.client.enable", "true"), ErrUnknownKey,
			`unknown config key "zookeeper.ssl.client.enable"`},

		// Required keys.
		{"no zookeeper.connect", without("zookeeper.connect"), ErrMissing,
			`missing required config "zookeeper.connect": the ZooKeeper connection string host:port[,host:port][/chroot] (Kafka requires it)`},
		{"empty zookeeper.connect", with("zookeeper.connect", ""), ErrMissing,
			`missing required config "zookeeper.connect": the ZooKeeper connection string host:port[,host:port][/chroot] (Kafka requires it)`},
		{"no broker.id", without("broker.id"), ErrMissing,
			`missing required config "broker.id": a broker id >= 0 (isrbroker does not generate broker ids)`},
		{"no log.dirs", without("log.dirs"), ErrMissing,
			`missing required config "log.dirs": at least one log directory must be set in log.dirs or log.dir`},

		// Types.
		{"not an integer", with("num.partitions", "abc"), ErrInvalidValue,
			`invalid value "abc" for "num.partitions": not an integer`},
		{"float", with("replica.lag.time.max.ms", "1.5"), ErrInvalidValue,
			`invalid value "1.5" for "replica.lag.time.max.ms": not an integer`},
		{"int32 range", with("message.max.bytes", "3000000000"), ErrInvalidValue,
			`invalid value "3000000000" for "message.max.bytes": out of range for a 32-bit integer`},
		{"int16 range", with("default.replication.factor", "40000"), ErrInvalidValue,
			`invalid value "40000" for "default.replication.factor": out of range for a 16-bit integer`},
		{"duration overflow", with("replica.lag.time.max.ms", "9223372036854775807"), ErrInvalidValue,
			`invalid value "9223372036854775807" for "replica.lag.time.max.ms": too large`},
		{"boolean", with("unclean.leader.election.enable", "yes"), ErrInvalidValue,
			`invalid value "yes" for "unclean.leader.election.enable": not a boolean (true or false)`},
		{"log format", with("isrbroker.log.format", "xml"), ErrInvalidValue,
			`invalid value "xml" for "isrbroker.log.format": must be one of text, json`},

		// Ranges.
		{"broker.id -1", with("broker.id", "-1"), ErrInvalidValue,
			`invalid value "-1" for "broker.id": must be at least 0 (isrbroker does not generate broker ids)`},
		{"num.partitions 0", with("num.partitions", "0"), ErrInvalidValue,
			`invalid value "0" for "num.partitions": must be at least 1`},
		{"lag 0", with("replica.lag.time.max.ms", "0"), ErrInvalidValue,
			`invalid value "0" for "replica.lag.time.max.ms": must be greater than 0`},
		{"session 0", with("zookeeper.session.timeout.ms", "0"), ErrInvalidValue,
			`invalid value "0" for "zookeeper.session.timeout.ms": must be greater than 0`},
		{"min isr 0", with("min.insync.replicas", "0"), ErrInvalidValue,
			`invalid value "0" for "min.insync.replicas": must be at least 1`},
		{"rf 0", with("default.replication.factor", "0"), ErrInvalidValue,
			`invalid value "0" for "default.replication.factor": must be at least 1`},
		{"offsets rf 0", with("offsets.topic.replication.factor", "0"), ErrInvalidValue,
			`invalid value "0" for "offsets.topic.replication.factor": must be at least 1`},
		{"offsets partitions 0", with("offsets.topic.num.partitions", "0"), ErrInvalidValue,
			`invalid value "0" for "offsets.topic.num.partitions": must be at least 1`},
		{"commit acks above rf", with("offsets.commit.required.acks", "4"), ErrInvalidValue,
			`invalid value "4" for "offsets.commit.required.acks": must be between -1 and offsets.topic.replication.factor (3)`},
		{"group max below min", with("group.max.session.timeout.ms", "5000"), ErrInvalidValue,
			`invalid value "5000" for "group.max.session.timeout.ms": must be at least group.min.session.timeout.ms (6000)`},
		{"cleanup policy", with("log.cleanup.policy", "compact,remove"), ErrInvalidValue,
			`invalid value "compact,remove" for "log.cleanup.policy": each policy must be delete or compact`},
		{"cleanable ratio", with("log.cleaner.min.cleanable.ratio", "1.5"), ErrInvalidValue,
			`invalid value "1.5" for "log.cleaner.min.cleanable.ratio": must be between 0 and 1`},
		{"cleanable ratio text", with("log.cleaner.min.cleanable.ratio", "half"), ErrInvalidValue,
			`invalid value "half" for "log.cleaner.min.cleanable.ratio": not a number`},
		{"message.max.bytes 0", with("message.max.bytes", "0"), ErrInvalidValue,
			`invalid value "0" for "message.max.bytes": must be greater than 0`},
		{"fetchers 0", with("num.replica.fetchers", "0"), ErrInvalidValue,
			`invalid value "0" for "num.replica.fetchers": must be at least 1`},
		{"in flight 0", with("zookeeper.max.in.flight.requests", "0"), ErrInvalidValue,
			`invalid value "0" for "zookeeper.max.in.flight.requests": must be at least 1`},
		{"hw checkpoint 0", with("replica.high.watermark.checkpoint.interval.ms", "0"), ErrInvalidValue,
			`invalid value "0" for "replica.high.watermark.checkpoint.interval.ms": must be at least 1 (isrbroker runs it on a timer)`},
		{"segment too small", with("log.segment.bytes", "13"), ErrInvalidValue,
			`invalid value "13" for "log.segment.bytes": must be at least 14 (one legacy record overhead)`},
		{"flush messages 0", with("log.flush.interval.messages", "0"), ErrInvalidValue,
			`invalid value "0" for "log.flush.interval.messages": must be at least 1`},
		{"percentage", with("leader.imbalance.per.broker.percentage", "101"), ErrInvalidValue,
			`invalid value "101" for "leader.imbalance.per.broker.percentage": must be between 0 and 100`},

		// Cross-field rules from KafkaConfig.validateValues.
		{"wait > socket timeout", with("replica.fetch.wait.max.ms", "3000", "replica.socket.timeout.ms", "2000"), ErrInvalidValue,
			`invalid value "3000" for "replica.fetch.wait.max.ms": must be at most replica.socket.timeout.ms (2000) to prevent unnecessary socket timeouts`},
		{"wait > lag", with("replica.fetch.wait.max.ms", "3000", "replica.lag.time.max.ms", "2000"), ErrInvalidValue,
			`invalid value "3000" for "replica.fetch.wait.max.ms": must be at most replica.lag.time.max.ms (2000) to prevent frequent ISR changes`},

		{"per ip 0 without overrides", with("max.connections.per.ip", "0"), ErrInvalidValue,
			`invalid value "0" for "max.connections.per.ip": can be set to zero only if max.connections.per.ip.overrides is set`},
		{"overrides without count", with("max.connections.per.ip.overrides", "host1"), ErrInvalidValue,
			`invalid value "host1" for "max.connections.per.ip.overrides": "host1" is not host:count`},
		{"overrides bad count", with("max.connections.per.ip.overrides", "host1:x"), ErrInvalidValue,
			`invalid value "host1:x" for "max.connections.per.ip.overrides": "host1:x" is not host:count with a count >= 0`},

		// Derived keys name the property the operator wrote.
		{"retention hours 0", with("log.retention.hours", "0"), ErrInvalidValue,
			`invalid value "0" for "log.retention.hours": must be unlimited (-1) or at least 1`},
		{"retention minutes 0", with("log.retention.minutes", "0"), ErrInvalidValue,
			`invalid value "0" for "log.retention.minutes": must be unlimited (-1) or at least 1`},
		{"roll hours 0", with("log.roll.hours", "0"), ErrInvalidValue,
			`invalid value "0" for "log.roll.hours": must be at least 1`},

		// ZooKeeper connect string.
		{"zk no host", with("zookeeper.connect", ":2181"), ErrInvalidValue,
			`invalid value ":2181" for "zookeeper.connect": server ":2181" has no host`},
		{"zk bad port", with("zookeeper.connect", "zk:abc"), ErrInvalidValue,
			`invalid value "zk:abc" for "zookeeper.connect": server "zk:abc": port "abc" is not a number between 1 and 65535`},
		{"zk empty server", with("zookeeper.connect", "a:1,,b:2"), ErrInvalidValue,
			`invalid value "a:1,,b:2" for "zookeeper.connect": empty server in the host:port list`},
		{"zk chroot", with("zookeeper.connect", "a:1/kafka/"), ErrInvalidValue,
			`invalid value "a:1/kafka/" for "zookeeper.connect": invalid chroot path "/kafka/"`},

		// Listeners.
		{"listener syntax", with("listeners", "127.0.0.1:9092"), ErrInvalidValue,
			`invalid value "127.0.0.1:9092" for "listeners": "127.0.0.1:9092" is not NAME://host:port`},
		{"listener port", with("listeners", "PLAINTEXT://h:99999"), ErrInvalidValue,
			`invalid value "PLAINTEXT://h:99999" for "listeners": "PLAINTEXT://h:99999": port "99999" is not a number between 0 and 65535`},
		{"ssl listener without a keystore", with("listeners", "SSL://127.0.0.1:9093", "inter.broker.listener.name", "SSL"), ErrMissing,
			`missing required config "ssl.keystore.location": listener SSL (SSL) needs a keystore`},
		{"unmapped listener", with("listeners", "FOO://127.0.0.1:9093"), ErrInvalidValue,
			`invalid value "FOO://127.0.0.1:9093" for "listeners": listener name FOO has no entry in listener.security.protocol.map`},
		{"duplicate listener", with("listeners", "PLAINTEXT://127.0.0.1:1,PLAINTEXT://127.0.0.1:2"), ErrInvalidValue,
			`invalid value "PLAINTEXT://127.0.0.1:1,PLAINTEXT://127.0.0.1:2" for "listeners": listener name PLAINTEXT is used more than once`},
		{"advertise 0.0.0.0", with("listeners", "PLAINTEXT://0.0.0.0:9092"), ErrInvalidValue,
			`invalid value "PLAINTEXT://0.0.0.0:9092" for "listeners": host "0.0.0.0" is not advertisable (the non-routable meta-address); use a routable address`},
		{"advertised 0.0.0.0", with("advertised.listeners", "PLAINTEXT://0.0.0.0:9092"), ErrInvalidValue,
			`invalid value "PLAINTEXT://0.0.0.0:9092" for "advertised.listeners": host "0.0.0.0" is not advertisable (the non-routable meta-address); use a routable address`},
		{"advertised unknown name", with("advertised.listeners", "OTHER://h:1", "listener.security.protocol.map", "PLAINTEXT:PLAINTEXT,OTHER:PLAINTEXT"), ErrInvalidValue,
			`invalid value "OTHER://h:1" for "advertised.listeners": listener name OTHER is not defined in listeners`},
		{"advertise port 0", with("listeners", "PLAINTEXT://127.0.0.1:0"), ErrInvalidValue,
			`invalid value "PLAINTEXT://127.0.0.1:0" for "listeners": port 0 cannot be advertised; set a fixed port`},
		{"bad protocol map", with("listener.security.protocol.map", "PLAINTEXT:FOO"), ErrInvalidValue,
			`invalid value "PLAINTEXT:FOO" for "listener.security.protocol.map": unknown security protocol "FOO" (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL)`},
		{"inter broker name", with("inter.broker.listener.name", "INTERNAL"), ErrInvalidValue,
			`invalid value "INTERNAL" for "inter.broker.listener.name": must be a listener name defined in advertised.listeners (PLAINTEXT://127.0.0.1:9092)`},
		{"inter broker protocol", with("security.inter.broker.protocol", "SSL"), ErrInvalidValue,
			`invalid value "SSL" for "security.inter.broker.protocol": must be a listener name defined in advertised.listeners (PLAINTEXT://127.0.0.1:9092)`},
		{"inter broker protocol unknown", with("security.inter.broker.protocol", "TLS"), ErrInvalidValue,
			`invalid value "TLS" for "security.inter.broker.protocol": must be one of PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL`},
		{"port key", with("port", "x"), ErrInvalidValue,
			`invalid value "x" for "port": not an integer`},

		// Log dirs.
		{"log.dirs empty entry", with("log.dirs", "a,,b"), ErrInvalidValue,
			`invalid value "a,,b" for "log.dirs": must be a comma-separated list of directories`},
		{"log.dirs duplicate", with("log.dirs", "a,a"), ErrInvalidValue,
			`invalid value "a,a" for "log.dirs": duplicate log directory "a"`},

		{"metrics.listen", with("metrics.listen", "nope"), ErrInvalidValue,
			`invalid value "nope" for "metrics.listen": not host:port`},
		{"isrbroker.local.address", with("isrbroker.local.address", "127.0.0.11:0"), ErrInvalidValue,
			`invalid value "127.0.0.11:0" for "isrbroker.local.address": not an IP address`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, _, err := Parse(tc.props)
			if err == nil {
				t.Fatalf("no error; config %+v", c)
			}
			if !errors.Is(err, tc.kind) {
				t.Errorf("error %v is not %v", err, tc.kind)
			}
			if err.Error() != tc.want {
				t.Errorf("got  %s\nwant %s", err, tc.want)
			}
		})
	}
}

func TestKnownUnusedWarnsOncePerKey(t *testing.T) {
	c, warnings, err := Parse(with(
		"num.network.threads", "3",
		"num.io.threads", "8",
		"socket.send.buffer.bytes", "102400",
		"log.cleaner.io.buffer.size", "524288",
		"listener.name.plaintext.some.setting", "x",
	))
	if err != nil {
		t.Fatal(err)
	}
	if c.BrokerID != 1 {
		t.Fatal("config not parsed")
	}
	want := []string{"listener.name.plaintext.some.setting", "log.cleaner.io.buffer.size", "num.io.threads", "num.network.threads", "socket.send.buffer.bytes"}
	if len(warnings) != len(want) {
		t.Fatalf("got %d warnings %q, want one per key %v", len(warnings), warnings, want)
	}
	for i, k := range want {
		if !strings.Contains(warnings[i], `"`+k+`"`) || !strings.Contains(warnings[i], "does not use") {
			t.Errorf("warning %d = %q, want it to name %q", i, warnings[i], k)
		}
	}
}

func TestClassify(t *testing.T) {
	for _, k := range configdef.Keys() {
		if k.Scope != configdef.Broker {
			continue
		}
		want := Ignored
		if k.Status == configdef.Used {
			want = Used
		}
		if got := Classify(k.Name); got != want {
			t.Errorf("%q (%s) classified %v, want %v", k.Name, k.Status, got, want)
		}
		// Every used key is typed: bound to a Config field or parsed with a precedence rule.
		if k.Status == configdef.Used && bound[k.Name] == nil && !slices.Contains(compositeKeys, k.Name) {
			t.Errorf("used key %q is neither bound to a Config field nor in compositeKeys", k.Name)
		}
	}
	for _, k := range compositeKeys {
		if Classify(k) != Used {
			t.Errorf("composite key %q is not a used key of the table", k)
		}
	}
	for _, k := range []string{"num.network.threads", "ssl.provider", "log.cleaner.io.buffer.size", "request.timeout.ms"} {
		if Classify(k) != Ignored {
			t.Errorf("%q should be known-unused", k)
		}
	}
	if Classify("listener.name.") != Unknown {
		t.Errorf("bare prefix should be unknown")
	}
	if Classify("segment.bytes") != Unknown || Classify("leader.replication.throttled.rate") != Unknown {
		t.Errorf("topic and dynamic-only keys must not be accepted in server.properties")
	}
}

func TestPrecedence(t *testing.T) {
	cases := []struct {
		name  string
		props map[string]string
		check func(*Config) bool
	}{
		{"retention ms beats minutes and hours", with("log.retention.ms", "1000", "log.retention.minutes", "5", "log.retention.hours", "1"),
			func(c *Config) bool { return c.LogRetentionMs == 1000 }},
		{"retention minutes beats hours", with("log.retention.minutes", "5", "log.retention.hours", "1"),
			func(c *Config) bool { return c.LogRetentionMs == 5*60000 }},
		{"retention hours", with("log.retention.hours", "2"),
			func(c *Config) bool { return c.LogRetentionMs == 2*3600000 }},
		{"retention negative is unlimited", with("log.retention.hours", "-5"),
			func(c *Config) bool { return c.LogRetentionMs == -1 }},
		{"retention ms -1", with("log.retention.ms", "-1", "log.retention.hours", "0"),
			func(c *Config) bool { return c.LogRetentionMs == -1 }},
		{"roll ms beats hours", with("log.roll.ms", "1000", "log.roll.hours", "1"),
			func(c *Config) bool { return c.LogRollMs == 1000 }},
		{"roll hours", with("log.roll.hours", "3"),
			func(c *Config) bool { return c.LogRollMs == 3*3600000 }},
		{"log.dirs beats log.dir", with("log.dirs", "x,y", "log.dir", "z"),
			func(c *Config) bool { return reflect.DeepEqual(c.LogDirs, []string{"x", "y"}) }},
		{"log.dir alone", func() map[string]string { p := without("log.dirs"); p["log.dir"] = "z"; return p }(),
			func(c *Config) bool { return reflect.DeepEqual(c.LogDirs, []string{"z"}) }},
		{"connection timeout defaults to session timeout", with("zookeeper.session.timeout.ms", "9000"),
			func(c *Config) bool { return c.ZookeeperConnectionTimeout == 9*time.Second }},
		{"flush scheduler interval is the flush default", with("log.flush.scheduler.interval.ms", "3000"),
			func(c *Config) bool { return c.LogFlushIntervalMs == 3000 }},
		{"flush interval beats scheduler", with("log.flush.scheduler.interval.ms", "3000", "log.flush.interval.ms", "10"),
			func(c *Config) bool { return c.LogFlushIntervalMs == 10 }},
		{"advertised defaults to listeners", with("listeners", "PLAINTEXT://10.1.2.3:9999"),
			func(c *Config) bool {
				return reflect.DeepEqual(c.AdvertisedListeners, []Listener{{"PLAINTEXT", "10.1.2.3", 9999, "PLAINTEXT"}})
			}},
		{"empty listener host binds all, advertises host name", with("listeners", "PLAINTEXT://:9999"),
			func(c *Config) bool {
				h, _ := os.Hostname()
				return c.Listeners[0].Host == "" && c.AdvertisedListeners[0].Host == h
			}},
		{"deprecated port/host.name", with("port", "9095", "host.name", "127.0.0.2"),
			func(c *Config) bool {
				return reflect.DeepEqual(c.Listeners, []Listener{{"PLAINTEXT", "127.0.0.2", 9095, "PLAINTEXT"}})
			}},
		{"listeners beat port", with("port", "9095", "listeners", "PLAINTEXT://127.0.0.1:9096"),
			func(c *Config) bool { return c.Listeners[0].Port == 9096 }},
		{"advertised.host.name", with("advertised.host.name", "broker1.example", "advertised.port", "19092"),
			func(c *Config) bool {
				return reflect.DeepEqual(c.AdvertisedListeners, []Listener{{"PLAINTEXT", "broker1.example", 19092, "PLAINTEXT"}})
			}},
		{"listener names upper-cased", with("listeners", "plaintext://127.0.0.1:9092"),
			func(c *Config) bool { return c.Listeners[0].Name == "PLAINTEXT" }},
		{"ipv6 listener", with("listeners", "PLAINTEXT://[::1]:9092"),
			func(c *Config) bool {
				return c.Listeners[0].Host == "::1" && c.AdvertisedListeners[0].String() == "PLAINTEXT://[::1]:9092"
			}},
		{"zk chroot /", with("zookeeper.connect", "h:1/"),
			func(c *Config) bool { return c.ZookeeperChroot == "" }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, _, err := Parse(tc.props)
			if err != nil {
				t.Fatal(err)
			}
			if !tc.check(c) {
				t.Fatalf("unexpected config %+v", c)
			}
		})
	}
}

func writeFile(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "server.properties")
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoadOverrides(t *testing.T) {
	path := writeFile(t, "broker.id=1\nzookeeper.connect=127.0.0.1:2181\nlog.dirs=d\nnum.partitions=3\nnum.io.threads=8\n")
	c, warnings, err := Load(path, []string{"num.partitions=7", "listeners=PLAINTEXT://127.0.0.1:1,OTHER://127.0.0.1:2", "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,OTHER:PLAINTEXT", "broker.rack= a=b "})
	if err != nil {
		t.Fatal(err)
	}
	if c.NumPartitions != 7 || len(c.Listeners) != 2 || c.BrokerRack != "a=b" {
		t.Fatalf("overrides not applied: %+v", c)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], `"num.io.threads"`) {
		t.Fatalf("warnings %q", warnings)
	}

	// Overrides are validated like the file.
	_, _, err = Load(path, []string{"num.partitions=x"})
	if err == nil || err.Error() != `invalid value "x" for "num.partitions": not an integer` {
		t.Fatalf("got %v", err)
	}
	_, _, err = Load(path, []string{"zookeeper.session.tmeout.ms=1000"})
	if !errors.Is(err, ErrUnknownKey) {
		t.Fatalf("got %v", err)
	}
	_, _, err = Load(path, []string{"novalue"})
	if err == nil || !strings.Contains(err.Error(), `"novalue"`) {
		t.Fatalf("got %v", err)
	}

	// An empty file is read, and the missing ZooKeeper string is named.
	_, _, err = Load(writeFile(t, ""), nil)
	if !errors.Is(err, ErrMissing) || !strings.Contains(err.Error(), `"zookeeper.connect"`) {
		t.Fatalf("got %v", err)
	}
	// ... and overrides alone can complete it.
	if _, _, err = Load(writeFile(t, "# nothing\n"), []string{"zookeeper.connect=h:1", "broker.id=0", "log.dir=d"}); err != nil {
		t.Fatal(err)
	}

	if _, _, err = Load(filepath.Join(t.TempDir(), "missing.properties"), nil); err == nil {
		t.Fatal("missing file loaded")
	}
}

func TestExampleServerProperties(t *testing.T) {
	for n := 1; n <= 3; n++ {
		path := filepath.Join("..", "..", "scripts", "server-"+string(rune('0'+n))+".properties")
		c, warnings, err := Load(path, nil)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if len(warnings) != 0 {
			t.Errorf("%s: warnings %q", path, warnings)
		}
		want := []Listener{{"PLAINTEXT", "127.0.0.1", 9091 + n, "PLAINTEXT"}}
		if c.BrokerID != int32(n) || !reflect.DeepEqual(c.Listeners, want) || !reflect.DeepEqual(c.AdvertisedListeners, want) {
			t.Errorf("%s: broker %d listeners %v advertised %v", path, c.BrokerID, c.Listeners, c.AdvertisedListeners)
		}
		if !reflect.DeepEqual(c.LogDirs, []string{"data/broker-" + string(rune('0'+n))}) {
			t.Errorf("%s: log.dirs %v", path, c.LogDirs)
		}
		if c.MetricsListen != "127.0.0.1:910"+string(rune('0'+n)) {
			t.Errorf("%s: metrics.listen %q", path, c.MetricsListen)
		}
		// scripts/cluster.sh's cluster replicates like production (README "Running a local cluster").
		if c.NumPartitions != 3 || c.DefaultReplicationFactor != 3 || c.ZookeeperSessionTimeout != 6*time.Second ||
			c.ReplicaLagTimeMax != 10*time.Second || c.MinInsyncReplicas != 1 || c.OffsetsTopicReplicationFactor != 3 ||
			!reflect.DeepEqual(c.ZookeeperServers, []string{"127.0.0.1:2181"}) {
			t.Errorf("%s: unexpected values %+v", path, c)
		}
	}
}

func TestSuggest(t *testing.T) {
	cases := map[string]string{
		"zookeeper.session.tmeout.ms": "zookeeper.session.timeout.ms",
		"broker.idd":                  "broker.id",
		"log.dirrs":                   "log.dirs",
		"retention.ms":                "log.retention.ms",
		"xyz":                         "",
	}
	for in, want := range cases {
		if got := Suggest(in); got != want {
			t.Errorf("Suggest(%q) = %q, want %q", in, got, want)
		}
	}
}

func FuzzParseProperties(f *testing.F) {
	f.Add("a=b\nc\\\n d\n\\u0041=x")
	f.Add("broker.id=1\nzookeeper.connect=h:1\nlog.dirs=d\nlisteners=PLAINTEXT://[::1]:0")
	f.Fuzz(func(t *testing.T, s string) {
		props, err := ParseProperties(strings.NewReader(s))
		if err != nil {
			return
		}
		_, _, _ = Parse(props) // must not panic
	})
}

// S24: the replication factor of auto-created topics defaults to 1 and is configurable (3 is
// the usual production value); 0 is refused at start-up.
func TestS24_DefaultReplicationFactorIsOneAndConfigurable(t *testing.T) {
	base := map[string]string{"zookeeper.connect": "127.0.0.1:2181", "broker.id": "1", "log.dirs": "d"}
	c, _, err := Parse(base)
	if err != nil || c.DefaultReplicationFactor != 1 {
		t.Fatalf("default: %v %v", c, err)
	}
	with := func(v string) map[string]string {
		m := map[string]string{"default.replication.factor": v}
		for k, x := range base {
			m[k] = x
		}
		return m
	}
	if c, _, err := Parse(with("3")); err != nil || c.DefaultReplicationFactor != 3 {
		t.Fatalf("3: %v %v", c, err)
	}
	if _, _, err := Parse(with("0")); err == nil || !strings.Contains(err.Error(), "default.replication.factor") {
		t.Fatalf("0 accepted or unnamed: %v", err)
	}
}

// isrbroker.local.address is isrbroker's own key: an IP (v4 or v6) that outgoing connections
// bind; empty (the default) means any. A host name or host:port is rejected.
func TestLocalAddress(t *testing.T) {
	base := func(v string) map[string]string {
		return map[string]string{"broker.id": "1", "zookeeper.connect": "zk:2181", "log.dirs": "d", "isrbroker.local.address": v}
	}
	for _, ok := range []string{"", "127.0.0.12", "::1", "10.9.0.3"} {
		c, warnings, err := Parse(base(ok))
		if err != nil {
			t.Errorf("isrbroker.local.address=%q: %v", ok, err)
			continue
		}
		if c.LocalAddress != ok || len(warnings) != 0 {
			t.Errorf("isrbroker.local.address=%q: LocalAddress %q, warnings %v", ok, c.LocalAddress, warnings)
		}
	}
	for _, bad := range []string{"localhost", "127.0.0.1:0", "300.1.1.1", "127.0.0.1 "} {
		if _, _, err := Parse(base(bad)); !errors.Is(err, ErrInvalidValue) {
			t.Errorf("isrbroker.local.address=%q: err %v, want ErrInvalidValue", bad, err)
		}
	}
	if Classify("isrbroker.local.address") != Used {
		t.Errorf("isrbroker.local.address classified %v, want Used", Classify("isrbroker.local.address"))
	}
}

// Known keys isrbroker does not use are typed and validated as Kafka would, then warned about
// with the table's reason; unsupported keys stop start-up unless they keep Kafka's default;
// dynamic-only keys do not belong in server.properties.
func TestUnusedAndUnsupportedKeys(t *testing.T) {
	_, warnings, err := Parse(with("num.io.threads", "16", "compression.type", "producer"))
	if err != nil {
		t.Fatal(err)
	}
	if len(warnings) != 2 || !strings.Contains(warnings[1], "no fixed thread pools") || !strings.Contains(warnings[0], "exactly as the producer sent them") {
		t.Fatalf("warnings %q, want one per key with its reason", warnings)
	}
	for _, tc := range []struct {
		props map[string]string
		kind  error
		want  string
	}{
		{with("num.io.threads", "0"), ErrInvalidValue, `invalid value "0" for "num.io.threads": must be at least 1`},
		{with("num.io.threads", "many"), ErrInvalidValue, `invalid value "many" for "num.io.threads": not an integer`},
		{with("authorizer.class.name", "com.example.MyAuthorizer"), ErrInvalidValue,
			`invalid value "com.example.MyAuthorizer" for "authorizer.class.name": must be one of , kafka.security.authorizer.AclAuthorizer, kafka.security.auth.SimpleAclAuthorizer`},
		{with("super.users", "User:admin;alice"), ErrInvalidValue,
			`invalid value "User:admin;alice" for "super.users": principal "alice" is not of the form Type:name (User:admin)`},
		{with("compression.type", "gzip"), ErrInvalidValue,
			`invalid value "gzip" for "compression.type": isrbroker supports only the default "producer": isrbroker stores record batches exactly as the producer sent them`},
		{with("zookeeper.set.acl", "true"), ErrInvalidValue,
			`invalid value "true" for "zookeeper.set.acl": isrbroker supports only the default "false": isrbroker writes znodes with open ACLs`},
		{with("leader.replication.throttled.rate", "1000"), ErrUnknownKey,
			`unknown config key "leader.replication.throttled.rate": it is a dynamic broker setting, written to ZooKeeper (/config/brokers), not to server.properties`},
	} {
		_, _, err := Parse(tc.props)
		if !errors.Is(err, tc.kind) || err.Error() != tc.want {
			t.Errorf("got  %v\nwant %s", err, tc.want)
		}
	}
}

// isrbroker.pprof.enable serves the profiles on the metrics listener, so it needs one.
func TestPprofNeedsMetricsListen(t *testing.T) {
	p := with("isrbroker.pprof.enable", "true")
	_, _, err := Parse(p)
	if err == nil || !strings.Contains(err.Error(), "isrbroker.pprof.enable") || !strings.Contains(err.Error(), "metrics.listen") {
		t.Fatalf("Parse = %v, want an error naming isrbroker.pprof.enable and metrics.listen", err)
	}
}

// replica.selector.class (KIP-392) takes Kafka 2.4's own selector classes: none (the leader
// only) or RackAwareReplicaSelector, which Kafka 2.4 ships (it has no other); any other class
// stops start-up with an error naming the key and the accepted values.
func TestReplicaSelectorClass(t *testing.T) {
	const rackAware = "org.apache.kafka.common.replica.RackAwareReplicaSelector"
	for _, ok := range []string{"", rackAware} {
		c, warnings, err := Parse(with("replica.selector.class", ok))
		if err != nil || len(warnings) != 0 || c.ReplicaSelectorClass != ok {
			t.Errorf("replica.selector.class=%q: %v, warnings %v, ReplicaSelectorClass %q", ok, err, warnings, c.ReplicaSelectorClass)
		}
	}
	for _, bad := range []string{"org.apache.kafka.common.replica.LeaderReplicaSelector", "com.example.MySelector", "RackAwareReplicaSelector"} {
		_, _, err := Parse(with("replica.selector.class", bad))
		if !errors.Is(err, ErrInvalidValue) || !strings.Contains(err.Error(), `"replica.selector.class"`) || !strings.Contains(err.Error(), rackAware) {
			t.Errorf("replica.selector.class=%q: err %v, want ErrInvalidValue naming the key and %s", bad, err, rackAware)
		}
	}
	if Classify("replica.selector.class") != Used {
		t.Errorf("replica.selector.class classified %v, want Used", Classify("replica.selector.class"))
	}
}
