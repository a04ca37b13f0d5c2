package fetcher

import (
	"sync"
	"testing"
)

// fakeQuota is a ReplicaQuota whose exceeded state the test sets.
type fakeQuota struct {
	mu        sync.Mutex
	throttled map[TopicPartition]bool
	exceeded  bool
	recorded  int64
}

func (q *fakeQuota) IsThrottled(tp TopicPartition) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.throttled[tp]
}

func (q *fakeQuota) IsQuotaExceeded() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.exceeded
}

func (q *fakeQuota) Record(n int64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.recorded += n
}

func (q *fakeQuota) set(exceeded bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.exceeded = exceeded
}

func (q *fakeQuota) bytes() int64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.recorded
}

// Issue 4 (docs/kafka-facts.md §4): a throttled partition that is not in sync is left out of
// the fetch while the follower quota is exceeded; a throttled partition that is in sync keeps
// being fetched; the not-in-sync partition's bytes are recorded against the quota.
func TestFollowerThrottleSkipsNotInSyncPartitions(t *testing.T) {
	x, y := tp("t", 0), tp("t", 1)
	q := &fakeQuota{throttled: map[TopicPartition]bool{x: true, y: true}, exceeded: true}
	c := newCluster(t, Config{FetchMaxBytes: 1, Quota: q}, 1)

	lx := &memLog{}
	for i := 0; i < 20; i++ {
		lx.appendLeader(0, values("x", i, i+1)...)
	}
	lx.hw = lx.leo
	c.leaders[1].lead(x, 0, lx)
	c.leaders[1].lead(y, 0, &memLog{})
	c.local.log(x)
	c.local.log(y)
	c.follow(x, 1, 0)
	c.follow(y, 1, 0)

	// The first response tells the fetcher that x is behind (lag > 0): from then on x is
	// throttled. y, in sync, keeps replicating every new write.
	eventually(t, "first fetch of x", func() bool {
		_, _, leo, _ := c.local.snapshot(x)
		return leo >= 1
	})
	for i := 0; i < 3; i++ {
		c.leaders[1].produce(y, values("y", i, i+1)...)
		c.waitInSync(y, 1)
	}
	_, _, leo, _ := c.local.snapshot(x)
	if leo != 1 {
		t.Fatalf("throttled, not-in-sync x advanced to LEO %d while the quota was exceeded", leo)
	}
	fetches := c.leaders[1].fetchLog()
	last := fetches[len(fetches)-1]
	if _, ok := last.offsets[x]; ok {
		t.Fatalf("last fetch %v still asked for throttled x", last.offsets)
	}
	if q.bytes() != 0 {
		t.Fatalf("in-sync traffic recorded %d bytes against the quota", q.bytes())
	}

	// Under the quota again: x catches up and its bytes are counted.
	q.set(false)
	c.waitInSync(x, 1)
	if q.bytes() == 0 {
		t.Fatal("no throttled bytes recorded while x caught up")
	}
}
