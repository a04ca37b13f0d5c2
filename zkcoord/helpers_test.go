package zkcoord

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/isrbroker/isrbroker/zkcoord/zkclient"

	"github.com/go-zookeeper/zk"
	"github.com/isrbroker/isrbroker/broker/kproto"
	"github.com/isrbroker/isrbroker/zkcoord/zktest"
	"github.com/rcrowley/go-metrics"
	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// fakeBroker is a tiny Kafka-protocol listener that records the controller's requests and
// answers each with an empty, successful response.
type fakeBroker struct {
	ln   net.Listener
	mu   sync.Mutex
	reqs []kmsg.Request
	code int16 // error code for every answer
}

func newFakeBroker(t testing.TB) *fakeBroker {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeBroker{ln: ln}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go f.serve(t, c)
		}
	}()
	return f
}

func (f *fakeBroker) port() int32 { return int32(f.ln.Addr().(*net.TCPAddr).Port) }

func (f *fakeBroker) serve(t testing.TB, c net.Conn) {
	defer c.Close()
	for {
		frame, err := kproto.ReadFrame(c, 1<<24)
		if err != nil {
			return
		}
		h, body, err := kproto.ParseHeader(frame, kproto.IsFlexible)
		if err != nil {
			t.Errorf("fake broker: header: %v", err)
			return
		}
		req := kmsg.RequestForKey(h.Key)
		if req == nil {
			t.Errorf("fake broker: unknown key %d", h.Key)
			return
		}
		req.SetVersion(h.Version)
		if err := req.ReadFrom(body); err != nil {
			t.Errorf("fake broker: decode key %d v%d: %v", h.Key, h.Version, err)
			return
		}
		f.mu.Lock()
		f.reqs = append(f.reqs, req)
		code := f.code
		f.mu.Unlock()
		resp := req.ResponseKind()
		switch r := resp.(type) {
		case *kmsg.LeaderAndISRResponse:
			r.ErrorCode = code
		case *kmsg.UpdateMetadataResponse:
			r.ErrorCode = code
		case *kmsg.StopReplicaResponse:
			// A broker answers for every requested partition (the controller deletes a topic
			// only when each replica answered without an error).
			r.ErrorCode = code
			for _, t := range req.(*kmsg.StopReplicaRequest).Topics {
				for _, p := range t.Partitions {
					rp := kmsg.NewStopReplicaResponsePartition()
					rp.Topic, rp.Partition, rp.ErrorCode = t.Topic, p, code
					r.Partitions = append(r.Partitions, rp)
				}
			}
		}
		if _, err := c.Write(kproto.AppendResponse(nil, h.CorrelationID, resp)); err != nil {
			return
		}
	}
}

func (f *fakeBroker) requests() []kmsg.Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]kmsg.Request(nil), f.reqs...)
}

// find returns the first recorded request satisfying match.
func (f *fakeBroker) find(match func(kmsg.Request) bool) kmsg.Request {
	for _, r := range f.requests() {
		if match(r) {
			return r
		}
	}
	return nil
}

func waitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond) // polling interval
	}
}

func testLogger(t testing.TB) logrus.FieldLogger {
	l := logrus.New()
	l.SetLevel(logrus.WarnLevel)
	if testing.Verbose() {
		l.SetLevel(logrus.DebugLevel)
	}
	return l
}

func testConfig(t testing.TB, zkAddr string, id int32, port int32) Config {
	return Config{
		Connect:                      zkAddr,
		SessionTimeout:               4 * time.Second,
		BrokerID:                     id,
		Endpoints:                    []Endpoint{{Listener: "PLAINTEXT", Host: "127.0.0.1", Port: port, SecurityProtocol: "PLAINTEXT"}},
		ControllerSocketTimeout:      2 * time.Second,
		DeleteTopicEnable:            true,
		Registry:                     metrics.NewRegistry(),
		Log:                          testLogger(t),
		IsrChangePropagationInterval: 50 * time.Millisecond,
		IsrChangePropagationBlackOut: 100 * time.Millisecond,
		IsrChangeMaxDelay:            time.Second,
	}
}

func connectT(t testing.TB, cfg Config) *Coordinator {
	t.Helper()
	c, err := Connect(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// rawZK opens a plain client for reading znodes byte for byte.
func rawZK(t testing.TB, addr string) *zk.Conn {
	conn, _, err := zk.Connect([]string{addr}, 4*time.Second, zk.WithLogInfo(false), zk.WithLogger(zkclient.Logger{L: testLogger(t)}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	return conn
}

func readJSON(t testing.TB, conn *zk.Conn, path string) (map[string]any, *zk.Stat) {
	t.Helper()
	var data []byte
	var st *zk.Stat
	waitFor(t, 10*time.Second, "znode "+path, func() bool {
		var err error
		data, st, err = conn.Get(path)
		return err == nil
	})
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatalf("%s: %q: %v", path, data, err)
	}
	return m, st
}

// cuttableDialer lets a test sever a client's ZooKeeper connection and refuse reconnects,
// which is what a killed or isolated process looks like to the server.
type cuttableDialer struct {
	mu    sync.Mutex
	cut   bool
	conns []net.Conn
}

func (d *cuttableDialer) dial(network, addr string, timeout time.Duration) (net.Conn, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cut {
		return nil, errors.New("cut")
	}
	c, err := net.DialTimeout(network, addr, timeout)
	if err == nil {
		d.conns = append(d.conns, c)
	}
	return c, err
}

func (d *cuttableDialer) setCut(cut bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.cut = cut
	if cut {
		for _, c := range d.conns {
			c.Close()
		}
		d.conns = nil
	}
}

func startZK(t *testing.T) *zktest.Server {
	t.Helper()
	return zktest.Start(t)
}

// testCluster is a real ZooKeeper with brokers 1..n, each a Coordinator whose endpoint is a
// fake listener that records the controller's requests: broker 1 registers and is the
// controller, brokers 2..n only register.
type testCluster struct {
	srv    *zktest.Server
	fbs    map[int32]*fakeBroker
	cfgs   map[int32]Config
	coord  map[int32]*Coordinator
	epochs map[int32]int64 // broker epoch of each registration
}

// startCluster starts a testCluster of n brokers and waits until broker 1 is the controller.
func startCluster(t *testing.T, n int32) *testCluster {
	t.Helper()
	return startClusterWith(t, n, nil)
}

// startClusterWith is startCluster with tune, when not nil, adjusting each broker's config
// before it connects.
func startClusterWith(t *testing.T, n int32, tune func(id int32, cfg *Config)) *testCluster {
	t.Helper()
	tc := &testCluster{
		srv:    startZK(t),
		fbs:    map[int32]*fakeBroker{},
		cfgs:   map[int32]Config{},
		coord:  map[int32]*Coordinator{},
		epochs: map[int32]int64{},
	}
	// The listeners first: they close after the coordinators (cleanups run in reverse).
	for id := int32(1); id <= n; id++ {
		tc.fbs[id] = newFakeBroker(t)
	}
	for id := int32(1); id <= n; id++ {
		cfg := testConfig(t, tc.srv.Addr, id, tc.fbs[id].port())
		if tune != nil {
			tune(id, &cfg)
		}
		tc.cfgs[id] = cfg
		if id == 1 {
			tc.coord[id] = connectT(t, cfg)
			tc.epochs[id] = mustStart(t, tc.coord[id])
			waitFor(t, 10*time.Second, "controller", tc.coord[id].IsController)
			continue
		}
		tc.coord[id], tc.epochs[id] = registerT(t, cfg)
	}
	return tc
}

// registerT connects a coordinator for cfg and registers its broker (K1) without starting
// its controller; it returns the broker epoch.
func registerT(t testing.TB, cfg Config) (*Coordinator, int64) {
	t.Helper()
	c := connectT(t, cfg)
	epoch, err := c.Registrar.Register(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return c, epoch
}

// createTopics creates each topic through c, as the admin path does.
func createTopics(t testing.TB, c *Coordinator, specs ...TopicSpec) {
	t.Helper()
	for _, spec := range specs {
		if _, err := c.Admin.CreateTopic(context.Background(), spec, false); err != nil {
			t.Fatal(err)
		}
	}
}
