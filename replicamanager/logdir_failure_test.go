package replicamanager

import (
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rcrowley/go-metrics"
	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/isrbroker/isrbroker/logstore"
)

// dirNotifier is a fakeCoord that also records log dir events (zkcoord's PropagateLogDirEvent).
type dirNotifier struct {
	*fakeCoord
	mu     sync.Mutex
	events int
}

func (d *dirNotifier) PropagateLogDirEvent() error {
	d.mu.Lock()
	d.events++
	d.mu.Unlock()
	return nil
}

func (d *dirNotifier) count() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.events
}

// newTwoDirEnv is newEnv over two log dirs, with a coordinator that takes log dir events.
func newTwoDirEnv(t *testing.T) (*env, *logstore.Manager, []string, *dirNotifier) {
	t.Helper()
	lg := logrus.New()
	lg.SetLevel(logrus.WarnLevel)
	dirs := []string{filepath.Join(t.TempDir(), "d0"), filepath.Join(t.TempDir(), "d1")}
	logs, err := logstore.Open(dirs, 1, logstore.DefaultConfig(), lg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = logs.Close() })
	c := &clock{t: time.Unix(1_700_000_000, 0)}
	coord := &dirNotifier{fakeCoord: newFakeCoord()}
	reg := metrics.NewRegistry()
	ff := &fakeFetchers{}
	rm := newReplicaManager(Config{BrokerID: 1, ReplicaLagTimeMax: 10 * time.Second, MinInsyncReplicas: 1,
		LogDefaults: logstore.DefaultConfig(), Registry: reg, Log: lg, Now: c.Now}, logs, coord, ff)
	t.Cleanup(rm.Shutdown)
	return &env{rm: rm, coord: coord.fakeCoord, fetch: ff, clock: c, reg: reg}, logs, dirs, coord
}

func produceTo(e *env, tp TopicPartition, acks int16) chan ProduceResult {
	ch := make(chan ProduceResult, 1)
	e.rm.Requests().AppendRecords(5*time.Second, acks, map[TopicPartition][]byte{tp: makeBatch(1, "v")}, func(m map[TopicPartition]ProduceResult) { ch <- m[tp] })
	return ch
}

// An offline log dir takes its partitions offline (Kafka's handleLogDirFailure, KIP-112;
// docs/kafka-facts.md §12): their fetchers stop, produce (also a parked acks=all one), fetch and
// LeaderAndIsr answer KAFKA_STORAGE_ERROR, the controller is told once, DescribeLogDirs reports
// the dir's error, a partition that is not new is not created in the other dir, and the
// partitions of the healthy dir keep serving. With no dir left, the broker is asked to shut down.
func TestLogDirFailureTakesItsPartitionsOffline(t *testing.T) {
	e, logs, dirs, notifier := newTwoDirEnv(t)
	var shutdownDirs []string
	var shutdownMu sync.Mutex
	e.rm.SetAllLogDirsOffline(func(d []string) { shutdownMu.Lock(); shutdownDirs = d; shutdownMu.Unlock() })
	t0, t1, t2 := TopicPartition{Topic: "t", Partition: 0}, TopicPartition{Topic: "t", Partition: 1}, TopicPartition{Topic: "t", Partition: 2}
	res := e.rm.Requests().BecomeLeaderOrFollower(LeaderAndIsrRequest{ControllerID: 1, ControllerEpoch: 1, BrokerEpoch: -1,
		Partitions: []PartitionState{
			{TopicPartition: t0, ControllerEpoch: 1, Leader: 1, LeaderEpoch: 0, ISR: []int32{1, 2}, Replicas: []int32{1, 2}, IsNew: true},
			{TopicPartition: t1, ControllerEpoch: 1, Leader: 1, LeaderEpoch: 0, ISR: []int32{1}, Replicas: []int32{1}, IsNew: true},
			{TopicPartition: t2, ControllerEpoch: 1, Leader: 2, LeaderEpoch: 0, ISR: []int32{2, 1}, Replicas: []int32{2, 1}, IsNew: true},
		},
		LiveLeaders: map[int32]string{1: "127.0.0.1:1", 2: "127.0.0.1:2"}})
	for tp, code := range res.Partitions {
		if code != 0 {
			t.Fatalf("LeaderAndIsr %v: %d", tp, code)
		}
	}
	for tp, want := range map[TopicPartition]string{t0: dirs[0], t1: dirs[1], t2: dirs[0]} {
		if got := filepath.Dir(logs.Get(tp).Dir()); got != want {
			t.Fatalf("%v in %s, want %s", tp, got, want)
		}
	}
	e.rm.Start()
	parked := produceTo(e, t0, -1) // waits for follower 2
	select {
	case r := <-parked:
		t.Fatalf("acks=all produce answered before the follower fetched: %+v", r)
	default:
	}

	offlineReplicas := e.rm.cfg.Registry.Get(OfflineReplicaCountMetric).(metrics.Gauge)
	if n := offlineReplicas.Value(); n != 0 {
		t.Fatalf("OfflineReplicaCount %d before the failure, want 0", n)
	}
	logs.MarkLogDirOffline(dirs[0], syscall.EIO)
	deadline := time.Now().Add(5 * time.Second)
	for !e.rm.getPartition(t0).isOffline() || !e.rm.getPartition(t2).isOffline() || notifier.count() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the partitions of the offline dir did not go offline, or the controller was not told")
		}
		time.Sleep(5 * time.Millisecond) // polling interval
	}
	if n := offlineReplicas.Value(); n != 2 {
		t.Fatalf("OfflineReplicaCount %d with t-0 and t-2 offline, want 2", n)
	}
	if r := waitResult(t, parked, time.Second); r.ErrorCode != kerr.KafkaStorageError.Code {
		t.Fatalf("parked acks=all produce: %d, want KAFKA_STORAGE_ERROR", r.ErrorCode)
	}
	if r := waitResult(t, produceTo(e, t0, 1), time.Second); r.ErrorCode != kerr.KafkaStorageError.Code {
		t.Fatalf("produce to the offline partition: %d, want KAFKA_STORAGE_ERROR", r.ErrorCode)
	}
	ch := make(chan []FetchPartitionResult, 1)
	e.rm.Requests().FetchMessages(FetchParams{ReplicaID: -1, MaxBytes: 1 << 20, Partitions: []FetchPartition{{TopicPartition: t0, PartitionMaxBytes: 1 << 20, CurrentLeaderEpoch: -1}}}, func(r []FetchPartitionResult) { ch <- r })
	if fr := waitResult(t, ch, time.Second)[0]; fr.ErrorCode != kerr.KafkaStorageError.Code {
		t.Fatalf("fetch from the offline partition: %d, want KAFKA_STORAGE_ERROR", fr.ErrorCode)
	}
	e.fetch.mu.Lock()
	removed := slices.Contains(e.fetch.removed, t2)
	_, stillAdded := e.fetch.added[t2]
	e.fetch.mu.Unlock()
	if !removed || stillAdded {
		t.Fatal("the follower's fetcher for the offline partition was not removed")
	}

	// The healthy dir keeps serving.
	if r := waitResult(t, produceTo(e, t1, -1), time.Second); r.ErrorCode != 0 {
		t.Fatalf("produce to the healthy dir's partition: %d", r.ErrorCode)
	}

	// The controller's LeaderAndIsr (a log dir event makes it send one for every replica).
	x0, y0 := TopicPartition{Topic: "x", Partition: 0}, TopicPartition{Topic: "y", Partition: 0}
	res = e.rm.Requests().BecomeLeaderOrFollower(LeaderAndIsrRequest{ControllerID: 1, ControllerEpoch: 1, BrokerEpoch: -1,
		Partitions: []PartitionState{
			{TopicPartition: t0, ControllerEpoch: 1, Leader: 1, LeaderEpoch: 1, ISR: []int32{1, 2}, Replicas: []int32{1, 2}},
			{TopicPartition: t1, ControllerEpoch: 1, Leader: 1, LeaderEpoch: 1, ISR: []int32{1}, Replicas: []int32{1}},
			{TopicPartition: x0, ControllerEpoch: 1, Leader: 1, LeaderEpoch: 3, ISR: []int32{1}, Replicas: []int32{1}},              // its log may have been in d0
			{TopicPartition: y0, ControllerEpoch: 1, Leader: 1, LeaderEpoch: 0, ISR: []int32{1}, Replicas: []int32{1}, IsNew: true}, // new: created in d1
		},
		LiveLeaders: map[int32]string{1: "127.0.0.1:1", 2: "127.0.0.1:2"}})
	want := map[TopicPartition]int16{t0: kerr.KafkaStorageError.Code, t1: 0, x0: kerr.KafkaStorageError.Code, y0: 0}
	for tp, code := range want {
		if res.Partitions[tp] != code {
			t.Fatalf("LeaderAndIsr after the failure, %v: %d, want %d (all: %v)", tp, res.Partitions[tp], code, res.Partitions)
		}
	}
	if l := logs.Get(x0); l != nil {
		t.Fatalf("a partition that is not new was created in %s while a dir is offline", l.Dir())
	}
	if filepath.Dir(logs.Get(y0).Dir()) != dirs[1] {
		t.Fatalf("new partition in %s, want the online dir", logs.Get(y0).Dir())
	}

	for _, info := range e.rm.Requests().DescribeLogDirs(nil) {
		switch info.Dir {
		case dirs[0]:
			if info.ErrorCode != kerr.KafkaStorageError.Code || len(info.Replicas) != 0 {
				t.Fatalf("offline dir described as %+v", info)
			}
		case dirs[1]:
			if _, ok := info.Replicas[t1]; info.ErrorCode != 0 || !ok {
				t.Fatalf("online dir described as %+v", info)
			}
		}
	}
	shutdownMu.Lock()
	asked := shutdownDirs != nil
	shutdownMu.Unlock()
	if asked {
		t.Fatal("shutdown asked while a log dir is online")
	}

	logs.MarkLogDirOffline(dirs[1], syscall.EIO)
	deadline = time.Now().Add(5 * time.Second)
	for {
		shutdownMu.Lock()
		got := shutdownDirs
		shutdownMu.Unlock()
		if len(got) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no shutdown after the last log dir failed (dirs %v)", got)
		}
		time.Sleep(5 * time.Millisecond) // polling interval
	}
	if n := notifier.count(); n != 2 {
		t.Fatalf("%d log dir events, want one per failed dir", n)
	}
}
