package controller

import "context"

// await enqueues ev and waits for the reply the controller goroutine sends on reply, for ctx to
// end, or for the controller to stop (ErrNotController). It is the one shape of every request
// that other goroutines put to the controller (ControlledShutdown, ElectLeaders, the KIP-455
// calls): the event loop stays the only writer of the controller's state. Not active →
// ErrNotController without enqueuing.
func await[T any](ctx context.Context, ct *Controller, ev event, reply <-chan T) (T, error) {
	var zero T
	if ct.closed() || !ct.active.Load() {
		return zero, ErrNotController
	}
	ct.enqueue(ev)
	select {
	case r := <-reply:
		return r, nil
	case <-ctx.Done():
		return zero, ctx.Err()
	case <-ct.done:
		return zero, ErrNotController
	}
}
