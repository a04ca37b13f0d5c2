package logstore

import (
	metrics "github.com/rcrowley/go-metrics"
)

// Kafka's LogManager gauges of offline log dirs (KIP-112; docs/metrics.md): how many configured
// dirs are offline, and per dir 1 while it is offline, 0 while it serves. Registered with the
// Log gauges (SetMetricsRegistry); the dir set is fixed at Open, so they are never removed.
const (
	OfflineLogDirectoryCountMetric = "kafka.log:type=LogManager,name=OfflineLogDirectoryCount"
	logDirectoryOfflinePrefix      = "kafka.log:type=LogManager,name=LogDirectoryOffline,logDirectory="
)

// LogDirectoryOfflineMetric is the registry name of dir's LogDirectoryOffline gauge; dir is the
// absolute path, as Kafka names it.
func LogDirectoryOfflineMetric(dir string) string { return logDirectoryOfflinePrefix + absDir(dir) }

// registerLogDirs registers the LogManager gauges of m's dirs.
func (g *logGauges) registerLogDirs(m *Manager) {
	reg := g.reg
	if reg == nil {
		return
	}
	reg.Unregister(OfflineLogDirectoryCountMetric)
	_ = reg.Register(OfflineLogDirectoryCountMetric, metrics.NewFunctionalGauge(func() int64 {
		return int64(len(m.dirs) - m.LiveLogDirs())
	}))
	for _, d := range m.dirs {
		d := d
		n := LogDirectoryOfflineMetric(d)
		reg.Unregister(n)
		_ = reg.Register(n, metrics.NewFunctionalGauge(func() int64 {
			if m.health.online(d) {
				return 0
			}
			return 1
		}))
	}
}
