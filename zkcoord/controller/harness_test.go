package controller

import (
	"context"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/isrbroker/isrbroker/zkcoord/zkclient"
	"github.com/isrbroker/isrbroker/zkcoord/zkdata"
	"github.com/isrbroker/isrbroker/zkcoord/zkmem"
	"github.com/rcrowley/go-metrics"
	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// fakeNet records the controller's requests per target broker and answers each with an
// empty response carrying code (a StopReplica answer names every requested partition, with
// stopErr's code for it). Broker b listens on "b<id>:9092". A held broker records the
// requests but never answers them (each attempt ends with the request's timeout), as a
// broker that crashed before its session expired.
type fakeNet struct {
	mu      sync.Mutex
	reqs    map[int32][]kmsg.Request
	code    int16
	stopErr map[int32]map[TopicPartition]int16 // StopReplica per-partition codes, per broker
	held    map[int32]bool
	// partCode, when set for a broker, is the error its LeaderAndIsr answers give every
	// partition of the request (KAFKA_STORAGE_ERROR from a broker with an offline log dir).
	partCode map[int32]int16
}

// hold makes broker id stop answering (true) or answer again (false).
func (n *fakeNet) hold(id int32, on bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.held == nil {
		n.held = map[int32]bool{}
	}
	n.held[id] = on
}

// failStop makes broker id answer code for tp in its StopReplica responses (0: no error).
func (n *fakeNet) failStop(id int32, tp TopicPartition, code int16) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.stopErr == nil {
		n.stopErr = map[int32]map[TopicPartition]int16{}
	}
	if n.stopErr[id] == nil {
		n.stopErr[id] = map[TopicPartition]int16{}
	}
	n.stopErr[id][tp] = code
}

type fakeConn struct {
	n  *fakeNet
	id int32
}

func (n *fakeNet) dial(_ context.Context, addr, _, _ string, _ time.Duration) (BrokerConn, error) {
	host, _, _ := strings.Cut(addr, ":")
	id, err := strconv.Atoi(strings.TrimPrefix(host, "b"))
	if err != nil {
		return nil, fmt.Errorf("fake net: unknown address %s", addr)
	}
	return &fakeConn{n: n, id: int32(id)}, nil
}

func (c *fakeConn) Request(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	c.n.mu.Lock()
	c.n.reqs[c.id] = append(c.n.reqs[c.id], req)
	code := c.n.code
	pcode, perPartition := c.n.partCode[c.id]
	held := c.n.held[c.id]
	stopErr := maps.Clone(c.n.stopErr[c.id])
	c.n.mu.Unlock()
	if held {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	resp := req.ResponseKind()
	switch r := resp.(type) {
	case *kmsg.LeaderAndISRResponse:
		r.ErrorCode = code
		for _, ts := range req.(*kmsg.LeaderAndISRRequest).TopicStates {
			for _, ps := range ts.PartitionStates {
				p := kmsg.NewLeaderAndISRResponseTopicPartition()
				p.Topic, p.Partition = ts.Topic, ps.Partition
				if perPartition {
					p.ErrorCode = pcode
				}
				r.Partitions = append(r.Partitions, p)
			}
		}
	case *kmsg.UpdateMetadataResponse:
		r.ErrorCode = code
	case *kmsg.StopReplicaResponse:
		r.ErrorCode = code
		for _, t := range req.(*kmsg.StopReplicaRequest).Topics {
			for _, p := range t.Partitions {
				rp := kmsg.NewStopReplicaResponsePartition()
				rp.Topic, rp.Partition = t.Topic, p
				rp.ErrorCode = stopErr[TopicPartition{Topic: t.Topic, Partition: p}]
				if code != 0 {
					rp.ErrorCode = code
				}
				r.Partitions = append(r.Partitions, rp)
			}
		}
	}
	return resp, nil
}

func (c *fakeConn) Close() error { return nil }

// requests returns the requests broker id received, and clears them when reset is set.
func (n *fakeNet) requests(id int32, reset bool) []kmsg.Request {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := append([]kmsg.Request(nil), n.reqs[id]...)
	if reset {
		n.reqs[id] = nil
	}
	return out
}

func (n *fakeNet) resetAll() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.reqs = map[int32][]kmsg.Request{}
}

// harness is an in-memory ZooKeeper with brokers whose controllers are stepped by the test
// on its own goroutine: step drains the controllers' queues (watch events arrive from the
// double's goroutines), so the controllers' state can be read between steps.
type harness struct {
	t    *testing.T
	srv  *zkmem.Server
	net  *fakeNet
	conn map[int32]*zkmem.Conn
	ctl  map[int32]*Controller
	cfg  func(id int32, c *Config)
}

func newHarness(t *testing.T) *harness {
	h := &harness{t: t, srv: zkmem.NewServer(), net: &fakeNet{reqs: map[int32][]kmsg.Request{}},
		conn: map[int32]*zkmem.Conn{}, ctl: map[int32]*Controller{}}
	admin := h.srv.Connect(nil)
	t.Cleanup(admin.Close)
	for _, p := range zkdata.PersistentPaths {
		if err := zkclient.CreateRecursive(admin, p); err != nil {
			t.Fatal(err)
		}
	}
	return h
}

// newActiveHarness registers brokers 1..brokers and returns broker 1's controller once it
// is active.
func newActiveHarness(t *testing.T, brokers int32) (*harness, *Controller) {
	h := newHarness(t)
	for id := int32(1); id <= brokers; id++ {
		h.register(id)
	}
	ct := h.startController(1)
	h.until("active", ct.IsActive)
	return h, ct
}

func testLog(t *testing.T) logrus.FieldLogger {
	l := logrus.New()
	l.SetLevel(logrus.WarnLevel)
	if testing.Verbose() {
		l.SetLevel(logrus.DebugLevel)
	}
	return l
}

// register connects broker id's session and creates its /brokers/ids znode.
func (h *harness) register(id int32) {
	h.t.Helper()
	c := h.srv.Connect(nil)
	h.t.Cleanup(c.Close)
	h.conn[id] = c
	data := zkdata.EncodeBroker([]zkdata.Endpoint{{Listener: "PLAINTEXT", Host: "b" + strconv.Itoa(int(id)), Port: 9092}}, "")
	if _, err := c.Create(zkdata.BrokerIDPath(id), data, zk.FlagEphemeral); err != nil {
		h.t.Fatal(err)
	}
}

// startController creates broker id's controller on its session and runs its election.
func (h *harness) startController(id int32) *Controller {
	cfg := Config{BrokerID: id, DeleteTopicEnable: true, Registry: metrics.NewRegistry(),
		Log: testLog(h.t).WithField("broker", id), Dial: h.net.dial, ControllerSocketTimeout: time.Second}
	if h.cfg != nil {
		h.cfg(id, &cfg)
	}
	ct := New(h.conn[id], cfg)
	h.ctl[id] = ct
	h.t.Cleanup(func() {
		ct.Close()
		ct.resign("test end")
	})
	ct.handle(event{kind: evElect})
	return ct
}

// step handles every queued event of every controller, until no queue has one.
func (h *harness) step() {
	for again := true; again; {
		again = false
		for _, ct := range h.ctl {
			if ct.closed() {
				continue
			}
			for ct.q.Len() > 0 {
				ev, _ := ct.q.Get(ct.done)
				if ev.kind == evShutdown {
					continue
				}
				ct.handle(ev)
				again = true
			}
		}
	}
}

// until steps the controllers until cond holds (watch events arrive asynchronously).
func (h *harness) until(what string, cond func() bool) {
	h.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		h.step()
		if cond() {
			return
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond) // polling interval
	}
}

// active returns the active controller's broker id, -1 if none.
func (h *harness) active() int32 {
	for id, ct := range h.ctl {
		if ct.IsActive() {
			return id
		}
	}
	return -1
}

// kill closes broker id's session (its registration and /controller vanish) and stops its
// controller, as a crash does.
func (h *harness) kill(id int32) {
	if ct := h.ctl[id]; ct != nil {
		ct.Close()
		ct.resign("killed")
		delete(h.ctl, id)
	}
	h.conn[id].Close()
}

func (h *harness) createTopic(topic string, assignment map[int32][]int32, cfg map[string]string) {
	h.t.Helper()
	c := h.srv.Connect(nil)
	defer c.Close()
	if cfg != nil {
		if _, err := c.Create(zkdata.TopicConfigPath(topic), zkdata.EncodeConfig(cfg), 0); err != nil {
			h.t.Fatal(err)
		}
	}
	if _, err := c.Create(zkdata.TopicPath(topic), zkdata.EncodeTopic(assignment), 0); err != nil {
		h.t.Fatal(err)
	}
}

// state reads a partition state znode (nil when absent).
func (h *harness) state(topic string, p int32) *zkdata.PartitionState {
	c := h.srv.Connect(nil)
	defer c.Close()
	data, st, err := c.Get(zkdata.PartitionStatePath(topic, p))
	if err != nil {
		return nil
	}
	ps, err := zkdata.DecodeState(data)
	if err != nil {
		h.t.Fatal(err)
	}
	ps.ZkVersion = st.Version
	return &ps
}

func (h *harness) exists(path string) bool {
	c := h.srv.Connect(nil)
	defer c.Close()
	ok, _, _ := c.Exists(path)
	return ok
}

// write sets (or creates) a znode as an operator tool would.
func (h *harness) write(path string, data []byte) {
	h.t.Helper()
	c := h.srv.Connect(nil)
	defer c.Close()
	if _, err := c.Set(path, data, -1); err == zk.ErrNoNode {
		_, err = c.Create(path, data, 0)
		if err != nil {
			h.t.Fatal(err)
		}
	} else if err != nil {
		h.t.Fatal(err)
	}
}

// checkTransitions fails the test when a state machine saw an invalid transition.
func (h *harness) checkTransitions() {
	h.t.Helper()
	for id, ct := range h.ctl {
		if ct.psm.invalid != 0 || ct.rsm.invalid != 0 {
			h.t.Fatalf("controller %d: %d invalid partition and %d invalid replica transitions", id, ct.psm.invalid, ct.rsm.invalid)
		}
	}
}

// leaderAndIsrs returns the LeaderAndIsr requests broker id received.
func leaderAndIsrs(reqs []kmsg.Request) []*kmsg.LeaderAndISRRequest {
	var out []*kmsg.LeaderAndISRRequest
	for _, r := range reqs {
		if l, ok := r.(*kmsg.LeaderAndISRRequest); ok {
			out = append(out, l)
		}
	}
	return out
}

func stopReplicas(reqs []kmsg.Request) []*kmsg.StopReplicaRequest {
	var out []*kmsg.StopReplicaRequest
	for _, r := range reqs {
		if s, ok := r.(*kmsg.StopReplicaRequest); ok {
			out = append(out, s)
		}
	}
	return out
}
