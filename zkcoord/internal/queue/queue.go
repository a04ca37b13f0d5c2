// Package queue is the unbounded FIFO behind zkcoord's event goroutines (the controller's
// event queue, the per-broker request queues, the session state queue). It owns only the
// queued items.
package queue

import "sync"

// Queue is an unbounded FIFO with a wake-up channel; Put never blocks.
type Queue[T any] struct {
	mu    sync.Mutex
	items []T
	wake  chan struct{}
}

// New returns an empty queue.
func New[T any]() *Queue[T] { return &Queue[T]{wake: make(chan struct{}, 1)} }

// Put appends v.
func (q *Queue[T]) Put(v T) {
	q.mu.Lock()
	q.items = append(q.items, v)
	q.mu.Unlock()
	q.signal()
}

// ClearAndPut drops everything queued, puts v and returns the dropped items, oldest first
// (Kafka's ControllerEventManager.clearAndPut; the caller preempts them).
func (q *Queue[T]) ClearAndPut(v T) []T {
	q.mu.Lock()
	dropped := q.items
	q.items = []T{v}
	q.mu.Unlock()
	q.signal()
	return dropped
}

func (q *Queue[T]) signal() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// Get blocks until an item is available or done is closed.
func (q *Queue[T]) Get(done <-chan struct{}) (T, bool) {
	for {
		q.mu.Lock()
		if len(q.items) > 0 {
			v := q.items[0]
			var zero T
			q.items[0] = zero
			q.items = q.items[1:]
			q.mu.Unlock()
			return v, true
		}
		q.mu.Unlock()
		select {
		case <-q.wake:
		case <-done:
			var zero T
			return zero, false
		}
	}
}

// Len returns the number of queued items.
func (q *Queue[T]) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.items)
}
