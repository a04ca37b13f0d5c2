package zkcoord

import (
	"context"
	"errors"
	"reflect"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/isrbroker/isrbroker/zkcoord/agent"
	"github.com/isrbroker/isrbroker/zkcoord/zkclient"
	"github.com/isrbroker/isrbroker/zkcoord/zkdata"

	"github.com/go-zookeeper/zk"
	"github.com/rcrowley/go-metrics"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func keys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func wantKeys(t *testing.T, what string, m map[string]any, want ...string) {
	t.Helper()
	sort.Strings(want)
	if got := keys(m); !reflect.DeepEqual(got, want) {
		t.Fatalf("%s keys = %v, want %v", what, got, want)
	}
}

func mustStart(t *testing.T, c *Coordinator) int64 {
	t.Helper()
	epoch, err := c.Registrar.Register(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	c.StartController()
	return epoch
}

// TestZnodeJSON checks every znode zkcoord writes against Kafka's JSON, field by field,
// under a chroot.
func TestZnodeJSON(t *testing.T) {
	s := startZK(t)
	raw := rawZK(t, s.Addr)
	fb := newFakeBroker(t)
	cfg := testConfig(t, s.Addr+"/kafka/x", 1, fb.port())
	c := connectT(t, cfg)
	epoch := mustStart(t, c)

	for _, p := range zkdata.PersistentPaths {
		if ok, _, err := raw.Exists("/kafka/x" + p); err != nil || !ok {
			t.Fatalf("persistent path %s missing: %v", p, err)
		}
	}

	b, st := readJSON(t, raw, "/kafka/x/brokers/ids/1")
	wantKeys(t, "broker", b, "listener_security_protocol_map", "endpoints", "jmx_port", "host", "timestamp", "port", "version")
	port := float64(fb.port())
	if b["version"] != 4.0 || b["host"] != "127.0.0.1" || b["port"] != port || b["jmx_port"] != -1.0 {
		t.Fatalf("broker znode %v", b)
	}
	if !reflect.DeepEqual(b["endpoints"], []any{"PLAINTEXT://127.0.0.1:" + strconv.Itoa(int(fb.port()))}) {
		t.Fatalf("endpoints %v", b["endpoints"])
	}
	if !reflect.DeepEqual(b["listener_security_protocol_map"], map[string]any{"PLAINTEXT": "PLAINTEXT"}) {
		t.Fatalf("protocol map %v", b["listener_security_protocol_map"])
	}
	if ts, ok := b["timestamp"].(string); !ok || ts == "" {
		t.Fatalf("timestamp must be a string: %v", b["timestamp"])
	} else if _, err := strconv.ParseInt(ts, 10, 64); err != nil {
		t.Fatalf("timestamp %q", ts)
	}
	if st.EphemeralOwner == 0 || st.Czxid != epoch || c.Registrar.BrokerEpoch() != epoch {
		t.Fatalf("broker znode must be ephemeral with czxid = broker epoch: owner %x czxid %d epoch %d", st.EphemeralOwner, st.Czxid, epoch)
	}

	cid, _ := readJSON(t, raw, "/kafka/x/cluster/id")
	wantKeys(t, "cluster id", cid, "version", "id")
	if cid["version"] != "1" || cid["id"] != c.ClusterID() || len(c.ClusterID()) != 22 {
		t.Fatalf("cluster id %v (ClusterID %q)", cid, c.ClusterID())
	}

	waitFor(t, 10*time.Second, "controller", c.IsController)
	ctl, cst := readJSON(t, raw, "/kafka/x/controller")
	wantKeys(t, "controller", ctl, "version", "brokerid", "timestamp")
	if ctl["version"] != 1.0 || ctl["brokerid"] != 1.0 || cst.EphemeralOwner == 0 {
		t.Fatalf("controller %v", ctl)
	}
	if _, ok := ctl["timestamp"].(string); !ok {
		t.Fatalf("controller timestamp must be a string")
	}
	if data, _, err := raw.Get("/kafka/x/controller_epoch"); err != nil || string(data) != "1" {
		t.Fatalf("controller_epoch %q %v", data, err)
	}
	if v := cfg.Registry.Get("kafka.controller:type=KafkaController,name=ActiveControllerCount").(metrics.Gauge).Value(); v != 1 {
		t.Fatalf("ActiveControllerCount %d", v)
	}

	a, err := c.Admin.CreateTopic(context.Background(), TopicSpec{Name: "t1", NumPartitions: 2, ReplicationFactor: 1, Configs: map[string]string{"retention.ms": "1000"}}, false)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a, map[int32][]int32{0: {1}, 1: {1}}) {
		t.Fatalf("assignment %v", a)
	}
	top, _ := readJSON(t, raw, "/kafka/x/brokers/topics/t1")
	wantKeys(t, "topic", top, "version", "partitions", "adding_replicas", "removing_replicas")
	if top["version"] != 2.0 || !reflect.DeepEqual(top["partitions"], map[string]any{"0": []any{1.0}, "1": []any{1.0}}) ||
		!reflect.DeepEqual(top["adding_replicas"], map[string]any{}) || !reflect.DeepEqual(top["removing_replicas"], map[string]any{}) {
		t.Fatalf("topic %v", top)
	}
	conf, _ := readJSON(t, raw, "/kafka/x/config/topics/t1")
	wantKeys(t, "config", conf, "version", "config")
	if conf["version"] != 1.0 || !reflect.DeepEqual(conf["config"], map[string]any{"retention.ms": "1000"}) {
		t.Fatalf("config %v", conf)
	}
	if got, err := c.Reader.TopicConfig("t1"); err != nil || got["retention.ms"] != "1000" {
		t.Fatalf("TopicConfig %v %v", got, err)
	}
	state, sst := readJSON(t, raw, "/kafka/x/brokers/topics/t1/partitions/0/state")
	wantKeys(t, "state", state, "controller_epoch", "leader", "version", "leader_epoch", "isr")
	if state["controller_epoch"] != 1.0 || state["leader"] != 1.0 || state["version"] != 1.0 || state["leader_epoch"] != 0.0 ||
		!reflect.DeepEqual(state["isr"], []any{1.0}) || sst.EphemeralOwner != 0 || sst.Version != 0 {
		t.Fatalf("state %v", state)
	}
	ps, err := c.Reader.PartitionState("t1", 0)
	if err != nil || ps.Leader != 1 || ps.LeaderEpoch != 0 || ps.ControllerEpoch != 1 || ps.ZkVersion != 0 || !reflect.DeepEqual(ps.ISR, []int32{1}) {
		t.Fatalf("PartitionState %+v %v", ps, err)
	}

	// The controller told the (fake) broker, LeaderAndIsr first, then UpdateMetadata.
	var lai *kmsg.LeaderAndISRRequest
	var laiIdx, umIdx int
	waitFor(t, 10*time.Second, "LeaderAndIsr and UpdateMetadata for t1", func() bool {
		lai, laiIdx, umIdx = nil, -1, -1
		for i, r := range fb.requests() {
			switch r := r.(type) {
			case *kmsg.LeaderAndISRRequest:
				for _, ts := range r.TopicStates {
					if ts.Topic == "t1" && lai == nil {
						lai, laiIdx = r, i
					}
				}
			case *kmsg.UpdateMetadataRequest:
				for _, ts := range r.TopicStates {
					if ts.Topic == "t1" && umIdx < 0 {
						umIdx = i
					}
				}
			}
		}
		return lai != nil && umIdx >= 0
	})
	if laiIdx > umIdx {
		t.Fatalf("UpdateMetadata (%d) before LeaderAndIsr (%d)", umIdx, laiIdx)
	}
	if lai.Version != 4 || lai.ControllerID != 1 || lai.ControllerEpoch != 1 || lai.BrokerEpoch != epoch {
		t.Fatalf("LeaderAndIsr header %+v", lai)
	}
	if len(lai.TopicStates) != 1 || len(lai.TopicStates[0].PartitionStates) != 2 {
		t.Fatalf("LeaderAndIsr states %+v", lai.TopicStates)
	}
	for _, p := range lai.TopicStates[0].PartitionStates {
		if !p.IsNew || p.Leader != 1 || p.LeaderEpoch != 0 || !reflect.DeepEqual(p.ISR, []int32{1}) || !reflect.DeepEqual(p.Replicas, []int32{1}) || p.ControllerEpoch != 1 {
			t.Fatalf("LeaderAndIsr partition %+v", p)
		}
	}
	if len(lai.LiveLeaders) != 1 || lai.LiveLeaders[0].BrokerID != 1 || lai.LiveLeaders[0].Port != fb.port() {
		t.Fatalf("LiveLeaders %+v", lai.LiveLeaders)
	}
	um := fb.requests()[umIdx].(*kmsg.UpdateMetadataRequest)
	if um.Version != 6 || len(um.LiveBrokers) != 1 || um.LiveBrokers[0].ID != 1 || len(um.LiveBrokers[0].Endpoints) != 1 ||
		um.LiveBrokers[0].Endpoints[0].ListenerName != "PLAINTEXT" || um.LiveBrokers[0].Endpoints[0].Port != fb.port() {
		t.Fatalf("UpdateMetadata %+v", um)
	}
}

func TestBrokerZnodeRack(t *testing.T) {
	s := startZK(t)
	raw := rawZK(t, s.Addr)
	cfg := testConfig(t, s.Addr, 3, 9092)
	cfg.Rack = "r1"
	c, _ := registerT(t, cfg)
	b, _ := readJSON(t, raw, "/brokers/ids/3")
	if b["rack"] != "r1" {
		t.Fatalf("rack %v", b)
	}
	bs, err := c.Reader.LiveBrokers()
	if err != nil || len(bs) != 1 || bs[0].Rack != "r1" || bs[0].Endpoints[0].Port != 9092 || bs[0].Epoch == 0 {
		t.Fatalf("LiveBrokers %+v %v", bs, err)
	}
}

// TestRegisterWaitsForStaleEphemeral: the znode of a killed earlier process (its session
// still alive on the server) is waited for; a live holder gives ErrBrokerIDInUse.
func TestRegisterWaitsForStaleEphemeral(t *testing.T) {
	s := startZK(t)
	c := connectT(t, testConfig(t, s.Addr, 5, 9092))

	d := &cuttableDialer{}
	old, _, err := zk.Connect([]string{s.Addr}, 2*time.Second, zk.WithDialer(d.dial), zk.WithLogInfo(false), zk.WithLogger(zkclient.Logger{L: testLogger(t)}))
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	waitFor(t, 10*time.Second, "old session", func() bool { return old.State() == zk.StateHasSession })
	if _, err := old.Create("/brokers/ids/5", zkdata.EncodeBroker(nil, ""), zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	d.setCut(true) // the old process is "killed": its session expires after ~2 s

	start := time.Now()
	epoch, err := c.Registrar.Register(context.Background())
	if err != nil {
		t.Fatalf("Register: %v", err)
	}
	if time.Since(start) < 500*time.Millisecond {
		t.Fatalf("registered after %v: did not wait for the stale znode", time.Since(start))
	}
	_, st, err := c.zk.Get("/brokers/ids/5")
	if err != nil || st.EphemeralOwner != c.zk.SessionID() || st.Czxid != epoch {
		t.Fatalf("znode not ours: %+v %v", st, err)
	}

	// A live broker holds id 5: a second one gives up after its session timeout.
	cfg := testConfig(t, s.Addr, 5, 9093)
	cfg.SessionTimeout = 2 * time.Second
	c2 := connectT(t, cfg)
	start = time.Now()
	if _, err := c2.Registrar.Register(context.Background()); !errors.Is(err, ErrBrokerIDInUse) {
		t.Fatalf("want ErrBrokerIDInUse, got %v", err)
	}
	if el := time.Since(start); el < 2*time.Second || el > 10*time.Second {
		t.Fatalf("gave up after %v", el)
	}
}

// TestControllerElectionAndFailover: one of two brokers wins with epoch 1; when it goes
// away the other wins with epoch 2, and writes fenced by the old epoch zkVersion fail.
func TestS9_K3_ControllerElectionFailoverAndFencing(t *testing.T) {
	s := startZK(t)
	fb1, fb2 := newFakeBroker(t), newFakeBroker(t)
	c1 := connectT(t, testConfig(t, s.Addr, 1, fb1.port()))
	c2 := connectT(t, testConfig(t, s.Addr, 2, fb2.port()))
	mustStart(t, c1)
	waitFor(t, 10*time.Second, "c1 controller", c1.IsController)
	mustStart(t, c2)
	if e, v, err := c2.Reader.ControllerEpoch(); err != nil || e != 1 || v != 1 {
		t.Fatalf("epoch %d version %d %v", e, v, err)
	}
	if id, _ := c2.Reader.ControllerID(); id != 1 {
		t.Fatalf("controller id %d", id)
	}
	if c2.IsController() {
		t.Fatal("two controllers")
	}
	c1.Close()
	waitFor(t, 15*time.Second, "c2 controller", c2.IsController)
	e, v, err := c2.Reader.ControllerEpoch()
	if err != nil || e != 2 {
		t.Fatalf("epoch %d %v", e, err)
	}
	if id, _ := c2.Reader.ControllerID(); id != 2 {
		t.Fatalf("controller id %d", id)
	}
	// A zombie controller of epoch 1 holds zkVersion v-1: writes fenced by it fail (the
	// controller's fencedMulti, unit-tested in zkcoord/controller, puts this check first).
	fenced := func(version int32, path string) error {
		_, err := c2.zk.Multi(&zk.CheckVersionRequest{Path: zkdata.PathControllerEpoch, Version: version},
			&zk.CreateRequest{Path: path, Acl: zk.WorldACL(zk.PermAll)})
		return err
	}
	if err := fenced(v-1, "/zombie"); !errors.Is(err, zk.ErrBadVersion) {
		t.Fatalf("stale fenced write: %v", err)
	}
	if ok, _, _ := c2.zk.Exists("/zombie"); ok {
		t.Fatal("fenced write applied")
	}
	// The live controller's epoch version works.
	if err := fenced(v, "/fresh"); err != nil {
		t.Fatalf("fenced write: %v", err)
	}
	// The new controller talks to broker 2 with epoch 2.
	waitFor(t, 10*time.Second, "UpdateMetadata epoch 2", func() bool {
		return fb2.find(func(r kmsg.Request) bool {
			um, ok := r.(*kmsg.UpdateMetadataRequest)
			return ok && um.ControllerEpoch == 2 && um.ControllerID == 2
		}) != nil
	})
}

func TestK3_K5_LeaderIsrCASAndChangeNotification(t *testing.T) {
	s := startZK(t)
	fb := newFakeBroker(t)
	c := connectT(t, testConfig(t, s.Addr, 1, fb.port()))
	mustStart(t, c)
	if _, err := c.Admin.CreateTopic(context.Background(), TopicSpec{Name: "cas", Assignment: map[int32][]int32{0: {1}}}, false); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "state", func() bool { _, err := c.Reader.PartitionState("cas", 0); return err == nil })

	v, err := c.IsrWriter.UpdateLeaderAndIsr("cas", 0, 1, 0, []int32{1}, 1, 0)
	if err != nil || v != 1 {
		t.Fatalf("CAS: %d %v", v, err)
	}
	// K5: the write alone is propagated through /isr_change_notification; the controller sends
	// UpdateMetadata with the new zkVersion and deletes the notification.
	waitFor(t, 10*time.Second, "UpdateMetadata after ISR change", func() bool {
		return fb.find(func(r kmsg.Request) bool {
			um, ok := r.(*kmsg.UpdateMetadataRequest)
			if !ok {
				return false
			}
			for _, ts := range um.TopicStates {
				for _, p := range ts.PartitionStates {
					if ts.Topic == "cas" && p.ZKVersion == 1 {
						return true
					}
				}
			}
			return false
		}) != nil
	})
	waitFor(t, 10*time.Second, "notifications deleted", func() bool {
		ch, err := c.zk.Children(zkdata.PathIsrChange)
		return err == nil && len(ch) == 0
	})
	// A retried write with the same data but the old zkVersion counts as success.
	if v2, err := c.IsrWriter.UpdateLeaderAndIsr("cas", 0, 1, 0, []int32{1}, 1, 0); err != nil || v2 != 1 {
		t.Fatalf("identical retry: %d %v", v2, err)
	}
	// Different data with a stale zkVersion fails and is not retried.
	if _, err := c.IsrWriter.UpdateLeaderAndIsr("cas", 0, 1, 0, []int32{1, 2}, 1, 0); !errors.Is(err, agent.ErrBadVersion) {
		t.Fatalf("stale: %v", err)
	}
	if _, err := c.IsrWriter.UpdateLeaderAndIsr("nope", 0, 1, 0, []int32{1}, 1, 0); !errors.Is(err, ErrUnknownTopic) {
		t.Fatalf("unknown: %v", err)
	}
	ps, _ := c.Reader.PartitionState("cas", 0)
	if ps.ZkVersion != 1 || !reflect.DeepEqual(ps.ISR, []int32{1}) {
		t.Fatalf("state %+v", ps)
	}
}

func TestCreateTopicErrors(t *testing.T) {
	s := startZK(t)
	c, _ := registerT(t, testConfig(t, s.Addr, 1, 9092))
	registerT(t, testConfig(t, s.Addr, 2, 9093))
	ctx := context.Background()
	if _, err := c.Admin.CreateTopic(ctx, TopicSpec{Name: "ok", NumPartitions: 4, ReplicationFactor: 2}, false); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		spec TopicSpec
		want error
	}{
		{TopicSpec{Name: "", NumPartitions: 1, ReplicationFactor: 1}, ErrInvalidTopic},
		{TopicSpec{Name: "..", NumPartitions: 1, ReplicationFactor: 1}, ErrInvalidTopic},
		{TopicSpec{Name: "a/b", NumPartitions: 1, ReplicationFactor: 1}, ErrInvalidTopic},
		{TopicSpec{Name: "ok", NumPartitions: 1, ReplicationFactor: 1}, ErrTopicExists},
		{TopicSpec{Name: "x", NumPartitions: 0, ReplicationFactor: 1}, ErrInvalidPartitions},
		{TopicSpec{Name: "x", NumPartitions: 1, ReplicationFactor: 0}, ErrInvalidReplicationFactor},
		{TopicSpec{Name: "x", NumPartitions: 1, ReplicationFactor: 3}, ErrInvalidReplicationFactor},
		{TopicSpec{Name: "x", Assignment: map[int32][]int32{0: {1}, 2: {2}}}, ErrInvalidReplicaAssignment},
		{TopicSpec{Name: "x", Assignment: map[int32][]int32{0: {1}, 1: {1, 2}}}, ErrInvalidReplicaAssignment},
		{TopicSpec{Name: "x", Assignment: map[int32][]int32{0: {1, 1}}}, ErrInvalidReplicaAssignment},
		{TopicSpec{Name: "x", Assignment: map[int32][]int32{0: {7}}}, ErrInvalidReplicaAssignment},
		{TopicSpec{Name: "x", Assignment: map[int32][]int32{0: {}}}, ErrInvalidReplicaAssignment},
	}
	for _, tc := range cases {
		if _, err := c.Admin.CreateTopic(ctx, tc.spec, false); !errors.Is(err, tc.want) {
			t.Errorf("%+v: got %v, want %v", tc.spec, err, tc.want)
		}
	}
	a, err := c.Admin.CreateTopic(ctx, TopicSpec{Name: "v", NumPartitions: 3, ReplicationFactor: 2}, true)
	if err != nil || len(a) != 3 {
		t.Fatalf("validateOnly: %v %v", a, err)
	}
	if ok, _, _ := c.zk.Exists(zkdata.TopicPath("v")); ok {
		t.Fatal("validateOnly wrote the topic")
	}
	got, err := c.Reader.TopicAssignment("ok")
	if err != nil || len(got) != 4 {
		t.Fatalf("TopicAssignment %v %v", got, err)
	}
	if _, err := c.Reader.TopicAssignment("missing"); !errors.Is(err, ErrUnknownTopic) {
		t.Fatal(err)
	}
	if _, err := c.Reader.TopicConfig("missing"); !errors.Is(err, ErrUnknownTopic) {
		t.Fatal(err)
	}
	if err := c.Admin.DeleteTopic(ctx, "missing"); !errors.Is(err, ErrUnknownTopic) {
		t.Fatal(err)
	}
	topics, _ := c.Reader.Topics()
	if !reflect.DeepEqual(topics, []string{"ok"}) {
		t.Fatalf("Topics %v", topics)
	}
}
