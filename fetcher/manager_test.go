package fetcher

import (
	"testing"
)

// S15/S16/S23: with num.replica.fetchers=2 and 8 partitions led by one broker, the follower runs
// at most 2 fetchers toward it, partitions sit in the fetcher given by the Java hash formula,
// and once leadership moves away the idle fetchers are shut down.
func TestS15_AtMostNumFetchersPerLeaderAndIdleShutdown(t *testing.T) {
	c := newCluster(t, Config{NumFetchers: 2}, 1, 3)
	const topic = "orders-v2" // Java: even partitions → fetcher 0, odd → fetcher 1
	parts := make(map[TopicPartition]InitialFetchState)
	for p := int32(0); p < 8; p++ {
		x := tp(topic, p)
		c.local.log(x)
		c.leaders[1].lead(x, 0, &memLog{})
		c.leaders[1].produce(x, values("m", 0, int(p)+1)...)
		parts[x] = InitialFetchState{Leader: ep(1), CurrentLeaderEpoch: 0, InitOffset: 0}
	}
	c.mgr.AddFetcherForPartitions(parts)

	fs := c.mgr.Fetchers()
	if len(fs) != 2 {
		t.Fatalf("fetchers = %+v, want 2 toward leader 1", fs)
	}
	for _, f := range fs {
		if f.LeaderID != 1 || len(f.Partitions) != 4 {
			t.Fatalf("fetcher %+v: want leader 1 with 4 partitions", f)
		}
		for _, x := range f.Partitions {
			if want := int(x.Partition % 2); f.FetcherID != want {
				t.Errorf("%v in fetcher %d, Java hash says %d", x, f.FetcherID, want)
			}
		}
	}
	for x := range parts {
		c.waitInSync(x, 1)
	}
	if got := c.leaders[1].openHandles(); got != 2 {
		t.Fatalf("open leader connections = %d, want 2", got)
	}

	// Leadership of the odd partitions moves to broker 3: their fetcher toward 1 goes idle.
	var odd []TopicPartition
	moved := make(map[TopicPartition]InitialFetchState)
	for p := int32(1); p < 8; p += 2 {
		x := tp(topic, p)
		odd = append(odd, x)
		c.leaders[3].lead(x, 1, c.leaders[1].cloneLog(x))
		moved[x] = InitialFetchState{Leader: ep(3), CurrentLeaderEpoch: 1, InitOffset: 0}
	}
	c.mgr.RemoveFetcherForPartitions(odd)
	c.mgr.AddFetcherForPartitions(moved)
	c.mgr.ShutdownIdleFetcherThreads()
	fs = c.mgr.Fetchers()
	if len(fs) != 2 || fs[0].LeaderID != 1 || fs[0].FetcherID != 0 || fs[1].LeaderID != 3 || fs[1].FetcherID != 1 {
		t.Fatalf("fetchers after move = %+v, want (1,0) and (3,1)", fs)
	}
	if got := c.leaders[1].openHandles(); got != 1 {
		t.Fatalf("open connections to leader 1 = %d, want 1 (idle fetcher shut down)", got)
	}

	// This broker becomes leader of everything (makeLeaders): all fetchers go away.
	all := make([]TopicPartition, 0, len(parts))
	for x := range parts {
		all = append(all, x)
	}
	c.mgr.RemoveFetcherForPartitions(all)
	if fs := c.mgr.Fetchers(); len(fs) != 2 || len(fs[0].Partitions)+len(fs[1].Partitions) != 0 {
		t.Fatalf("fetchers before idle shutdown = %+v, want 2 empty (S23: they end only at shutdownIdleFetcherThreads)", fs)
	}
	c.mgr.ShutdownIdleFetcherThreads()
	if fs := c.mgr.Fetchers(); len(fs) != 0 {
		t.Fatalf("fetchers after idle shutdown = %+v, want none", fs)
	}
	if a, b := c.leaders[1].openHandles(), c.leaders[3].openHandles(); a != 0 || b != 0 {
		t.Fatalf("open leader connections = %d, %d, want 0", a, b)
	}
}

// S16 addPartitions: a partition re-added at the same leader epoch keeps its state; a new epoch
// restarts it in Truncating.
func TestS16_AddSameEpochKeepsState(t *testing.T) {
	c := newCluster(t, Config{}, 1)
	x := tp("t", 0)
	c.local.log(x)
	c.leaders[1].lead(x, 3, &memLog{})
	c.leaders[1].produce(x, "a", "b")
	c.follow(x, 1, 3)
	c.waitInSync(x, 1)

	c.mgr.AddFetcherForPartitions(map[TopicPartition]InitialFetchState{x: {Leader: ep(1), CurrentLeaderEpoch: 3, InitOffset: 0}})
	st, ok := c.mgr.PartitionState(x)
	if !ok || st.Truncating || st.FetchOffset != 2 {
		t.Fatalf("state after same-epoch re-add = %+v, %v; want Fetching at 2", st, ok)
	}
	n := len(c.leaders[1].epochLog())
	c.leaders[1].bumpEpoch(x)
	c.mgr.AddFetcherForPartitions(map[TopicPartition]InitialFetchState{x: {Leader: ep(1), CurrentLeaderEpoch: 4, InitOffset: 2}})
	eventually(t, "epoch truncation at the new epoch", func() bool {
		st, _ := c.mgr.PartitionState(x)
		return len(c.leaders[1].epochLog()) > n && !st.Truncating && st.LeaderEpoch == 4
	})
	c.leaders[1].produce(x, "c")
	c.waitInSync(x, 1)
}

// A leader whose endpoint changed gets a new fetcher; the old fetcher's other partitions move.
func TestManager_LeaderEndpointChangeReplacesFetcher(t *testing.T) {
	c := newCluster(t, Config{}, 1)
	a, b := tp("t", 0), tp("t", 1)
	for _, x := range []TopicPartition{a, b} {
		c.local.log(x)
		c.leaders[1].lead(x, 0, &memLog{})
		c.leaders[1].produce(x, "v")
		c.follow(x, 1, 0)
		c.waitInSync(x, 1)
	}
	moved := BrokerEndPoint{ID: 1, Addr: "leader-1-new:9092"}
	c.mgr.AddFetcherForPartitions(map[TopicPartition]InitialFetchState{a: {Leader: moved, CurrentLeaderEpoch: 0, InitOffset: 1}})
	fs := c.mgr.Fetchers()
	if len(fs) != 1 || len(fs[0].Partitions) != 2 {
		t.Fatalf("fetchers = %+v, want one with both partitions", fs)
	}
	if got := c.leaders[1].openHandles(); got != 1 {
		t.Fatalf("open handles = %d, want 1", got)
	}
	c.leaders[1].produce(b, "w")
	c.waitInSync(b, 1)
}

// Metrics: ReplicationBytesInPerSec counts the appended bytes; MaxLag = leader HW − fetch offset.
func TestMetrics_MaxLagAndReplicationBytesIn(t *testing.T) {
	c := newCluster(t, Config{FetchMaxBytes: 1}, 1) // one batch per fetch
	x := tp("t", 0)
	c.local.log(x)
	c.leaders[1].lead(x, 0, &memLog{})
	total := 0
	for i := 0; i < 10; i++ {
		c.leaders[1].produce(x, "v")
		total += len(c.leaders[1].parts[x].log.batches[i].raw)
	}
	block := make(chan struct{})
	c.leaders[1].mu.Lock()
	c.leaders[1].fetchErr = func(_ TopicPartition, n int) int16 {
		if n == 0 { // answer the first fetch, hold the next ones back
			c.leaders[1].blockFetch = block
		}
		return 0
	}
	c.leaders[1].mu.Unlock()
	c.follow(x, 1, 0)
	eventually(t, "MaxLag = 9 after one batch of ten", func() bool { return c.mgr.MaxLag() == 9 })
	if g, ok := c.reg.Get(MetricMaxLag).(interface{ Value() int64 }); !ok || g.Value() != 9 {
		t.Fatalf("registered MaxLag gauge missing or wrong: %v", c.reg.Get(MetricMaxLag))
	}
	c.leaders[1].mu.Lock()
	c.leaders[1].blockFetch = nil
	c.leaders[1].fetchErr = nil
	c.leaders[1].mu.Unlock()
	close(block)
	c.waitInSync(x, 1)
	eventually(t, "MaxLag back to 0", func() bool { return c.mgr.MaxLag() == 0 })
	m, ok := c.reg.Get(MetricReplicationBytesInPerSec).(interface{ Count() int64 })
	if !ok || m.Count() != int64(total) {
		t.Fatalf("ReplicationBytesInPerSec count = %v, want %d", m, total)
	}
}
