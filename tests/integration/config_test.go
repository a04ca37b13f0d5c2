package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/isrbroker/isrbroker/tests/cluster"
)

// Issue 6 / docs/configuration.md: a misspelled config key stops start-up with a message naming it and the
// nearest known key (Jepsen's `zookeeper.session.tmeout.ms` was silently ignored by Kafka). The
// same holds for an --override, and a bad value names the key and the value.
func TestConfigTypo_StopsStartupNamingKeyAndNearestKey(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: skipped with -short")
	}
	port, err := cluster.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	base := strings.Join([]string{
		"broker.id=1",
		fmt.Sprintf("listeners=PLAINTEXT://127.0.0.1:%d", port),
		"log.dirs=" + filepath.Join(dir, "data"),
		// Nothing listens here: start-up must stop at the config, before any connection attempt.
		"zookeeper.connect=127.0.0.1:1",
	}, "\n") + "\n"

	for _, tc := range []struct {
		name     string
		props    string
		override []string
		want     []string
	}{
		{"typo in file", base + "zookeeper.session.tmeout.ms=4000\n", nil,
			[]string{"zookeeper.session.tmeout.ms", "zookeeper.session.timeout.ms"}},
		{"typo in override", base, []string{"--override", "num.partitons=6"},
			[]string{"num.partitons", "num.partitions"}},
		{"bad value", base + "num.partitions=abc\n", nil,
			[]string{"num.partitions", "abc"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := filepath.Join(t.TempDir(), "server.properties")
			if err := os.WriteFile(cfg, []byte(tc.props), 0o644); err != nil {
				t.Fatal(err)
			}
			args := append([]string{"broker", "--config", cfg}, tc.override...)
			res := cluster.RunBinary(t, dir, 30*time.Second, args...)
			if res.TimedOut {
				t.Fatalf("isrbroker %s kept running; want it to stop at start-up\nstderr:\n%s", strings.Join(args, " "), res.Stderr)
			}
			if res.ExitCode == 0 {
				t.Errorf("exit code 0, want non-zero")
			}
			for _, w := range tc.want {
				if !strings.Contains(res.Stderr, w) {
					t.Errorf("stderr does not mention %q:\n%s", w, res.Stderr)
				}
			}
			if strings.Contains(res.Stderr, "goroutine ") || strings.Contains(res.Stderr, "panic") {
				t.Errorf("stderr holds a stack trace; want one clear line:\n%s", res.Stderr)
			}
		})
	}
}
