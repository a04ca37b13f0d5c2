package integration

import (
	"context"
	"errors"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/isrbroker/isrbroker/tests/cluster"
)

// kafka241TopicKeys are the names of Kafka 2.4.1's LogConfig, which DescribeConfigs lists for
// every topic.
var kafka241TopicKeys = []string{
	"cleanup.policy", "compression.type", "delete.retention.ms", "file.delete.delay.ms",
	"flush.messages", "flush.ms", "follower.replication.throttled.replicas", "index.interval.bytes",
	"leader.replication.throttled.replicas", "max.compaction.lag.ms", "max.message.bytes",
	"message.downconversion.enable", "message.format.version", "message.timestamp.difference.max.ms",
	"message.timestamp.type", "min.cleanable.dirty.ratio", "min.compaction.lag.ms", "min.insync.replicas",
	"preallocate", "retention.bytes", "retention.ms", "segment.bytes", "segment.index.bytes",
	"segment.jitter.ms", "segment.ms", "unclean.leader.election.enable",
}

// describeOne describes one topic (or broker: kind) resource and indexes its configs by name.
func describeConfigs(t *testing.T, adm *kadm.Client, topic string, broker ...int32) map[string]kadm.Config {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var rcs kadm.ResourceConfigs
	var err error
	if topic != "" {
		rcs, err = adm.DescribeTopicConfigs(ctx, topic)
	} else {
		rcs, err = adm.DescribeBrokerConfigs(ctx, broker...)
	}
	if err != nil {
		t.Fatalf("describe configs: %v", err)
	}
	if len(rcs) != 1 || rcs[0].Err != nil {
		t.Fatalf("describe configs: %+v", rcs)
	}
	out := map[string]kadm.Config{}
	for _, c := range rcs[0].Configs {
		out[c.Key] = c
	}
	return out
}

func checkConfig(t *testing.T, cfgs map[string]kadm.Config, key, value string, source kmsg.ConfigSource) {
	t.Helper()
	c, ok := cfgs[key]
	if !ok {
		t.Errorf("%s not described", key)
		return
	}
	if c.Value == nil || *c.Value != value || c.Source != source {
		v := "<nil>"
		if c.Value != nil {
			v = *c.Value
		}
		t.Errorf("%s = %s (%s), want %s (%s)", key, v, c.Source, value, source)
	}
}

// alterChecker returns the error and message of a one-resource alter.
func alterChecker(t *testing.T) func(kadm.AlterConfigsResponses, error) (error, string) {
	return func(resps kadm.AlterConfigsResponses, err error) (error, string) {
		t.Helper()
		if err != nil {
			t.Fatalf("alter configs: %v", err)
		}
		if len(resps) != 1 {
			t.Fatalf("alter configs: %d responses", len(resps))
		}
		return resps[0].Err, resps[0].ErrMessage
	}
}

// DescribeConfigs lists every Kafka 2.4.1 topic key with the source Kafka reports: a topic
// override is DYNAMIC_TOPIC_CONFIG, a key the broker got through server.properties/--override
// STATIC_BROKER_CONFIG (with its synonyms in precedence order), anything else DEFAULT_CONFIG;
// an unknown topic is UNKNOWN_TOPIC_OR_PARTITION.
func TestConfigsAPI_DescribeTopicSources(t *testing.T) {
	c := cluster.Start(t, cluster.Options{Brokers: 1, Overrides: map[string]string{"log.retention.bytes": "123456789"}})
	adm := c.Admin()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	created, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"retention.ms": kmsg.StringPtr("60000")}, "described")
	if err != nil {
		t.Fatal(err)
	}
	c.WaitMetadataLeaders("described", 1, 30*time.Second)
	// CreateTopics v5+ (KIP-525) answers the new topic's configs as DescribeConfigs lists them.
	if len(created.Configs) != len(kafka241TopicKeys) || created.NumPartitions != 1 || created.ReplicationFactor != 1 {
		t.Errorf("CreateTopics answer: %d configs, %d partitions, RF %d; want %d configs, 1, 1",
			len(created.Configs), created.NumPartitions, created.ReplicationFactor, len(kafka241TopicKeys))
	}
	if rc := created.Configs["retention.ms"]; rc.Value == nil || *rc.Value != "60000" || rc.Source != kmsg.ConfigSourceDynamicTopicConfig {
		t.Errorf("CreateTopics answer retention.ms = %+v, want 60000 DYNAMIC_TOPIC_CONFIG", rc)
	}
	if rc := created.Configs["retention.bytes"]; rc.Value == nil || *rc.Value != "123456789" || rc.Source != kmsg.ConfigSourceStaticBrokerConfig {
		t.Errorf("CreateTopics answer retention.bytes = %+v, want 123456789 STATIC_BROKER_CONFIG", rc)
	}

	cfgs := describeConfigs(t, adm, "described")
	var names []string
	for n := range cfgs {
		names = append(names, n)
	}
	sort.Strings(names)
	if strings.Join(names, ",") != strings.Join(kafka241TopicKeys, ",") {
		t.Errorf("described topic keys\n %v\nwant Kafka 2.4.1's\n %v", names, kafka241TopicKeys)
	}
	checkConfig(t, cfgs, "retention.ms", "60000", kmsg.ConfigSourceDynamicTopicConfig)
	checkConfig(t, cfgs, "retention.bytes", "123456789", kmsg.ConfigSourceStaticBrokerConfig)
	checkConfig(t, cfgs, "segment.bytes", "1073741824", kmsg.ConfigSourceDefaultConfig)
	checkConfig(t, cfgs, "cleanup.policy", "delete", kmsg.ConfigSourceDefaultConfig)
	checkConfig(t, cfgs, "message.downconversion.enable", "true", kmsg.ConfigSourceDefaultConfig)
	syn := cfgs["retention.bytes"].Synonyms
	if len(syn) != 2 || syn[0].Key != "log.retention.bytes" || syn[0].Source != kmsg.ConfigSourceStaticBrokerConfig ||
		syn[1].Source != kmsg.ConfigSourceDefaultConfig || syn[1].Value == nil || *syn[1].Value != "-1" {
		t.Errorf("retention.bytes synonyms %+v, want STATIC log.retention.bytes then DEFAULT -1", syn)
	}
	if syn := cfgs["retention.ms"].Synonyms; len(syn) == 0 || syn[0].Source != kmsg.ConfigSourceDynamicTopicConfig {
		t.Errorf("retention.ms synonyms %+v, want the topic override first", syn)
	}

	rcs, err := adm.DescribeTopicConfigs(ctx, "nosuchtopic")
	if err == nil && (len(rcs) != 1 || !errors.Is(rcs[0].Err, kerr.UnknownTopicOrPartition)) {
		t.Errorf("unknown topic: %+v, want UNKNOWN_TOPIC_OR_PARTITION", rcs)
	}

	// The broker resource: static keys are STATIC_BROKER_CONFIG, read-only keys flagged.
	bcfgs := describeConfigs(t, adm, "", 1)
	checkConfig(t, bcfgs, "log.retention.bytes", "123456789", kmsg.ConfigSourceStaticBrokerConfig)
	checkConfig(t, bcfgs, "num.io.threads", "8", kmsg.ConfigSourceDefaultConfig)
	checkConfig(t, bcfgs, "broker.id", "1", kmsg.ConfigSourceStaticBrokerConfig)
}

// AlterConfigs and IncrementalAlterConfigs write through the one config write path and
// DescribeConfigs shows the result: incremental SET/APPEND/SUBTRACT/DELETE, validate_only
// writes nothing, the non-incremental form replaces the whole set, a typo is INVALID_CONFIG
// naming it, a read-only broker key is refused, the cluster default outranks server.properties.
func TestConfigsAPI_Alter(t *testing.T) {
	c := cluster.Start(t, cluster.Options{Brokers: 1, Overrides: map[string]string{"log.retention.bytes": "123456789"}})
	adm := c.Admin()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "altered"); err != nil {
		t.Fatal(err)
	}
	c.WaitMetadataLeaders("altered", 1, 30*time.Second)
	alterErr := alterChecker(t)
	set := func(k, v string) kadm.AlterConfig { return kadm.AlterConfig{Op: kadm.SetConfig, Name: k, Value: &v} }

	if e, m := alterErr(adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{set("retention.ms", "1000"),
		{Op: kadm.AppendConfig, Name: "cleanup.policy", Value: kmsg.StringPtr("compact")}}, "altered")); e != nil {
		t.Fatalf("incremental set/append: %v %s", e, m)
	}
	cfgs := describeConfigs(t, adm, "altered")
	checkConfig(t, cfgs, "retention.ms", "1000", kmsg.ConfigSourceDynamicTopicConfig)
	checkConfig(t, cfgs, "cleanup.policy", "delete,compact", kmsg.ConfigSourceDynamicTopicConfig)

	if e, m := alterErr(adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SubtractConfig, Name: "cleanup.policy", Value: kmsg.StringPtr("delete")},
		{Op: kadm.DeleteConfig, Name: "retention.ms"}}, "altered")); e != nil {
		t.Fatalf("incremental subtract/delete: %v %s", e, m)
	}
	cfgs = describeConfigs(t, adm, "altered")
	checkConfig(t, cfgs, "cleanup.policy", "compact", kmsg.ConfigSourceDynamicTopicConfig)
	checkConfig(t, cfgs, "retention.ms", "604800000", kmsg.ConfigSourceDefaultConfig)

	if e, m := alterErr(adm.ValidateAlterTopicConfigs(ctx, []kadm.AlterConfig{set("segment.ms", "123456")}, "altered")); e != nil {
		t.Fatalf("validate_only: %v %s", e, m)
	}
	checkConfig(t, describeConfigs(t, adm, "altered"), "segment.ms", "604800000", kmsg.ConfigSourceDefaultConfig)

	// Non-incremental: the request's set replaces cleanup.policy=compact.
	if e, m := alterErr(adm.AlterTopicConfigsState(ctx, []kadm.AlterConfig{set("max.message.bytes", "5000")}, "altered")); e != nil {
		t.Fatalf("alter configs: %v %s", e, m)
	}
	cfgs = describeConfigs(t, adm, "altered")
	checkConfig(t, cfgs, "max.message.bytes", "5000", kmsg.ConfigSourceDynamicTopicConfig)
	checkConfig(t, cfgs, "cleanup.policy", "delete", kmsg.ConfigSourceDefaultConfig)

	e, m := alterErr(adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{set("retention.msec", "1000")}, "altered"))
	if !errors.Is(e, kerr.InvalidConfig) || !strings.Contains(m, "retention.msec") {
		t.Errorf("typo key: %v %q, want INVALID_CONFIG naming retention.msec", e, m)
	}
	e, m = alterErr(adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{set("retention.ms", "soon")}, "altered"))
	if !errors.Is(e, kerr.InvalidConfig) || !strings.Contains(m, "retention.ms") {
		t.Errorf("bad value: %v %q, want INVALID_CONFIG naming retention.ms", e, m)
	}
	e, _ = alterErr(adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{set("retention.ms", "1")}, "nosuchtopic"))
	if !errors.Is(e, kerr.UnknownTopicOrPartition) {
		t.Errorf("unknown topic: %v", e)
	}
	checkConfig(t, describeConfigs(t, adm, "altered"), "retention.ms", "604800000", kmsg.ConfigSourceDefaultConfig)

	// Brokers: per-broker and cluster default.
	if e, m := alterErr(adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{set("log.cleaner.threads", "2")}, 1)); e != nil {
		t.Fatalf("broker set: %v %s", e, m)
	}
	checkConfig(t, describeConfigs(t, adm, "", 1), "log.cleaner.threads", "2", kmsg.ConfigSourceDynamicBrokerConfig)
	e, m = alterErr(adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{set("log.dirs", "/elsewhere")}, 1))
	if !errors.Is(e, kerr.InvalidRequest) || !strings.Contains(m, "Cannot update these configs dynamically") || !strings.Contains(m, "log.dirs") {
		t.Errorf("read-only broker key: %v %q", e, m)
	}
	if e, m := alterErr(adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{set("log.retention.bytes", "999")})); e != nil {
		t.Fatalf("cluster default set: %v %s", e, m)
	}
	checkConfig(t, describeConfigs(t, adm, "", []int32{}...), "log.retention.bytes", "999", kmsg.ConfigSourceDynamicDefaultBrokerConfig)
	checkConfig(t, describeConfigs(t, adm, "altered"), "retention.bytes", "999", kmsg.ConfigSourceDynamicDefaultBrokerConfig)
	// Non-incremental on the broker replaces its set: log.cleaner.threads goes.
	if e, m := alterErr(adm.AlterBrokerConfigsState(ctx, []kadm.AlterConfig{set("log.cleaner.backoff.ms", "20000")}, 1)); e != nil {
		t.Fatalf("broker alter configs: %v %s", e, m)
	}
	bcfgs := describeConfigs(t, adm, "", 1)
	checkConfig(t, bcfgs, "log.cleaner.backoff.ms", "20000", kmsg.ConfigSourceDynamicBrokerConfig)
	checkConfig(t, bcfgs, "log.cleaner.threads", "1", kmsg.ConfigSourceDefaultConfig)
}
