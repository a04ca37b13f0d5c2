package metricsexport

import (
	"sort"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metrics "github.com/rcrowley/go-metrics"
)

// Quantiles are the summary quantiles exported for timers and histograms (p50 and p99, the
// ones Kafka dashboards chart).
var Quantiles = []float64{0.5, 0.99}

// Collector is a prometheus.Collector over a go-metrics registry. It is unchecked (Describe
// sends nothing): the registry's metrics come and go with topics and partitions, so every
// scrape walks the registry as it is then.
type Collector struct {
	reg metrics.Registry
}

// NewCollector returns the collector of reg.
func NewCollector(reg metrics.Registry) *Collector { return &Collector{reg: reg} }

// Describe sends nothing: an unchecked collector.
func (c *Collector) Describe(chan<- *prometheus.Desc) {}

// Collect exports every metric of the registry (see Kind for the mapping). Registry names
// that map to one family with another kind, or to a series already exported (names that
// differ only in case), are skipped: the first in name order wins.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	type entry struct {
		name string
		m    any
	}
	var entries []entry
	c.reg.Each(func(name string, m any) { entries = append(entries, entry{name, m}) })
	sort.Slice(entries, func(i, j int) bool { return entries[i].name < entries[j].name })

	type famInfo struct {
		kind Kind
		help string
	}
	families := map[string]famInfo{}
	series := map[string]bool{}
	for _, en := range entries {
		kind, ok := kindOf(en.m)
		if !ok {
			continue // EWMA (a rate: dropped like the JMX exporter's rules drop rates), health checks
		}
		fam, labels := FamilyName(en.name, kind)
		if fam == "" {
			continue
		}
		fi, seen := families[fam]
		if !seen {
			fi = famInfo{kind: kind, help: helpText(en.name, kind)}
			families[fam] = fi
		} else if fi.kind != kind {
			continue
		}
		names := make([]string, len(labels))
		values := make([]string, len(labels))
		key := fam
		for i, l := range labels {
			names[i], values[i] = l.Name, l.Value
		}
		sorted := append([]Label(nil), labels...)
		sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
		for _, l := range sorted {
			key += "\xff" + l.Name + "\xfe" + l.Value
		}
		if series[key] {
			continue
		}
		series[key] = true
		desc := prometheus.NewDesc(fam, fi.help, names, nil)
		if m := constMetric(desc, en.m, values); m != nil {
			ch <- m
		}
	}
}

func kindOf(m any) (Kind, bool) {
	switch m.(type) {
	case metrics.Counter:
		return KindCounter, true
	case metrics.Gauge, metrics.GaugeFloat64:
		return KindGauge, true
	case metrics.Meter:
		return KindMeter, true
	case metrics.Timer, metrics.Histogram:
		return KindSummary, true
	}
	return 0, false
}

const nsPerMs = float64(time.Millisecond)

// constMetric is m's value now; nil when desc and values do not make a valid metric.
func constMetric(desc *prometheus.Desc, m any, values []string) prometheus.Metric {
	var out prometheus.Metric
	var err error
	switch m := m.(type) {
	case metrics.Counter:
		out, err = prometheus.NewConstMetric(desc, prometheus.CounterValue, float64(m.Count()), values...)
	case metrics.Gauge:
		out, err = prometheus.NewConstMetric(desc, prometheus.GaugeValue, float64(m.Value()), values...)
	case metrics.GaugeFloat64:
		out, err = prometheus.NewConstMetric(desc, prometheus.GaugeValue, m.Value(), values...)
	case metrics.Meter:
		out, err = prometheus.NewConstMetric(desc, prometheus.CounterValue, float64(m.Count()), values...)
	case metrics.Timer:
		s := m.Snapshot()
		out, err = summary(desc, s.Count(), s.Mean()/nsPerMs, s.Percentiles(Quantiles), nsPerMs, values)
	case metrics.Histogram:
		s := m.Snapshot()
		out, err = summary(desc, s.Count(), s.Mean(), s.Percentiles(Quantiles), 1, values)
	}
	if err != nil {
		return nil
	}
	return out
}

// summary builds a constant summary. go-metrics keeps the total count but only a reservoir
// of recent values, so _sum is estimated as count × the reservoir's mean (docs/metrics.md).
func summary(desc *prometheus.Desc, count int64, mean float64, qs []float64, div float64, values []string) (prometheus.Metric, error) {
	quantiles := make(map[float64]float64, len(Quantiles))
	for i, q := range Quantiles {
		quantiles[q] = qs[i] / div
	}
	return prometheus.NewConstSummary(desc, uint64(max(count, 0)), float64(count)*mean, quantiles, values...)
}
