package fetcher

import (
	"testing"
)

// KIP-226 num.replica.fetchers: resizing the pool re-hashes every partition to its new fetcher
// id with its fetch state kept; replication goes on and the follower's logs match the leader's
// (nothing lost or fetched twice); shrinking back to 1 stops the extra fetchers.
func TestResizeThreadPoolKeepsFetchState(t *testing.T) {
	c := newCluster(t, Config{NumFetchers: 1}, 1)
	const topic = "orders-v2" // Java hash: even partitions → fetcher 0, odd → fetcher 1 (of 2)
	parts := make(map[TopicPartition]InitialFetchState)
	for p := int32(0); p < 8; p++ {
		x := tp(topic, p)
		c.local.log(x)
		c.leaders[1].lead(x, 0, &memLog{})
		c.leaders[1].produce(x, values("a", 0, 5)...)
		parts[x] = InitialFetchState{Leader: ep(1), CurrentLeaderEpoch: 0, InitOffset: 0}
	}
	c.mgr.AddFetcherForPartitions(parts)
	for x := range parts {
		c.waitInSync(x, 1)
	}
	if fs := c.mgr.Fetchers(); len(fs) != 1 {
		t.Fatalf("fetchers = %+v, want 1", fs)
	}

	c.mgr.ResizeThreadPool(2)
	fs := c.mgr.Fetchers()
	if len(fs) != 2 || c.mgr.NumFetchers() != 2 {
		t.Fatalf("fetchers after resize to 2 = %+v, want 2", fs)
	}
	for _, f := range fs {
		for _, x := range f.Partitions {
			if want := FetcherID(x.Topic, x.Partition, 2); f.FetcherID != want {
				t.Errorf("%v in fetcher %d, Java hash says %d", x, f.FetcherID, want)
			}
		}
		if len(f.Partitions) != 4 {
			t.Errorf("fetcher %+v: want 4 partitions", f)
		}
	}
	for x := range parts {
		st, ok := c.mgr.PartitionState(x)
		if !ok || st.FetchOffset != 5 {
			t.Fatalf("%v: state %+v after the resize, want fetch offset 5 kept", x, st)
		}
		c.leaders[1].produce(x, values("b", 5, 10)...)
	}
	for x := range parts {
		c.waitInSync(x, 1)
		c.requireEntries(x, c.leaders[1].entries(x))
	}

	c.mgr.ResizeThreadPool(1)
	if fs := c.mgr.Fetchers(); len(fs) != 1 || fs[0].FetcherID != 0 || len(fs[0].Partitions) != 8 {
		t.Fatalf("fetchers after resize to 1 = %+v, want one with 8 partitions", fs)
	}
	for x := range parts {
		c.leaders[1].produce(x, values("c", 10, 12)...)
	}
	for x := range parts {
		c.waitInSync(x, 1)
		c.requireEntries(x, c.leaders[1].entries(x))
	}
}
