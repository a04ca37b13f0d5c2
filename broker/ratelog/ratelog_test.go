package ratelog

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/sirupsen/logrus/hooks/test"
)

type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func TestLimiterLogsOncePerIntervalThenCountsSuppressed(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1000, 0)}
	lim := New(10*time.Second, clock.Now)
	logger, hook := test.NewNullLogger()
	log := logger.WithField("component", "replica-manager")

	for i := 0; i < 5; i++ {
		lim.Warn(log, "orders-0", "rejecting acks=all produce")
		clock.Advance(time.Second)
	}
	if n := len(hook.AllEntries()); n != 1 {
		t.Fatalf("5 lines within 5 s: logged %d, want 1", n)
	}
	if _, ok := hook.LastEntry().Data["suppressed"]; ok {
		t.Fatalf("first line carries suppressed: %v", hook.LastEntry().Data)
	}

	// Another key and another message are limited separately.
	lim.Warn(log, "orders-1", "rejecting acks=all produce")
	lim.Warn(log, "orders-0", "another message")
	if n := len(hook.AllEntries()); n != 3 {
		t.Fatalf("other key and message: logged %d lines, want 3", n)
	}

	// 10 s after the first line the next one is due and counts the 4 dropped.
	clock.Advance(5 * time.Second)
	lim.Warn(log, "orders-0", "rejecting acks=all produce")
	e := hook.LastEntry()
	if len(hook.AllEntries()) != 4 || e.Message != "rejecting acks=all produce" || e.Level != logrus.WarnLevel {
		t.Fatalf("after the interval: %d lines, last %q at %s", len(hook.AllEntries()), e.Message, e.Level)
	}
	if e.Data["suppressed"] != int64(4) || e.Data["component"] != "replica-manager" {
		t.Fatalf("after the interval: fields %v, want suppressed=4 and the logger's own fields", e.Data)
	}

	// The count restarts: one more within the interval, then the next line says 1.
	clock.Advance(time.Second)
	lim.Info(log, "orders-0", "rejecting acks=all produce")
	clock.Advance(10 * time.Second)
	lim.Info(log, "orders-0", "rejecting acks=all produce")
	e = hook.LastEntry()
	if len(hook.AllEntries()) != 5 || e.Data["suppressed"] != int64(1) || e.Level != logrus.InfoLevel {
		t.Fatalf("second interval: %d lines, last fields %v level %s, want 5 lines and suppressed=1 at info", len(hook.AllEntries()), e.Data, e.Level)
	}

	// A quiet pair logs again without a suppressed field.
	clock.Advance(time.Minute)
	lim.Warn(log, "orders-0", "rejecting acks=all produce")
	if _, ok := hook.LastEntry().Data["suppressed"]; ok || len(hook.AllEntries()) != 6 {
		t.Fatalf("after a quiet minute: %d lines, fields %v", len(hook.AllEntries()), hook.LastEntry().Data)
	}
}

func TestLimiterForgetsQuietPairsBeyondItsBound(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1000, 0)}
	lim := New(time.Second, clock.Now)
	logger, _ := test.NewNullLogger()
	for i := 0; i < maxEntries; i++ {
		lim.Warn(logger, fmt.Sprint(i), "m")
	}
	clock.Advance(2 * time.Second)
	lim.Warn(logger, "new", "m")
	lim.mu.Lock()
	n := len(lim.seen)
	lim.mu.Unlock()
	if n != 1 {
		t.Fatalf("remembered %d pairs after the quiet ones were due, want 1", n)
	}
}

func TestLimiterConcurrentUse(t *testing.T) {
	lim := New(time.Hour, nil)
	logger, hook := test.NewNullLogger()
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 100; i++ {
				lim.Warn(logger, "k", "m")
			}
		}()
	}
	wg.Wait()
	if n := len(hook.AllEntries()); n != 1 {
		t.Fatalf("800 concurrent lines within the interval: logged %d, want 1", n)
	}
}
