// Package configdef declares every configuration key isrbroker knows, once, in the style of
// Kafka's ConfigDef: for each key its name, type, default, validator, scope (broker, topic,
// dynamic broker), topic↔broker synonym, documentation line and isrbroker's status (used,
// accepted but unused, unsupported). Everything else derives from the table in keys.go:
// server.properties parsing and validation (broker/config), typo hints, the checks of topic
// configs (CreateTopics, `topics --config`, /config/topics), the defaults the packages use
// (logstore.DefaultConfig, the replica manager's and group coordinator's setDefaults) and
// docs/configuration.md. It also writes once the precedence of a value's sources (Layers,
// precedence.go: topic override, /config/brokers/<id>, /config/brokers/<default>,
// server.properties, default), which DescribeConfigs and the replica manager's live configs
// both resolve through.
//
// The package has no dependencies inside the module, so every layer may import it.
package configdef

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Type is a key's value type, Kafka's ConfigDef.Type.
type Type uint8

// Value types. Integers are typed as int64 and range-checked to their width.
const (
	Boolean Type = iota
	Short        // 16-bit integer
	Int          // 32-bit integer
	Long         // 64-bit integer
	Double
	String
	List     // comma-separated list of strings
	Password // a string kept out of logs
	Class    // a Java class name (isrbroker cannot load any)
)

var typeNames = [...]string{"boolean", "short", "int", "long", "double", "string", "list", "password", "class"}

func (t Type) String() string { return typeNames[t] }

// Bits is the width of an integer type, 0 for the others.
func (t Type) Bits() int {
	switch t {
	case Short:
		return 16
	case Int:
		return 32
	case Long:
		return 64
	}
	return 0
}

// Scope says where a key is set.
type Scope uint8

const (
	// Broker keys are KafkaConfig's: server.properties and --override (and, when their
	// Dynamic mode allows, /config/brokers per KIP-226).
	Broker Scope = iota
	// Topic keys are LogConfig's: CreateTopics configs, `topics --config`, /config/topics.
	Topic
	// DynamicBroker keys exist only as dynamic broker configs in /config/brokers (Kafka's
	// DynamicConfig.Broker, KIP-73): not accepted in server.properties.
	DynamicBroker
)

var scopeNames = [...]string{"broker", "topic", "dynamic broker"}

func (s Scope) String() string { return scopeNames[s] }

// Dynamic is a broker key's KIP-226 update mode (DynamicBrokerConfig at Kafka 2.4.1): whether
// Kafka lets it be changed without a restart, per broker or cluster-wide. isrbroker applies
// the dynamic keys for which Key.AppliesLive holds; the others take effect at a restart.
type Dynamic uint8

const (
	ReadOnly    Dynamic = iota // restart required
	PerBroker                  // /config/brokers/<id> only
	ClusterWide                // /config/brokers/<id> or /config/brokers/<default>
)

var dynamicNames = [...]string{"read-only", "per-broker", "cluster-wide"}

func (d Dynamic) String() string { return dynamicNames[d] }

// Status is how isrbroker treats a key.
type Status uint8

const (
	// Used keys are typed, validated and acted on.
	Used Status = iota
	// Unused keys are real Kafka settings isrbroker does not act on: accepted (and type-free)
	// with one warning naming Reason.
	Unused
	// Unsupported keys are Kafka settings whose non-default values isrbroker cannot honour and
	// must not silently ignore (a bypassed authorizer, re-compression): the
	// Kafka default is accepted with a warning, any other value is an error naming Reason.
	Unsupported
)

var statusNames = [...]string{"used", "accepted, unused", "unsupported"}

func (s Status) String() string { return statusNames[s] }

// Key is one declared configuration key.
type Key struct {
	Name string
	Type Type
	// Default is the value as written in server.properties; "" is Kafka's null (no value).
	Default string
	// Required keys have no default (Kafka's NO_DEFAULT_VALUE).
	Required bool
	// Valid restricts the typed value; nil accepts any value of Type.
	Valid *Validator
	Scope Scope
	// Dynamic is the KIP-226 mode of a Broker key.
	Dynamic Dynamic
	// Synonym links a Topic key to its Broker key (LogConfig.TopicConfigSynonyms) and back.
	Synonym string
	// Unit is the time unit of a duration key's number (ms, s, min, h); 0 for other keys.
	Unit time.Duration
	Doc  string
	// Status and, for Unused and Unsupported, the reason.
	Status Status
	Reason string
}

// liveBrokerKeys are the dynamic broker keys without a topic synonym that isrbroker applies
// live: the replica manager resizes its fetcher pool, and restarts the log cleaner's threads
// with new thread settings (Kafka's LogCleaner.reconfigure).
var liveBrokerKeys = map[string]bool{"num.replica.fetchers": true,
	"log.cleaner.threads": true, "log.cleaner.dedupe.buffer.size": true, "log.cleaner.backoff.ms": true}

// AppliesLive reports whether isrbroker applies a changed value of a used key without a
// restart: every topic key (/config/topics), every dynamic-only broker key, and a dynamic
// broker key that is the synonym of a used topic key (the broker level of a topic config:
// log.retention.ms, log.segment.bytes, min.insync.replicas, ...) or is listed in
// liveBrokerKeys. Precedence and behaviour: docs/live-configs.md §1–2.
func (k *Key) AppliesLive() bool {
	if k.Status != Used {
		return false
	}
	switch k.Scope {
	case Topic, DynamicBroker:
		return true
	}
	if k.Dynamic == ReadOnly {
		return false
	}
	if liveBrokerKeys[k.Name] {
		return true
	}
	for _, t := range table {
		if t.Scope == Topic && t.Synonym == k.Name {
			return t.Status == Used
		}
	}
	return false
}

// Lookup returns the key of that name and scope.
func Lookup(name string, scope Scope) (*Key, bool) {
	k, ok := index[scope][name]
	return k, ok
}

// Keys returns the table in declaration order.
func Keys() []*Key { return table }

// MustLookup returns a declared key; an undeclared name is a programming error.
func MustLookup(name string, scope Scope) *Key {
	k, ok := Lookup(name, scope)
	if !ok {
		panic("configdef: undeclared " + scope.String() + " key " + strconv.Quote(name))
	}
	return k
}

var (
	table []*Key
	index = map[Scope]map[string]*Key{Broker: {}, Topic: {}, DynamicBroker: {}}
)

func init() {
	table = declared()
	for _, k := range table {
		if _, dup := index[k.Scope][k.Name]; dup {
			panic("configdef: key declared twice: " + k.Name)
		}
		index[k.Scope][k.Name] = k
	}
	// A topic key without its own default inherits the broker synonym's (LogConfig takes its
	// defaults from KafkaConfig).
	for _, k := range table {
		if k.Scope == Topic && k.Synonym != "" && k.Default == "" {
			if b, ok := index[Broker][k.Synonym]; ok {
				k.Default = b.Default
			}
		}
	}
}

// ParseError is a value that does not type or validate. Reason is the operator-facing
// explanation ("not an integer", "must be at least 1").
type ParseError struct {
	Key, Value, Reason string
}

func (e *ParseError) Error() string {
	return fmt.Sprintf("invalid value %q for %q: %s", e.Value, e.Key, e.Reason)
}

// Parse types raw per the key's Type (no validator): int64 for the integer types, float64,
// bool, string or []string. Numbers, booleans and list entries are trimmed, as Kafka's
// ConfigDef does; a string is kept as given (server.properties values arrive trimmed).
func (k *Key) Parse(raw string) (any, error) {
	bad := func(reason string, args ...any) error {
		return &ParseError{Key: k.Name, Value: raw, Reason: fmt.Sprintf(reason, args...)}
	}
	s := strings.TrimSpace(raw)
	switch k.Type {
	case Boolean:
		switch strings.ToLower(s) {
		case "true":
			return true, nil
		case "false":
			return false, nil
		}
		return nil, bad("not a boolean (true or false)")
	case Short, Int, Long:
		v, err := strconv.ParseInt(s, 10, k.Type.Bits())
		if err != nil {
			var ne *strconv.NumError
			if errors.As(err, &ne) && ne.Err == strconv.ErrRange {
				return nil, bad("out of range for a %d-bit integer", k.Type.Bits())
			}
			return nil, bad("not an integer")
		}
		return v, nil
	case Double:
		v, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, bad("not a number")
		}
		return v, nil
	case List:
		if s == "" {
			return []string{}, nil
		}
		parts := strings.Split(s, ",")
		for i := range parts {
			parts[i] = strings.TrimSpace(parts[i])
		}
		return parts, nil
	default:
		return raw, nil
	}
}

// Check applies the key's validator to a typed value; "" means valid.
func (k *Key) Check(v any) string {
	if k.Valid == nil {
		return ""
	}
	return k.Valid.Check(v)
}

// ParseValid types and validates raw.
func (k *Key) ParseValid(raw string) (any, error) {
	v, err := k.Parse(raw)
	if err != nil {
		return nil, err
	}
	if reason := k.Check(v); reason != "" {
		return nil, &ParseError{Key: k.Name, Value: raw, Reason: reason}
	}
	return v, nil
}

// IsDefault reports whether raw types to the key's default value.
func (k *Key) IsDefault(raw string) bool {
	if k.Type == List {
		return strings.EqualFold(strings.ReplaceAll(raw, " ", ""), strings.ReplaceAll(k.Default, " ", ""))
	}
	v, err := k.Parse(raw)
	if err != nil {
		return false
	}
	d, err := k.Parse(k.Default)
	if err != nil {
		return k.Default == "" && strings.TrimSpace(raw) == ""
	}
	return fmt.Sprint(v) == fmt.Sprint(d)
}

// CheckSupported returns the error for a non-default value of an Unsupported key, nil otherwise.
func (k *Key) CheckSupported(raw string) error {
	if k.Status != Unsupported || k.IsDefault(raw) {
		return nil
	}
	return &ParseError{Key: k.Name, Value: raw, Reason: "isrbroker supports only " + defaultText(k) + ": " + k.Reason}
}

func defaultText(k *Key) string {
	if k.Default == "" {
		return "an empty value"
	}
	return "the default " + strconv.Quote(k.Default)
}

// Defaults as typed values, for the packages that build their own Config structs. An
// undeclared key or a default that does not type is a programming error (TestDefaultsType).

// IntDefault is an integer key's default.
func IntDefault(name string, scope Scope) int64 {
	k := MustLookup(name, scope)
	v, err := k.Parse(k.Default)
	if err != nil {
		panic("configdef: default of " + name + ": " + err.Error())
	}
	return v.(int64)
}

// BoolDefault is a boolean key's default.
func BoolDefault(name string, scope Scope) bool {
	k := MustLookup(name, scope)
	v, err := k.Parse(k.Default)
	if err != nil {
		panic("configdef: default of " + name + ": " + err.Error())
	}
	return v.(bool)
}

// DoubleDefault is a double key's default.
func DoubleDefault(name string, scope Scope) float64 {
	k := MustLookup(name, scope)
	v, err := k.Parse(k.Default)
	if err != nil {
		panic("configdef: default of " + name + ": " + err.Error())
	}
	return v.(float64)
}

// ListDefault is a list key's default.
func ListDefault(name string, scope Scope) []string {
	k := MustLookup(name, scope)
	v, _ := k.Parse(k.Default)
	return v.([]string)
}

// DurationDefault is a time key's default as a duration, saturating at the largest
// time.Duration (Kafka's Long.MaxValue "never").
func DurationDefault(name string, scope Scope) time.Duration {
	k := MustLookup(name, scope)
	if k.Unit == 0 {
		panic("configdef: " + name + " is not a time key")
	}
	return Scale(IntDefault(name, scope), k.Unit)
}

// Scale converts a count of unit into a duration, saturating at ±max.
func Scale(n int64, unit time.Duration) time.Duration {
	if n > int64(math.MaxInt64/unit) {
		return time.Duration(math.MaxInt64)
	}
	if n < int64(math.MinInt64/unit) {
		return time.Duration(math.MinInt64)
	}
	return time.Duration(n) * unit
}

// TopicConfigError is a rejected topic config (INVALID_CONFIG at the wire).
type TopicConfigError struct {
	Key, Value, Reason string
	Unknown            bool
}

func (e *TopicConfigError) Error() string {
	if e.Unknown {
		return fmt.Sprintf("unknown topic config %q%s", e.Key, e.Reason)
	}
	return fmt.Sprintf("invalid value %q for topic config %q: %s", e.Value, e.Key, e.Reason)
}

// ValidateTopicConfig checks one topic config against the table's topic keys: the name must
// be a Kafka 2.4 topic key, the value must type and validate, and an Unsupported key must
// keep its default. A broker key used as a topic key gets its topic synonym as the hint.
func ValidateTopicConfig(name, value string) error {
	k, ok := Lookup(name, Topic)
	if !ok {
		e := &TopicConfigError{Key: name, Unknown: true}
		if b, ok := Lookup(name, Broker); ok && b.Synonym != "" {
			e.Reason = fmt.Sprintf(" (it is a broker setting; the topic-level key is %q)", b.Synonym)
		} else if h := Suggest(name, Topic); h != "" {
			e.Reason = fmt.Sprintf(" (did you mean %q?)", h)
		}
		return e
	}
	if _, err := k.ParseValid(value); err != nil {
		return &TopicConfigError{Key: name, Value: value, Reason: err.(*ParseError).Reason}
	}
	if err := k.CheckSupported(value); err != nil {
		return &TopicConfigError{Key: name, Value: value, Reason: err.(*ParseError).Reason}
	}
	return nil
}

// ValidateTopicConfigs checks every entry, in key order, and returns the first error.
func ValidateTopicConfigs(cfg map[string]string) error {
	keys := make([]string, 0, len(cfg))
	for k := range cfg {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if err := ValidateTopicConfig(k, cfg[k]); err != nil {
			return err
		}
	}
	return nil
}

// Suggest returns the key of the scope nearest to name by edit distance, or "" if none is
// close. A topic key given where a broker key is expected suggests its broker synonym.
func Suggest(name string, scope Scope) string {
	if scope == Broker {
		if t, ok := Lookup(name, Topic); ok && t.Synonym != "" {
			return t.Synonym
		}
	}
	best, bestD := "", math.MaxInt
	for _, k := range table {
		if k.Scope != scope {
			continue
		}
		if d := editDistance(name, k.Name); d < bestD || (d == bestD && k.Name < best) {
			best, bestD = k.Name, d
		}
	}
	limit := max(len(name)/4, 2)
	if bestD > limit {
		return ""
	}
	return best
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
