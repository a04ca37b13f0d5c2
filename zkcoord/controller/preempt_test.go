package controller

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

// queueAdminRequests puts a ControlledShutdown, an ElectLeaders, an
// AlterPartitionReassignments and a ListPartitionReassignments on ct's queue, as request
// handlers do, and returns the channel their callers' errors arrive on. The callers' own
// deadline (the broker's 25 s for a controlled shutdown) is far beyond the test's wait.
func queueAdminRequests(t *testing.T, h *harness, ct *Controller) <-chan error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
	t.Cleanup(cancel)
	errs := make(chan error, 4)
	tp := TopicPartition{Topic: "q", Partition: 0}
	go func() {
		_, err := ct.ControlledShutdown(ctx, 2, -1)
		errs <- fmt.Errorf("ControlledShutdown: %w", err)
	}()
	go func() {
		_, err := ct.ElectLeaders(ctx, []TopicPartition{tp}, false)
		errs <- fmt.Errorf("ElectLeaders: %w", err)
	}()
	go func() {
		_, err := ct.AlterPartitionReassignments(ctx, map[TopicPartition][]int32{tp: {2, 3}})
		errs <- fmt.Errorf("AlterPartitionReassignments: %w", err)
	}()
	go func() {
		_, err := ct.ListPartitionReassignments(ctx, nil)
		errs <- fmt.Errorf("ListPartitionReassignments: %w", err)
	}()
	// The controller goroutine is busy (the harness does not step it): the requests queue up.
	deadline := time.Now().Add(5 * time.Second)
	for ct.q.Len() < 4 {
		if time.Now().After(deadline) {
			t.Fatalf("%d requests queued, want 4", ct.q.Len())
		}
		time.Sleep(time.Millisecond) // polling interval
	}
	return errs
}

// awaitNotController fails the test unless all four callers get ErrNotController within a
// few seconds (their own deadline is 25 s).
func awaitNotController(t *testing.T, errs <-chan error, step func()) {
	t.Helper()
	timer := time.NewTimer(3 * time.Second)
	defer timer.Stop()
	for got := 0; got < 4; {
		if step != nil {
			step()
		}
		select {
		case err := <-errs:
			if !errors.Is(err, ErrNotController) {
				t.Fatalf("%v, want ErrNotController", err)
			}
			got++
		case <-timer.C:
			t.Fatalf("%d of 4 queued admin requests answered 3 s after the controller stopped; the others wait for their own timeout", got)
		case <-time.After(2 * time.Millisecond): // polling interval for step
		}
	}
}

// TestExpirePreemptsQueuedAdminRequests: a ZooKeeper session expiry clears the controller's
// queue (Kafka's clearAndPut(Expire)); the requests it drops answer NOT_CONTROLLER at once
// (Kafka's preempt), without being processed, instead of leaving their callers to their own
// timeouts.
func TestExpirePreemptsQueuedAdminRequests(t *testing.T) {
	h, ct := newActiveHarness(t, 3)
	h.createTopic("q", map[int32][]int32{0: {1, 2}}, nil)
	h.until("online", func() bool { return h.state("q", 0) != nil })
	h.step()
	errs := queueAdminRequests(t, h, ct)
	ct.Expire()
	awaitNotController(t, errs, nil) // no event is handled: the answers come from Expire itself
	if n := ct.q.Len(); n != 1 {
		t.Fatalf("%d events queued after Expire, want 1 (Expire)", n)
	}
	h.step()
	if ct.IsActive() {
		t.Fatal("controller still active after its session expired")
	}
}

// TestResignAnswersQueuedAdminRequests: requests queued when the controller resigns for
// another reason (another broker took /controller) are handled after the resignation and
// answer NOT_CONTROLLER.
func TestResignAnswersQueuedAdminRequests(t *testing.T) {
	h, ct := newActiveHarness(t, 3)
	h.createTopic("q", map[int32][]int32{0: {1, 2}}, nil)
	h.until("online", func() bool { return h.state("q", 0) != nil })
	h.step()
	errs := queueAdminRequests(t, h, ct)
	ct.resign("test: controller moved")
	awaitNotController(t, errs, h.step)
}
