package broker

import (
	"testing"
	"time"

	"github.com/rcrowley/go-metrics"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestKafkaAPINames(t *testing.T) {
	// Spot checks against Kafka 2.4's ApiKeys (kmsg spells some differently: LeaderAndISR).
	for key, want := range map[int16]string{0: "Produce", 1: "Fetch", 4: "LeaderAndIsr", 22: "InitProducerId",
		23: "OffsetForLeaderEpoch", 44: "IncrementalAlterConfigs", 47: "OffsetDelete"} {
		if got := requestName(key); got != want {
			t.Errorf("requestName(%d) = %q, want %q", key, got, want)
		}
	}
	if len(kafkaAPINames) != 48 {
		t.Errorf("%d names, want Kafka 2.4's 48 (keys 0-47)", len(kafkaAPINames))
	}
}

// A fetch counts as Fetch and as FetchConsumer or FetchFollower; timings land in the timer.
func TestRequestTiming(t *testing.T) {
	reg := metrics.NewRegistry()
	m := newRequestMetrics(reg)
	count := func(name, req string) int64 {
		return reg.Get(RequestMetricName(name, req)).(interface{ Count() int64 }).Count()
	}
	start := time.Now().Add(-20 * time.Millisecond)
	record := func(t requestTiming) { t.record() }
	record(m.timing(start, int16(kmsg.Produce), kmsg.NewPtrProduceRequest()))
	follower := kmsg.NewPtrFetchRequest()
	follower.ReplicaID = 2
	record(m.timing(start, int16(kmsg.Fetch), follower))
	record(m.timing(start, int16(kmsg.Fetch), kmsg.NewPtrFetchRequest())) // replica_id -1
	record(m.timing(start, int16(kmsg.Fetch), kmsg.NewPtrFetchRequest()))
	for _, c := range []struct {
		req  string
		want int64
	}{{"Produce", 1}, {"Fetch", 3}, {"FetchFollower", 1}, {"FetchConsumer", 2}, {"Metadata", 0}} {
		if got := count(metricRequestsPerSec, c.req); got != c.want {
			t.Errorf("RequestsPerSec %s = %d, want %d", c.req, got, c.want)
		}
		if got := count(metricTotalTimeMs, c.req); got != c.want {
			t.Errorf("TotalTimeMs %s count = %d, want %d", c.req, got, c.want)
		}
	}
	if tm := reg.Get(RequestMetricName(metricTotalTimeMs, "Produce")).(metrics.Timer); tm.Min() < int64(20*time.Millisecond) {
		t.Errorf("Produce total time %v, want >= 20ms", time.Duration(tm.Min()))
	}
	(&requestTiming{}).record() // not counted: no panic
}

// The five phases split the total time at the handler's start and return, the completion and
// the writer's take; a response completed inside its handler has no remote time.
func TestRequestTimingPhases(t *testing.T) {
	ms := time.Millisecond
	for _, c := range []struct {
		name                                  string
		dequeued, localDone, completed, taken time.Duration
		want                                  [numPhases]time.Duration // the send phase: at least
	}{
		{"parked (acks=-1)", 2 * ms, 5 * ms, 15 * ms, 16 * ms, [numPhases]time.Duration{2 * ms, 3 * ms, 10 * ms, 1 * ms, 4 * ms}},
		{"answered in the handler", 2 * ms, 8 * ms, 6 * ms, 9 * ms, [numPhases]time.Duration{2 * ms, 4 * ms, 0, 3 * ms, 11 * ms}},
		{"writer ahead of the handler's return", 1 * ms, 0, 3 * ms, 4 * ms, [numPhases]time.Duration{1 * ms, 2 * ms, 0, 1 * ms, 16 * ms}},
	} {
		t.Run(c.name, func(t *testing.T) {
			reg := metrics.NewRegistry()
			m := newRequestMetrics(reg)
			tm := m.timing(time.Now().Add(-20*ms), int16(kmsg.Produce), kmsg.NewPtrProduceRequest())
			tm.dequeued, tm.completed, tm.taken = c.dequeued, c.completed, c.taken
			tm.localDone = int64(c.localDone)
			tm.record()
			for i, name := range phaseMetricNames {
				// What the metrics endpoint reads: a snapshot (it panicked once, with a meter
				// whose snapshot was not the type go-metrics' timers assert).
				snap := reg.Get(RequestMetricName(name, "Produce")).(metrics.Timer).Snapshot()
				if snap.Count() != 1 {
					t.Errorf("%s snapshot count = %d, want 1", name, snap.Count())
				}
				got := time.Duration(snap.Max())
				if requestPhase(i) == phaseResponseSend {
					if got < c.want[i] || got > c.want[i]+time.Second {
						t.Errorf("%s = %v, want %v or a little more (the time since)", name, got, c.want[i])
					}
					continue
				}
				if got != c.want[i] {
					t.Errorf("%s = %v, want %v", name, got, c.want[i])
				}
			}
		})
	}
}

func TestIdleSampler(t *testing.T) {
	now := time.Unix(1000, 0)
	cpu := time.Duration(0)
	s := newIdleSampler(func() time.Duration { return cpu }, func() time.Time { return now }, func() int { return 4 })
	if v := s.Value(); v != 1 {
		t.Errorf("initial %v, want 1", v)
	}
	now = now.Add(10 * time.Second)
	cpu += 10 * time.Second // one of four CPUs busy
	if v := s.Value(); v != 0.75 {
		t.Errorf("one of four busy: %v, want 0.75", v)
	}
	now = now.Add(500 * time.Millisecond)
	cpu += 2 * time.Second
	if v := s.Value(); v != 0.75 {
		t.Errorf("inside the minimum window: %v, want the last value 0.75", v)
	}
	now = now.Add(time.Second)
	cpu += 10 * time.Second // more than all CPUs: clamped
	if v := s.Value(); v != 0 {
		t.Errorf("saturated: %v, want 0", v)
	}
}

// The request histograms are Kafka's reservoir (decaysample) behind a go-metrics Timer: what the
// exporter reads is what record updates, also when the registry held something else under the
// name before (it is replaced, not left to go stale).
func TestRequestHistogramsAreTheRegisteredTimers(t *testing.T) {
	reg := metrics.NewRegistry()
	name := RequestMetricName(metricTotalTimeMs, "Produce")
	stale := metrics.NewTimer()
	if err := reg.Register(name, stale); err != nil {
		t.Fatal(err)
	}
	m := newRequestMetrics(reg)
	tm := m.timing(time.Now().Add(-3*time.Millisecond), int16(kmsg.Produce), kmsg.NewPtrProduceRequest())
	tm.record()
	got, ok := reg.Get(name).(metrics.Timer)
	if !ok || got == metrics.Timer(stale) {
		t.Fatalf("registered %T, want the request histogram", reg.Get(name))
	}
	if snap := got.Snapshot(); snap.Count() != 1 || snap.Min() < int64(3*time.Millisecond) {
		t.Fatalf("snapshot count %d min %v, want 1 value >= 3ms", snap.Count(), time.Duration(snap.Min()))
	}
	if again := newRequestMetrics(reg); again.byKey[kmsg.Produce].totalTime != m.byKey[kmsg.Produce].totalTime {
		t.Fatal("a second newRequestMetrics on the registry made a new histogram instead of reusing it")
	}
}

// The cost of a follower fetch's metrics once its response is written: two meters and twelve
// histogram updates (Fetch and FetchFollower, total and five phases each).
func BenchmarkRequestTimingRecordFetch(b *testing.B) {
	m := newRequestMetrics(metrics.NewRegistry())
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID = 2
	tm := m.timing(time.Now().Add(-2*time.Millisecond), int16(kmsg.Fetch), req)
	tm.dequeued, tm.completed, tm.taken = 10*time.Microsecond, time.Millisecond, 1100*time.Microsecond
	tm.localDone = int64(100 * time.Microsecond)
	b.ReportAllocs()
	for b.Loop() {
		tm.record()
	}
}
