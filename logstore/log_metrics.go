package logstore

import (
	"strconv"

	metrics "github.com/rcrowley/go-metrics"
)

// Kafka's per-partition Log gauges (kafka.log:type=Log,name=...,topic=T,partition=P), one set
// per log this broker holds, leader or follower replica: registered when the log is loaded or
// created and unregistered when it is deleted (docs/metrics.md).
var logGaugeNames = []string{"Size", "LogStartOffset", "LogEndOffset", "NumLogSegments"}

// LogMetricName is the registry name of the Log gauge name of tp.
func LogMetricName(name string, tp TopicPartition) string {
	return "kafka.log:type=Log,name=" + name + ",topic=" + tp.Topic + ",partition=" + strconv.Itoa(int(tp.Partition))
}

// NumLogSegments is the number of segments.
func (l *Log) NumLogSegments() int {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return len(l.segs)
}

// SetMetricsRegistry registers the Log gauges of every log in reg; from then on GetOrCreate
// and Delete keep reg in step with the logs.
func (m *Manager) SetMetricsRegistry(reg metrics.Registry) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.metricsReg = reg
	m.registerLogDirMetricsLocked()
	for tp, l := range m.logs {
		m.registerLogMetricsLocked(tp, l)
	}
}

// registerLogMetricsLocked registers tp's gauges over l, replacing any earlier ones; m.mu held.
func (m *Manager) registerLogMetricsLocked(tp TopicPartition, l *Log) {
	reg := m.metricsReg
	if reg == nil {
		return
	}
	values := map[string]func() int64{
		"Size":           l.Size,
		"LogStartOffset": l.LogStartOffset,
		"LogEndOffset":   l.LogEndOffset,
		"NumLogSegments": func() int64 { return int64(l.NumLogSegments()) },
	}
	for _, name := range logGaugeNames {
		n := LogMetricName(name, tp)
		reg.Unregister(n)
		_ = reg.Register(n, metrics.NewFunctionalGauge(values[name]))
	}
}

// unregisterLogMetricsLocked removes tp's gauges; m.mu held.
func (m *Manager) unregisterLogMetricsLocked(tp TopicPartition) {
	if m.metricsReg == nil {
		return
	}
	for _, name := range logGaugeNames {
		m.metricsReg.Unregister(LogMetricName(name, tp))
	}
}
