package configdef

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

// Every Kafka 2.4 broker key and every Kafka 2.4 topic key is in the table with a known
// status (used, accepted-unused with a reason, or unsupported with a reason), and the table
// declares no key that Kafka 2.4 does not have, apart from isrbroker's own.
func TestKafka24KeysDeclared(t *testing.T) {
	if len(kafka24BrokerKeys) != 192 || len(kafka24TopicKeys) != 26 {
		t.Fatalf("oracle lists %d broker and %d topic keys, want Kafka 2.4.1's 192 and 26", len(kafka24BrokerKeys), len(kafka24TopicKeys))
	}
	check := func(names []string, scope Scope) {
		for _, n := range names {
			k, ok := Lookup(n, scope)
			if !ok {
				t.Errorf("Kafka 2.4 %s key %q is not declared", scope, n)
				continue
			}
			if k.Status != Used && k.Reason == "" {
				t.Errorf("%s key %q is %s without a reason", scope, n, k.Status)
			}
			if k.Doc == "" {
				t.Errorf("%s key %q has no documentation", scope, n)
			}
		}
	}
	check(kafka24BrokerKeys, Broker)
	check(isrbrokerKeys, Broker)
	check(pluginKeys, Broker)
	check(kafka24TopicKeys, Topic)
	check(kafka24DynamicBrokerKeys, DynamicBroker)

	for _, k := range Keys() {
		var oracle []string
		switch k.Scope {
		case Broker:
			oracle = slices.Concat(kafka24BrokerKeys, isrbrokerKeys, pluginKeys)
		case Topic:
			oracle = kafka24TopicKeys
		case DynamicBroker:
			oracle = kafka24DynamicBrokerKeys
		}
		if !slices.Contains(oracle, k.Name) {
			t.Errorf("declared %s key %q is not a Kafka 2.4 key", k.Scope, k.Name)
		}
	}
}

// Each default types and passes its own validator; time keys have a unit.
func TestDefaultsType(t *testing.T) {
	for _, k := range Keys() {
		if k.Required && k.Default != "" {
			t.Errorf("%s: required with a default", k.Name)
		}
		if k.Default == "" {
			continue
		}
		if _, err := k.ParseValid(k.Default); err != nil {
			t.Errorf("%s: default: %v", k.Name, err)
		}
		if k.Unit == 0 && (strings.HasSuffix(k.Name, ".ms") || strings.HasSuffix(k.Name, ".seconds")) && k.Type != Double {
			t.Errorf("%s: time key without a unit", k.Name)
		}
	}
	if got := DurationDefault("replica.lag.time.max.ms", Broker); got != 10*time.Second {
		t.Errorf("replica.lag.time.max.ms default %v", got)
	}
	if got := DurationDefault("log.flush.scheduler.interval.ms", Broker); got != time.Duration(1<<63-1) {
		t.Errorf("Long.MaxValue ms must saturate, got %v", got)
	}
	if got := IntDefault("max.message.bytes", Topic); got != 1000012 {
		t.Errorf("topic max.message.bytes inherits message.max.bytes' 1000012, got %d", got)
	}
}

// Topic keys and their broker synonyms point at each other (LogConfig.TopicConfigSynonyms).
func TestSynonyms(t *testing.T) {
	for _, k := range Keys() {
		if k.Synonym == "" {
			continue
		}
		other := Topic
		if k.Scope == Topic {
			other = Broker
		}
		s, ok := Lookup(k.Synonym, other)
		if !ok {
			t.Errorf("%s %q: synonym %q is not a %s key", k.Scope, k.Name, k.Synonym, other)
			continue
		}
		if s.Synonym != "" && s.Synonym != k.Name {
			t.Errorf("%q ↔ %q ↔ %q: synonyms disagree", k.Name, k.Synonym, s.Synonym)
		}
		if s.Type != k.Type && !(k.Name == "segment.ms" || k.Name == "log.roll.ms") {
			t.Errorf("%q (%s) and synonym %q (%s) differ in type", k.Name, k.Type, s.Name, s.Type)
		}
	}
	if got := Suggest("retention.ms", Broker); got != "log.retention.ms" {
		t.Errorf("Suggest(retention.ms, broker) = %q", got)
	}
}

func TestValidateTopicConfig(t *testing.T) {
	ok := map[string]string{
		"segment.bytes": "1048576", "retention.ms": "-1", "cleanup.policy": "compact,delete",
		"min.insync.replicas": "2", "min.cleanable.dirty.ratio": "0.1", "compression.type": "producer",
		"leader.replication.throttled.replicas": "0:1,1:2", "follower.replication.throttled.replicas": "*",
		"unclean.leader.election.enable": "TRUE", "preallocate": "true", "message.timestamp.type": "CreateTime",
	}
	if err := ValidateTopicConfigs(ok); err != nil {
		t.Fatal(err)
	}
	bad := []struct{ k, v, want string }{
		{"segment.byte", "1", `unknown topic config "segment.byte" (did you mean "segment.bytes"?)`},
		{"log.retention.ms", "1", `unknown topic config "log.retention.ms" (it is a broker setting; the topic-level key is "retention.ms")`},
		{"no.such.thing.at.all", "1", `unknown topic config "no.such.thing.at.all"`},
		{"segment.bytes", "abc", `invalid value "abc" for topic config "segment.bytes": not an integer`},
		{"segment.bytes", "13", `invalid value "13" for topic config "segment.bytes": must be at least 14`},
		{"max.message.bytes", "3000000000", `invalid value "3000000000" for topic config "max.message.bytes": out of range for a 32-bit integer`},
		{"min.insync.replicas", "0", `invalid value "0" for topic config "min.insync.replicas": must be at least 1`},
		{"cleanup.policy", "compact,remove", `invalid value "compact,remove" for topic config "cleanup.policy": each policy must be delete or compact`},
		{"min.cleanable.dirty.ratio", "2", `invalid value "2" for topic config "min.cleanable.dirty.ratio": must be between 0 and 1`},
		{"unclean.leader.election.enable", "yes", `invalid value "yes" for topic config "unclean.leader.election.enable": not a boolean (true or false)`},
		{"leader.replication.throttled.replicas", "0-1", `invalid value "0-1" for topic config "leader.replication.throttled.replicas": must be * or a list of partition:broker pairs`},
		{"compression.type", "gzip", `invalid value "gzip" for topic config "compression.type": isrbroker supports only the default "producer": isrbroker stores record batches exactly as the producer sent them`},
		{"message.timestamp.type", "logappendtime", `invalid value "logappendtime" for topic config "message.timestamp.type": must be one of CreateTime, LogAppendTime`},
	}
	for _, b := range bad {
		err := ValidateTopicConfig(b.k, b.v)
		var te *TopicConfigError
		if !errors.As(err, &te) || err.Error() != b.want {
			t.Errorf("%s=%s:\n got  %v\n want %s", b.k, b.v, err, b.want)
		}
	}
}

func TestParseTypes(t *testing.T) {
	k := MustLookup("offsets.topic.replication.factor", Broker)
	if _, err := k.Parse("40000"); err == nil || !strings.Contains(err.Error(), "16-bit") {
		t.Errorf("short range: %v", err)
	}
	if v, err := MustLookup("log.cleanup.policy", Broker).Parse(" compact , delete "); err != nil || !slices.Equal(v.([]string), []string{"compact", "delete"}) {
		t.Errorf("list: %v %v", v, err)
	}
	if err := MustLookup("authorizer.class.name", Broker).CheckSupported(""); err != nil {
		t.Errorf("empty authorizer rejected: %v", err)
	}
	for _, name := range []string{"kafka.security.auth.SimpleAclAuthorizer", "kafka.security.authorizer.AclAuthorizer"} {
		if _, err := MustLookup("authorizer.class.name", Broker).ParseValid(name); err != nil {
			t.Errorf("Kafka 2.4's authorizer %s refused: %v", name, err)
		}
	}
	if _, err := MustLookup("authorizer.class.name", Broker).ParseValid("com.example.Custom"); err == nil {
		t.Error("a plug-in authorizer isrbroker cannot load was accepted")
	}
}
