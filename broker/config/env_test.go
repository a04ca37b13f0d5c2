package config

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestEnvKey(t *testing.T) {
	for name, want := range map[string]string{
		"KAFKA_LOG_RETENTION_MS":               "log.retention.ms",
		"KAFKA_ZOOKEEPER_CONNECT":              "zookeeper.connect",
		"KAFKA_BROKER_ID":                      "broker.id",
		"KAFKA_METRICS_LISTEN":                 "metrics.listen",
		"KAFKA_ISRBROKER_LOCAL_ADDRESS":        "isrbroker.local.address",
		"KAFKA_LISTENER_SECURITY_PROTOCOL_MAP": "listener.security.protocol.map",
		"KAFKA_A__B":                           "a_b",
		"KAFKA_A___B":                          "a-b",
		"KAFKA_A____B":                         "a-.b", // "___" is read first, as the common images do
		"KAFKA_SOME__KEY_WITH___DASH":          "some_key.with-dash",
		"KAFKA_":                               "",
	} {
		got, ok := EnvKey(name)
		if !ok || got != want {
			t.Errorf("EnvKey(%q) = %q, %v; want %q", name, got, ok, want)
		}
	}
	for _, name := range []string{"PATH", "kafka_log_dirs", "KAFKALOG_DIRS", "ISRBROKER_IMAGE"} {
		if got, ok := EnvKey(name); ok {
			t.Errorf("EnvKey(%q) = %q, want not a KAFKA_ variable", name, got)
		}
	}
}

func TestFromEnv(t *testing.T) {
	got, skipped, err := FromEnv([]string{
		"PATH=/usr/bin",
		"KAFKA_LOG_RETENTION_MS= 3600000 ",
		"KAFKA_METRICS_LISTEN=0.0.0.0:9101",
		"KAFKA_HEAP_OPTS=-Xmx1G",
		"KAFKA_JMX_PORT=9999",
		"KAFKA_LOG4J_ROOT_LOGLEVEL=WARN",
		"KAFKA_OPTS=-Dx=y",
		"KAFKA_NUM_NETWORK_THREADS=3",                   // a Kafka setting isrbroker ignores: accepted, Parse warns
		"KAFKA_ADVERTISED_LISTENERS=PLAINTEXT://h:9092", // the value keeps its '='-free text as is
		"NOT_KAFKA_LOG_DIRS=x",
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []EnvSetting{
		{"KAFKA_ADVERTISED_LISTENERS", "advertised.listeners", "PLAINTEXT://h:9092"},
		{"KAFKA_LOG_RETENTION_MS", "log.retention.ms", "3600000"},
		{"KAFKA_METRICS_LISTEN", "metrics.listen", "0.0.0.0:9101"},
		{"KAFKA_NUM_NETWORK_THREADS", "num.network.threads", "3"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("settings\n got %+v\nwant %+v", got, want)
	}
	if w := []string{"KAFKA_HEAP_OPTS", "KAFKA_JMX_PORT", "KAFKA_LOG4J_ROOT_LOGLEVEL", "KAFKA_OPTS"}; !reflect.DeepEqual(skipped, w) {
		t.Errorf("skipped %q, want %q", skipped, w)
	}
}

func TestFromEnvErrors(t *testing.T) {
	for _, tc := range []struct {
		env  []string
		want string
	}{
		{[]string{"KAFKA_LOG_RETENTION_MSS=1"},
			`environment variable KAFKA_LOG_RETENTION_MSS: unknown config key "log.retention.mss" (did you mean "log.retention.ms"?)`},
		{[]string{"KAFKA_ZOOKEEPER_SESSION_TMEOUT_MS=1"},
			`environment variable KAFKA_ZOOKEEPER_SESSION_TMEOUT_MS: unknown config key "zookeeper.session.tmeout.ms" (did you mean "zookeeper.session.timeout.ms"?)`},
		// A topic-level name gets the broker-wide synonym as the reason.
		{[]string{"KAFKA_RETENTION_MS=1"}, `environment variable KAFKA_RETENTION_MS: unknown config key "retention.ms"`},
		{[]string{"KAFKA_=1"}, `environment variable KAFKA_: "" is not a config key`},
		{[]string{"KAFKA_LOG_=1"}, `environment variable KAFKA_LOG_: "log." is not a config key`},
		{[]string{"KAFKA_LOG_DIRS=a", "KAFKA_log_dirs=b"}, `environment variable KAFKA_log_dirs: sets "log.dirs", as KAFKA_LOG_DIRS does`},
	} {
		_, _, err := FromEnv(tc.env)
		var ee *EnvError
		if !errors.As(err, &ee) || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("FromEnv(%q) = %v, want an *EnvError starting %q", tc.env, err, tc.want)
		}
	}
	_, _, err := FromEnv([]string{"KAFKA_LOG_RETENTION_MSS=1"})
	if !errors.Is(err, ErrUnknownKey) {
		t.Errorf("an unknown key from the environment is not ErrUnknownKey: %v", err)
	}
	var ce *Error
	if !errors.As(err, &ce) || ce.Hint != "log.retention.ms" {
		t.Errorf("no hint: %#v", ce)
	}
}

// TestLoadAllPrecedence: server.properties < environment < --override.
func TestLoadAllPrecedence(t *testing.T) {
	path := writeFile(t, "broker.id=1\nzookeeper.connect=127.0.0.1:2181\nlog.dirs=d\nnum.partitions=3\nmin.insync.replicas=2\nlog.retention.hours=1\n")
	env := []string{
		"KAFKA_NUM_PARTITIONS=5",
		"KAFKA_MIN_INSYNC_REPLICAS=3",
		"KAFKA_LOG_RETENTION_MS=60000",
		"KAFKA_METRICS_LISTEN=127.0.0.1:0",
		"KAFKA_HEAP_OPTS=-Xmx1G",
		"HOME=/nowhere",
	}
	c, r, err := LoadAll(Sources{Path: path, Environ: env, Overrides: []string{"min.insync.replicas=1"}})
	if err != nil {
		t.Fatal(err)
	}
	if c.NumPartitions != 5 {
		t.Errorf("num.partitions = %d: the environment (5) does not win over the file (3)", c.NumPartitions)
	}
	if c.MinInsyncReplicas != 1 {
		t.Errorf("min.insync.replicas = %d: --override (1) does not win over the environment (3)", c.MinInsyncReplicas)
	}
	// log.retention.ms (environment) wins over log.retention.hours (file), Kafka's key precedence.
	if c.LogRetentionMs != 60000 {
		t.Errorf("log.retention.ms = %d, want 60000", c.LogRetentionMs)
	}
	if c.MetricsListen != "127.0.0.1:0" {
		t.Errorf("metrics.listen = %q: isrbroker's own key not set from KAFKA_METRICS_LISTEN", c.MetricsListen)
	}
	// DescribeConfigs reports environment values as static broker configs, like the file's.
	if c.Props["log.retention.ms"] != "60000" || c.Props["num.partitions"] != "5" || c.Props["min.insync.replicas"] != "1" {
		t.Errorf("Props %v", c.Props)
	}
	// The report lists what the environment set and was not overridden, and what it skipped.
	var vars []string
	for _, s := range r.FromEnv {
		vars = append(vars, s.Var)
	}
	if want := []string{"KAFKA_LOG_RETENTION_MS", "KAFKA_METRICS_LISTEN", "KAFKA_NUM_PARTITIONS"}; !reflect.DeepEqual(vars, want) {
		t.Errorf("report.FromEnv %q, want %q", vars, want)
	}
	if !reflect.DeepEqual(r.SkippedEnv, []string{"KAFKA_HEAP_OPTS"}) {
		t.Errorf("report.SkippedEnv %q", r.SkippedEnv)
	}

	// The environment alone can supply the required keys.
	if _, _, err := LoadAll(Sources{Path: writeFile(t, ""), Environ: []string{"KAFKA_BROKER_ID=0", "KAFKA_ZOOKEEPER_CONNECT=zk1:2181,zk2:2181,zk3:2181", "KAFKA_LOG_DIRS=d"}}); err != nil {
		t.Fatal(err)
	}
	// Load does not read the environment.
	t.Setenv("KAFKA_NUM_PARTITIONS", "9")
	if c, _, err := Load(path, nil); err != nil || c.NumPartitions != 3 {
		t.Fatalf("Load read the environment: %v %v", c.NumPartitions, err)
	}
}

// TestLoadAllEnvValueErrors: environment values are validated like file values, and the
// error names the variable as well as the key and value.
func TestLoadAllEnvValueErrors(t *testing.T) {
	path := writeFile(t, "broker.id=1\nzookeeper.connect=127.0.0.1:2181\nlog.dirs=d\n")
	for env, want := range map[string]string{
		"KAFKA_NUM_PARTITIONS=x":         `environment variable KAFKA_NUM_PARTITIONS: invalid value "x" for "num.partitions": not an integer`,
		"KAFKA_MIN_INSYNC_REPLICAS=0":    `environment variable KAFKA_MIN_INSYNC_REPLICAS: invalid value "0" for "min.insync.replicas"`,
		"KAFKA_LOG_RETENTION_HOURS=soon": `environment variable KAFKA_LOG_RETENTION_HOURS: invalid value "soon" for "log.retention.hours"`,
		"KAFKA_LOG_RETENTION_MSS=1":      `environment variable KAFKA_LOG_RETENTION_MSS: unknown config key "log.retention.mss" (did you mean "log.retention.ms"?)`,
		"KAFKA_ZOOKEEPER_CONNECT=":       `environment variable KAFKA_ZOOKEEPER_CONNECT: `,
		"KAFKA_COMPRESSION_TYPE=gzip":    `environment variable KAFKA_COMPRESSION_TYPE: `,
	} {
		_, _, err := LoadAll(Sources{Path: path, Environ: []string{env}})
		if err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%s: got %v, want %q...", env, err, want)
		}
	}
	// A bad value overridden on the command line is not an error.
	if _, _, err := LoadAll(Sources{Path: path, Environ: []string{"KAFKA_NUM_PARTITIONS=x"}, Overrides: []string{"num.partitions=2"}}); err != nil {
		t.Errorf("an overridden environment value was still validated: %v", err)
	}
}
