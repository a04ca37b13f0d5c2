package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/isrbroker/isrbroker/zkcoord/zktest"
	"github.com/twmb/franz-go/pkg/kadm"
)

// Options shape a test cluster. The zero value is three brokers with ids 1..3.
type Options struct {
	// Brokers is the number of broker processes (ids 1..Brokers); default 3.
	Brokers int
	// SessionTimeout is zookeeper.session.timeout.ms for every broker; default 6 s (Kafka 2.4's
	// default). Kill tests use about 4 s so a dead broker's znode goes away quickly.
	SessionTimeout time.Duration
	// Overrides are passed to every broker as `--override key=value`.
	Overrides map[string]string
	// BrokerOverrides add per-broker overrides (they win over Overrides). In both, AddrToken
	// stands for the broker's harness address (its PLAINTEXT listener, Broker.Addr), so a test
	// can add listeners beside it: "listeners": "PLAINTEXT://" + AddrToken + ",SASL_PLAINTEXT://...".
	BrokerOverrides map[int32]map[string]string
	// NoWait skips waiting for every broker's /brokers/ids registration in Start.
	NoWait bool
	// OwnAddresses gives broker id its own loopback address OwnAddress(id) = 127.0.0.(10+id): its
	// listener host, and (isrbroker.local.address) the source address of its outgoing
	// connections, so iptables rules can cut the link between two brokers (docs/reliability.md, fault matrix).
	OwnAddresses bool
	// BeforeBrokers, when set, runs once ZooKeeper is up and before any broker starts: a test
	// writes what the brokers must find at start-up (SCRAM credentials in /config/users for an
	// inter-broker SCRAM login, ACLs).
	BeforeBrokers func(z *ZooKeeper)
}

// AddrToken in an override value is replaced by the broker's harness address (Broker.Addr).
const AddrToken = "{addr}"

// StartTimeout bounds how long a broker may take to register in ZooKeeper. A restarted broker
// whose earlier process was killed may wait up to one session timeout for its old znode to expire.
const StartTimeout = 45 * time.Second

// Cluster is one running test cluster: a ZooKeeper and broker processes. Its own methods are
// the client side (Client, Admin, CreateTopic, ...) and the checks over every broker; the roles
// have types of their own: ZK (the ZooKeeper process and the znodes read from it), Broker(id)
// (one broker process and the requests sent to it alone) and Groups (consumer groups).
type Cluster struct {
	ZK     *ZooKeeper
	Groups *Groups

	t    testing.TB
	bin  string
	dir  string
	opts Options

	mu      sync.Mutex
	brokers map[int32]*Broker
	ids     []int32
	clients []closer // kgo clients to close at cleanup
	admin   *kadm.Client
}

// closer is anything with Close(); kgo clients are registered for cleanup.
type closer interface{ Close() }

// Start starts a ZooKeeper (zktest) and opts.Brokers broker processes, and waits until every
// broker is registered under /brokers/ids (unless opts.NoWait). Everything is stopped in t.Cleanup.
func Start(t testing.TB, opts Options) *Cluster {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test: skipped with -short")
	}
	if opts.Brokers <= 0 {
		opts.Brokers = 3
	}
	if opts.SessionTimeout <= 0 {
		opts.SessionTimeout = 6 * time.Second
	}
	bin := Binary(t)
	zs := zktest.Start(t)
	c := &Cluster{t: t, bin: bin, dir: t.TempDir(), opts: opts, ZK: &ZooKeeper{Server: zs, t: t}, brokers: map[int32]*Broker{}}
	c.Groups = &Groups{c: c}
	// Registered after zktest's and TempDir's cleanups, so it runs before them: brokers die
	// before ZooKeeper and before their directories are removed.
	t.Cleanup(c.cleanup)

	conn, _, err := zk.Connect([]string{zs.Addr}, 10*time.Second, zk.WithLogger(nopLogger{}), zk.WithLogInfo(false))
	if err != nil {
		t.Fatalf("cluster: zk client: %v", err)
	}
	c.ZK.conn = conn
	if opts.BeforeBrokers != nil {
		opts.BeforeBrokers(c.ZK)
	}

	for i := 1; i <= opts.Brokers; i++ {
		id := int32(i)
		b, err := c.newBroker(id)
		if err != nil {
			t.Fatalf("cluster: broker %d: %v", id, err)
		}
		c.brokers[id] = b
		c.ids = append(c.ids, id)
	}
	for _, id := range c.ids {
		c.brokers[id].Start()
	}
	if !opts.NoWait {
		c.WaitRegistered(c.ids...)
	}
	return c
}

func (c *Cluster) newBroker(id int32) (*Broker, error) {
	dir := filepath.Join(c.dir, fmt.Sprintf("broker-%d", id))
	logDir := filepath.Join(dir, "data")
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return nil, err
	}
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	mport, err := FreePort()
	if err != nil {
		return nil, err
	}
	host := "127.0.0.1"
	if c.opts.OwnAddresses {
		host = OwnAddress(id)
	}
	b := &Broker{
		ID:          id,
		Addr:        net.JoinHostPort(host, strconv.Itoa(port)),
		MetricsAddr: fmt.Sprintf("127.0.0.1:%d", mport),
		Dir:         dir,
		LogDir:      logDir,
		ConfigPath:  filepath.Join(dir, "server.properties"),
		OutputPath:  filepath.Join(dir, "output.log"),
		overrides:   map[string]string{},
		t:           c.t,
		bin:         c.bin,
	}
	if c.opts.OwnAddresses {
		b.overrides["isrbroker.local.address"] = host
	}
	for k, v := range c.opts.Overrides {
		b.overrides[k] = strings.ReplaceAll(v, AddrToken, b.Addr)
	}
	for k, v := range c.opts.BrokerOverrides[id] {
		b.overrides[k] = strings.ReplaceAll(v, AddrToken, b.Addr)
	}
	props := strings.Join([]string{
		"# generated by tests/cluster for one test",
		fmt.Sprintf("broker.id=%d", id),
		"listeners=PLAINTEXT://" + b.Addr,
		"log.dirs=" + logDir,
		"zookeeper.connect=" + c.ZK.Addr,
		fmt.Sprintf("zookeeper.session.timeout.ms=%d", c.opts.SessionTimeout.Milliseconds()),
		"metrics.listen=" + b.MetricsAddr,
		"num.partitions=3",
		"default.replication.factor=1",
		"",
	}, "\n")
	if err := os.WriteFile(b.ConfigPath, []byte(props), 0o644); err != nil {
		return nil, err
	}
	return b, nil
}

// Broker returns broker id's slot; the test fails for an unknown id.
func (c *Cluster) Broker(id int32) *Broker {
	c.t.Helper()
	c.mu.Lock()
	b := c.brokers[id]
	c.mu.Unlock()
	if b == nil {
		c.t.Fatalf("cluster: no broker %d", id)
	}
	return b
}

// IDs returns the broker ids of the cluster in order.
func (c *Cluster) IDs() []int32 { return append([]int32(nil), c.ids...) }

// BootstrapAddrs returns every broker's listener address (live or not), as seed brokers.
func (c *Cluster) BootstrapAddrs() []string {
	addrs := make([]string, 0, len(c.ids))
	for _, id := range c.ids {
		addrs = append(addrs, c.brokers[id].Addr)
	}
	return addrs
}

// WaitRegistered waits until every given broker (all brokers when none given) has its
// /brokers/ids/<id> znode. A broker process that exits meanwhile fails the test at once.
func (c *Cluster) WaitRegistered(ids ...int32) {
	c.t.Helper()
	if len(ids) == 0 {
		ids = c.ids
	}
	WaitFor(c.t, StartTimeout, func() (bool, string) {
		for _, id := range ids {
			if b := c.Broker(id); !b.Running() {
				code, _ := b.WaitExit(0)
				c.t.Fatalf("cluster: broker %d exited (code %d) before registering; output:\n%s", id, code, b.Tail(40))
			}
		}
		got, err := c.ZK.RegisteredBrokers()
		if err != nil {
			return false, err.Error()
		}
		have := map[int32]bool{}
		for _, id := range got {
			have[id] = true
		}
		for _, id := range ids {
			if !have[id] {
				return false, fmt.Sprintf("broker %d not registered; /brokers/ids = %v", id, got)
			}
		}
		return true, ""
	})
}

// WaitUnregistered waits until none of the given brokers has a /brokers/ids znode (a killed
// broker's ephemeral znode goes away once its session expires).
func (c *Cluster) WaitUnregistered(timeout time.Duration, ids ...int32) {
	c.t.Helper()
	WaitFor(c.t, timeout, func() (bool, string) {
		got, err := c.ZK.RegisteredBrokers()
		if err != nil {
			return false, err.Error()
		}
		for _, g := range got {
			for _, id := range ids {
				if g == id {
					return false, fmt.Sprintf("broker %d still registered; /brokers/ids = %v", id, got)
				}
			}
		}
		return true, ""
	})
}

func (c *Cluster) cleanup() {
	c.mu.Lock()
	clients := c.clients
	c.clients = nil
	c.mu.Unlock()
	for i := len(clients) - 1; i >= 0; i-- {
		clients[i].Close()
	}
	for _, id := range c.ids {
		c.brokers[id].kill()
	}
	c.ZK.close()
	if c.t.Failed() || os.Getenv("ISRBROKER_TEST_LOGS") == "1" {
		for _, id := range c.ids {
			c.t.Logf("---- broker %d output (last 80 lines of %s) ----\n%s", id, c.brokers[id].OutputPath, c.brokers[id].Tail(80))
		}
	}
}

// track registers a client to be closed at cleanup.
func (c *Cluster) track(x closer) {
	c.mu.Lock()
	c.clients = append(c.clients, x)
	c.mu.Unlock()
}

var ports struct {
	mu   sync.Mutex
	used map[int]bool
}

// FreePort returns a currently free TCP port on 127.0.0.1, never the same one twice in a process.
func FreePort() (int, error) {
	ports.mu.Lock()
	defer ports.mu.Unlock()
	if ports.used == nil {
		ports.used = map[int]bool{}
	}
	for i := 0; i < 100; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		port := l.Addr().(*net.TCPAddr).Port
		_ = l.Close()
		if !ports.used[port] {
			ports.used[port] = true
			return port, nil
		}
	}
	return 0, errors.New("cluster: no free port")
}

// RunResult is the outcome of one RunBinary call.
type RunResult struct {
	Stdout, Stderr string
	ExitCode       int  // -1 when killed by a signal or timed out
	TimedOut       bool // still running at the deadline (then killed)
}

// RunBinary runs the isrbroker binary with args in dir (a temp dir when empty) and waits up to
// timeout for it to end; a process still running then is killed (its group only).
func RunBinary(t testing.TB, dir string, timeout time.Duration, args ...string) RunResult {
	t.Helper()
	bin := Binary(t)
	if dir == "" {
		dir = t.TempDir()
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	cmd.Env = brokerEnv()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	res := RunResult{Stdout: stdout.String(), Stderr: stderr.String()}
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
		res.TimedOut, res.ExitCode = true, -1
	case errors.As(err, &ee):
		res.ExitCode = ee.ExitCode()
	case err != nil:
		t.Fatalf("cluster: run isrbroker: %v", err)
	}
	return res
}

// Itoa32 formats a broker id or partition for znode paths.
func Itoa32(v int32) string { return strconv.FormatInt(int64(v), 10) }

type nopLogger struct{}

func (nopLogger) Printf(string, ...any) {}
