package configdef

import (
	"slices"
	"testing"
)

// The precedence of docs/live-configs.md §1, highest first: topic override,
// /config/brokers/<id>, /config/brokers/<default>, server.properties, the default. Each case
// sets the key at some levels, each level to a value naming it; a resolver that orders any two
// levels the other way answers another level in one of the cases.
func TestLayersPrecedence(t *testing.T) {
	const k = "retention.ms"
	set := map[Level]string{TopicLevel: "topic", BrokerLevel: "broker", ClusterDefaultLevel: "cluster-default",
		StaticLevel: "static", DefaultLevel: "default"}
	layersOf := func(levels ...Level) *Layers[string] {
		ls := &Layers[string]{}
		for _, l := range levels {
			m := map[string]string{k: set[l], "other.key": "x"}
			switch l {
			case TopicLevel:
				ls.Topic = m
			case BrokerLevel:
				ls.Broker = m
			case ClusterDefaultLevel:
				ls.ClusterDefault = m
			case StaticLevel:
				ls.Static = m
			case DefaultLevel:
				ls.Default = m
			}
		}
		return ls
	}
	for _, c := range []struct {
		levels []Level
		want   Level
	}{
		{[]Level{DefaultLevel}, DefaultLevel},
		{[]Level{StaticLevel, DefaultLevel}, StaticLevel},
		{[]Level{ClusterDefaultLevel, StaticLevel, DefaultLevel}, ClusterDefaultLevel},
		{[]Level{BrokerLevel, ClusterDefaultLevel, StaticLevel, DefaultLevel}, BrokerLevel},
		{[]Level{TopicLevel, BrokerLevel, ClusterDefaultLevel, StaticLevel, DefaultLevel}, TopicLevel},
		{[]Level{TopicLevel, DefaultLevel}, TopicLevel},
		{[]Level{TopicLevel, StaticLevel}, TopicLevel},
		{[]Level{TopicLevel, ClusterDefaultLevel}, TopicLevel},
		{[]Level{BrokerLevel, StaticLevel}, BrokerLevel},
		{[]Level{BrokerLevel, DefaultLevel}, BrokerLevel},
		{[]Level{ClusterDefaultLevel, DefaultLevel}, ClusterDefaultLevel},
		{[]Level{StaticLevel}, StaticLevel},
	} {
		v, l, ok := layersOf(c.levels...).Value(k)
		if !ok || l != c.want || v != set[c.want] {
			t.Errorf("set at %v: Value = %q from %v (ok %v), want %q from %v", c.levels, v, l, ok, set[c.want], c.want)
		}
	}
	if v, _, ok := (&Layers[string]{Static: map[string]string{"other.key": "x"}}).Value(k); ok {
		t.Errorf("a key no level sets resolved to %q", v)
	}
	if got := Precedence(); !slices.Equal(got, []Level{TopicLevel, BrokerLevel, ClusterDefaultLevel, StaticLevel, DefaultLevel}) {
		t.Errorf("Precedence() = %v", got)
	}
}

// Settings lists a key's synonyms level by level, highest first, and by the given name order
// within a level (DescribeConfigs' synonyms: log.retention.hours set per broker comes before
// log.retention.ms in server.properties).
func TestLayersSettingsOrder(t *testing.T) {
	ls := &Layers[string]{
		Broker:         map[string]string{"log.retention.hours": "1"},
		ClusterDefault: map[string]string{"log.retention.minutes": "5", "log.retention.ms": "7"},
		Static:         map[string]string{"log.retention.ms": "9"},
		Default:        map[string]string{"log.retention.hours": "168"},
	}
	got := ls.Settings([]string{"log.retention.ms", "log.retention.minutes", "log.retention.hours"})
	want := []Setting[string]{
		{"log.retention.hours", BrokerLevel, "1"},
		{"log.retention.ms", ClusterDefaultLevel, "7"},
		{"log.retention.minutes", ClusterDefaultLevel, "5"},
		{"log.retention.ms", StaticLevel, "9"},
		{"log.retention.hours", DefaultLevel, "168"},
	}
	if !slices.Equal(got, want) {
		t.Errorf("Settings = %v\nwant       %v", got, want)
	}
}
