package config

import (
	"fmt"
	"sort"
	"strings"
)

// Broker settings from environment variables, the mapping of the common Kafka container
// images (docs/containers.md): a variable KAFKA_<NAME> sets the property whose name is <NAME>
// lower-cased with "___" read as "-", "__" as "_" and "_" as ".":
//
//	KAFKA_LOG_RETENTION_MS=3600000     log.retention.ms=3600000
//	KAFKA_ZOOKEEPER_CONNECT=zk:2181    zookeeper.connect=zk:2181
//	KAFKA_METRICS_LISTEN=0.0.0.0:9101  metrics.listen=0.0.0.0:9101 (isrbroker's own keys too)
//
// Precedence: server.properties < environment < --override. A variable that names no known
// broker key stops start-up like a misspelled key in the file does, naming the variable, the
// key and the nearest known key; values are checked like file values.

// EnvPrefix starts every environment variable that sets a broker property.
const EnvPrefix = "KAFKA_"

// envNotConfig are the KAFKA_ variables of Kafka's start scripts (kafka-run-class.sh) and of
// the common images that configure the JVM, logging or JMX rather than the broker: a
// compose file written for a Kafka image keeps them, and isrbroker (no JVM) skips them.
var envNotConfig = []string{
	"KAFKA_HEAP_OPTS", "KAFKA_OPTS", "KAFKA_JVM_PERFORMANCE_OPTS", "KAFKA_GC_LOG_OPTS",
	"KAFKA_LOG4J_OPTS", "KAFKA_DEBUG", "KAFKA_HOME",
}

// envNotConfigPrefixes: KAFKA_JMX_OPTS, KAFKA_JMX_PORT, KAFKA_JMX_HOSTNAME, ...;
// KAFKA_LOG4J_ROOT_LOGLEVEL, KAFKA_LOG4J_LOGGERS, ...; KAFKA_TOOLS_LOG4J_LOGLEVEL. No broker key
// starts with "jmx.", "log4j." or "tools.", so no setting is hidden by them.
var envNotConfigPrefixes = []string{"KAFKA_JMX_", "KAFKA_LOG4J_", "KAFKA_TOOLS_LOG4J_"}

// EnvNotConfig reports whether name is a KAFKA_ variable that configures the JVM, logging or
// JMX of a Kafka image rather than the broker; such variables are skipped.
func EnvNotConfig(name string) bool {
	for _, n := range envNotConfig {
		if name == n {
			return true
		}
	}
	for _, p := range envNotConfigPrefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// EnvKey maps an environment variable to the property it sets: ok is false when name does not
// start with KAFKA_. The key is not checked against the table (FromEnv does that).
func EnvKey(name string) (key string, ok bool) {
	rest, ok := strings.CutPrefix(name, EnvPrefix)
	if !ok {
		return "", false
	}
	// The order of the common images: "___" first, then "__", then the single "_".
	rest = strings.ReplaceAll(rest, "___", "-")
	rest = strings.ReplaceAll(rest, "__", "\x00")
	rest = strings.ReplaceAll(rest, "_", ".")
	rest = strings.ReplaceAll(rest, "\x00", "_")
	return strings.ToLower(rest), true
}

// EnvSetting is one property set by an environment variable.
type EnvSetting struct {
	Var   string // the variable, e.g. KAFKA_LOG_RETENTION_MS
	Key   string // the property, e.g. log.retention.ms
	Value string
}

// EnvError is an environment variable that cannot be applied: it maps to no broker key, two
// variables set the same key, or its value is invalid (Err names the key and the value).
type EnvError struct {
	Var string
	Err error
}

func (e *EnvError) Error() string { return "environment variable " + e.Var + ": " + e.Err.Error() }

// Unwrap exposes the config error (an *Error for unknown keys and bad values).
func (e *EnvError) Unwrap() error { return e.Err }

// FromEnv returns the broker properties that environ ("NAME=value" entries, as os.Environ
// gives them) sets, sorted by key, and the KAFKA_ variables it skipped (EnvNotConfig). A
// KAFKA_ variable naming no Kafka 2.4 or isrbroker broker key is an *EnvError wrapping the
// unknown-key *Error with the nearest key.
func FromEnv(environ []string) (settings []EnvSetting, skipped []string, err error) {
	byKey := map[string]string{}
	for _, kv := range environ {
		name, value, _ := strings.Cut(kv, "=")
		key, ok := EnvKey(name)
		if !ok {
			continue
		}
		if EnvNotConfig(name) {
			skipped = append(skipped, name)
			continue
		}
		if key == "" || strings.HasPrefix(key, ".") || strings.HasSuffix(key, ".") || strings.Contains(key, "..") {
			return nil, nil, &EnvError{Var: name, Err: fmt.Errorf("%q is not a config key (KAFKA_ then the key with _ for ., __ for _ and ___ for -, e.g. KAFKA_LOG_RETENTION_MS)", key)}
		}
		if Classify(key) == Unknown {
			return nil, nil, &EnvError{Var: name, Err: unknownKey(key)}
		}
		if prev, dup := byKey[key]; dup {
			return nil, nil, &EnvError{Var: name, Err: fmt.Errorf("sets %q, as %s does", key, prev)}
		}
		byKey[key] = name
		settings = append(settings, EnvSetting{Var: name, Key: key, Value: strings.TrimSpace(value)})
	}
	sort.Slice(settings, func(i, j int) bool { return settings[i].Key < settings[j].Key })
	sort.Strings(skipped)
	return settings, skipped, nil
}
