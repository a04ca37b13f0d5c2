package broker

import (
	"math"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/isrbroker/isrbroker/broker/config/configdef"
)

// The value, source and synonyms DescribeConfigs reports for each key, resolved as Kafka
// 2.4.1's AdminManager does (docs/kafka-facts.md §11):
//
//   - a broker key's synonyms are, in this order, its values in the per-broker dynamic config
//     (DYNAMIC_BROKER_CONFIG), the cluster-default dynamic config (DYNAMIC_DEFAULT_BROKER_CONFIG),
//     server.properties with --override (STATIC_BROKER_CONFIG) and the non-null defaults
//     (DEFAULT_CONFIG) — configdef's precedence (configdef.Layers.Settings), the one the replica
//     manager's live configs follow; within each source, in the order of
//     configdef.BrokerSynonyms; entries before the first one carrying the described name itself
//     are dropped;
//   - a topic key's synonyms are its /config/topics override (DYNAMIC_TOPIC_CONFIG), then the
//     synonyms of its broker key (LogConfig.TopicConfigSynonyms);
//   - the source is that of the first synonym, DEFAULT_CONFIG when there is none;
//   - a topic value is the override, else what the broker's current config gives the topic
//     (KafkaServer.copyKafkaConfigToLog: log.retention.hours=1 is retention.ms=3600000).

// configSources are a broker's three sources of broker config values. Their precedence is
// configdef's (configdef.Layers), shared with the replica manager's live configs.
type configSources struct {
	static     map[string]string // server.properties and --override
	dynDefault map[string]string // /config/brokers/<default>
	dynBroker  map[string]string // /config/brokers/<this id>
}

// layers are the sources as configdef's levels, with defaults as the default level.
func (cs *configSources) layers(defaults map[string]string) *configdef.Layers[string] {
	return &configdef.Layers[string]{Broker: cs.dynBroker, ClusterDefault: cs.dynDefault, Static: cs.static, Default: defaults}
}

// kafkaSources are the ConfigSource of each configdef level.
var kafkaSources = map[configdef.Level]kmsg.ConfigSource{
	configdef.TopicLevel:          kmsg.ConfigSourceDynamicTopicConfig,
	configdef.BrokerLevel:         kmsg.ConfigSourceDynamicBrokerConfig,
	configdef.ClusterDefaultLevel: kmsg.ConfigSourceDynamicDefaultBrokerConfig,
	configdef.StaticLevel:         kmsg.ConfigSourceStaticBrokerConfig,
	configdef.DefaultLevel:        kmsg.ConfigSourceDefaultConfig,
}

// configSynonym is one entry of a described config's synonyms.
type configSynonym struct {
	name   string
	value  *string
	source kmsg.ConfigSource
}

// describedConfig is one described config entry.
type describedConfig struct {
	name      string
	value     *string
	source    kmsg.ConfigSource
	sensitive bool
	readOnly  bool
	synonyms  []configSynonym
	key       *configdef.Key // nil for a name no table declares
}

func strPtr(s string) *string { return &s }

// brokerKey finds a broker key, or a dynamic-only broker key.
func brokerKey(name string) *configdef.Key {
	if k, ok := configdef.Lookup(name, configdef.Broker); ok {
		return k
	}
	if k, ok := configdef.Lookup(name, configdef.DynamicBroker); ok {
		return k
	}
	return nil
}

// merged is the current raw value of a broker key: dynamic per-broker, then dynamic
// default, then static.
func (cs *configSources) merged(name string) (string, bool) {
	v, _, ok := cs.layers(nil).Value(name)
	return v, ok
}

// brokerSynonyms is AdminManager.configSynonyms for name with its broker synonyms.
func (cs *configSources) brokerSynonyms(name string, sensitive bool) []configSynonym {
	names := configdef.BrokerSynonyms(name)
	defaults := map[string]string{} // KafkaConfig.defaultValues: broker keys only
	for _, n := range names {
		if k, ok := configdef.Lookup(n, configdef.Broker); ok && k.Default != "" {
			defaults[n] = k.Default
		}
	}
	var out []configSynonym
	for _, set := range cs.layers(defaults).Settings(names) {
		s := configSynonym{name: set.Name, source: kafkaSources[set.Level]}
		if !sensitive {
			s.value = strPtr(set.Value)
		}
		out = append(out, s)
	}
	for i, s := range out {
		if s.name == name {
			return out[i:]
		}
	}
	return nil
}

// describeTopicConfigs describes every topic key for a topic whose /config/topics override
// is overrides.
func describeTopicConfigs(overrides map[string]string, cs *configSources) []describedConfig {
	var out []describedConfig
	for _, k := range configdef.Keys() {
		if k.Scope != configdef.Topic {
			continue
		}
		sensitive := k.Type == configdef.Password
		d := describedConfig{name: k.Name, sensitive: sensitive, key: k}
		var value string
		raw, overridden := overrides[k.Name]
		if overridden {
			value = formatAs(k, raw)
		} else {
			value = topicValueFromBroker(k, cs)
		}
		if !sensitive {
			d.value = strPtr(value)
		}
		if overridden {
			s := configSynonym{name: k.Name, source: kmsg.ConfigSourceDynamicTopicConfig}
			if !sensitive {
				s.value = strPtr(value)
			}
			d.synonyms = append(d.synonyms, s)
		}
		if k.Synonym != "" {
			d.synonyms = append(d.synonyms, cs.brokerSynonyms(k.Synonym, sensitive)...)
		}
		d.source = kmsg.ConfigSourceDefaultConfig
		if len(d.synonyms) > 0 {
			d.source = d.synonyms[0].source
		}
		out = append(out, d)
	}
	return out
}

// formatAs re-renders raw through the key's type, as Kafka renders the parsed value; a value
// that does not parse is shown as written.
func formatAs(k *configdef.Key, raw string) string {
	v, err := k.Parse(raw)
	if err != nil {
		return raw
	}
	return configdef.Format(v)
}

// topicValueFromBroker is the value a topic without override gets from the broker's current
// config: the first broker synonym set in some source, else the first with a default,
// converted to the topic key's unit; a topic key without broker synonym has its own default.
func topicValueFromBroker(k *configdef.Key, cs *configSources) string {
	if k.Synonym == "" {
		if k.Type == configdef.List && k.Default == "" {
			return ""
		}
		return formatAs(k, k.Default)
	}
	names := configdef.BrokerSynonyms(k.Synonym)
	for _, n := range names {
		if raw, ok := cs.merged(n); ok {
			return convertSynonym(k, brokerKey(n), raw)
		}
	}
	for _, n := range names {
		if bk := brokerKey(n); bk != nil && bk.Default != "" {
			return convertSynonym(k, bk, bk.Default)
		}
	}
	return formatAs(k, k.Default)
}

// convertSynonym converts a broker synonym's raw value to the topic key: durations are scaled
// from the broker key's unit (hours, minutes) to the topic key's (ms); a negative retention
// is -1 (unlimited), as KafkaConfig.logRetentionTimeMillis.
func convertSynonym(k, bk *configdef.Key, raw string) string {
	if bk == nil {
		return raw
	}
	v, err := bk.Parse(raw)
	if err != nil {
		return raw
	}
	if n, ok := v.(int64); ok && bk.Unit != 0 && k.Unit != 0 && bk.Unit != k.Unit {
		v = scaleUnits(n, bk.Unit, k.Unit)
		if k.Name == "retention.ms" && v.(int64) < 0 {
			v = int64(-1)
		}
	}
	return configdef.Format(v)
}

// scaleUnits converts n from one unit to a finer one, saturating at the int64 limits.
func scaleUnits(n int64, from, to time.Duration) int64 {
	f := int64(from / to)
	if f == 0 {
		return n
	}
	if n > math.MaxInt64/f {
		return math.MaxInt64
	}
	if n < math.MinInt64/f {
		return math.MinInt64
	}
	return n * f
}

// describeBrokerConfigs describes the broker resource: perBroker (this broker's id) lists
// every broker key with its current value and every other name set in some source;
// the cluster default ("") lists the keys of /config/brokers/<default> with their raw values
// and only DYNAMIC_DEFAULT_BROKER_CONFIG synonyms.
func describeBrokerConfigs(cs *configSources, perBroker bool) []describedConfig {
	var out []describedConfig
	entry := func(name string, value *string) {
		k := brokerKey(name)
		// Kafka 2.4 types only KafkaConfig's keys: the dynamic-only keys
		// (leader.replication.throttled.rate, ...) and undeclared names are reported
		// sensitive, without value.
		typed := k != nil && k.Scope == configdef.Broker
		sensitive := !typed || k.Type == configdef.Password
		d := describedConfig{name: name, sensitive: sensitive, key: k, readOnly: !configdef.ReconfigurableBrokerKey(name)}
		if !sensitive {
			d.value = value
		}
		for _, s := range cs.brokerSynonyms(name, sensitive) {
			if perBroker || s.source == kmsg.ConfigSourceDynamicDefaultBrokerConfig {
				d.synonyms = append(d.synonyms, s)
			}
		}
		d.source = kmsg.ConfigSourceDefaultConfig
		if len(d.synonyms) > 0 {
			d.source = d.synonyms[0].source
		}
		out = append(out, d)
	}
	if !perBroker {
		for _, name := range sortedNames(cs.dynDefault) {
			entry(name, strPtr(cs.dynDefault[name]))
		}
		return out
	}
	seen := map[string]bool{}
	for _, k := range configdef.Keys() {
		if k.Scope != configdef.Broker {
			continue
		}
		seen[k.Name] = true
		var value *string
		if raw, ok := cs.merged(k.Name); ok {
			value = strPtr(brokerFormat(k, raw))
		} else if k.Default != "" {
			value = strPtr(brokerFormat(k, k.Default))
		}
		entry(k.Name, value)
	}
	// Names set in a source that are no KafkaConfig key (the dynamic-only keys).
	extra := map[string]string{}
	for _, m := range []map[string]string{cs.static, cs.dynDefault, cs.dynBroker} {
		for n, v := range m {
			if !seen[n] {
				extra[n] = v
			}
		}
	}
	for _, n := range sortedNames(extra) {
		v, _ := cs.merged(n)
		entry(n, strPtr(v))
	}
	return out
}

// brokerFormat renders a broker value: strings as written, other types through their type.
func brokerFormat(k *configdef.Key, raw string) string {
	switch k.Type {
	case configdef.String, configdef.Class, configdef.Password:
		return raw
	}
	if k.Type == configdef.List {
		// Kafka parses the list (trimming entries) and joins it with commas.
		v, err := k.Parse(raw)
		if err != nil {
			return raw
		}
		return strings.Join(v.([]string), ",")
	}
	return formatAs(k, raw)
}

// configType is the v3+ config_type of a key.
func configType(k *configdef.Key) kmsg.ConfigType {
	if k == nil {
		return kmsg.ConfigTypeUnknown
	}
	switch k.Type {
	case configdef.Boolean:
		return kmsg.ConfigTypeBoolean
	case configdef.String:
		return kmsg.ConfigTypeString
	case configdef.Int:
		return kmsg.ConfigTypeInt
	case configdef.Short:
		return kmsg.ConfigTypeShort
	case configdef.Long:
		return kmsg.ConfigTypeLong
	case configdef.Double:
		return kmsg.ConfigTypeDouble
	case configdef.List:
		return kmsg.ConfigTypeList
	case configdef.Class:
		return kmsg.ConfigTypeClass
	case configdef.Password:
		return kmsg.ConfigTypePassword
	}
	return kmsg.ConfigTypeUnknown
}
