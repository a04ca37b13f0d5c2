package agent

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/isrbroker/isrbroker/zkcoord/zkclient"
	"github.com/isrbroker/isrbroker/zkcoord/zkdata"
	"github.com/isrbroker/isrbroker/zkcoord/zkmem"
	"github.com/sirupsen/logrus"
)

func testLog() logrus.FieldLogger {
	l := logrus.New()
	l.SetLevel(logrus.WarnLevel)
	return l
}

func setup(t *testing.T) (*zkmem.Server, *zkmem.Conn) {
	srv := zkmem.NewServer()
	c := srv.Connect(nil)
	t.Cleanup(c.Close)
	for _, p := range zkdata.PersistentPaths {
		if err := zkclient.CreateRecursive(c, p); err != nil {
			t.Fatal(err)
		}
	}
	return srv, c
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond) // polling interval
	}
}

func registrar(conn zkclient.Conn, id int32, timeout time.Duration, epochs *[]int64) *Registrar {
	return NewRegistrar(conn, RegistrarConfig{BrokerID: id, SessionTimeout: timeout, Log: testLog(),
		Endpoints: []zkdata.Endpoint{{Listener: "PLAINTEXT", Host: "h", Port: 1}},
		OnBrokerEpoch: func(e int64) {
			if epochs != nil {
				*epochs = append(*epochs, e)
			}
		}})
}

// TestK1_RegistrationEpochAndReregistration: the broker epoch is the czxid of the ephemeral
// /brokers/ids/<id>; after a session expiry the broker registers again with a larger epoch.
func TestK1_RegistrationEpochAndReregistration(t *testing.T) {
	srv, admin := setup(t)
	conn := srv.Connect(nil)
	defer conn.Close()
	var epochs []int64
	r := registrar(conn, 1, time.Second, &epochs)
	epoch, err := r.Register(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	_, st, err := admin.Get(zkdata.BrokerIDPath(1))
	if err != nil || st.Czxid != epoch || st.EphemeralOwner != conn.SessionID() || r.BrokerEpoch() != epoch {
		t.Fatalf("registration %+v %v, epoch %d", st, err, epoch)
	}
	old := conn.SessionID()
	srv.Expire(conn)
	if ok, _, _ := admin.Exists(zkdata.BrokerIDPath(1)); ok {
		t.Fatal("registration survived its session")
	}
	r.SessionExpired(old)
	r.OnNewSession()
	_, st, err = admin.Get(zkdata.BrokerIDPath(1))
	if err != nil || st.Czxid <= epoch || r.BrokerEpoch() != st.Czxid || len(epochs) != 2 {
		t.Fatalf("re-registration %+v %v, epochs %v", st, err, epochs)
	}
}

// TestRegistrationReplacesOurStaleEphemeralAndRefusesAnother: a znode left by one of our
// expired sessions is replaced at once; one owned by a live stranger is waited for a session
// timeout, then refused with ErrBrokerIDInUse.
func TestRegistrationReplacesOurStaleEphemeralAndRefusesAnother(t *testing.T) {
	srv, _ := setup(t)
	stale := srv.Connect(nil)
	defer stale.Close()
	if _, err := stale.Create(zkdata.BrokerIDPath(2), []byte("{}"), zk.FlagEphemeral); err != nil {
		t.Fatal(err)
	}
	conn := srv.Connect(nil)
	defer conn.Close()
	r := registrar(conn, 2, 300*time.Millisecond, nil)
	r.SessionExpired(stale.SessionID()) // ZOOKEEPER-2985: ours, though ZooKeeper still lists it
	if _, err := r.Register(context.Background()); err != nil {
		t.Fatalf("stale ephemeral of our session not replaced: %v", err)
	}
	other := registrar(srv.Connect(nil), 2, 300*time.Millisecond, nil)
	start := time.Now()
	if _, err := other.Register(context.Background()); !errors.Is(err, ErrBrokerIDInUse) {
		t.Fatalf("second broker with id 2: %v", err)
	}
	if el := time.Since(start); el < 300*time.Millisecond {
		t.Fatalf("gave up after %v, before the session timeout", el)
	}
}

// TestK3_K5_IsrWriteAndPropagation: the leader's ISR write is a compare-and-set on the
// zkVersion; a retried identical write counts as done; a stale zkVersion is ErrBadVersion;
// successful writes are propagated in one /isr_change_notification znode.
func TestK3_K5_IsrWriteAndPropagation(t *testing.T) {
	srv, admin := setup(t)
	conn := srv.Connect(nil)
	defer conn.Close()
	for _, p := range []int32{0, 1} {
		zkclient.CreateRecursive(admin, zkdata.TopicPartitionPath("t", p))
		admin.Create(zkdata.PartitionStatePath("t", p), zkdata.EncodeState(1, 4, []int32{1, 2}, 7), 0)
	}
	w := NewIsrWriter(conn, IsrConfig{Log: testLog()})
	v, err := w.UpdateLeaderAndIsr("t", 0, 1, 4, []int32{1}, 7, 0)
	if err != nil || v != 1 {
		t.Fatalf("write: %d %v", v, err)
	}
	if v, err := w.UpdateLeaderAndIsr("t", 0, 1, 4, []int32{1}, 7, 0); err != nil || v != 1 {
		t.Fatalf("retried identical write: %d %v", v, err)
	}
	if _, err := w.UpdateLeaderAndIsr("t", 0, 1, 4, []int32{1, 2}, 7, 0); !errors.Is(err, ErrBadVersion) {
		t.Fatalf("stale zkVersion: %v", err)
	}
	if _, err := w.UpdateLeaderAndIsr("t", 1, 1, 4, []int32{1}, 7, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := w.UpdateLeaderAndIsr("nope", 0, 1, 4, []int32{1}, 7, 0); !errors.Is(err, zkdata.ErrUnknownTopic) {
		t.Fatalf("unknown partition: %v", err)
	}
	data, _, _ := admin.Get(zkdata.PartitionStatePath("t", 0))
	if ps, _ := zkdata.DecodeState(data); ps.Leader != 1 || ps.LeaderEpoch != 4 || ps.ControllerEpoch != 7 || !slices.Equal(ps.ISR, []int32{1}) {
		t.Fatalf("state %+v", ps)
	}
	w.maybePropagate(time.Now()) // within the black-out: nothing yet
	if ch, _ := admin.Children(zkdata.PathIsrChange); len(ch) != 0 {
		t.Fatalf("propagated during the black-out: %v", ch)
	}
	w.maybePropagate(time.Now().Add(time.Minute))
	ch, _ := admin.Children(zkdata.PathIsrChange)
	if len(ch) != 1 || w.PendingLen() != 0 {
		t.Fatalf("notifications %v, pending %d", ch, w.PendingLen())
	}
	data, _, _ = admin.Get(zkdata.Child(zkdata.PathIsrChange, ch[0]))
	if tps, _ := zkdata.DecodeIsrChange(data); len(tps) != 2 || tps[0].Partition != 0 || tps[1].Partition != 1 {
		t.Fatalf("notification %s", data)
	}
}

// TestProducerIDBlocksNeverOverlap: concurrent allocators on two sessions get disjoint
// consecutive blocks.
func TestProducerIDBlocksNeverOverlap(t *testing.T) {
	srv, _ := setup(t)
	var mu sync.Mutex
	var starts []int64
	var wg sync.WaitGroup
	for b := int32(1); b <= 2; b++ {
		a := NewProducerIDs(srv.Connect(nil), b, testLog())
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 5; i++ {
				s, e, err := a.AllocateProducerIDBlock(context.Background())
				if err != nil || e-s+1 != zkdata.ProducerIDBlockSize {
					t.Errorf("block %d-%d %v", s, e, err)
					return
				}
				mu.Lock()
				starts = append(starts, s)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	slices.Sort(starts)
	for i, s := range starts {
		if s != int64(i)*zkdata.ProducerIDBlockSize {
			t.Fatalf("block starts %v: not disjoint and consecutive", starts)
		}
	}
}

// TestConfigListenerDeliversScanAndChanges: the start-up scan delivers this broker's, the
// default broker's and the topics' configs, a notification delivers the changed entity, and
// another broker's config is not delivered.
func TestConfigListenerDeliversScanAndChanges(t *testing.T) {
	srv, admin := setup(t)
	admin.Create(zkdata.BrokerConfigPath(1), zkdata.EncodeConfig(map[string]string{"a": "1"}), 0)
	admin.Create(zkdata.TopicConfigPath("t"), zkdata.EncodeConfig(map[string]string{"b": "2"}), 0)
	admin.Create(zkdata.BrokerConfigPath(2), zkdata.EncodeConfig(map[string]string{"c": "3"}), 0)
	conn := srv.Connect(nil)
	l := NewConfigListener(conn, 1, testLog())
	defer func() { conn.Close(); l.Close() }()
	var mu sync.Mutex
	got := map[string]map[string]string{}
	l.OnDynamicConfig(func(entity string, cfg map[string]string) {
		mu.Lock()
		got[entity] = cfg
		mu.Unlock()
	})
	read := func(e string) map[string]string {
		mu.Lock()
		defer mu.Unlock()
		return got[e]
	}
	waitFor(t, "start-up scan", func() bool { return read("brokers/1")["a"] == "1" && read("topics/t")["b"] == "2" })
	admin.Set(zkdata.TopicConfigPath("t"), zkdata.EncodeConfig(map[string]string{"b": "5"}), -1)
	admin.Create(zkdata.ConfigChangeSequential, zkdata.EncodeConfigChange(zkdata.TopicEntity("t")), zk.FlagSequence)
	waitFor(t, "change", func() bool { return read("topics/t")["b"] == "5" })
	if read("brokers/2") != nil {
		t.Fatal("another broker's config delivered")
	}
}

// TestIsrWriteOutcomeUnknown: a write that gives up without an answer (here: the session is
// closed) wraps ErrIsrWriteOutcomeUnknown, marked OutcomeUnknown for the replica manager,
// which then re-reads the state with ReadLeaderAndIsr.
func TestIsrWriteOutcomeUnknown(t *testing.T) {
	srv, admin := setup(t)
	zkclient.CreateRecursive(admin, zkdata.TopicPartitionPath("t", 0))
	admin.Create(zkdata.PartitionStatePath("t", 0), zkdata.EncodeState(1, 4, []int32{1, 2}, 7), 0)
	admin.Set(zkdata.PartitionStatePath("t", 0), zkdata.EncodeState(1, 4, []int32{1, 2}, 7), -1)
	w := NewIsrWriter(admin, IsrConfig{Log: testLog()})
	leader, epoch, isr, version, err := w.ReadLeaderAndIsr("t", 0)
	if err != nil || leader != 1 || epoch != 4 || !slices.Equal(isr, []int32{1, 2}) || version != 1 {
		t.Fatalf("read: %d %d %v %d %v", leader, epoch, isr, version, err)
	}
	if _, _, _, _, err := w.ReadLeaderAndIsr("t", 9); !errors.Is(err, zkdata.ErrUnknownTopic) {
		t.Fatalf("read of a missing partition: %v", err)
	}
	closed := srv.Connect(nil)
	closed.Close()
	_, err = NewIsrWriter(closed, IsrConfig{Log: testLog()}).UpdateLeaderAndIsr("t", 0, 1, 4, []int32{1}, 7, 1)
	var marked interface{ OutcomeUnknown() bool }
	if !errors.Is(err, ErrIsrWriteOutcomeUnknown) || !errors.As(err, &marked) || !marked.OutcomeUnknown() {
		t.Fatalf("write without an answer: %v", err)
	}
	if _, err := w.UpdateLeaderAndIsr("t", 0, 1, 4, []int32{1}, 7, 0); !errors.Is(err, ErrBadVersion) || errors.Is(err, ErrIsrWriteOutcomeUnknown) {
		t.Fatalf("a stale zkVersion is a known outcome: %v", err)
	}
}
