package logstore

import (
	"testing"

	metrics "github.com/rcrowley/go-metrics"
)

// The Log gauges follow the logs: registered for loaded and created logs, tracking size and
// offsets, and gone after Delete.
func TestLogMetricsFollowLogs(t *testing.T) {
	dir := t.TempDir()
	m, err := Open([]string{dir}, 1, DefaultConfig(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	a := TopicPartition{Topic: "a", Partition: 0}
	if _, err := m.GetOrCreate(a, DefaultConfig()); err != nil {
		t.Fatal(err)
	}
	reg := metrics.NewRegistry()
	m.SetMetricsRegistry(reg) // after a: registers the existing log
	b := TopicPartition{Topic: "b", Partition: 3}
	lb, err := m.GetOrCreate(b, DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	gauge := func(name string, tp TopicPartition) (int64, bool) {
		g, ok := reg.Get(LogMetricName(name, tp)).(metrics.Gauge)
		if !ok {
			return 0, false
		}
		return g.Value(), true
	}
	for _, tp := range []TopicPartition{a, b} {
		for _, n := range logGaugeNames {
			if _, ok := gauge(n, tp); !ok {
				t.Fatalf("%s of %v not registered", n, tp)
			}
		}
	}
	if _, err := lb.AppendAsLeader(keyedBatch(t, plain(1000), put("k1", "v"), put("k2", "v"), put("k3", "v")), 0); err != nil {
		t.Fatal(err)
	}
	if v, _ := gauge("LogEndOffset", b); v != 3 {
		t.Errorf("LogEndOffset %d, want 3", v)
	}
	if v, _ := gauge("Size", b); v <= 0 || v != lb.Size() {
		t.Errorf("Size %d (log %d), want > 0", v, lb.Size())
	}
	if v, _ := gauge("NumLogSegments", b); v != 1 {
		t.Errorf("NumLogSegments %d, want 1", v)
	}
	if err := m.Delete(b); err != nil {
		t.Fatal(err)
	}
	for _, n := range logGaugeNames {
		if _, ok := gauge(n, b); ok {
			t.Errorf("%s of deleted %v still registered", n, b)
		}
	}
	if _, ok := gauge("Size", a); !ok {
		t.Error("a's gauges went with b's")
	}
}
