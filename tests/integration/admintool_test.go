package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/isrbroker/isrbroker/tests/cluster"
)

// Issue 4 (operator CLI): `isrbroker topics` and `isrbroker cluster` through the built binary
// against a live 3-broker cluster.

const adminRunTimeout = 60 * time.Second

func admin(t *testing.T, args ...string) cluster.RunResult {
	t.Helper()
	r := cluster.RunBinary(t, "", adminRunTimeout, args...)
	if r.TimedOut {
		t.Fatalf("isrbroker %s timed out\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.Stdout, r.Stderr)
	}
	return r
}

func adminOK(t *testing.T, args ...string) string {
	t.Helper()
	r := admin(t, args...)
	if r.ExitCode != 0 {
		t.Fatalf("isrbroker %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.ExitCode, r.Stdout, r.Stderr)
	}
	return r.Stdout
}

// requireAdminCommands fails clearly when the binary lacks the admintool commands.
func requireAdminCommands(t *testing.T) {
	t.Helper()
	for _, cmd := range []string{"topics", "cluster"} {
		r := admin(t, cmd, "--help")
		if r.ExitCode != 0 || !strings.Contains(r.Stdout, "--zookeeper") {
			t.Fatalf("the isrbroker binary has no working `%s` command (main.go must add admintool.Commands()): exit %d %s %s",
				cmd, r.ExitCode, r.Stdout, r.Stderr)
		}
	}
}

// Issue 4 items 1, 4, 6: create/alter/describe/delete through --zookeeper and
// --bootstrap-server; then, with a follower SIGSTOPped until the leaders shrink the ISR,
// `topics --describe --under-replicated-partitions` and `cluster --fail-on-under-replicated`
// agree with the leaders' UnderReplicatedPartitions metric, and all agree on 0 after SIGCONT.
func TestAdminToolTopicsAndClusterAgreeWithMetrics(t *testing.T) {
	const lag = 2 * time.Second
	c := cluster.Start(t, cluster.Options{Brokers: 3, SessionTimeout: 12 * time.Second,
		Overrides: map[string]string{"replica.lag.time.max.ms": fmt.Sprint(lag.Milliseconds())}})
	requireAdminCommands(t)
	zkArg := "--zookeeper=" + c.ZK.Addr
	bsArg := "--bootstrap-server=" + strings.Join(c.BootstrapAddrs(), ",")

	// Lifecycle: create with --replica-assignment and --config through ZooKeeper, the
	// controller brings it online; --alter adds a partition the controller brings online too.
	const topic = "adm"
	out := adminOK(t, "topics", zkArg, "--create", "--topic", topic, "--replica-assignment", "1:2:3,2:1:3", "--config", "min.insync.replicas=2")
	if out != "Created topic adm.\n" {
		t.Fatalf("create output %q", out)
	}
	c.WaitMetadataLeaders(topic, 2, 30*time.Second)
	out = adminOK(t, "topics", zkArg, "--alter", "--topic", topic, "--partitions", "3", "--replica-assignment", "1:2:3,2:1:3,1:2:3")
	if !strings.Contains(out, "Adding partitions succeeded!") {
		t.Fatalf("alter output %q", out)
	}
	c.WaitMetadataLeaders(topic, 3, 30*time.Second)
	const urp = "kafka_server_replicamanager_underreplicatedpartitions"
	for p := int32(0); p < 3; p++ {
		c.ZK.WaitPartitionState(topic, p, 30*time.Second, func(st cluster.PartitionState) (bool, string) {
			return len(st.ISR) == 3, "waiting for the full ISR"
		})
	}
	want := "Topic: adm\tPartitionCount: 3\tReplicationFactor: 3\tConfigs: min.insync.replicas=2\n" +
		"\tTopic: adm\tPartition: 0\tLeader: 1\tReplicas: 1,2,3\tIsr: 1,2,3\n" +
		"\tTopic: adm\tPartition: 1\tLeader: 2\tReplicas: 2,1,3\tIsr: 2,1,3\n" +
		"\tTopic: adm\tPartition: 2\tLeader: 1\tReplicas: 1,2,3\tIsr: 1,2,3\n"
	normISR := func(s string) string { // ISR order in the state znode is the leader's choice
		return strings.ReplaceAll(strings.ReplaceAll(s, "Isr: 1,2,3", "Isr: *"), "Isr: 2,1,3", "Isr: *")
	}
	if out := adminOK(t, "topics", zkArg, "--describe", "--topic", topic); normISR(out) != normISR(want) {
		t.Fatalf("describe --zookeeper:\n%s\nwant\n%s", out, want)
	}
	// Through the Kafka protocol the partition lines are the same (configs need
	// DescribeConfigs, which the brokers may not serve, so only the partition lines are compared).
	bsOut := adminOK(t, "topics", bsArg, "--describe", "--topic", topic)
	if i := strings.IndexByte(bsOut, '\n'); i < 0 || normISR(bsOut[i+1:]) != normISR(want[strings.IndexByte(want, '\n')+1:]) {
		t.Fatalf("describe --bootstrap-server:\n%s\nwant partition lines of\n%s", bsOut, want)
	}
	if out := adminOK(t, "topics", bsArg, "--list"); !strings.Contains(out, "adm\n") {
		t.Fatalf("list --bootstrap-server: %q", out)
	}
	r := admin(t, "topics", zkArg, "--describe", "--topic", "nope")
	if r.ExitCode != 1 || strings.TrimSpace(r.Stderr) != `isrbroker: topic "nope" does not exist` {
		t.Fatalf("unknown topic: exit %d stderr %q", r.ExitCode, r.Stderr)
	}
	r = admin(t, "cluster", "--zookeeper", "127.0.0.1:1", "--zk-timeout", "1s")
	if r.ExitCode != 1 || !strings.HasPrefix(r.Stderr, "isrbroker: cannot reach ZooKeeper at 127.0.0.1:1:") || strings.Count(r.Stderr, "\n") != 1 {
		t.Fatalf("unreachable ZooKeeper: exit %d stderr %q", r.ExitCode, r.Stderr)
	}

	// Healthy: nothing under-replicated anywhere.
	if out := adminOK(t, "topics", zkArg, "--describe", "--under-replicated-partitions"); out != "" {
		t.Fatalf("under-replicated while healthy: %q", out)
	}
	out = adminOK(t, "cluster", zkArg, "--fail-on-under-replicated", "--fail-on-offline")
	if !strings.Contains(out, "Partitions: 3 online: 3 offline: 0 under-replicated: 0 under-min-isr: 0") {
		t.Fatalf("cluster while healthy:\n%s", out)
	}
	for _, id := range c.IDs() {
		if !strings.Contains(out, fmt.Sprintf("\t%d\tPLAINTEXT://%s\t", id, c.Broker(id).Addr)) {
			t.Fatalf("cluster output lacks broker %d at %s:\n%s", id, c.Broker(id).Addr, out)
		}
	}

	// Broker 3 leads nothing: SIGSTOP it until the leaders (1 and 2) drop it from every ISR.
	const follower = 3
	metricSum := func() (float64, string) {
		sum := 0.0
		for _, id := range []int32{1, 2} {
			v, err := c.Broker(id).MetricSum(urp)
			if err != nil {
				return -1, err.Error()
			}
			sum += v
		}
		return sum, ""
	}
	stoppedAt := time.Now()
	c.Broker(follower).Pause()
	stopped := true
	defer func() {
		if stopped {
			c.Broker(follower).Resume()
		}
	}()
	// An idle follower whose LEO equals the leader's is never out of sync (Kafka 2.4's
	// isFollowerOutOfSync): write one record to every partition (acks=1) so the leaders' LEO
	// moves past the stopped follower's.
	// Seeded with the running brokers only: a metadata request to the stopped one would hang.
	cl := c.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite(),
		kgo.SeedBrokers(c.Broker(1).Addr, c.Broker(2).Addr))
	for p := int32(0); p < 3; p++ {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: p, Value: []byte("v")}).FirstErr()
		cancel()
		if err != nil {
			t.Fatalf("produce to %s-%d with broker %d stopped: %v", topic, p, follower, err)
		}
	}
	for p := int32(0); p < 3; p++ {
		c.ZK.WaitPartitionState(topic, p, lag*3/2+5*time.Second, func(st cluster.PartitionState) (bool, string) {
			return len(st.ISR) == 2, fmt.Sprintf("ISR %v after SIGSTOP of broker %d", st.ISR, follower)
		})
	}
	t.Logf("ISRs shrank %v after SIGSTOP", time.Since(stoppedAt).Round(time.Millisecond))
	cluster.WaitFor(t, 10*time.Second, func() (bool, string) {
		v, msg := metricSum()
		return v == 3, fmt.Sprintf("UnderReplicatedPartitions on the leaders = %v, want 3 %s", v, msg)
	})
	out = adminOK(t, "topics", zkArg, "--describe", "--under-replicated-partitions")
	if lines := strings.Count(out, "\n"); lines != 3 || strings.Contains(out, "Isr: 1,2,3") {
		t.Fatalf("describe --under-replicated-partitions with broker %d stopped (metric 3):\n%s", follower, out)
	}
	r = admin(t, "cluster", zkArg, "--fail-on-under-replicated")
	if r.ExitCode != 2 || !strings.Contains(r.Stdout, "under-replicated: 3 ") ||
		strings.TrimSpace(r.Stderr) != "isrbroker: 3 under-replicated partitions (adm-0, adm-1, adm-2)" {
		t.Fatalf("cluster --fail-on-under-replicated with broker %d stopped: exit %d\nstdout: %s\nstderr: %s", follower, r.ExitCode, r.Stdout, r.Stderr)
	}
	// min.insync.replicas=2 still holds and every leader is live.
	out = adminOK(t, "cluster", zkArg, "--fail-on-offline", "--fail-on-under-min-isr")
	if !strings.Contains(out, "online: 3 offline: 0 under-replicated: 3 under-min-isr: 0") {
		t.Fatalf("cluster with broker %d stopped:\n%s", follower, out)
	}

	c.Broker(follower).Resume()
	stopped = false
	for p := int32(0); p < 3; p++ {
		c.ZK.WaitPartitionState(topic, p, 60*time.Second, func(st cluster.PartitionState) (bool, string) {
			return len(st.ISR) == 3, "waiting for the follower to rejoin"
		})
	}
	cluster.WaitFor(t, 30*time.Second, func() (bool, string) {
		v, msg := metricSum()
		return v == 0, fmt.Sprintf("UnderReplicatedPartitions on the leaders = %v, want 0 %s", v, msg)
	})
	if out := adminOK(t, "topics", zkArg, "--describe", "--under-replicated-partitions"); out != "" {
		t.Fatalf("under-replicated after SIGCONT: %q", out)
	}
	out = adminOK(t, "cluster", zkArg, "--fail-on-under-replicated")
	if !strings.Contains(out, "under-replicated: 0 ") {
		t.Fatalf("cluster after SIGCONT:\n%s", out)
	}

	// Delete through the Kafka protocol; the controller removes the topic.
	adminOK(t, "topics", bsArg, "--delete", "--topic", topic)
	cluster.WaitFor(t, 30*time.Second, func() (bool, string) {
		out := adminOK(t, "topics", zkArg, "--list")
		return out == "", fmt.Sprintf("topics after delete: %q", out)
	})
}
