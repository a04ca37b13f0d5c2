package txncoord

import (
	"fmt"
	"sync"
	"testing"
	"time"

	rm "github.com/isrbroker/isrbroker/replicamanager"
)

// asyncReplicas completes every append on another goroutine, as the replica manager's
// delayed produce does.
type asyncReplicas struct{ *fakeReplicas }

func (a asyncReplicas) AppendRecords(timeout time.Duration, acks int16, entries map[rm.TopicPartition][]byte, done func(map[rm.TopicPartition]rm.ProduceResult)) {
	a.fakeReplicas.AppendRecords(timeout, acks, entries, func(res map[rm.TopicPartition]rm.ProduceResult) { go done(res) })
}

// Producers of many transactional ids, each with a second producer fencing it, run
// concurrently against appends that complete on other goroutines (run with -race): every call
// is answered once, and each id ends in a state a request sequence can reach.
func TestConcurrentProducers(t *testing.T) {
	reps := newFakeReplicas()
	e := &env{t: t, clock: newFakeClock(), reps: reps, pids: &fakePIDs{next: 1}, markers: newFakeMarkers(), meta: newMeta()}
	e.c = New(Config{NumPartitions: 1, Clock: e.clock}, asyncReplicas{reps}, e.pids, e.markers, e.meta, groupsInZero{})
	e.c.Start()
	t.Cleanup(e.c.Close)
	e.elect(0, 1)
	wait := func(f func(func(int16))) int16 {
		ch := make(chan int16, 2)
		f(func(c int16) { ch <- c })
		select {
		case c := <-ch:
			return c
		case <-time.After(10 * time.Second):
			t.Error("no answer")
			return -2
		}
	}
	initID := func(id string) InitResult {
		ch := make(chan InitResult, 1)
		e.c.InitProducerID(&id, 60000, func(r InitResult) { ch <- r })
		select {
		case r := <-ch:
			return r
		case <-time.After(10 * time.Second):
			t.Error("no InitProducerId answer")
			return initError(-2)
		}
	}
	const ids, rounds = 8, 20
	var wg sync.WaitGroup
	for i := 0; i < ids; i++ {
		id := fmt.Sprintf("tx-%d", i)
		for w := 0; w < 2; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for r := 0; r < rounds; r++ {
					res := initID(id)
					if res.ErrorCode != errNone {
						continue
					}
					if wait(func(cb func(int16)) {
						e.c.AddPartitions(id, res.ProducerID, res.ProducerEpoch, []topicPartition{tp0}, cb)
					}) != errNone {
						continue
					}
					wait(func(cb func(int16)) { e.c.EndTxn(id, res.ProducerID, res.ProducerEpoch, r%2 == 0, cb) })
				}
			}()
		}
	}
	wg.Wait()
	deadline := time.Now().Add(10 * time.Second)
	for i := 0; i < ids; i++ {
		id := fmt.Sprintf("tx-%d", i)
		for {
			s, ok := e.snapshot(id)
			if !ok {
				t.Fatalf("%s not cached", id)
			}
			if !s.hasPending {
				switch s.state {
				case Empty, Ongoing, CompleteCommit, CompleteAbort:
				default:
					t.Fatalf("%s ends in %s", id, s.state)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s still pending %s", id, s.pending)
			}
			time.Sleep(time.Millisecond) // polling the completions with a deadline
		}
	}
}
