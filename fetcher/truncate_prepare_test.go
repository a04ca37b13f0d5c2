package fetcher

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/rcrowley/go-metrics"
)

// preparingLocal is a fakeLocal whose truncations are prepared (TruncationPreparer): a prepare
// reports itself on preparing and waits for release, standing for a long copy.
type preparingLocal struct {
	*fakeLocal
	preparing chan TopicPartition
	release   chan struct{}
	aborted   chan TopicPartition
}

type fakePrepared struct {
	l      *preparingLocal
	tp     TopicPartition
	offset int64
}

func (f *preparingLocal) PrepareTruncateTo(tp TopicPartition, offset int64) (PreparedTruncation, error) {
	f.preparing <- tp
	<-f.release
	return &fakePrepared{l: f, tp: tp, offset: offset}, nil
}

func (p *fakePrepared) Commit() error { return p.l.TruncateTo(p.tp, p.offset) }
func (p *fakePrepared) Abort()        { p.l.aborted <- p.tp }

func newPreparingCluster(t *testing.T, leaderID int32) (*cluster, *preparingLocal) {
	pl := &preparingLocal{fakeLocal: newFakeLocal(), preparing: make(chan TopicPartition, 1),
		release: make(chan struct{}), aborted: make(chan TopicPartition, 1)}
	c := &cluster{t: t, leaders: map[int32]*memLeader{leaderID: newMemLeader()}, local: pl.fakeLocal, reg: metrics.NewRegistry()}
	cfg := Config{BrokerID: 2, FetchWaitMax: 50 * time.Millisecond, FetchBackoff: 50 * time.Millisecond, Registry: c.reg, Log: testLogger()}
	cfg.NewLeader = func(ep BrokerEndPoint, _ int) Leader { return c.leaders[ep.ID].handle() }
	c.mgr = NewManager(cfg, pl)
	t.Cleanup(c.mgr.Close)
	return c, pl
}

// divergent sets up KIP-101 scenario 2 on x: the follower must truncate m2 at offset 1.
func divergent(c *cluster, x TopicPartition, b int32) {
	bl := &memLog{}
	bl.appendLeader(0, "m1")
	bl.hw = 1
	c.leaders[b].lead(x, 1, bl)
	c.leaders[b].produce(x, "m3")
	al := c.local.log(x)
	al.appendLeader(0, "m1")
	al.appendLeader(0, "m2")
	al.hw = 2
}

// A truncation's slow part runs without the fetcher's partition-state lock: while it runs,
// RemoveFetcherForPartitions and AddFetcherForPartitions (LeaderAndIsr) return, and the
// truncation of a partition removed meanwhile is aborted, not committed (S14.3: no truncation
// after RemoveFetcherForPartitions returned).
func TestPreparedTruncationRunsWithoutTheFetcherLock(t *testing.T) {
	const b = 1
	c, pl := newPreparingCluster(t, b)
	x, y := tp("t", 0), tp("t", 1)
	divergent(c, x, b)
	released := false
	t.Cleanup(func() {
		if !released {
			close(pl.release) // the fetcher must stop on Close
		}
	})
	c.follow(x, b, 1)
	select {
	case got := <-pl.preparing:
		if got != x {
			t.Fatalf("preparing %v", got)
		}
	case <-time.After(waitFor):
		t.Fatalf("the fetcher prepared no truncation (truncations done under its lock: %v)", c.local.truncationLog())
	}
	c.local.log(y)
	c.leaders[b].lead(y, 0, &memLog{})
	removed := make(chan struct{})
	go func() {
		c.mgr.RemoveFetcherForPartitions([]TopicPartition{x})
		c.mgr.AddFetcherForPartitions(map[TopicPartition]InitialFetchState{y: {Leader: ep(b), CurrentLeaderEpoch: 0}})
		close(removed)
	}()
	select {
	case <-removed:
	case <-time.After(waitFor):
		t.Fatal("RemoveFetcherForPartitions and AddFetcherForPartitions waited for the truncation's copy")
	}
	released = true
	close(pl.release)
	select {
	case got := <-pl.aborted:
		if got != x {
			t.Fatalf("aborted %v", got)
		}
	case <-time.After(waitFor):
		t.Fatal("the truncation of the removed partition was not aborted")
	}
	for _, tr := range c.local.truncationLog() {
		if strings.HasPrefix(tr, "TruncateTo t-0 ") {
			t.Fatalf("truncation after the partition was removed: %v", tr)
		}
	}
}

// Without interference the prepared truncation is committed and the follower converges.
func TestPreparedTruncationCommits(t *testing.T) {
	const b = 1
	c, pl := newPreparingCluster(t, b)
	close(pl.release)
	x := tp("t", 0)
	divergent(c, x, b)
	c.follow(x, b, 1)
	c.waitInSync(x, b)
	c.requireEntries(x, []entry{{0, 0, "m1"}, {1, 1, "m3"}})
	if got := c.local.truncationLog(); !reflect.DeepEqual(got, []string{"TruncateTo t-0 1"}) {
		t.Fatalf("truncations %v, want [TruncateTo 1]", got)
	}
}
