package logstore

import (
	"syscall"
	"testing"

	metrics "github.com/rcrowley/go-metrics"
)

// The LogManager gauges follow the dirs' state: OfflineLogDirectoryCount counts the offline
// dirs, LogDirectoryOffline is 1 for the failed dir only.
func TestOfflineLogDirGauges(t *testing.T) {
	m, dirs, _, _ := openTwoDirs(t, testConfig())
	defer m.Close()
	reg := metrics.NewRegistry()
	m.SetMetricsRegistry(reg)
	gauge := func(name string) int64 {
		t.Helper()
		g, ok := reg.Get(name).(metrics.Gauge)
		if !ok {
			t.Fatalf("%s not registered", name)
		}
		return g.Value()
	}
	if n := gauge(OfflineLogDirectoryCountMetric); n != 0 {
		t.Fatalf("OfflineLogDirectoryCount %d before any failure, want 0", n)
	}
	m.MarkLogDirOffline(dirs[1], syscall.EIO)
	if n := gauge(OfflineLogDirectoryCountMetric); n != 1 {
		t.Fatalf("OfflineLogDirectoryCount %d after one dir failed, want 1", n)
	}
	if v := gauge(LogDirectoryOfflineMetric(dirs[0])); v != 0 {
		t.Fatalf("LogDirectoryOffline of the online dir %d, want 0", v)
	}
	if v := gauge(LogDirectoryOfflineMetric(dirs[1])); v != 1 {
		t.Fatalf("LogDirectoryOffline of the failed dir %d, want 1", v)
	}
}
