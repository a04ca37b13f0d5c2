package broker

import (
	"fmt"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/isrbroker/isrbroker/broker/config/configdef"
)

func find(t *testing.T, ds []describedConfig, name string) describedConfig {
	t.Helper()
	for _, d := range ds {
		if d.name == name {
			return d
		}
	}
	t.Fatalf("%s not described", name)
	return describedConfig{}
}

func synString(ss []configSynonym) string {
	var parts []string
	for _, s := range ss {
		v := "null"
		if s.value != nil {
			v = *s.value
		}
		parts = append(parts, fmt.Sprintf("%s:%s=%s", s.source, s.name, v))
	}
	return strings.Join(parts, ",")
}

func val(d describedConfig) string {
	if d.value == nil {
		return "null"
	}
	return *d.value
}

// The topic source and synonym rules of AdminManager (docs/kafka-facts.md §11): override first, then broker synonyms by source, then defaults; values converted
// to the topic key's unit; synonyms before the described broker name dropped.
func TestDescribeTopicSources(t *testing.T) {
	cs := &configSources{
		static:     map[string]string{"log.retention.hours": "1", "min.insync.replicas": "2", "log.cleaner.min.cleanable.ratio": "1"},
		dynDefault: map[string]string{"log.segment.bytes": "2000000", "min.insync.replicas": "3"},
		dynBroker:  map[string]string{"log.segment.bytes": "3000000"},
	}
	ds := describeTopicConfigs(map[string]string{"cleanup.policy": "compact, delete", "max.message.bytes": "5000"}, cs)
	n := 0
	for _, k := range configdef.Keys() {
		if k.Scope == configdef.Topic {
			n++
		}
	}
	if len(ds) != n || n != 26 {
		t.Fatalf("described %d keys, table has %d topic keys (Kafka 2.4.1: 26)", len(ds), n)
	}
	for _, tc := range []struct {
		name, value string
		source      kmsg.ConfigSource
		synonyms    string
	}{
		{"cleanup.policy", "compact,delete", kmsg.ConfigSourceDynamicTopicConfig,
			"DYNAMIC_TOPIC_CONFIG:cleanup.policy=compact,delete,DEFAULT_CONFIG:log.cleanup.policy=delete"},
		{"max.message.bytes", "5000", kmsg.ConfigSourceDynamicTopicConfig,
			"DYNAMIC_TOPIC_CONFIG:max.message.bytes=5000,DEFAULT_CONFIG:message.max.bytes=1000012"},
		{"segment.bytes", "3000000", kmsg.ConfigSourceDynamicBrokerConfig,
			"DYNAMIC_BROKER_CONFIG:log.segment.bytes=3000000,DYNAMIC_DEFAULT_BROKER_CONFIG:log.segment.bytes=2000000,DEFAULT_CONFIG:log.segment.bytes=1073741824"},
		{"min.insync.replicas", "3", kmsg.ConfigSourceDynamicDefaultBrokerConfig,
			"DYNAMIC_DEFAULT_BROKER_CONFIG:min.insync.replicas=3,STATIC_BROKER_CONFIG:min.insync.replicas=2,DEFAULT_CONFIG:min.insync.replicas=1"},
		// log.retention.ms is set nowhere: Kafka drops every synonym before it, so none remain.
		{"retention.ms", "3600000", kmsg.ConfigSourceDefaultConfig, ""},
		{"min.cleanable.dirty.ratio", "1.0", kmsg.ConfigSourceStaticBrokerConfig,
			"STATIC_BROKER_CONFIG:log.cleaner.min.cleanable.ratio=1,DEFAULT_CONFIG:log.cleaner.min.cleanable.ratio=0.5"},
		{"segment.ms", "604800000", kmsg.ConfigSourceDefaultConfig, ""},
		{"flush.ms", "9223372036854775807", kmsg.ConfigSourceDefaultConfig, ""},
		{"leader.replication.throttled.replicas", "", kmsg.ConfigSourceDefaultConfig, ""},
		{"message.downconversion.enable", "true", kmsg.ConfigSourceDefaultConfig, "DEFAULT_CONFIG:log.message.downconversion.enable=true"},
	} {
		d := find(t, ds, tc.name)
		if val(d) != tc.value || d.source != tc.source || synString(d.synonyms) != tc.synonyms || d.readOnly || d.sensitive {
			t.Errorf("%s: value %s source %s synonyms [%s] readOnly %v; want %s %s [%s]", tc.name, val(d), d.source, synString(d.synonyms), d.readOnly, tc.value, tc.source, tc.synonyms)
		}
	}
	// A set log.retention.ms keeps its synonyms after it.
	cs.static["log.retention.ms"] = "5000"
	d := find(t, describeTopicConfigs(nil, cs), "retention.ms")
	if val(d) != "5000" || d.source != kmsg.ConfigSourceStaticBrokerConfig ||
		synString(d.synonyms) != "STATIC_BROKER_CONFIG:log.retention.ms=5000,STATIC_BROKER_CONFIG:log.retention.hours=1,DEFAULT_CONFIG:log.retention.hours=168" {
		t.Errorf("retention.ms with log.retention.ms: %s %s [%s]", val(d), d.source, synString(d.synonyms))
	}
}

func TestDescribeBrokerSources(t *testing.T) {
	cs := &configSources{
		static:     map[string]string{"broker.id": "1", "log.dirs": "/d", "log.retention.hours": "5"},
		dynDefault: map[string]string{"log.cleaner.threads": "2", "leader.replication.throttled.rate": "100"},
		dynBroker:  map[string]string{"log.cleaner.threads": "3"},
	}
	ds := describeBrokerConfigs(cs, true)
	for _, tc := range []struct {
		name, value string
		source      kmsg.ConfigSource
		readOnly    bool
		sensitive   bool
		synonyms    string
	}{
		{"log.dirs", "/d", kmsg.ConfigSourceStaticBrokerConfig, true, false, "STATIC_BROKER_CONFIG:log.dirs=/d"},
		{"log.cleaner.threads", "3", kmsg.ConfigSourceDynamicBrokerConfig, false, false,
			"DYNAMIC_BROKER_CONFIG:log.cleaner.threads=3,DYNAMIC_DEFAULT_BROKER_CONFIG:log.cleaner.threads=2,DEFAULT_CONFIG:log.cleaner.threads=1"},
		{"log.retention.hours", "5", kmsg.ConfigSourceStaticBrokerConfig, true, false, "STATIC_BROKER_CONFIG:log.retention.hours=5,DEFAULT_CONFIG:log.retention.hours=168"},
		{"log.retention.ms", "null", kmsg.ConfigSourceDefaultConfig, false, false, ""},
		{"ssl.keystore.password", "null", kmsg.ConfigSourceDefaultConfig, false, true, ""},
		{"num.io.threads", "8", kmsg.ConfigSourceDefaultConfig, false, false, "DEFAULT_CONFIG:num.io.threads=8"},
		// Kafka 2.4 does not type the dynamic-only keys: sensitive, without value, read-only.
		{"leader.replication.throttled.rate", "null", kmsg.ConfigSourceDynamicDefaultBrokerConfig, true, true,
			"DYNAMIC_DEFAULT_BROKER_CONFIG:leader.replication.throttled.rate=null"},
	} {
		d := find(t, ds, tc.name)
		if val(d) != tc.value || d.source != tc.source || d.readOnly != tc.readOnly || d.sensitive != tc.sensitive || synString(d.synonyms) != tc.synonyms {
			t.Errorf("%s: %s %s ro=%v sens=%v [%s]; want %s %s ro=%v sens=%v [%s]", tc.name, val(d), d.source, d.readOnly, d.sensitive, synString(d.synonyms),
				tc.value, tc.source, tc.readOnly, tc.sensitive, tc.synonyms)
		}
	}
	def := describeBrokerConfigs(cs, false)
	if len(def) != 2 {
		t.Fatalf("cluster default describes %d entries, want the 2 of /config/brokers/<default>", len(def))
	}
	d := find(t, def, "log.cleaner.threads")
	if val(d) != "2" || d.source != kmsg.ConfigSourceDynamicDefaultBrokerConfig || synString(d.synonyms) != "DYNAMIC_DEFAULT_BROKER_CONFIG:log.cleaner.threads=2" {
		t.Errorf("default log.cleaner.threads: %s %s [%s]", val(d), d.source, synString(d.synonyms))
	}
}

func op(name string, o kmsg.IncrementalAlterConfigOp, v string) kmsg.IncrementalAlterConfigsRequestResourceConfig {
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Name, c.Op, c.Value = name, o, kmsg.StringPtr(v)
	return c
}

func TestIncrementalChange(t *testing.T) {
	topic := kmsg.ConfigResourceTypeTopic
	got, err := incrementalChange(topic, []kmsg.IncrementalAlterConfigsRequestResourceConfig{
		op("retention.ms", kmsg.IncrementalAlterConfigOpSet, "1000"),
		op("segment.bytes", kmsg.IncrementalAlterConfigOpDelete, ""),
		op("cleanup.policy", kmsg.IncrementalAlterConfigOpAppend, "compact"),
		op("leader.replication.throttled.replicas", kmsg.IncrementalAlterConfigOpSubtract, "0:1"),
	})(map[string]string{"segment.bytes": "100000", "leader.replication.throttled.replicas": "0:1,1:2,0:1"})
	want := "map[cleanup.policy:delete,compact leader.replication.throttled.replicas:1:2,0:1 retention.ms:1000]"
	if err != nil || fmt.Sprint(got) != want {
		t.Fatalf("got %v %v, want %s", got, err, want)
	}
	_, err = incrementalChange(topic, []kmsg.IncrementalAlterConfigsRequestResourceConfig{op("retention.ms", kmsg.IncrementalAlterConfigOpAppend, "1")})(map[string]string{})
	if code, msg := configErrorCode(err); code != kerr.InvalidRequest.Code || !strings.Contains(msg, "retention.ms") {
		t.Errorf("APPEND to a non-list: %d %s", code, msg)
	}
	_, err = incrementalChange(topic, []kmsg.IncrementalAlterConfigsRequestResourceConfig{op("retention.msec", kmsg.IncrementalAlterConfigOpAppend, "1")})(map[string]string{})
	if code, _ := configErrorCode(err); code != kerr.InvalidConfig.Code {
		t.Errorf("APPEND to an unknown key: %d", code)
	}
}

func TestValidateChanges(t *testing.T) {
	for _, tc := range []struct {
		typ       kmsg.ConfigResourceType
		perBroker bool
		cfg       map[string]string
		code      int16
		key       string
	}{
		{kmsg.ConfigResourceTypeTopic, false, map[string]string{"retention.msec": "1"}, kerr.InvalidConfig.Code, "retention.msec"},
		{kmsg.ConfigResourceTypeTopic, false, map[string]string{"retention.ms": "soon"}, kerr.InvalidConfig.Code, "retention.ms"},
		{kmsg.ConfigResourceTypeTopic, false, map[string]string{"compression.type": "gzip"}, kerr.InvalidConfig.Code, "compression.type"},
		{kmsg.ConfigResourceTypeTopic, false, map[string]string{"min.compaction.lag.ms": "10", "max.compaction.lag.ms": "5"}, kerr.InvalidConfig.Code, "min.compaction.lag.ms"},
		{kmsg.ConfigResourceTypeTopic, false, map[string]string{"retention.ms": "1000", "cleanup.policy": "compact"}, 0, ""},
		{kmsg.ConfigResourceTypeBroker, true, map[string]string{"log.dirs": "/x"}, kerr.InvalidRequest.Code, "log.dirs"},
		{kmsg.ConfigResourceTypeBroker, true, map[string]string{"log.retention.msec": "1"}, kerr.InvalidConfig.Code, "log.retention.msec"},
		{kmsg.ConfigResourceTypeBroker, true, map[string]string{"log.cleaner.threads": "x"}, kerr.InvalidConfig.Code, "log.cleaner.threads"},
		{kmsg.ConfigResourceTypeBroker, false, map[string]string{"advertised.listeners": "PLAINTEXT://h:1"}, kerr.InvalidRequest.Code, "advertised.listeners"},
		{kmsg.ConfigResourceTypeBroker, true, map[string]string{"ssl.keystore.location": "/k"}, kerr.InvalidRequest.Code, "ssl.keystore.location"},
		{kmsg.ConfigResourceTypeBroker, false, map[string]string{"log.retention.ms": "1000", "leader.replication.throttled.rate": "10"}, 0, ""},
	} {
		var ce *configdef.ChangeError
		if tc.typ == kmsg.ConfigResourceTypeTopic {
			ce = configdef.ValidateTopicChange(tc.cfg)
		} else {
			ce = configdef.ValidateBrokerChange(tc.cfg, tc.perBroker)
		}
		if tc.code == 0 {
			if ce != nil {
				t.Errorf("%v: rejected: %v", tc.cfg, ce)
			}
			continue
		}
		if ce == nil {
			t.Errorf("%v: accepted", tc.cfg)
			continue
		}
		re := changeErrorFor(tc.typ, "r", ce)
		if re.code != tc.code || !strings.Contains(re.msg, tc.key) {
			t.Errorf("%v: %d %q, want %d naming %s", tc.cfg, re.code, re.msg, tc.code, tc.key)
		}
	}
}

func TestJavaDouble(t *testing.T) {
	for in, want := range map[float64]string{0.5: "0.5", 1: "1.0", 1e7: "1.0E7", 1.7976931348623157e308: "1.7976931348623157E308", 0.0001: "1.0E-4"} {
		if got := configdef.JavaDouble(in); got != want {
			t.Errorf("JavaDouble(%v) = %s, want %s", in, got, want)
		}
	}
}
