package cluster

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

func TestMetricSamples(t *testing.T) {
	text := strings.Join([]string{
		"# HELP kafka_controller_kafkacontroller_activecontrollercount x",
		"# TYPE kafka_controller_kafkacontroller_activecontrollercount gauge",
		"kafka_controller_kafkacontroller_activecontrollercount 1",
		"# TYPE kafka_server_brokertopicmetrics_bytesin_total counter",
		`kafka_server_brokertopicmetrics_bytesin_total{topic="a"} 10`,
		`kafka_server_brokertopicmetrics_bytesin_total{topic="b b"} 2.5e3`,
		"# TYPE kafka_network_requestmetrics_totaltimems summary",
		`kafka_network_requestmetrics_totaltimems{request="Produce",quantile="0.99"} 3.5`,
		`kafka_network_requestmetrics_totaltimems_sum{request="Produce"} 12`,
		`kafka_network_requestmetrics_totaltimems_count{request="Produce"} 4`,
	}, "\n") + "\n"
	if got := MetricSamples(text, "kafka_controller_kafkacontroller_activecontrollercount"); !reflect.DeepEqual(got, []float64{1}) {
		t.Errorf("gauge samples %v, want [1]", got)
	}
	if got := MetricSamples(text, "kafka_server_brokertopicmetrics_bytesin_total"); !reflect.DeepEqual(got, []float64{10, 2500}) {
		t.Errorf("labelled samples %v, want [10 2500]", got)
	}
	if got := MetricSamples(text, "kafka_network_requestmetrics_totaltimems_count"); !reflect.DeepEqual(got, []float64{4}) {
		t.Errorf("summary count %v, want [4]", got)
	}
	mfs, err := ParseMetrics(text)
	if err != nil {
		t.Fatal(err)
	}
	if v, n, ok := SummaryQuantile(mfs, "kafka_network_requestmetrics_totaltimems", map[string]string{"request": "Produce"}, 0.99); !ok || v != 3.5 || n != 4 {
		t.Errorf("p99 %v count %d ok %v", v, n, ok)
	}
	// Text the parser refuses gives no samples.
	if got := MetricSamples(text+"garbage{\n", "kafka_server_brokertopicmetrics_bytesin_total"); got != nil {
		t.Errorf("unparsable text: %v", got)
	}
	if got := MetricSamples(text, "absent"); got != nil {
		t.Errorf("absent metric: %v", got)
	}
}

func TestPoll(t *testing.T) {
	n := 0
	ok, _ := Poll(5*time.Second, func() (bool, string) { n++; return n == 3, "" })
	if !ok || n != 3 {
		t.Errorf("Poll: ok=%v after %d calls, want true after 3", ok, n)
	}
	ok, msg := Poll(120*time.Millisecond, func() (bool, string) { return false, "never" })
	if ok || msg != "never" {
		t.Errorf("Poll of a false condition: ok=%v msg=%q", ok, msg)
	}
}

func TestModuleRootAndFreePort(t *testing.T) {
	root, err := ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "tests", "cluster")); err != nil {
		t.Errorf("module root %s does not hold tests/cluster: %v", root, err)
	}
	seen := map[int]bool{}
	for i := 0; i < 20; i++ {
		p, err := FreePort()
		if err != nil || p <= 0 || seen[p] {
			t.Fatalf("FreePort: %d %v (seen %v)", p, err, seen[p])
		}
		seen[p] = true
	}
}

// standIn is a shell script used as the broker binary: it prints its arguments, exits 3 on
// SIGTERM and otherwise runs until killed.
const standIn = `#!/bin/sh
echo "stand-in broker args: $*"
echo "stand-in stderr line" >&2
trap 'echo "got TERM"; exit 3' TERM
while :; do sleep 0.05; done
`

// The harness's process handling and ZooKeeper readers, checked with a stand-in binary and a real
// ZooKeeper (no isrbroker needed).
func TestHarnessWithStandInBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("starts ZooKeeper: skipped with -short")
	}
	bin := filepath.Join(t.TempDir(), "stand-in")
	if err := os.WriteFile(bin, []byte(standIn), 0o755); err != nil {
		t.Fatal(err)
	}
	if os.Getenv("ISRBROKER_BIN") == "" {
		build.once.Do(func() { build.path = bin })
	}
	if Binary(t) != bin {
		t.Skip("the broker binary was already chosen in this process")
	}
	c := Start(t, Options{Brokers: 2, NoWait: true, Overrides: map[string]string{"num.partitions": "6"}})

	WaitFor(t, 10*time.Second, func() (bool, string) {
		out := c.Broker(1).Output()
		return strings.Contains(out, "stand-in stderr line") && strings.Contains(out, "--override num.partitions=6"), out
	})
	props, err := os.ReadFile(c.Broker(2).ConfigPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"broker.id=2", "listeners=PLAINTEXT://" + c.Broker(2).Addr, "zookeeper.connect=" + c.ZK.Addr, "log.dirs=" + c.Broker(2).LogDir} {
		if !strings.Contains(string(props), want+"\n") {
			t.Errorf("server.properties lacks %q:\n%s", want, props)
		}
	}

	b1 := c.Broker(1)
	b1.Pause()
	b1.Resume()
	if !b1.Running() {
		t.Fatal("broker 1 not running after SIGSTOP/SIGCONT")
	}
	b1.Kill()
	if b1.Running() {
		t.Fatal("broker 1 running after Kill")
	}
	b1.Restart()
	if !b1.Running() || !strings.Contains(b1.Output(), "start #2 of broker 1") {
		t.Fatalf("restart: running=%v output:\n%s", b1.Running(), b1.Output())
	}
	WaitFor(t, 10*time.Second, func() (bool, string) {
		return strings.Contains(b1.OutputSince(), "stand-in broker args"), b1.OutputSince()
	})
	if code := c.Broker(2).Terminate(); code != 3 {
		t.Errorf("Terminate: exit code %d, want 3 from the TERM trap", code)
	}

	// ZooKeeper readers against hand-written Kafka JSON.
	if ids, err := c.ZK.RegisteredBrokers(); err != nil || len(ids) != 0 {
		t.Errorf("RegisteredBrokers on an empty ZooKeeper: %v %v", ids, err)
	}
	if id, err := c.ZK.ControllerID(); err != nil || id != -1 {
		t.Errorf("ControllerID with no controller: %d %v", id, err)
	}
	zc := c.ZK.Conn()
	for _, n := range []struct{ path, data string }{
		{"/brokers", ""}, {"/brokers/ids", ""}, {"/brokers/ids/2", "{}"}, {"/brokers/ids/1", "{}"},
		{"/brokers/topics", ""},
		{"/brokers/topics/t", `{"version":2,"partitions":{"0":[2,1],"1":[1,2]},"adding_replicas":{},"removing_replicas":{}}`},
		{"/brokers/topics/t/partitions", ""}, {"/brokers/topics/t/partitions/1", ""},
		{"/brokers/topics/t/partitions/1/state", `{"controller_epoch":3,"leader":1,"version":1,"leader_epoch":7,"isr":[1,2]}`},
		{"/controller", `{"version":1,"brokerid":2,"timestamp":"1700000000000"}`},
		{"/controller_epoch", "3"},
	} {
		if _, err := zc.Create(n.path, []byte(n.data), 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatalf("create %s: %v", n.path, err)
		}
	}
	if ids, err := c.ZK.RegisteredBrokers(); err != nil || !reflect.DeepEqual(ids, []int32{1, 2}) {
		t.Errorf("RegisteredBrokers = %v %v, want [1 2]", ids, err)
	}
	if a, err := c.ZK.TopicAssignment("t"); err != nil || !reflect.DeepEqual(a, map[int32][]int32{0: {2, 1}, 1: {1, 2}}) {
		t.Errorf("TopicAssignment = %v %v", a, err)
	}
	created := time.Now()
	st, err := c.ZK.PartitionState("t", 1)
	// Modified is the znode's mtime, set by ZooKeeper when the state was written above.
	if d := st.Modified.Sub(created); err == nil && (d > time.Minute || d < -time.Minute) {
		t.Errorf("PartitionState.Modified = %v, want about %v (the state's write)", st.Modified, created)
	}
	st.Modified = time.Time{}
	want := PartitionState{ControllerEpoch: 3, Leader: 1, Version: 1, LeaderEpoch: 7, ISR: []int32{1, 2}, ZkVersion: 0}
	if err != nil || !reflect.DeepEqual(st, want) {
		t.Errorf("PartitionState = %+v %v, want %+v", st, err, want)
	}
	if id, epoch := c.ZK.WaitController(time.Second); id != 2 || epoch != 3 {
		t.Errorf("WaitController = %d, %d; want 2, 3", id, epoch)
	}
}
