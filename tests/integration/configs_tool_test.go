package integration

import (
	"strings"
	"testing"
	"time"

	"github.com/isrbroker/isrbroker/tests/cluster"
)

// `isrbroker configs` round-trips through both backends, for topics, one broker and the
// cluster default, with Kafka's output lines; invalid changes fail naming the key and write
// nothing; `topics --describe --bootstrap-server` shows the configs and judges
// --under-min-isr-partitions by the effective min.insync.replicas (here the cluster default).
func TestConfigsTool_RoundTrip(t *testing.T) {
	c := cluster.Start(t, cluster.Options{Brokers: 1})
	requireAdminCommands(t)
	bs := "--bootstrap-server=" + strings.Join(c.BootstrapAddrs(), ",")
	zkArg := "--zookeeper=" + c.ZK.Addr
	c.CreateTopic("tooled", 1, 1)
	c.CreateTopic("plain", 1, 1)
	c.WaitMetadataLeaders("tooled", 1, 30*time.Second)
	c.WaitMetadataLeaders("plain", 1, 30*time.Second)
	expect := func(out, want string) {
		t.Helper()
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	fails := func(want string, args ...string) {
		t.Helper()
		r := admin(t, args...)
		if r.ExitCode == 0 || !strings.Contains(r.Stderr, want) {
			t.Errorf("%v: exit %d stderr %q, want a failure containing %q", args, r.ExitCode, r.Stderr, want)
		}
	}
	topic := []string{"configs", "--entity-type", "topics", "--entity-name", "tooled"}
	with := func(base []string, extra ...string) []string { return append(append([]string{}, base...), extra...) }

	// Topics: bootstrap alter, both describes.
	expect(adminOK(t, with(topic, bs, "--alter", "--add-config", "retention.ms=60000,cleanup.policy=[compact,delete]")...),
		"Completed updating config for topic tooled.")
	out := adminOK(t, with(topic, bs, "--describe")...)
	expect(out, "Dynamic configs for topic tooled are:\n")
	expect(out, "  cleanup.policy=compact,delete sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:cleanup.policy=compact,delete, DEFAULT_CONFIG:log.cleanup.policy=delete}\n")
	expect(out, "  retention.ms=60000 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:retention.ms=60000}\n")
	expect(adminOK(t, with(topic, zkArg, "--describe")...), "Configs for topic 'tooled' are cleanup.policy=compact,delete,retention.ms=60000\n")

	// Topics: ZooKeeper alter, bootstrap describe.
	expect(adminOK(t, with(topic, zkArg, "--alter", "--delete-config", "retention.ms", "--add-config", "max.message.bytes=5000")...),
		"Completed Updating config for entity: topic 'tooled'.")
	out = adminOK(t, with(topic, bs, "--describe")...)
	expect(out, "  max.message.bytes=5000 sensitive=false")
	if strings.Contains(out, "retention.ms") {
		t.Errorf("retention.ms still shown after --delete-config:\n%s", out)
	}
	for _, backend := range []string{bs, zkArg} {
		fails("retention.msec", with(topic, backend, "--alter", "--add-config", "retention.msec=1")...)
		fails("segment.bytes", with(topic, backend, "--alter", "--add-config", "segment.bytes=big")...)
		fails("Invalid config(s): segment.ms", with(topic, backend, "--alter", "--delete-config", "segment.ms")...)
	}
	expect(adminOK(t, with(topic, zkArg, "--describe")...), "Configs for topic 'tooled' are cleanup.policy=compact,delete,max.message.bytes=5000\n")

	// One broker.
	b1 := []string{"configs", "--entity-type", "brokers", "--entity-name", "1"}
	expect(adminOK(t, with(b1, bs, "--alter", "--add-config", "log.cleaner.threads=2")...), "Completed updating config for broker 1.")
	expect(adminOK(t, with(b1, zkArg, "--describe")...), "Configs for brokers '1' are log.cleaner.threads=2\n")
	expect(adminOK(t, with(b1, bs, "--describe")...), "Dynamic configs for broker 1 are:\n  log.cleaner.threads=2 sensitive=false synonyms={DYNAMIC_BROKER_CONFIG:log.cleaner.threads=2, DEFAULT_CONFIG:log.cleaner.threads=1}\n")
	// --all (KIP-524): static and default entries too; the harness sets log.dirs statically.
	out = adminOK(t, with(b1, bs, "--describe", "--all")...)
	expect(out, "All configs for broker 1 are:\n")
	expect(out, "  log.cleaner.threads=2 sensitive=false synonyms={DYNAMIC_BROKER_CONFIG:log.cleaner.threads=2, DEFAULT_CONFIG:log.cleaner.threads=1}\n")
	expect(out, " synonyms={STATIC_BROKER_CONFIG:log.dirs=")
	fails("--all is only valid with --describe and --bootstrap-server", with(b1, zkArg, "--describe", "--all")...)
	fails("log.dirs", with(b1, bs, "--alter", "--add-config", "log.dirs=/elsewhere")...)
	fails("--bootstrap-server option must be specified", with(b1, zkArg, "--alter", "--add-config", "log.cleaner.threads=3")...)
	expect(adminOK(t, with(b1, zkArg, "--alter", "--add-config", "leader.replication.throttled.rate=1048576")...),
		"Completed Updating config for entity: brokers '1'.")
	expect(adminOK(t, with(b1, zkArg, "--describe")...), "Configs for brokers '1' are leader.replication.throttled.rate=1048576,log.cleaner.threads=2\n")

	// The cluster default.
	dflt := []string{"configs", "--entity-type", "brokers", "--entity-default"}
	expect(adminOK(t, with(dflt, bs, "--alter", "--add-config", "min.insync.replicas=2")...), "Completed updating default config for brokers in the cluster.")
	expect(adminOK(t, with(dflt, zkArg, "--alter", "--add-config", "follower.replication.throttled.rate=1000")...), "Completed Updating config for entity: default brokers.")
	expect(adminOK(t, with(dflt, zkArg, "--describe")...), "Configs for default brokers are follower.replication.throttled.rate=1000,min.insync.replicas=2\n")
	out = adminOK(t, with(dflt, bs, "--describe")...)
	expect(out, "Default configs for brokers in the cluster are:\n")
	expect(out, "  min.insync.replicas=2 sensitive=false synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:min.insync.replicas=2}\n")
	fails("broker id must be specified", with(dflt, bs, "--alter", "--add-config", "listeners=PLAINTEXT://127.0.0.1:1")...)

	// topics --describe through the Kafka protocol: configs, and the effective min ISR (2,
	// from the cluster default) makes the single-replica partitions under min ISR.
	out = adminOK(t, "topics", bs, "--describe", "--topic", "tooled")
	expect(out, "cleanup.policy=compact,delete")
	expect(out, "max.message.bytes=5000")
	out = adminOK(t, "topics", bs, "--describe", "--under-min-isr-partitions")
	expect(out, "Topic: plain\tPartition: 0")
	expect(out, "Topic: tooled\tPartition: 0")
}
