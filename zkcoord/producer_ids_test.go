package zkcoord

import (
	"context"
	"sync"
	"testing"

	"github.com/isrbroker/isrbroker/zkcoord/zkdata"
)

// Producer-id blocks (Kafka 2.4 ProducerIdManager): consecutive, non-overlapping blocks of
// 1000 even when two brokers allocate concurrently (compare-and-set on the znode version),
// and the znode JSON carries block_start/block_end as strings.
func TestAllocateProducerIDBlock(t *testing.T) {
	s := startZK(t)
	c1 := connectT(t, testConfig(t, s.Addr, 1, newFakeBroker(t).port()))
	c2 := connectT(t, testConfig(t, s.Addr, 2, newFakeBroker(t).port()))

	start, end, err := c1.ProducerIDs.AllocateProducerIDBlock(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if start != 0 || end != zkdata.ProducerIDBlockSize-1 {
		t.Fatalf("first block = [%d,%d], want [0,%d]", start, end, zkdata.ProducerIDBlockSize-1)
	}
	m, _ := readJSON(t, rawZK(t, s.Addr), "/latest_producer_id_block")
	if m["version"] != float64(1) || m["broker"] != float64(1) || m["block_start"] != "0" || m["block_end"] != "999" {
		t.Fatalf("znode = %v", m)
	}

	type blk struct{ start, end int64 }
	var mu sync.Mutex
	var got []blk
	var wg sync.WaitGroup
	for i := 0; i < 10; i++ {
		c := c1
		if i%2 == 1 {
			c = c2
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, e, err := c.ProducerIDs.AllocateProducerIDBlock(context.Background())
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			got = append(got, blk{s, e})
			mu.Unlock()
		}()
	}
	wg.Wait()
	seen := map[int64]bool{}
	for _, b := range got {
		if b.end-b.start != zkdata.ProducerIDBlockSize-1 || b.start%zkdata.ProducerIDBlockSize != 0 || b.start == 0 {
			t.Errorf("bad block %v", b)
		}
		if seen[b.start] {
			t.Errorf("block %v handed out twice", b)
		}
		seen[b.start] = true
	}
	if len(seen) != 10 {
		t.Fatalf("got %d distinct blocks, want 10", len(seen))
	}
	m, _ = readJSON(t, rawZK(t, s.Addr), "/latest_producer_id_block")
	if m["block_end"] != "10999" {
		t.Fatalf("znode after 11 blocks = %v", m)
	}
}
