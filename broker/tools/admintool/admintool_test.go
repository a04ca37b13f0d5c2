package admintool

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/rcrowley/go-metrics"
	"github.com/sirupsen/logrus"
	"github.com/urfave/cli/v2"

	"github.com/isrbroker/isrbroker/zkcoord"
	"github.com/isrbroker/isrbroker/zkcoord/zktest"
)

// result is one run of the test app: stdout, the one-line error as main prints it, and
// the exit status.
type result struct {
	out, err string
	code     int
}

// run executes args like main does: "isrbroker: <error>" on stderr, status ExitCode(err).
func run(args ...string) result {
	var out bytes.Buffer
	app := &cli.App{
		Name:                      "isrbroker",
		Writer:                    &out,
		ErrWriter:                 &out,
		DisableSliceFlagSeparator: true,
		ExitErrHandler:            func(*cli.Context, error) {},
		Commands:                  Commands(),
	}
	err := app.Run(append([]string{"isrbroker"}, args...))
	r := result{out: out.String(), code: ExitCode(err)}
	if err != nil {
		r.err = "isrbroker: " + oneLine(err.Error())
	}
	return r
}

// env is a ZooKeeper chroot with registered fake brokers (no controller runs: tests write
// partition state znodes the way the controller does).
type env struct {
	t       *testing.T
	zkAddr  string
	chroot  string
	raw     *zk.Conn
	brokers map[int32]*zkcoord.Coordinator
}

func (e *env) connect() string { return e.zkAddr + e.chroot }

func newEnv(t *testing.T, srv *zktest.Server, chroot string, ids ...int32) *env {
	t.Helper()
	raw, _, err := zk.Connect([]string{srv.Addr}, 6*time.Second, zk.WithLogInfo(false), zk.WithLogger(nopLogger{}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(raw.Close)
	e := &env{t: t, zkAddr: srv.Addr, chroot: chroot, raw: raw, brokers: map[int32]*zkcoord.Coordinator{}}
	for _, id := range ids {
		e.startBroker(id)
	}
	return e
}

type nopLogger struct{}

func (nopLogger) Printf(string, ...any) {}

func (e *env) startBroker(id int32) {
	e.t.Helper()
	log := logrus.New()
	log.SetOutput(io.Discard)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := zkcoord.Connect(ctx, zkcoord.Config{
		Connect:        e.connect(),
		SessionTimeout: 6 * time.Second,
		BrokerID:       id,
		Endpoints:      []zkcoord.Endpoint{{Listener: "PLAINTEXT", Host: "127.0.0.1", Port: 19090 + id}},
		Rack:           map[bool]string{true: "r1"}[id == 1],
		Registry:       metrics.NewRegistry(),
		Log:            log,
	})
	if err != nil {
		e.t.Fatal(err)
	}
	if _, err := c.Registrar.Register(ctx); err != nil {
		e.t.Fatal(err)
	}
	e.brokers[id] = c
	e.t.Cleanup(func() { c.Close() })
}

func (e *env) stopBroker(id int32) {
	e.brokers[id].Close()
	delete(e.brokers, id)
}

// setState writes a partition state znode like the controller does.
func (e *env) setState(topic string, p int32, leader int32, isr ...int32) {
	e.t.Helper()
	if isr == nil {
		isr = []int32{}
	}
	data, _ := json.Marshal(map[string]any{"controller_epoch": 1, "leader": leader, "version": 1, "leader_epoch": 0, "isr": isr})
	path := fmt.Sprintf("%s/brokers/topics/%s/partitions/%d/state", e.chroot, topic, p)
	cur := ""
	parts := strings.Split(strings.Trim(path, "/"), "/")
	for i, part := range parts {
		cur += "/" + part
		var d []byte
		if i == len(parts)-1 {
			d = data
		}
		_, err := e.raw.Create(cur, d, 0, zk.WorldACL(zk.PermAll))
		if err == zk.ErrNodeExists && i == len(parts)-1 {
			_, err = e.raw.Set(cur, data, -1)
		}
		if err != nil && err != zk.ErrNodeExists {
			e.t.Fatalf("create %s: %v", cur, err)
		}
	}
}

func (e *env) setController(id, epoch int32) {
	e.t.Helper()
	data := fmt.Sprintf(`{"version":1,"brokerid":%d,"timestamp":"0"}`, id)
	if _, err := e.raw.Create(e.chroot+"/controller", []byte(data), 0, zk.WorldACL(zk.PermAll)); err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.raw.Create(e.chroot+"/controller_epoch", []byte(fmt.Sprint(epoch)), 0, zk.WorldACL(zk.PermAll)); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) znode(path string) string {
	e.t.Helper()
	d, _, err := e.raw.Get(e.chroot + path)
	if err != nil {
		e.t.Fatalf("get %s: %v", path, err)
	}
	return string(d)
}

func mustOK(t *testing.T, r result) string {
	t.Helper()
	if r.code != 0 {
		t.Fatalf("exit %d: %s\n%s", r.code, r.err, r.out)
	}
	return r.out
}

func mustFail(t *testing.T, r result, code int, want string) {
	t.Helper()
	if r.code != code || !strings.Contains(r.err, want) {
		t.Fatalf("want exit %d with %q, got exit %d %q (stdout %q)", code, want, r.code, r.err, r.out)
	}
	if strings.Contains(r.err, "\n") || strings.Contains(r.err, "goroutine") {
		t.Fatalf("error is not one line: %q", r.err)
	}
}

func TestTopicsAndClusterZooKeeper(t *testing.T) {
	srv := zktest.Start(t)
	e := newEnv(t, srv, "/adm", 1, 2, 3)
	zkArg := "--zookeeper=" + e.connect()

	t.Run("create with assignment and config", func(t *testing.T) {
		out := mustOK(t, run("topics", zkArg, "--create", "--topic", "orders", "--replica-assignment", "1:2:3,2:3:1,3:1:2", "--config", "min.insync.replicas=2", "--config", "retention.ms=1000"))
		if out != "Created topic orders.\n" {
			t.Fatalf("output %q", out)
		}
		if got := e.znode("/brokers/topics/orders"); !strings.Contains(got, `"0":[1,2,3]`) || !strings.Contains(got, `"2":[3,1,2]`) {
			t.Fatalf("topic znode %s", got)
		}
		if got := e.znode("/config/topics/orders"); !strings.Contains(got, `"min.insync.replicas":"2"`) {
			t.Fatalf("config znode %s", got)
		}
	})
	t.Run("create with partitions and replication factor", func(t *testing.T) {
		// A fixed assignment: the offline check below needs logs-1 led by broker 3.
		mustOK(t, run("topics", zkArg, "--create", "--topic", "logs", "--replica-assignment", "1:2,3:1"))
		mustFail(t, run("topics", zkArg, "--create", "--topic", "logs", "--partitions", "2", "--replication-factor", "2"), 1, `topic "logs" already exists`)
		mustOK(t, run("topics", zkArg, "--create", "--topic", "logs", "--partitions", "2", "--replication-factor", "2", "--if-not-exists"))
		// Broker 1 has a rack, 2 and 3 none: a computed assignment is refused as Kafka's
		// TopicCommand refuses it (KIP-36), unless --disable-rack-aware ("alter partitions"
		// below adds partitions with it).
		mustFail(t, run("topics", zkArg, "--create", "--topic", "mixed", "--partitions", "1", "--replication-factor", "2"), 1,
			"Not all brokers have rack information. Add --disable-rack-aware in command line to make replica assignment without rack information.")
		mustFail(t, run("topics", zkArg, "--list", "--disable-rack-aware"), 1, "--disable-rack-aware is only valid with --create or --alter and --zookeeper")
		mustFail(t, run("topics", zkArg, "--create", "--topic", "big", "--partitions", "1", "--replication-factor", "4", "--disable-rack-aware"), 1, "replication factor: 4 larger than available brokers: 3")
	})
	t.Run("bad replica assignment", func(t *testing.T) {
		mustFail(t, run("topics", zkArg, "--create", "--topic", "x", "--replica-assignment", "1:2,2:x"), 1, `"x" in partition 1 ("2:x") is not a broker id`)
		mustFail(t, run("topics", zkArg, "--create", "--topic", "x", "--replica-assignment", "1:2,3"), 1, `partition 1 ("3") has 1 replicas`)
		mustFail(t, run("topics", zkArg, "--create", "--topic", "x", "--replica-assignment", "1:1"), 1, "lists broker 1 twice")
		mustFail(t, run("topics", zkArg, "--create", "--topic", "x", "--replica-assignment", "1:7"), 1, "unknown broker 7 in partition 0")
	})
	t.Run("list", func(t *testing.T) {
		if out := mustOK(t, run("topics", zkArg, "--list")); out != "logs\norders\n" {
			t.Fatalf("list %q", out)
		}
	})
	t.Run("describe before the controller wrote states", func(t *testing.T) {
		out := mustOK(t, run("topics", zkArg, "--describe", "--topic", "orders"))
		want := "Topic: orders\tPartitionCount: 3\tReplicationFactor: 3\tConfigs: min.insync.replicas=2,retention.ms=1000\n" +
			"\tTopic: orders\tPartition: 0\tLeader: none\tReplicas: 1,2,3\tIsr: \n" +
			"\tTopic: orders\tPartition: 1\tLeader: none\tReplicas: 2,3,1\tIsr: \n" +
			"\tTopic: orders\tPartition: 2\tLeader: none\tReplicas: 3,1,2\tIsr: \n"
		if out != want {
			t.Fatalf("describe:\n%q\nwant\n%q", out, want)
		}
	})

	// States: orders-0 healthy, orders-1 under-replicated (ISR 2,3), orders-2 under min ISR
	// (ISR 3 < min.insync.replicas=2); logs partitions healthy.
	e.setController(2, 7)
	e.setState("orders", 0, 1, 1, 2, 3)
	e.setState("orders", 1, 2, 2, 3)
	e.setState("orders", 2, 3, 3)
	logsAssign := map[int32][]int32{}
	if err := json.Unmarshal([]byte(e.znode("/brokers/topics/logs")), &struct {
		Partitions *map[int32][]int32 `json:"partitions"`
	}{&logsAssign}); err != nil {
		t.Fatal(err)
	}
	for p, r := range logsAssign {
		e.setState("logs", p, r[0], r...)
	}

	t.Run("describe filters", func(t *testing.T) {
		out := mustOK(t, run("topics", zkArg, "--describe", "--under-replicated-partitions"))
		want := "\tTopic: orders\tPartition: 1\tLeader: 2\tReplicas: 2,3,1\tIsr: 2,3\n" +
			"\tTopic: orders\tPartition: 2\tLeader: 3\tReplicas: 3,1,2\tIsr: 3\n"
		if out != want {
			t.Fatalf("under-replicated:\n%q\nwant\n%q", out, want)
		}
		out = mustOK(t, run("topics", zkArg, "--describe", "--under-min-isr-partitions"))
		if out != "\tTopic: orders\tPartition: 2\tLeader: 3\tReplicas: 3,1,2\tIsr: 3\n" {
			t.Fatalf("under-min-isr: %q", out)
		}
		out = mustOK(t, run("topics", zkArg, "--describe", "--at-min-isr-partitions", "--topic", "orders"))
		if out != "\tTopic: orders\tPartition: 1\tLeader: 2\tReplicas: 2,3,1\tIsr: 2,3\n" {
			t.Fatalf("at-min-isr: %q", out)
		}
		if out = mustOK(t, run("topics", zkArg, "--describe", "--unavailable-partitions")); out != "" {
			t.Fatalf("unavailable: %q", out)
		}
		out = mustOK(t, run("topics", zkArg, "--describe", "--topic", "ord.*"))
		if !strings.HasPrefix(out, "Topic: orders\t") || strings.Count(out, "\n") != 4 {
			t.Fatalf("regex describe: %q", out)
		}
		out = mustOK(t, run("topics", zkArg, "--describe", "--topics-with-overrides"))
		if out != "Topic: orders\tPartitionCount: 3\tReplicationFactor: 3\tConfigs: min.insync.replicas=2,retention.ms=1000\n" {
			t.Fatalf("overrides: %q", out)
		}
	})
	t.Run("cluster", func(t *testing.T) {
		r := run("cluster", zkArg)
		want := "Controller: 2 (epoch 7)\nBrokers:\n" +
			"\t1\tPLAINTEXT://127.0.0.1:19091\track: r1\n" +
			"\t2\tPLAINTEXT://127.0.0.1:19092\track: -\n" +
			"\t3\tPLAINTEXT://127.0.0.1:19093\track: -\n" +
			"Partitions: 5 online: 5 offline: 0 under-replicated: 2 under-min-isr: 1\n"
		if mustOK(t, r) != want {
			t.Fatalf("cluster:\n%q\nwant\n%q", r.out, want)
		}
		mustOK(t, run("cluster", zkArg, "--fail-on-offline"))
		r = run("cluster", zkArg, "--fail-on-under-replicated", "--fail-on-under-min-isr")
		mustFail(t, r, 2, "isrbroker: 2 under-replicated partitions (orders-1, orders-2); 1 under-min-isr partitions (orders-2)")
		if r.out != want {
			t.Fatalf("failing cluster still prints the state: %q", r.out)
		}
		r = run("cluster", zkArg, "--json")
		var st ClusterState
		if err := json.Unmarshal([]byte(mustOK(t, r)), &st); err != nil {
			t.Fatalf("json: %v\n%s", err, r.out)
		}
		if st.Controller.ID != 2 || st.Partitions.Total != 5 || len(st.UnderReplicated) != 2 || len(st.Brokers) != 3 || st.Brokers[0].Rack != "r1" {
			t.Fatalf("json state %+v", st)
		}
	})
	t.Run("offline after a leader's broker dies", func(t *testing.T) {
		e.stopBroker(3) // orders-2's leader; its znode vanishes with the session
		out := mustOK(t, run("topics", zkArg, "--describe", "--unavailable-partitions", "--topic", "orders"))
		if out != "\tTopic: orders\tPartition: 2\tLeader: 3\tReplicas: 3,1,2\tIsr: 3\n" {
			t.Fatalf("unavailable: %q", out)
		}
		mustFail(t, run("cluster", zkArg, "--fail-on-offline"), 2, "2 offline partitions (logs-1, orders-2)")
		e.setState("orders", 2, -1, 3)
		out = mustOK(t, run("topics", zkArg, "--describe", "--unavailable-partitions", "--topic", "orders"))
		if out != "\tTopic: orders\tPartition: 2\tLeader: none\tReplicas: 3,1,2\tIsr: 3\n" {
			t.Fatalf("unavailable after election: %q", out)
		}
		e.startBroker(3)
		if out := mustOK(t, run("cluster", zkArg)); !strings.Contains(out, "\t3\tPLAINTEXT") {
			t.Fatalf("broker 3 not back: %q", out)
		}
	})
	t.Run("alter partitions", func(t *testing.T) {
		mustFail(t, run("topics", zkArg, "--alter", "--topic", "orders", "--partitions", "5"), 1, "Not all brokers have rack information.")
		out := mustOK(t, run("topics", zkArg, "--alter", "--topic", "orders", "--partitions", "5", "--disable-rack-aware"))
		if !strings.HasSuffix(out, "Adding partitions succeeded!\n") {
			t.Fatalf("alter: %q", out)
		}
		got := e.znode("/brokers/topics/orders")
		// Existing kept; new partitions continue the creation layout: start index = position
		// of broker 1 (partition 0's preferred replica) = 0, start partition 3, so partition 3
		// starts at broker 1 with shift 1 (3 % 3 == 0), partition 4 at broker 2.
		for _, want := range []string{`"0":[1,2,3]`, `"1":[2,3,1]`, `"2":[3,1,2]`, `"3":[1,3,2]`, `"4":[2,1,3]`} {
			if !strings.Contains(got, want) {
				t.Fatalf("topic znode %s lacks %s", got, want)
			}
		}
		mustFail(t, run("topics", zkArg, "--alter", "--topic", "orders", "--partitions", "5", "--disable-rack-aware"), 1, "currently has 5 partitions")
		mustOK(t, run("topics", zkArg, "--alter", "--topic", "orders", "--partitions", "6", "--replica-assignment", "1:2:3,2:3:1,3:1:2,1:3:2,2:1:3,3:2:1"))
		if got := e.znode("/brokers/topics/orders"); !strings.Contains(got, `"5":[3,2,1]`) {
			t.Fatalf("topic znode %s", got)
		}
		mustFail(t, run("topics", zkArg, "--alter", "--topic", "orders", "--partitions", "7", "--replica-assignment", "1:2:3,2:3:1,3:1:2,1:3:2,2:1:3,3:2:1,1:2"), 1, "partition 6 (\"1:2\") has 2 replicas")
		mustFail(t, run("topics", zkArg, "--alter", "--topic", "nope", "--partitions", "7", "--disable-rack-aware"), 1, `isrbroker: topic "nope" does not exist`)
	})
	t.Run("delete", func(t *testing.T) {
		out := mustOK(t, run("topics", zkArg, "--delete", "--topic", "logs"))
		if !strings.HasPrefix(out, "Topic logs is marked for deletion.\n") {
			t.Fatalf("delete: %q", out)
		}
		e.znode("/admin/delete_topics/logs")
		if out := mustOK(t, run("topics", zkArg, "--list")); out != "logs - marked for deletion\norders\n" {
			t.Fatalf("list %q", out)
		}
		// Topics being deleted are not counted by cluster.
		if out := mustOK(t, run("cluster", zkArg)); !strings.Contains(out, "Partitions: 6 ") {
			t.Fatalf("cluster: %q", out)
		}
		mustFail(t, run("topics", zkArg, "--delete", "--topic", "nope"), 1, `isrbroker: topic "nope" does not exist`)
		mustOK(t, run("topics", zkArg, "--delete", "--topic", "nope", "--if-exists"))
	})
	t.Run("unknown topic", func(t *testing.T) {
		mustFail(t, run("topics", zkArg, "--describe", "--topic", "x"), 1, `isrbroker: topic "x" does not exist`)
	})
	t.Run("wrong chroot", func(t *testing.T) {
		mustFail(t, run("cluster", "--zookeeper", srv.Addr+"/nothing-here"), 1, "holds no isrbroker cluster")
		if ok, _, err := e.raw.Exists("/nothing-here"); err != nil || ok {
			t.Fatalf("the tool created the chroot: %v %v", ok, err)
		}
	})
}

func TestUnreachableZooKeeper(t *testing.T) {
	start := time.Now()
	r := run("topics", "--zookeeper", "127.0.0.1:1", "--zk-timeout", "1s", "--list")
	mustFail(t, r, 1, "isrbroker: cannot reach ZooKeeper at 127.0.0.1:1: no session within 1s")
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("took %v", d)
	}
	mustFail(t, run("cluster", "--zookeeper", "127.0.0.1:1", "--zk-timeout", "1s"), 1, "cannot reach ZooKeeper at 127.0.0.1:1")
}

func TestUsageErrors(t *testing.T) {
	mustFail(t, run("topics", "--zookeeper", "z:1"), 1, "exactly one of --create")
	mustFail(t, run("topics", "--list"), 1, "exactly one of --zookeeper or --bootstrap-server")
	mustFail(t, run("topics", "--zookeeper", "z:1", "--create", "--topic", "t"), 1, "needs --partitions and --replication-factor")
	mustFail(t, run("topics", "--zookeeper", "z:1", "--create", "--topic", "t", "--replica-assignment", "1,,2"), 1, `partition 1 has no replicas`)
	mustFail(t, run("topics", "--zookeeper", "z:1", "--describe", "--config", "a=b"), 1, "--config is only valid with --create")
	mustFail(t, run("cluster"), 1, "--zookeeper is required")
}

func TestHelpHasExamples(t *testing.T) {
	for _, cmd := range []string{"topics", "cluster"} {
		r := run(cmd, "--help")
		if r.code != 0 || !strings.Contains(r.out, "isrbroker "+cmd+" --zookeeper localhost:2181") {
			t.Fatalf("%s --help: %d %q", cmd, r.code, r.out)
		}
	}
}

func TestParseReplicaAssignment(t *testing.T) {
	a, err := parseReplicaAssignment("1:2:3, 2:3:1")
	if err != nil || len(a) != 2 || joinIDs(a[1]) != "2,3,1" {
		t.Fatalf("%v %v", a, err)
	}
	for _, bad := range []string{"", "1:2,", "1::2", "-1", "1:2,1", "a", "99999999999"} {
		if _, err := parseReplicaAssignment(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func FuzzParseReplicaAssignment(f *testing.F) {
	f.Add("1:2:3,2:3:1")
	f.Add(",:,")
	f.Fuzz(func(t *testing.T, s string) { _, _ = parseReplicaAssignment(s) })
}
