package configdef

// The precedence of a config value's sources, written once (docs/live-configs.md §1; Kafka
// 2.4.1's ConfigSource order, which DescribeConfigs reports and the live config follows):
//
//	/config/topics/<t>              TopicLevel           DYNAMIC_TOPIC_CONFIG
//	/config/brokers/<this id>       BrokerLevel          DYNAMIC_BROKER_CONFIG
//	/config/brokers/<default>       ClusterDefaultLevel  DYNAMIC_DEFAULT_BROKER_CONFIG
//	server.properties / --override  StaticLevel          STATIC_BROKER_CONFIG
//	the table's default             DefaultLevel         DEFAULT_CONFIG
//
// Both users resolve through Layers: DescribeConfigs (broker/configs_resolve.go) with the raw
// strings of every level, and the replica manager's live appliers
// (replicamanager/live_config.go) with the parsed, validated dynamic broker values (its static
// and default levels are the typed config built from server.properties, below them).

// Level is one source of config values.
type Level uint8

// The levels, highest precedence first.
const (
	TopicLevel          Level = iota // the topic's override in /config/topics/<t>
	BrokerLevel                      // this broker's dynamic config, /config/brokers/<id>
	ClusterDefaultLevel              // the cluster-wide dynamic config, /config/brokers/<default>
	StaticLevel                      // server.properties with --override
	DefaultLevel                     // the configdef table's default
)

var levelNames = [...]string{"topic", "dynamic broker", "dynamic default broker", "static broker", "default"}

func (l Level) String() string { return levelNames[l] }

// Precedence returns the levels, highest first.
func Precedence() []Level {
	return []Level{TopicLevel, BrokerLevel, ClusterDefaultLevel, StaticLevel, DefaultLevel}
}

// Layers are the values each level sets, by key name (a nil map sets nothing). V is a raw
// string, or a parsed value for callers that validate each level first.
type Layers[V any] struct {
	Topic, Broker, ClusterDefault, Static, Default map[string]V
}

// At returns the values of level l.
func (ls *Layers[V]) At(l Level) map[string]V {
	switch l {
	case TopicLevel:
		return ls.Topic
	case BrokerLevel:
		return ls.Broker
	case ClusterDefaultLevel:
		return ls.ClusterDefault
	case StaticLevel:
		return ls.Static
	}
	return ls.Default
}

// Value returns name's value at the highest level that sets it, and that level; ok is false
// when no level does.
func (ls *Layers[V]) Value(name string) (v V, l Level, ok bool) {
	for _, l := range Precedence() {
		if v, ok := ls.At(l)[name]; ok {
			return v, l, true
		}
	}
	return v, 0, false
}

// Setting is one key set at one level.
type Setting[V any] struct {
	Name  string
	Level Level
	Value V
}

// Settings lists where names are set: level by level from the highest and, within a level,
// in the order of names (Kafka's AdminManager.configSynonyms over a key's synonyms).
func (ls *Layers[V]) Settings(names []string) []Setting[V] {
	var out []Setting[V]
	for _, l := range Precedence() {
		m := ls.At(l)
		for _, n := range names {
			if v, ok := m[n]; ok {
				out = append(out, Setting[V]{Name: n, Level: l, Value: v})
			}
		}
	}
	return out
}
