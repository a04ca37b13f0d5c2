package fetcher

import (
	"fmt"
	"io"
	"os"
	"reflect"
	"testing"
	"time"

	"github.com/rcrowley/go-metrics"
	"github.com/sirupsen/logrus"
)

const waitFor = 10 * time.Second

// eventually polls cond until it holds or the deadline passes (no sleeps as synchronisation).
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitFor)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond) // polling interval, not synchronisation
	}
}

func testLogger() logrus.FieldLogger {
	l := logrus.New()
	l.SetOutput(io.Discard)
	if lvl, err := logrus.ParseLevel(os.Getenv("FETCHER_TEST_LOG")); err == nil {
		l.SetOutput(os.Stderr)
		l.SetLevel(lvl)
	}
	return l
}

// cluster wires a Manager (the follower, broker 2) to in-memory leaders by broker id.
type cluster struct {
	t       *testing.T
	leaders map[int32]*memLeader
	local   *fakeLocal
	mgr     *Manager
	reg     metrics.Registry
}

func newCluster(t *testing.T, cfg Config, leaderIDs ...int32) *cluster {
	c := &cluster{t: t, leaders: make(map[int32]*memLeader), local: newFakeLocal(), reg: metrics.NewRegistry()}
	for _, id := range leaderIDs {
		c.leaders[id] = newMemLeader()
	}
	cfg.BrokerID = 2
	if cfg.FetchWaitMax == 0 {
		cfg.FetchWaitMax = 50 * time.Millisecond
	}
	if cfg.FetchBackoff == 0 {
		cfg.FetchBackoff = 50 * time.Millisecond
	}
	cfg.Registry = c.reg
	cfg.Log = testLogger()
	cfg.NewLeader = func(ep BrokerEndPoint, _ int) Leader { return c.leaders[ep.ID].handle() }
	c.mgr = NewManager(cfg, c.local)
	t.Cleanup(c.mgr.Close)
	return c
}

func ep(id int32) BrokerEndPoint {
	return BrokerEndPoint{ID: id, Addr: fmt.Sprintf("leader-%d:9092", id)}
}

func tp(topic string, p int32) TopicPartition { return TopicPartition{Topic: topic, Partition: p} }

// follow adds tp as following leader at epoch, with the local HW as the initial offset.
func (c *cluster) follow(p TopicPartition, leader, epoch int32) {
	hw, err := c.local.HighWatermark(p)
	if err != nil {
		c.t.Fatal(err)
	}
	c.mgr.AddFetcherForPartitions(map[TopicPartition]InitialFetchState{p: {Leader: ep(leader), CurrentLeaderEpoch: epoch, InitOffset: hw}})
}

// waitInSync waits until the follower's log of p equals the leader's.
func (c *cluster) waitInSync(p TopicPartition, leader int32) {
	c.t.Helper()
	eventually(c.t, fmt.Sprintf("%v to match leader %d", p, leader), func() bool {
		got, _, _, _ := c.local.snapshot(p)
		return reflect.DeepEqual(got, c.leaders[leader].entries(p))
	})
}

func (c *cluster) requireEntries(p TopicPartition, want []entry) {
	c.t.Helper()
	got, _, _, _ := c.local.snapshot(p)
	if !reflect.DeepEqual(got, want) {
		c.t.Fatalf("%v entries:\n got %v\nwant %v", p, got, want)
	}
}

func values(prefix string, from, to int) []string {
	var out []string
	for i := from; i < to; i++ {
		out = append(out, fmt.Sprintf("%s%d", prefix, i))
	}
	return out
}
