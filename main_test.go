package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/isrbroker/isrbroker/broker/config"
	"github.com/isrbroker/isrbroker/zkcoord/zktest"
)

// syncBuffer is a goroutine-safe output sink for a running broker's stderr.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestMain unsets the KAFKA_* variables of the developer's environment: the broker command
// reads them as config properties (docs/containers.md), so a stray one would change or stop
// the brokers these tests run in-process. Tests that need one set it with t.Setenv.
func TestMain(m *testing.M) {
	for _, kv := range os.Environ() {
		if name, _, _ := strings.Cut(kv, "="); strings.HasPrefix(name, config.EnvPrefix) {
			os.Unsetenv(name)
		}
	}
	os.Exit(m.Run())
}

func runCLI(t *testing.T, ctx context.Context, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr syncBuffer
	code := run(ctx, append([]string{"isrbroker"}, args...), &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

func writeProps(t *testing.T, dir, content string) string {
	t.Helper()
	p := filepath.Join(dir, "server.properties")
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// errorLines returns the lines that start with "isrbroker:" (the start-up failure line).
func errorLines(stderr string) []string {
	var out []string
	for _, l := range strings.Split(stderr, "\n") {
		if strings.HasPrefix(l, "isrbroker: ") {
			out = append(out, l)
		}
	}
	return out
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func TestVersion(t *testing.T) {
	code, out, _ := runCLI(t, context.Background(), "version")
	if code != 0 || !strings.HasPrefix(out, "isrbroker ") {
		t.Fatalf("code %d out %q", code, out)
	}
}

// TestStartupErrorsAreOneLine: a bad configuration stops start-up with exit 1 and one
// "isrbroker: ..." line naming the key and the value, never a stack trace.
func TestStartupErrorsAreOneLine(t *testing.T) {
	dir := t.TempDir()
	good := "broker.id=1\nzookeeper.connect=127.0.0.1:2181\nlog.dirs=" + filepath.Join(dir, "data") + "\n"
	cases := []struct {
		name  string
		props string
		args  []string
		want  string
	}{
		{"bad value", good + "num.partitions=abc\n", nil,
			`isrbroker: invalid value "abc" for "num.partitions": not an integer`},
		{"typo", good + "zookeeper.session.tmeout.ms=1000\n", nil,
			`isrbroker: unknown config key "zookeeper.session.tmeout.ms" (did you mean "zookeeper.session.timeout.ms"?)`},
		{"missing zookeeper.connect", "broker.id=1\n", nil,
			`isrbroker: missing required config "zookeeper.connect": the ZooKeeper connection string host:port[,host:port][/chroot] (Kafka requires it)`},
		{"bad override", good, []string{"--override", "replica.lag.time.max.ms=-5"},
			`isrbroker: invalid value "-5" for "replica.lag.time.max.ms": must be greater than 0`},
		{"bad override equals form", good, []string{"--override=min.insync.replicas=0"},
			`isrbroker: invalid value "0" for "min.insync.replicas": must be at least 1`},
		{"override keeps commas", good, []string{"--override", "listeners=PLAINTEXT://127.0.0.1:1,FOO://127.0.0.1:2"},
			`isrbroker: invalid value "PLAINTEXT://127.0.0.1:1,FOO://127.0.0.1:2" for "listeners": listener name FOO has no entry in listener.security.protocol.map`},
		{"SASL listener with Kafka's default GSSAPI", good, []string{"--override", "listeners=PLAINTEXT://127.0.0.1:1,SASL_PLAINTEXT://127.0.0.1:2"},
			`isrbroker: invalid value "GSSAPI" for "sasl.enabled.mechanisms": listener SASL_PLAINTEXT (SASL_PLAINTEXT): SASL mechanism GSSAPI needs a Kerberos KDC, a keytab and sasl.kerberos.service.name; ` +
				`isrbroker does not support it: set sasl.enabled.mechanisms to PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER (GSSAPI is Kafka's default)`},
		{"kafka-server-start style", good, []string{"POSITIONAL", "--override", "num.partitions=0"},
			`isrbroker: invalid value "0" for "num.partitions": must be at least 1`},
		{"bad log format", good + "isrbroker.log.format=xml\n", nil,
			`isrbroker: invalid value "xml" for "isrbroker.log.format": must be one of text, json`},
		{"bad --log-format", good, []string{"--log-format", "yaml"},
			`isrbroker: invalid --log-format "yaml": text or json`},
		{"bad --log-level", good, []string{"--log-level", "loud"},
			`isrbroker: invalid --log-level "loud": trace, debug, info, warn or error`},
		{"missing file", "", []string{"--config", filepath.Join(dir, "nope.properties")}, ""},
		{"no config", "", []string{}, `isrbroker: no config file: use --config server.properties`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			args := []string{"broker"}
			path := ""
			if tc.props != "" {
				path = writeProps(t, t.TempDir(), tc.props)
			}
			switch {
			case len(tc.args) > 0 && tc.args[0] == "POSITIONAL":
				args = append(args, path)
				args = append(args, tc.args[1:]...)
			case tc.props != "":
				args = append(args, "--config", path)
				args = append(args, tc.args...)
			default:
				args = append(args, tc.args...)
			}
			code, _, stderr := runCLI(t, context.Background(), args...)
			if code != 1 {
				t.Fatalf("exit %d, stderr %q", code, stderr)
			}
			lines := errorLines(stderr)
			if len(lines) != 1 || strings.Contains(stderr, "goroutine ") {
				t.Fatalf("stderr should hold one isrbroker: line:\n%s", stderr)
			}
			if tc.want != "" && lines[0] != tc.want {
				t.Fatalf("got  %s\nwant %s", lines[0], tc.want)
			}
		})
	}
}

// TestStartupErrorsFromEnvironment: the broker command reads KAFKA_* variables
// (docs/containers.md) and a bad one stops start-up with one line naming the variable.
func TestStartupErrorsFromEnvironment(t *testing.T) {
	dir := t.TempDir()
	path := writeProps(t, dir, "broker.id=1\nzookeeper.connect=127.0.0.1:2181\nlog.dirs="+filepath.Join(dir, "data")+"\n")
	for env, want := range map[string]string{
		"KAFKA_LOG_RETENTION_MSS=1": `isrbroker: environment variable KAFKA_LOG_RETENTION_MSS: unknown config key "log.retention.mss" (did you mean "log.retention.ms"?)`,
		"KAFKA_NUM_PARTITIONS=abc":  `isrbroker: environment variable KAFKA_NUM_PARTITIONS: invalid value "abc" for "num.partitions": not an integer`,
	} {
		t.Run(env, func(t *testing.T) {
			name, value, _ := strings.Cut(env, "=")
			t.Setenv(name, value)
			code, _, stderr := runCLI(t, context.Background(), "broker", "--config", path)
			if lines := errorLines(stderr); code != 1 || len(lines) != 1 || lines[0] != want {
				t.Fatalf("exit %d, stderr %q; want one line %q", code, stderr, want)
			}
		})
	}
}

func TestUnreachableZooKeeper(t *testing.T) {
	dir := t.TempDir()
	port := freePort(t) // nothing listens there
	p := writeProps(t, dir, fmt.Sprintf("broker.id=1\nzookeeper.connect=127.0.0.1:%d\nzookeeper.connection.timeout.ms=500\nlog.dirs=%s\nlisteners=PLAINTEXT://127.0.0.1:%d\n",
		port, filepath.Join(dir, "data"), freePort(t)))
	start := time.Now()
	code, _, stderr := runCLI(t, context.Background(), "broker", "--config", p)
	if code != 1 {
		t.Fatalf("exit %d", code)
	}
	lines := errorLines(stderr)
	if len(lines) != 1 || !strings.Contains(lines[0], "zookeeper.connect 127.0.0.1:") {
		t.Fatalf("stderr:\n%s", stderr)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Fatalf("took %v to give up", d)
	}
}

func TestUnusableLogDir(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "a-file")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := writeProps(t, dir, "broker.id=1\nzookeeper.connect=127.0.0.1:1\nlog.dirs="+file+"\n")
	code, _, stderr := runCLI(t, context.Background(), "broker", "--config", p)
	lines := errorLines(stderr)
	if code != 1 || len(lines) != 1 || !strings.HasPrefix(lines[0], "isrbroker: log.dirs ") {
		t.Fatalf("exit %d stderr:\n%s", code, stderr)
	}
}

func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond) // polling interval, not synchronisation
	}
}

// TestBrokerStartsAndStops runs a broker against a real ZooKeeper: the Kafka port and the
// metrics endpoint come up, a second broker with the same id is refused, and cancelling
// (as SIGTERM does) stops it with exit 0 and a clean-shutdown marker.
func TestBrokerStartsAndStops(t *testing.T) {
	if testing.Short() {
		t.Skip("needs ZooKeeper")
	}
	zk := zktest.Start(t)
	dir := t.TempDir()
	kport, mport := freePort(t), freePort(t)
	dataDir := filepath.Join(dir, "data")
	p := writeProps(t, dir, fmt.Sprintf(
		"broker.id=7\nzookeeper.connect=%s/isrbroker-main-test\nzookeeper.session.timeout.ms=2000\nlog.dirs=%s\n"+
			"listeners=PLAINTEXT://127.0.0.1:%d\nmetrics.listen=127.0.0.1:%d\nnum.network.threads=3\n",
		zk.Addr, dataDir, kport, mport))

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stderr syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"isrbroker", "broker", "--config", p}, io.Discard, &stderr)
	}()

	waitFor(t, 30*time.Second, "broker started", func() bool {
		select {
		case code := <-done:
			t.Fatalf("broker exited %d:\n%s", code, stderr.String())
		default:
		}
		return strings.Contains(stderr.String(), "broker started")
	})
	if !strings.Contains(stderr.String(), `config key \"num.network.threads\"`) {
		t.Errorf("no warning for the known-unused key:\n%s", stderr.String())
	}
	conn, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", kport), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	conn.Close()
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", mport))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), "kafka_server_replicamanager_underreplicatedpartitions") {
		t.Errorf("metrics lack UnderReplicatedPartitions:\n%s", body)
	}

	// Same broker id while the first is alive: refused after the session timeout.
	dir2 := t.TempDir()
	p2 := writeProps(t, dir2, fmt.Sprintf(
		"broker.id=7\nzookeeper.connect=%s/isrbroker-main-test\nzookeeper.session.timeout.ms=2000\nlog.dirs=%s\nlisteners=PLAINTEXT://127.0.0.1:%d\n",
		zk.Addr, filepath.Join(dir2, "data"), freePort(t)))
	code, _, stderr2 := runCLI(t, context.Background(), "broker", "--config", p2)
	lines := errorLines(stderr2)
	if code != 1 || len(lines) != 1 || !strings.Contains(lines[0], "broker.id 7") {
		t.Fatalf("second broker: exit %d\n%s", code, stderr2)
	}

	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("exit %d:\n%s", code, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("broker did not stop:\n%s", stderr.String())
	}
	if _, err := os.Stat(filepath.Join(dataDir, ".kafka_cleanshutdown")); err != nil {
		t.Errorf("no clean-shutdown marker: %v", err)
	}
}
