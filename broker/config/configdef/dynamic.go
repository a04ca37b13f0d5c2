package configdef

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// Dynamic config changes (AlterConfigs, IncrementalAlterConfigs, `isrbroker configs --alter`):
// the checks Kafka 2.4.1 applies to the complete new config of a topic (LogConfig.validate)
// or of a broker entity (DynamicBrokerConfig.validateConfigs), and the value formatting and
// broker synonyms DescribeConfigs reports (docs/kafka-facts.md §11).

// ChangeKind classifies a rejected config change by the Kafka error it maps to.
type ChangeKind uint8

const (
	// UnknownKey: the name is no key of the entity (INVALID_CONFIG, Kafka's
	// InvalidConfigurationException "Unknown topic config name").
	UnknownKey ChangeKind = iota
	// BadValue: the value does not type or validate (INVALID_CONFIG naming the key, as issue 12
	// asks; Kafka 2.4 answers its ConfigException with INVALID_REQUEST).
	BadValue
	// UnsupportedValue: an Unsupported key at a non-default value (INVALID_CONFIG).
	UnsupportedValue
	// Conflict: two values contradict each other (INVALID_CONFIG, LogConfig.validateValues).
	Conflict
	// NotDynamic: a broker key that cannot be changed without a restart, a security key without
	// a listener prefix, a per-broker key at the cluster default, a password (INVALID_REQUEST).
	NotDynamic
)

// ChangeError is a rejected config change; Key names the (first) offending key.
type ChangeError struct {
	Kind ChangeKind
	Key  string
	Msg  string
}

func (e *ChangeError) Error() string { return e.Msg }

// scalaSet renders names the way Kafka's messages print a Scala Set: Set(a, b).
func scalaSet(names []string) string { return "Set(" + strings.Join(names, ", ") + ")" }

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// ValidateTopicChange checks the complete new config of a topic: every name must be a topic
// key, every value must type and validate, Unsupported keys must keep their default and
// min.compaction.lag.ms may not exceed max.compaction.lag.ms.
func ValidateTopicChange(cfg map[string]string) *ChangeError {
	keys := sortedKeys(cfg)
	for _, name := range keys {
		if _, ok := Lookup(name, Topic); !ok {
			msg := "Unknown topic config name: " + name
			if b, ok := Lookup(name, Broker); ok && b.Synonym != "" {
				msg += fmt.Sprintf(" (it is a broker setting; the topic-level key is %q)", b.Synonym)
			} else if h := Suggest(name, Topic); h != "" {
				msg += fmt.Sprintf(" (did you mean %q?)", h)
			}
			return &ChangeError{Kind: UnknownKey, Key: name, Msg: msg}
		}
	}
	if err := checkValues(cfg, keys, Topic); err != nil {
		return err
	}
	minLag, okMin := cfg["min.compaction.lag.ms"]
	maxLag, okMax := cfg["max.compaction.lag.ms"]
	if okMin || okMax {
		lo, hi := IntDefault("min.compaction.lag.ms", Topic), IntDefault("max.compaction.lag.ms", Topic)
		if okMin {
			lo, _ = strconv.ParseInt(strings.TrimSpace(minLag), 10, 64)
		}
		if okMax {
			hi, _ = strconv.ParseInt(strings.TrimSpace(maxLag), 10, 64)
		}
		if lo > hi {
			return &ChangeError{Kind: Conflict, Key: "min.compaction.lag.ms", Msg: fmt.Sprintf(
				"conflict topic config setting min.compaction.lag.ms (%d) > max.compaction.lag.ms (%d)", lo, hi)}
		}
	}
	return nil
}

// checkValues types and validates each value (BadValue), then checks Unsupported keys.
func checkValues(cfg map[string]string, keys []string, scope Scope) *ChangeError {
	for _, name := range keys {
		k := lookupDynamic(name, scope)
		if _, err := k.ParseValid(cfg[name]); err != nil {
			return &ChangeError{Kind: BadValue, Key: name, Msg: fmt.Sprintf(
				"Invalid value %s for configuration %s: %s", cfg[name], name, err.(*ParseError).Reason)}
		}
	}
	for _, name := range keys {
		if err := lookupDynamic(name, scope).CheckSupported(cfg[name]); err != nil {
			return &ChangeError{Kind: UnsupportedValue, Key: name, Msg: err.Error()}
		}
	}
	return nil
}

// lookupDynamic finds a topic key, or for the broker scope a broker or dynamic-only key.
func lookupDynamic(name string, scope Scope) *Key {
	if k, ok := Lookup(name, scope); ok {
		return k
	}
	if scope == Broker {
		if k, ok := Lookup(name, DynamicBroker); ok {
			return k
		}
	}
	return nil
}

// DynamicBrokerKey reports whether name may be set in /config/brokers (KIP-226's
// DynamicBrokerConfig.AllDynamicConfigs plus the dynamic-only DynamicConfig.Broker keys).
func DynamicBrokerKey(name string) bool {
	if _, ok := Lookup(name, DynamicBroker); ok {
		return true
	}
	k, ok := Lookup(name, Broker)
	return ok && k.Dynamic != ReadOnly
}

// ReconfigurableBrokerKey is Kafka's DynamicBrokerConfig.AllDynamicConfigs: the broker keys
// with a KIP-226 mode. DescribeConfigs reports every other broker key read_only (the
// dynamic-only keys of DynamicConfig.Broker included, as Kafka 2.4 does).
func ReconfigurableBrokerKey(name string) bool {
	k, ok := Lookup(name, Broker)
	return ok && k.Dynamic != ReadOnly
}

// securityKey is a key of Kafka's DynamicSecurityConfigs (SslConfigs.RECONFIGURABLE_CONFIGS),
// which may be updated only with a listener prefix.
func securityKey(k *Key) bool {
	return strings.HasPrefix(k.Name, "ssl.") && k.Dynamic == PerBroker
}

// ValidateBrokerChange checks the complete new config of a broker entity, per broker
// (/config/brokers/<id>) or cluster-wide (/config/brokers/<default>), in Kafka's order:
// keys that cannot be updated dynamically, security keys without listener prefix, values,
// then per-broker keys at the cluster default. isrbroker also refuses names that are no
// Kafka broker key (Kafka accepts custom keys for plug-ins, isrbroker loads none) and
// passwords (isrbroker has no password.encoder.secret to encode them with).
func ValidateBrokerChange(cfg map[string]string, perBroker bool) *ChangeError {
	keys := sortedKeys(cfg)
	var nonDynamic, security, perBrokerOnly []string
	for _, name := range keys {
		k := lookupDynamic(name, Broker)
		switch {
		case k == nil:
			msg := "Unknown broker config name: " + name
			if t, ok := Lookup(name, Topic); ok && t.Synonym != "" {
				msg += fmt.Sprintf(" (it is a topic setting; the broker-wide default is %q)", t.Synonym)
			} else if h := Suggest(name, Broker); h != "" {
				msg += fmt.Sprintf(" (did you mean %q?)", h)
			}
			return &ChangeError{Kind: UnknownKey, Key: name, Msg: msg}
		case !DynamicBrokerKey(name):
			nonDynamic = append(nonDynamic, name)
		case securityKey(k):
			security = append(security, name)
		case k.Dynamic == PerBroker:
			perBrokerOnly = append(perBrokerOnly, name)
		}
	}
	if len(nonDynamic) > 0 {
		return &ChangeError{Kind: NotDynamic, Key: nonDynamic[0], Msg: "Cannot update these configs dynamically: " + scalaSet(nonDynamic)}
	}
	if len(security) > 0 {
		return &ChangeError{Kind: NotDynamic, Key: security[0], Msg: "These security configs can be dynamically updated only per-listener using the listener prefix: " + scalaSet(security)}
	}
	for _, name := range keys {
		if lookupDynamic(name, Broker).Type == Password {
			return &ChangeError{Kind: NotDynamic, Key: name, Msg: "Cannot update password config " + name + " dynamically: isrbroker has no password.encoder.secret to encode it with"}
		}
	}
	if err := checkValues(cfg, keys, Broker); err != nil {
		return err
	}
	if !perBroker && len(perBrokerOnly) > 0 {
		return &ChangeError{Kind: NotDynamic, Key: perBrokerOnly[0], Msg: "Cannot update these configs at default cluster level, broker id must be specified: " + scalaSet(perBrokerOnly)}
	}
	return nil
}

// BrokerSynonyms is Kafka's DynamicBrokerConfig.brokerConfigSynonyms (without listener
// overrides): the broker keys that set the same value, in precedence order.
func BrokerSynonyms(name string) []string {
	switch name {
	case "log.roll.ms", "log.roll.hours":
		return []string{"log.roll.ms", "log.roll.hours"}
	case "log.roll.jitter.ms", "log.roll.jitter.hours":
		return []string{"log.roll.jitter.ms", "log.roll.jitter.hours"}
	case "log.flush.interval.ms": // log.flush.scheduler.interval.ms is its default
		return []string{"log.flush.interval.ms", "log.flush.scheduler.interval.ms"}
	case "log.retention.ms", "log.retention.minutes", "log.retention.hours":
		return []string{"log.retention.ms", "log.retention.minutes", "log.retention.hours"}
	}
	return []string{name}
}

// Format renders a typed value (from Parse) as Kafka's ConfigDef.convertToString does:
// numbers and booleans in Java's notation (doubles with Double.toString), lists joined by
// commas without spaces.
func Format(v any) string {
	switch t := v.(type) {
	case nil:
		return ""
	case int64:
		return strconv.FormatInt(t, 10)
	case bool:
		return strconv.FormatBool(t)
	case float64:
		return JavaDouble(t)
	case []string:
		return strings.Join(t, ",")
	case string:
		return t
	}
	return fmt.Sprint(v)
}

// JavaDouble is Java's Double.toString: plain notation with at least one decimal between
// 10^-3 and 10^7, else computerized scientific notation (1.0E7).
func JavaDouble(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	a := math.Abs(f)
	if a == 0 || (a >= 1e-3 && a < 1e7) {
		s := strconv.FormatFloat(f, 'f', -1, 64)
		if !strings.Contains(s, ".") {
			s += ".0"
		}
		return s
	}
	s := strconv.FormatFloat(f, 'E', -1, 64) // 1.7976931348623157E+308
	mant, exp, _ := strings.Cut(s, "E")
	if !strings.Contains(mant, ".") {
		mant += ".0"
	}
	e, _ := strconv.Atoi(exp)
	return mant + "E" + strconv.Itoa(e)
}
