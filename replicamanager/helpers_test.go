package replicamanager

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/rcrowley/go-metrics"
	"github.com/sirupsen/logrus"

	"github.com/isrbroker/isrbroker/fetcher"
	"github.com/isrbroker/isrbroker/logstore"
)

// makeBatch builds a v2 record batch of n records with the given values' prefix (base offset 0,
// epoch -1), the way a producer sends it.
func makeBatch(n int, value string) []byte {
	var recs []byte
	for i := 0; i < n; i++ {
		var r []byte
		r = append(r, 0)                     // attributes
		r = binary.AppendVarint(r, 0)        // timestamp delta
		r = binary.AppendVarint(r, int64(i)) // offset delta
		r = binary.AppendVarint(r, -1)       // null key
		v := []byte(value)
		r = binary.AppendVarint(r, int64(len(v)))
		r = append(r, v...)
		r = binary.AppendVarint(r, 0) // headers
		recs = binary.AppendVarint(recs, int64(len(r)))
		recs = append(recs, r...)
	}
	ts := time.Now().UnixMilli()
	b := make([]byte, 61, 61+len(recs))
	binary.BigEndian.PutUint64(b[0:], 0)
	binary.BigEndian.PutUint32(b[12:], 0xffffffff) // partition leader epoch -1
	b[16] = 2
	binary.BigEndian.PutUint16(b[21:], 0)
	binary.BigEndian.PutUint32(b[23:], uint32(n-1))
	binary.BigEndian.PutUint64(b[27:], uint64(ts))
	binary.BigEndian.PutUint64(b[35:], uint64(ts))
	binary.BigEndian.PutUint64(b[43:], 0xffffffffffffffff)
	binary.BigEndian.PutUint16(b[51:], 0xffff)
	binary.BigEndian.PutUint32(b[53:], 0xffffffff)
	binary.BigEndian.PutUint32(b[57:], uint32(n))
	b = append(b, recs...)
	binary.BigEndian.PutUint32(b[8:], uint32(len(b)-12))
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
	return b
}

// fakeCoord records ISR writes and applies the CAS on an in-memory zkVersion per partition.
type fakeCoord struct {
	mu      sync.Mutex
	version map[TopicPartition]int32
	isr     map[TopicPartition][]int32
	epochs  map[TopicPartition]int32
	writes  int
	fail    bool
	configs map[string]map[string]string
	// hold, when set, makes the next UpdateLeaderAndIsr apply, then signal entered and wait for
	// release before it returns (a ZooKeeper whose answer is late, fault row 9).
	hold *heldWrite
}

type heldWrite struct {
	entered chan struct{}
	release chan struct{}
}

func newFakeCoord() *fakeCoord {
	return &fakeCoord{version: map[TopicPartition]int32{}, isr: map[TopicPartition][]int32{}, epochs: map[TopicPartition]int32{}, configs: map[string]map[string]string{}}
}

var errBadVersion = errors.New("bad version")

func (f *fakeCoord) UpdateLeaderAndIsr(topic string, partition int32, leader, leaderEpoch int32, isr []int32, controllerEpoch int32, zkVersion int32) (int32, error) {
	f.mu.Lock()
	tp := TopicPartition{Topic: topic, Partition: partition}
	if f.fail || f.version[tp] != zkVersion {
		f.mu.Unlock()
		return 0, errBadVersion
	}
	f.writes++
	f.version[tp]++
	f.isr[tp] = slices.Clone(isr)
	f.epochs[tp] = leaderEpoch
	v, h := f.version[tp], f.hold
	f.hold = nil
	f.mu.Unlock()
	if h != nil {
		close(h.entered)
		<-h.release
	}
	return v, nil
}

func (f *fakeCoord) ReadLeaderAndIsr(topic string, partition int32) (int32, int32, []int32, int32, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	tp := TopicPartition{Topic: topic, Partition: partition}
	return 1, f.epochs[tp], slices.Clone(f.isr[tp]), f.version[tp], nil
}

func (f *fakeCoord) TopicConfig(topic string) (map[string]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.configs[topic], nil
}

func (f *fakeCoord) isrOf(tp TopicPartition) []int32 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.isr[tp])
}

// fakeFetchers records the replica manager's calls into the fetcher manager (S14, S22, S23).
type fakeFetchers struct {
	mu      sync.Mutex
	added   map[TopicPartition]fetcher.InitialFetchState
	removed []TopicPartition
	idle    int
}

func (f *fakeFetchers) AddFetcherForPartitions(m map[TopicPartition]fetcher.InitialFetchState) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.added == nil {
		f.added = map[TopicPartition]fetcher.InitialFetchState{}
	}
	for k, v := range m {
		f.added[k] = v
	}
}
func (f *fakeFetchers) RemoveFetcherForPartitions(tps []TopicPartition) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.removed = append(f.removed, tps...)
	for _, tp := range tps {
		delete(f.added, tp)
	}
}
func (f *fakeFetchers) ShutdownIdleFetcherThreads() { f.mu.Lock(); f.idle++; f.mu.Unlock() }
func (f *fakeFetchers) Close()                      {}

// clock is an injectable clock for lag rules.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

type env struct {
	rm    *ReplicaManager
	coord *fakeCoord
	fetch *fakeFetchers
	clock *clock
	reg   metrics.Registry
}

func newEnv(t testing.TB, brokerID int32, minIsr int) *env {
	t.Helper()
	return newEnvWith(t, brokerID, minIsr, nil)
}

// newEnvWith is newEnv with the config changed by edit (when not nil) before the replica
// manager is built.
func newEnvWith(t testing.TB, brokerID int32, minIsr int, edit func(*Config)) *env {
	t.Helper()
	lg := logrus.New()
	lg.SetLevel(logrus.WarnLevel)
	logs, err := logstore.Open([]string{t.TempDir()}, brokerID, logstore.DefaultConfig(), lg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = logs.Close() })
	c := &clock{t: time.Unix(1_700_000_000, 0)}
	coord := newFakeCoord()
	reg := metrics.NewRegistry()
	ff := &fakeFetchers{}
	cfg := Config{
		BrokerID:          brokerID,
		ReplicaLagTimeMax: 10 * time.Second,
		MinInsyncReplicas: minIsr,
		LogDefaults:       logstore.DefaultConfig(),
		Registry:          reg,
		Log:               lg,
		Now:               c.Now,
	}
	if edit != nil {
		edit(&cfg)
	}
	rm := newReplicaManager(cfg, logs, coord, ff)
	return &env{rm: rm, coord: coord, fetch: ff, clock: c, reg: reg}
}

func tp0() TopicPartition { return TopicPartition{Topic: "t", Partition: 0} }

// lead makes this broker leader of t-0 with the given replicas, all in the ISR.
func (e *env) leaderAndIsr(t testing.TB, leader, epoch int32, replicas, isr []int32) LeaderAndIsrResult {
	t.Helper()
	e.coord.mu.Lock()
	zkv := e.coord.version[tp0()]
	e.coord.mu.Unlock()
	return e.rm.Requests().BecomeLeaderOrFollower(LeaderAndIsrRequest{
		ControllerID: 1, ControllerEpoch: 1, BrokerEpoch: -1,
		Partitions:  []PartitionState{{TopicPartition: tp0(), ControllerEpoch: 1, Leader: leader, LeaderEpoch: epoch, ISR: isr, ZkVersion: zkv, Replicas: replicas}},
		LiveLeaders: map[int32]string{1: "127.0.0.1:1", 2: "127.0.0.1:2", 3: "127.0.0.1:3"},
	})
}

func (e *env) produce(t *testing.T, acks int16, n int, timeout time.Duration) chan ProduceResult {
	t.Helper()
	ch := make(chan ProduceResult, 1)
	e.rm.Requests().AppendRecords(timeout, acks, map[TopicPartition][]byte{tp0(): makeBatch(n, "v")}, func(m map[TopicPartition]ProduceResult) { ch <- m[tp0()] })
	return ch
}

// followerFetch sends a follower fetch at offset and returns its result.
func (e *env) followerFetch(t *testing.T, replica int32, offset int64) FetchPartitionResult {
	t.Helper()
	ch := make(chan []FetchPartitionResult, 1)
	e.rm.Requests().FetchMessages(FetchParams{ReplicaID: replica, MaxBytes: 1 << 20, Partitions: []FetchPartition{{TopicPartition: tp0(), FetchOffset: offset, PartitionMaxBytes: 1 << 20, CurrentLeaderEpoch: -1, LogStartOffset: 0}}}, func(r []FetchPartitionResult) { ch <- r })
	return (<-ch)[0]
}

func (e *env) gauge(name string) int64 {
	return e.reg.Get(name).(metrics.Gauge).Value()
}

func waitResult[T any](t *testing.T, ch chan T, d time.Duration) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(d):
		t.Fatalf("no result within %v", d)
	}
	var zero T
	return zero
}
