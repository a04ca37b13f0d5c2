package admintool

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/isrbroker/isrbroker/zkcoord"
	"github.com/isrbroker/isrbroker/zkcoord/zktest"
)

func waitUntil(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond) // polling interval
	}
}

func (e *env) state(topic string) zkcoord.PartitionState {
	e.t.Helper()
	for _, c := range e.brokers {
		ps, err := c.Reader.PartitionState(topic, 0)
		if err != nil {
			return zkcoord.PartitionState{Leader: -2}
		}
		return ps
	}
	e.t.Fatal("no broker")
	return zkcoord.PartitionState{}
}

func TestLeaderElectionUsageErrors(t *testing.T) {
	z := "--zookeeper=127.0.0.1:1"
	mustFail(t, run("leader-election", "--election-type", "preferred", "--all-topic-partitions"), 1, "exactly one of --zookeeper or --bootstrap-server")
	mustFail(t, run("leader-election", z, "--bootstrap-server=127.0.0.1:1", "--election-type", "preferred", "--all-topic-partitions"), 1, "exactly one of --zookeeper or --bootstrap-server")
	mustFail(t, run("leader-election", z, "--all-topic-partitions"), 1, "--election-type is required")
	mustFail(t, run("leader-election", z, "--election-type", "fancy", "--all-topic-partitions"), 1, `invalid --election-type "fancy"`)
	mustFail(t, run("leader-election", z, "--election-type", "unclean", "--all-topic-partitions"), 1, "--election-type unclean needs --bootstrap-server")
	mustFail(t, run("leader-election", z, "--election-type", "preferred"), 1, "exactly one of --topic with --partition")
	mustFail(t, run("leader-election", z, "--election-type", "preferred", "--all-topic-partitions", "--topic", "t", "--partition", "0"), 1, "exactly one of")
	mustFail(t, run("leader-election", z, "--election-type", "preferred", "--topic", "t"), 1, "--topic and --partition must be given together")
	mustFail(t, run("leader-election", z, "--election-type", "preferred", "--topic", "t", "--partition", "-1"), 1, "invalid --partition -1")
	dir := t.TempDir()
	for name, body := range map[string]string{
		"syntax":    `{"partitions":[`,
		"missing":   `{}`,
		"empty":     `{"partitions":[]}`,
		"topic":     `{"partitions":[{"partition":0}]}`,
		"partition": `{"partitions":[{"topic":"t"}]}`,
		"negative":  `{"partitions":[{"topic":"t","partition":-2}]}`,
		"duplicate": `{"partitions":[{"topic":"t","partition":0},{"topic":"t","partition":0}]}`,
	} {
		p := filepath.Join(dir, name+".json")
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		mustFail(t, run("leader-election", z, "--election-type", "preferred", "--path-to-json-file", p), 1, "invalid --path-to-json-file")
	}
	mustFail(t, run("leader-election", z, "--election-type", "preferred", "--path-to-json-file", filepath.Join(dir, "absent.json")), 1, "cannot read --path-to-json-file")
	r := run("leader-election", "--help")
	if r.code != 0 || !strings.Contains(r.out, "isrbroker leader-election --zookeeper localhost:2181 --election-type preferred") {
		t.Fatalf("help: %d %q", r.code, r.out)
	}
}

// TestLeaderElectionPreferred runs the command against a real controller (broker 1;
// brokers are ZooKeeper registrations only, so LeaderAndIsr goes nowhere): a partition led
// by another replica after its preferred replica returned and rejoined the ISR gets its
// preferred leader back; then it is a no-op; a preferred replica outside the ISR is
// reported and fails the command; unknown topics and partitions are one-line errors.
func TestLeaderElectionPreferred(t *testing.T) {
	srv := zktest.Start(t)
	e := newEnv(t, srv, "/le", 1, 2, 3)
	e.brokers[1].StartController()
	waitUntil(t, 10*time.Second, "controller", e.brokers[1].IsController)
	zkArg := "--zookeeper=" + e.connect()
	ctx := context.Background()
	for name, a := range map[string][]int32{"t": {2, 1, 3}, "n": {2, 3}, "ok": {1, 2}} {
		if _, err := e.brokers[1].Admin.CreateTopic(ctx, zkcoord.TopicSpec{Name: name, Assignment: map[int32][]int32{0: a}}, false); err != nil {
			t.Fatal(err)
		}
		waitUntil(t, 10*time.Second, name+" online", func() bool { return e.state(name).Leader == a[0] })
	}
	// Broker 2 fails and returns: t-0 is led by 1, n-0 by 3. Broker 1 (t-0's leader) adds
	// broker 2 back to the ISR; broker 3 (n-0's) does not.
	e.stopBroker(2)
	waitUntil(t, 10*time.Second, "t-0 led by 1", func() bool { return e.state("t").Leader == 1 && len(e.state("t").ISR) == 2 })
	waitUntil(t, 10*time.Second, "n-0 led by 3", func() bool { return e.state("n").Leader == 3 })
	e.startBroker(2)
	st := e.state("t")
	if _, err := e.brokers[1].IsrWriter.UpdateLeaderAndIsr("t", 0, st.Leader, st.LeaderEpoch, append(slices.Clone(st.ISR), 2), st.ControllerEpoch, st.ZkVersion); err != nil {
		t.Fatal(err)
	}

	out := mustOK(t, run("leader-election", zkArg, "--election-type", "preferred", "--topic", "t", "--partition", "0"))
	if out != "Successfully completed leader election (PREFERRED) for partitions t-0\n" {
		t.Fatalf("output %q", out)
	}
	if got := e.state("t"); got.Leader != 2 || got.LeaderEpoch != st.LeaderEpoch+1 {
		t.Fatalf("t-0 after the election: %+v (before %+v)", got, st)
	}
	if ok, _, err := e.raw.Exists(e.chroot + "/admin/preferred_replica_election"); err != nil || ok {
		t.Fatalf("request znode still there: %v %v", ok, err)
	}

	out = mustOK(t, run("leader-election", zkArg, "--election-type", "PREFERRED", "--topic", "t", "--partition", "0"))
	if out != "Valid replica already elected for partitions t-0\n" {
		t.Fatalf("second run output %q", out)
	}

	r := run("leader-election", zkArg, "--election-type", "preferred", "--all-topic-partitions")
	mustFail(t, r, 1, "1 preferred replica(s) could not be elected")
	want := "Valid replica already elected for partitions ok-0, t-0\n" +
		"Preferred replica not available for partition n-0: preferred replica 2 is not in the ISR [3]\n"
	if !strings.HasPrefix(r.out, want) {
		t.Fatalf("--all-topic-partitions output %q, want %q", r.out, want)
	}

	// With broker 2 gone, the reason is that it is not live.
	e.stopBroker(2)
	waitUntil(t, 10*time.Second, "t-0 led by 1 again", func() bool { return e.state("t").Leader == 1 })
	file := filepath.Join(t.TempDir(), "elect.json")
	if err := os.WriteFile(file, []byte(`{"partitions":[{"topic":"t","partition":0}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	r = run("leader-election", zkArg, "--election-type", "preferred", "--path-to-json-file", file)
	mustFail(t, r, 1, "1 preferred replica(s) could not be elected")
	if !strings.Contains(r.out, "Preferred replica not available for partition t-0: preferred replica 2 is not live") {
		t.Fatalf("output %q", r.out)
	}

	mustFail(t, run("leader-election", zkArg, "--election-type", "preferred", "--topic", "x", "--partition", "0"), 1, `isrbroker: topic "x" does not exist`)
	mustFail(t, run("leader-election", zkArg, "--election-type", "preferred", "--topic", "t", "--partition", "4"), 1, "partition t-4 does not exist")
}

// TestLeaderElectionWithoutController: without a controller the command gives up after
// --timeout, and the pending request makes the next run fail with Kafka's message.
func TestLeaderElectionWithoutController(t *testing.T) {
	srv := zktest.Start(t)
	e := newEnv(t, srv, "/nc", 1, 2)
	if _, err := e.brokers[1].Admin.CreateTopic(context.Background(), zkcoord.TopicSpec{Name: "t", Assignment: map[int32][]int32{0: {2, 1}}}, false); err != nil {
		t.Fatal(err)
	}
	e.setState("t", 0, 1, 1, 2)
	zkArg := "--zookeeper=" + e.connect()
	start := time.Now()
	mustFail(t, run("leader-election", zkArg, "--election-type", "preferred", "--topic", "t", "--partition", "0", "--timeout", "1s"),
		1, "the controller did not complete the preferred replica election within 1s")
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("took %v", d)
	}
	if got := e.znode("/admin/preferred_replica_election"); got != `{"version":1,"partitions":[{"topic":"t","partition":0}]}` {
		t.Fatalf("request znode %s", got)
	}
	mustFail(t, run("leader-election", zkArg, "--election-type", "preferred", "--topic", "t", "--partition", "0"),
		1, "There is an existing preferred replica election in progress")
	if err := e.raw.Delete(e.chroot+"/admin/preferred_replica_election", -1); err != nil && err != zk.ErrNoNode {
		t.Fatal(err)
	}
}
