package clientquota

import (
	"testing"
	"time"

	"github.com/rcrowley/go-metrics"
)

// TestPrecedence is Kafka 2.4's quota precedence (docs/quotas.md): each row configures the
// entities up to a level and expects the most specific one to apply to user alice, client
// app, with the metric tags Kafka's quotaMetricTags gives.
func TestPrecedence(t *testing.T) {
	d := DefaultEntity
	all := []struct {
		e     Entity
		bound string
	}{
		{Entity{"alice", "app"}, "1"},
		{Entity{"alice", d}, "2"},
		{Entity{"alice", ""}, "3"},
		{Entity{d, "app"}, "4"},
		{Entity{d, d}, "5"},
		{Entity{d, ""}, "6"},
		{Entity{"", "app"}, "7"},
		{Entity{"", d}, "8"},
	}
	wantTags := []Tags{
		{"alice", "app"}, {"alice", "app"}, {"alice", ""}, {"alice", "app"},
		{"alice", "app"}, {"alice", ""}, {"", "app"}, {"", "app"},
	}
	for from := range all {
		q := New(Settings{NumWindows: 11, WindowSize: time.Second, ConsumerDefault: 9}, nil, nil)
		for _, x := range all[from:] {
			if err := q.Apply(x.e, map[string]string{ProducerByteRate: x.bound, ConsumerByteRate: x.bound}); err != nil {
				t.Fatal(err)
			}
		}
		tags, bound := q.Produce.Quota("alice", "app")
		if tags != wantTags[from] || bound != float64(from+1) {
			t.Errorf("entities from %v: got %+v %v, want %+v %d", all[from].e, tags, bound, wantTags[from], from+1)
		}
	}
	// Nothing configured but the static default: it applies per client id.
	q := New(Settings{ConsumerDefault: 9}, nil, nil)
	if tags, bound := q.Fetch.Quota("alice", "app"); tags != (Tags{"", "app"}) || bound != 9 {
		t.Errorf("static default: %+v %v", tags, bound)
	}
	if _, bound := q.Produce.Quota("alice", "app"); bound != 0 {
		t.Errorf("no produce quota: %v", bound)
	}
	// Another user falls to the defaults; removing an entity (empty config) restores the next.
	q = New(Settings{}, nil, nil)
	_ = q.Apply(Entity{"alice", ""}, map[string]string{ProducerByteRate: "3"})
	_ = q.Apply(Entity{d, ""}, map[string]string{ProducerByteRate: "6"})
	if tags, bound := q.Produce.Quota("bob", "app"); tags != (Tags{"bob", ""}) || bound != 6 {
		t.Errorf("bob: %+v %v", tags, bound)
	}
	_ = q.Apply(Entity{"alice", ""}, map[string]string{})
	if _, bound := q.Produce.Quota("alice", "app"); bound != 6 {
		t.Errorf("alice after delete: %v", bound)
	}
	if err := q.Apply(Entity{"bob", ""}, map[string]string{RequestPercentage: "x"}); err == nil {
		t.Error("a bad value is not reported")
	}
}

type clock struct{ t time.Time }

func (c *clock) now() time.Time          { return c.t }
func (c *clock) advance(d time.Duration) { c.t = c.t.Add(d) }

// TestThrottleTimeFormula checks the throttle time against Kafka's formula
// (rate - bound) / bound × windowSize, with Rate's window of at least numWindows-1 windows.
func TestThrottleTimeFormula(t *testing.T) {
	if got := ThrottleTime(1500, 1000, 10000); got != 5000 {
		t.Fatalf("ThrottleTime = %d", got)
	}
	c := &clock{t: time.UnixMilli(1_000_000)}
	reg := metrics.NewRegistry()
	q := New(Settings{NumWindows: 11, WindowSize: time.Second}, reg, c.now)
	_ = q.Apply(Entity{"", "app"}, map[string]string{ProducerByteRate: "1000"})
	// 10000 bytes within the first window: rate = 10000 / 10 s (10 windows assumed) = 1000,
	// not above the bound.
	if d := q.Produce.Record("u", "app", 10000); d != 0 {
		t.Fatalf("at the bound: throttled %v", d)
	}
	c.advance(500 * time.Millisecond)
	// 5000 more: elapsed 500 ms is no full window of the 10 Rate assumes, so the window is
	// 500 + 10×1000 = 10500 ms; rate 15000/10.5 = 1428.57; throttle
	// (1428.57-1000)/1000 × 10500 = 4500 ms.
	d := q.Produce.Record("u", "app", 5000)
	if d != 4500*time.Millisecond {
		t.Fatalf("throttle = %v, want 4.5s", d)
	}
	q.Produce.RecordThrottle("u", "app", d)
	if g, ok := reg.Get("kafka.server:type=Produce,client-id=app,name=byte-rate").(metrics.GaugeFloat64); !ok || g.Value() < 1428 || g.Value() > 1429 {
		t.Fatalf("byte-rate gauge: %v", reg.Get("kafka.server:type=Produce,client-id=app,name=byte-rate"))
	}
	if g := reg.Get("kafka.server:type=Produce,client-id=app,name=throttle-time").(metrics.GaugeFloat64); g.Value() != 4500 {
		t.Fatalf("throttle-time gauge %v", g.Value())
	}
	// Samples older than 11 windows are dropped: after 12 s the rate is back to 0.
	c.advance(12 * time.Second)
	if d := q.Produce.Record("u", "app", 100); d != 0 {
		t.Fatalf("after the windows expired: %v", d)
	}
	// Unrecord takes a recorded value back.
	q.Produce.Record("u", "app", 50000)
	q.Produce.Unrecord("u", "app", 50000)
	if d := q.Produce.Record("u", "app", 1); d != 0 {
		t.Fatalf("after unrecord: %v", d)
	}
}

// TestRequestThrottleCapped: a request_percentage violation waits at most one window
// (ClientRequestQuotaManager.maxThrottleTimeMs).
func TestRequestThrottleCapped(t *testing.T) {
	c := &clock{t: time.UnixMilli(5_000)}
	q := New(Settings{NumWindows: 11, WindowSize: time.Second}, nil, c.now)
	_ = q.Apply(Entity{DefaultEntity, ""}, map[string]string{RequestPercentage: "1"})
	if d := q.Request.Record("u", "c", 500); d != time.Second {
		t.Fatalf("throttle %v, want capped at 1s", d)
	}
	// No quota anywhere: nothing recorded, no metrics.
	reg := metrics.NewRegistry()
	q = New(Settings{}, reg, c.now)
	if d := q.Produce.Record("u", "c", 1e9); d != 0 {
		t.Fatal(d)
	}
	n := 0
	reg.Each(func(string, any) { n++ })
	if n != 0 {
		t.Fatalf("%d metrics without quotas", n)
	}
}
