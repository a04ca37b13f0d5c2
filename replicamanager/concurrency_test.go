package replicamanager

import (
	"slices"
	"sync"
	"testing"
	"time"
)

// Appends run under the read side of the partition lock: concurrent produces to one partition,
// with a follower fetching and the shrink task running, still get distinct, gap-free offsets, and
// the HW stays within the LEO (run with -race).
func TestConcurrentAppendsUnderTheReadLock(t *testing.T) {
	e := newEnv(t, 1, 1)
	e.leaderAndIsr(t, 1, 1, []int32{1, 2}, []int32{1, 2})
	const producers, each = 4, 50
	var mu sync.Mutex
	var offsets []int64
	var wg sync.WaitGroup
	stop := make(chan struct{})
	fetched := make(chan struct{})
	go func() {
		defer close(fetched)
		p := e.rm.getPartition(tp0())
		for {
			select {
			case <-stop:
				return
			default:
			}
			e.followerFetch(t, 2, p.log.LogEndOffset())
			e.rm.tasks.maybeShrinkIsr()
			if hw, leo := p.HighWatermark(), p.log.LogEndOffset(); hw > leo {
				t.Errorf("HW %d above LEO %d", hw, leo)
			}
		}
	}()
	for i := 0; i < producers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < each; j++ {
				r := waitResult(t, e.produce(t, 1, 1, time.Second), 5*time.Second)
				if r.ErrorCode != 0 {
					t.Errorf("produce: error %d", r.ErrorCode)
					return
				}
				mu.Lock()
				offsets = append(offsets, r.BaseOffset)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(stop)
	<-fetched
	slices.Sort(offsets)
	for i, o := range offsets {
		if o != int64(i) {
			t.Fatalf("offsets not distinct and gap-free at %d: %v", i, offsets[max(0, i-3):min(len(offsets), i+3)])
		}
	}
}
