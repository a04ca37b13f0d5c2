package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/isrbroker/isrbroker/tests/cluster"
)

// Topic configs are checked against the configdef table (docs/configuration.md): CreateTopics
// with an unknown key, a bad value or an unsupported value answers INVALID_CONFIG naming the key
// and creates nothing; `topics --create --config` refuses the same before writing anything, on
// both backends; valid configs are stored and shown by --describe.
func TestTopicConfig_ValidatedAgainstTheTable(t *testing.T) {
	c := cluster.Start(t, cluster.Options{Brokers: 1})
	requireAdminCommands(t)
	adm := c.Admin()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	for _, tc := range []struct{ topic, key, value string }{
		{"typo", "retention.msec", "1000"},
		{"brokerkey", "log.retention.ms", "1000"},
		{"badvalue", "segment.bytes", "big"},
		{"unsupported", "compression.type", "gzip"},
	} {
		resp, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{tc.key: &tc.value}, tc.topic)
		if err != nil && resp.Err == nil {
			t.Fatalf("%s: %v", tc.topic, err)
		}
		if resp.Err != kerr.InvalidConfig || !strings.Contains(resp.ErrMessage, `"`+tc.key+`"`) {
			t.Errorf("%s=%s: got %v %q, want INVALID_CONFIG naming the key", tc.key, tc.value, resp.Err, resp.ErrMessage)
		}
	}
	topics, err := adm.ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"typo", "brokerkey", "badvalue", "unsupported"} {
		if topics.Has(name) {
			t.Errorf("topic %s was created despite its invalid config", name)
		}
	}

	bsArg := "--bootstrap-server=" + strings.Join(c.BootstrapAddrs(), ",")
	zkArg := "--zookeeper=" + c.ZK.Addr
	for _, backend := range []string{bsArg, zkArg} {
		r := admin(t, "topics", backend, "--create", "--topic", "cli", "--partitions", "1", "--replication-factor", "1", "--config", "retention.msec=1000")
		if r.ExitCode == 0 || !strings.Contains(r.Stderr, `"retention.msec"`) || !strings.Contains(r.Stderr, `"retention.ms"`) {
			t.Errorf("%s: topics --config typo: exit %d stderr %q, want a failure naming the key and the hint", backend, r.ExitCode, r.Stderr)
		}
	}
	adminOK(t, "topics", bsArg, "--create", "--topic", "good", "--partitions", "1", "--replication-factor", "1",
		"--config", "retention.ms=60000", "--config", "cleanup.policy=compact,delete")
	c.WaitMetadataLeaders("good", 1, 30*time.Second)
	out := adminOK(t, "topics", zkArg, "--describe", "--topic", "good")
	if !strings.Contains(out, "cleanup.policy=compact,delete") || !strings.Contains(out, "retention.ms=60000") {
		t.Errorf("describe does not show the stored configs:\n%s", out)
	}
}
