package replicamanager

import (
	"sync"
	"sync/atomic"
	"time"
)

// delayedOp is an operation parked until a condition on some partitions holds or its timeout
// passes: an acks=-1 produce waiting for the HW (K2), or a fetch waiting for min_bytes (S14.5).
type delayedOp struct {
	keys []TopicPartition
	// try reports whether the operation can complete now. It must not answer the client.
	try func() bool
	// complete answers the client; expired tells whether the timeout fired first.
	complete func(expired bool)

	done  atomic.Bool
	timer atomic.Pointer[time.Timer]
}

// purgatory holds delayed operations keyed by partition (Kafka's DelayedOperationPurgatory).
// Its lock is a leaf: try and complete run without it.
type purgatory struct {
	mu       sync.Mutex
	watchers map[TopicPartition]map[*delayedOp]struct{}
}

func newPurgatory() *purgatory {
	return &purgatory{watchers: make(map[TopicPartition]map[*delayedOp]struct{})}
}

// tryCompleteElseWatch completes op at once if it can; otherwise parks it on its keys with a
// timer. The second try after registration closes the race with an event that fired between the
// first try and the registration.
func (p *purgatory) tryCompleteElseWatch(op *delayedOp, timeout time.Duration) {
	if op.try() {
		p.forceComplete(op, false)
		return
	}
	p.mu.Lock()
	for _, k := range op.keys {
		w := p.watchers[k]
		if w == nil {
			w = make(map[*delayedOp]struct{})
			p.watchers[k] = w
		}
		w[op] = struct{}{}
	}
	p.mu.Unlock()
	op.timer.Store(time.AfterFunc(timeout, func() { p.forceComplete(op, true) }))
	if op.try() {
		p.forceComplete(op, false)
	}
}

// forceComplete answers op exactly once.
func (p *purgatory) forceComplete(op *delayedOp, expired bool) {
	if !op.done.CompareAndSwap(false, true) {
		return
	}
	if t := op.timer.Load(); t != nil {
		t.Stop()
	}
	p.mu.Lock()
	for _, k := range op.keys {
		if w := p.watchers[k]; w != nil {
			delete(w, op)
			if len(w) == 0 {
				delete(p.watchers, k)
			}
		}
	}
	p.mu.Unlock()
	op.complete(expired)
}

// checkAndComplete re-evaluates the operations watching tp (after an append, a HW move, or a
// leadership change).
func (p *purgatory) checkAndComplete(tp TopicPartition) {
	p.mu.Lock()
	w := p.watchers[tp]
	if len(w) == 0 {
		p.mu.Unlock()
		return
	}
	ops := make([]*delayedOp, 0, len(w))
	for op := range w {
		ops = append(ops, op)
	}
	p.mu.Unlock()
	for _, op := range ops {
		if !op.done.Load() && op.try() {
			p.forceComplete(op, false)
		}
	}
}

// watched reports how many operations wait (metrics and tests).
func (p *purgatory) watched() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	seen := make(map[*delayedOp]struct{})
	for _, w := range p.watchers {
		for op := range w {
			seen[op] = struct{}{}
		}
	}
	return len(seen)
}
