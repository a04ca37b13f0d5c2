package integration

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/isrbroker/isrbroker/tests/cluster"
)

// ackedAt is one acknowledged record with when its Produce was called and when it was acked.
type ackedAt struct {
	acked
	called, at time.Time
}

// produceFailure is one produce whose promise reported an error.
type produceFailure struct {
	Seq int
	Err error
	// Stopping: the promise fired after stop began; kgo fails the records still buffered then
	// with the canceled context's error, which says nothing about the brokers.
	Stopping bool
}

// ackProducerOptions are the per-test differences of the background producer. The zero value
// is the default load: 5 records every 2 ms (about 2500 records/s, a steady load that leaves
// the 2-core machine room to work), unkeyed, placed by the client's partitioner.
type ackProducerOptions struct {
	// every and perTick pace the producer: perTick records each time a ticker with period
	// every fires (pacing, not synchronisation). Zero: 2 ms and 5.
	every   time.Duration
	perTick int
	// unpaced produces as fast as the client takes records (kgo's Produce blocks while
	// max.buffered.records are outstanding); every and perTick are then unused.
	unpaced bool
	// partitions > 0 sends record seq to partition seq % partitions, round-robin; the client
	// must use kgo.ManualPartitioner.
	partitions int32
	// keys > 0 gives record seq the key "k<seq % keys>", so the default (hashing) partitioner
	// spreads the records over every partition of the topic.
	keys int
}

// ackProducer is the tests' background workload: a producer writing unique values "v-<seq>"
// to one topic until stop (on a client with kgo's defaults: acks=all, idempotent, retries),
// recording every acknowledgement with where it landed and when.
type ackProducer struct {
	cl     *kgo.Client
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{} // closed when the produce loop has returned
	wg     sync.WaitGroup

	mu    sync.Mutex
	acks  []ackedAt // in the order the promises fired
	fails []produceFailure
}

// startAckProducer starts producing to topic on cl. The producer stops at stop, or when the
// test ends (its cleanup only cancels: the cluster's cleanup closes cl, failing whatever is
// still in flight).
func startAckProducer(t *testing.T, cl *kgo.Client, topic string, o ackProducerOptions) *ackProducer {
	t.Helper()
	if o.every == 0 {
		o.every = 2 * time.Millisecond
	}
	if o.perTick == 0 {
		o.perTick = 5
	}
	p := &ackProducer{cl: cl, done: make(chan struct{})}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	t.Cleanup(func() { p.cancel(); <-p.done })
	go func() {
		defer close(p.done)
		var tick <-chan time.Time
		if !o.unpaced {
			ticker := time.NewTicker(o.every)
			defer ticker.Stop()
			tick = ticker.C
		}
		for seq := 0; p.ctx.Err() == nil; seq++ {
			if tick != nil && seq%o.perTick == 0 {
				select {
				case <-tick:
				case <-p.ctx.Done():
					return
				}
			}
			rec := &kgo.Record{Topic: topic, Value: []byte(fmt.Sprintf("v-%07d", seq))}
			if o.partitions > 0 {
				rec.Partition = int32(seq) % o.partitions
			}
			if o.keys > 0 {
				rec.Key = []byte(fmt.Sprintf("k%d", seq%o.keys))
			}
			s, called := seq, time.Now()
			p.wg.Add(1)
			cl.Produce(p.ctx, rec, func(r *kgo.Record, err error) {
				defer p.wg.Done()
				now := time.Now()
				p.mu.Lock()
				defer p.mu.Unlock()
				if err != nil {
					p.fails = append(p.fails, produceFailure{Seq: s, Err: err, Stopping: p.ctx.Err() != nil})
					return
				}
				p.acks = append(p.acks, ackedAt{
					acked:  acked{Seq: s, Key: r.Key, Value: r.Value, Partition: r.Partition, Offset: r.Offset},
					called: called, at: now,
				})
			})
		}
	}()
	return p
}

// count returns how many records were acknowledged so far.
func (p *ackProducer) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.acks)
}

// countWhere returns how many acknowledged records satisfy keep.
func (p *ackProducer) countWhere(keep func(acked) bool) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, a := range p.acks {
		if keep(a.acked) {
			n++
		}
	}
	return n
}

// failures returns how many produces failed so far.
func (p *ackProducer) failures() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.fails)
}

// firstAckAfter returns the earliest acknowledgement time on partition part of a record whose
// Produce was called after t (zero when none yet).
func (p *ackProducer) firstAckAfter(part int32, t time.Time) time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	var first time.Time
	for _, a := range p.acks {
		if a.Partition == part && a.called.After(t) && (first.IsZero() || a.at.Before(first)) {
			first = a.at
		}
	}
	return first
}

// ackTimes returns when each acknowledgement arrived, in the order the promises fired.
func (p *ackProducer) ackTimes() []time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	times := make([]time.Time, len(p.acks))
	for i, a := range p.acks {
		times[i] = a.at
	}
	return times
}

// waitProgress waits up to timeout until n more records than at the call are acknowledged.
func (p *ackProducer) waitProgress(t *testing.T, n int, timeout time.Duration, what string) {
	t.Helper()
	from := p.count()
	cluster.WaitFor(t, timeout, func() (bool, string) {
		a, f := p.count(), p.failures()
		return a >= from+n, fmt.Sprintf("%s: %d acknowledged since, %d failed in all", what, a-from, f)
	})
}

// stop stops producing, flushes the client and waits for every promise (a minute at most);
// it returns the acknowledged records and the failed produces, including those failed by the
// stop itself (Stopping).
func (p *ackProducer) stop(t *testing.T) ([]acked, []produceFailure) {
	t.Helper()
	p.cancel()
	<-p.done
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := p.cl.Flush(ctx); err != nil {
		t.Fatalf("flush: %v", err)
	}
	promises := make(chan struct{})
	go func() { p.wg.Wait(); close(promises) }()
	select {
	case <-promises:
	case <-ctx.Done():
		t.Fatal("produce promises still outstanding after flush")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	acks := make([]acked, len(p.acks))
	for i, a := range p.acks {
		acks[i] = a.acked
	}
	byError := map[string]int{}
	for _, f := range p.fails {
		byError[f.Err.Error()]++
	}
	t.Logf("%d records acknowledged, %d produces failed: %v", len(acks), len(p.fails), byError)
	return acks, append([]produceFailure(nil), p.fails...)
}
