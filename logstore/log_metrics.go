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

// SetMetricsRegistry registers the Log gauges of every log in reg; from then on GetOrCreate
// and Delete keep reg in step with the logs.
func (m *Manager) SetMetricsRegistry(reg metrics.Registry) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.gauges.reg = reg
	m.gauges.registerLogDirs(m)
	for tp, l := range m.logs {
		m.gauges.registerLog(tp, l)
	}
}

// logGauges is a Manager's gauges in its registry (nil until SetMetricsRegistry: then nothing
// is registered): each log's Log gauges and the LogManager gauges of its dirs (logdir_metrics.go).
// Guarded by the Manager's mu.
type logGauges struct {
	reg metrics.Registry
}

// registerLog registers tp's gauges over l, replacing any earlier ones.
func (g *logGauges) registerLog(tp TopicPartition, l *Log) {
	reg := g.reg
	if reg == nil {
		return
	}
	values := map[string]func() int64{
		"Size":           l.Size,
		"LogStartOffset": l.LogStartOffset,
		"LogEndOffset":   l.LogEndOffset,
		"NumLogSegments": func() int64 { return int64(l.status().segments) },
	}
	for _, name := range logGaugeNames {
		n := LogMetricName(name, tp)
		reg.Unregister(n)
		_ = reg.Register(n, metrics.NewFunctionalGauge(values[name]))
	}
}

// unregisterLog removes tp's gauges.
func (g *logGauges) unregisterLog(tp TopicPartition) {
	if g.reg == nil {
		return
	}
	for _, name := range logGaugeNames {
		g.reg.Unregister(LogMetricName(name, tp))
	}
}
