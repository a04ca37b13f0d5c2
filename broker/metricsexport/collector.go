package metricsexport

import (
	"cmp"
	"maps"
	"slices"
	"sort"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	metrics "github.com/rcrowley/go-metrics"
)

// Quantiles are the summary quantiles exported for timers and histograms (p50 and p99, the
// ones Kafka dashboards chart).
var Quantiles = []float64{0.5, 0.99}

// Collector exports a go-metrics registry. Its Gather is what the handler serves; it is also
// a prometheus.Collector, unchecked (Describe sends nothing): the registry's metrics come and
// go with topics and partitions, so every scrape walks the registry as it is then.
//
// Scrape cost (docs/metrics.md, "Scrape cost"): what a registry name exports as (family,
// kind, HELP, label pairs, place in the sorted output) depends only on the name and the
// metric's kind; it is worked out when the name is first seen and kept, together with the
// sorted layout of all families. A scrape walks the registry, puts each metric in its slot of
// the layout and reads the values. The layout is rebuilt (from the kept per-name results) only
// when the registry's names or their kinds changed.
type Collector struct {
	reg metrics.Registry

	mu      sync.Mutex
	names   map[string]*series // every registry name seen in the last rebuild, exported or not
	layout  []*family          // exported families, by name; their series in exposition order
	nslots  int                // exported series in layout
	entries []regEntry         // the registry walk's buffer
}

type regEntry struct {
	name string
	m    any
}

// series is what one registry name exports.
type series struct {
	kind   Kind // of the registry's metric
	ok     bool // the metric's kind is exported
	slot   int  // index of its metric in a scrape's slots; -1: not exported
	fam    string
	labels []Label          // in registry order: the Desc's variable labels
	pairs  []*dto.LabelPair // sorted by name, as the Prometheus client writes them
	key    string           // family and sorted labels: one exported series per key
	valid  bool             // the label values are valid UTF-8 (else the client refuses the series)
	desc   *prometheus.Desc // for Collect, made on first use
}

// family is one exported metric family.
type family struct {
	name, help string
	kind       Kind
	series     []*series
}

// NewCollector returns the collector of reg.
func NewCollector(reg metrics.Registry) *Collector { return &Collector{reg: reg} }

// Describe sends nothing: an unchecked collector.
func (c *Collector) Describe(chan<- *prometheus.Desc) {}

// Collect exports every metric of the registry (see Kind for the mapping): the series of
// Gather, as prometheus.Metrics.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	layout, slots := c.scrapeLocked()
	type out struct {
		desc *prometheus.Desc
		s    *series
	}
	var todo []out
	for _, f := range layout {
		for _, s := range f.series {
			if s.desc == nil {
				names := make([]string, len(s.labels))
				for i, l := range s.labels {
					names[i] = l.Name
				}
				s.desc = prometheus.NewDesc(f.name, f.help, names, nil)
			}
			todo = append(todo, out{s.desc, s})
		}
	}
	c.mu.Unlock()
	for _, o := range todo {
		m := &dto.Metric{}
		writeValue(m, o.s, slots[o.s.slot])
		ch <- dtoMetric{o.desc, m}
	}
}

// dtoMetric is a prometheus.Metric of an already written dto.Metric.
type dtoMetric struct {
	desc *prometheus.Desc
	m    *dto.Metric
}

func (d dtoMetric) Desc() *prometheus.Desc { return d.desc }

func (d dtoMetric) Write(out *dto.Metric) error {
	out.Label, out.Gauge, out.Counter, out.Summary = d.m.Label, d.m.Gauge, d.m.Counter, d.m.Summary
	return nil
}

// Gather returns the registry's metric families, sorted by name, their series sorted by label
// values (as a Prometheus registry's Gather sorts them). Registry names that map to one family
// with another kind, or to a series already exported (names that differ only in case), are
// skipped: the first in name order wins. It implements prometheus.Gatherer.
func (c *Collector) Gather() ([]*dto.MetricFamily, error) {
	c.mu.Lock()
	layout, slots := c.scrapeLocked()
	c.mu.Unlock()
	// The layout is never modified once built (a rebuild makes a new one), so the values are
	// read without the lock: concurrent scrapes do not wait for each other.
	out := make([]*dto.MetricFamily, 0, len(layout))
	for _, f := range layout {
		n := len(f.series)
		ms := make([]dto.Metric, n)
		ptrs := make([]*dto.Metric, n)
		var vals []float64
		var gauges []dto.Gauge
		var counters []dto.Counter
		switch f.kind {
		case KindGauge:
			vals, gauges = make([]float64, n), make([]dto.Gauge, n)
		case KindCounter, KindMeter:
			vals, counters = make([]float64, n), make([]dto.Counter, n)
		}
		for i, s := range f.series {
			m := &ms[i]
			m.Label = s.pairs
			switch f.kind {
			case KindGauge:
				vals[i] = gaugeValue(slots[s.slot])
				gauges[i].Value = &vals[i]
				m.Gauge = &gauges[i]
			case KindCounter, KindMeter:
				vals[i] = counterValue(slots[s.slot])
				counters[i].Value = &vals[i]
				m.Counter = &counters[i]
			default:
				m.Summary = summaryValue(slots[s.slot])
			}
			ptrs[i] = m
		}
		out = append(out, &dto.MetricFamily{Name: new(f.name), Help: new(f.help), Type: dtoType(f.kind).Enum(), Metric: ptrs})
	}
	return out, nil
}

func dtoType(k Kind) dto.MetricType {
	switch k {
	case KindCounter, KindMeter:
		return dto.MetricType_COUNTER
	case KindSummary:
		return dto.MetricType_SUMMARY
	}
	return dto.MetricType_GAUGE
}

// writeValue writes the value of s's metric v now into m (with s's labels).
func writeValue(m *dto.Metric, s *series, v any) {
	m.Label = s.pairs
	switch s.kind {
	case KindGauge:
		m.Gauge = &dto.Gauge{Value: new(gaugeValue(v))}
	case KindCounter, KindMeter:
		m.Counter = &dto.Counter{Value: new(counterValue(v))}
	default:
		m.Summary = summaryValue(v)
	}
}

func gaugeValue(m any) float64 {
	switch m := m.(type) {
	case metrics.Gauge:
		return float64(m.Value())
	case metrics.GaugeFloat64:
		return m.Value()
	}
	return 0
}

func counterValue(m any) float64 {
	switch m := m.(type) {
	case metrics.Counter:
		return float64(m.Count())
	case metrics.Meter:
		return float64(m.Count())
	}
	return 0
}

const nsPerMs = float64(time.Millisecond)

// summaryValue is a timer's (in milliseconds) or histogram's summary now. go-metrics keeps
// the total count but only a reservoir of recent values, so _sum is estimated as count × the
// reservoir's mean (docs/metrics.md).
func summaryValue(m any) *dto.Summary {
	var count int64
	var mean float64
	var qs []float64
	div := 1.0
	switch m := m.(type) {
	case metrics.Timer:
		s := m.Snapshot()
		count, mean, qs, div = s.Count(), s.Mean()/nsPerMs, s.Percentiles(Quantiles), nsPerMs
	case metrics.Histogram:
		s := m.Snapshot()
		count, mean, qs = s.Count(), s.Mean(), s.Percentiles(Quantiles)
	}
	quantiles := make(map[float64]float64, len(Quantiles))
	for i, q := range Quantiles {
		quantiles[q] = qs[i] / div
	}
	out := &dto.Summary{SampleCount: new(uint64(max(count, 0))), SampleSum: new(float64(count) * mean)}
	for _, q := range slices.Sorted(maps.Keys(quantiles)) {
		out.Quantile = append(out.Quantile, &dto.Quantile{Quantile: new(q), Value: new(quantiles[q])})
	}
	return out
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

// scrapeLocked walks the registry, rebuilds the layout if the registry's names or their kinds
// changed, and returns the layout and each exported series' metric (at its slot); c.mu held.
// A layout is never modified once built (a rebuild makes a new one), so the caller reads the
// values after unlocking: concurrent scrapes do not wait for each other's reads.
func (c *Collector) scrapeLocked() ([]*family, []any) {
	entries := c.entries[:0]
	c.reg.Each(func(name string, m any) { entries = append(entries, regEntry{name, m}) })
	c.entries = entries
	defer clear(c.entries) // the buffer keeps no metrics alive between scrapes
	slots := make([]any, c.nslots)
	changed := c.layout == nil || len(entries) != len(c.names)
	for _, e := range entries {
		if changed {
			break
		}
		s := c.names[e.name]
		if kind, ok := kindOf(e.m); s == nil || ok != s.ok || kind != s.kind {
			changed = true
		} else if s.slot >= 0 {
			slots[s.slot] = e.m
		}
	}
	if !changed {
		return c.layout, slots
	}
	c.rebuildLocked()
	slots = make([]any, c.nslots)
	for _, e := range entries {
		if s := c.names[e.name]; s.slot >= 0 {
			slots[s.slot] = e.m
		}
	}
	return c.layout, slots
}

// rebuildLocked makes the layout of c.entries, reusing what earlier rebuilds worked out per
// name; c.mu held.
func (c *Collector) rebuildLocked() {
	entries := c.entries
	sort.Slice(entries, func(i, j int) bool { return entries[i].name < entries[j].name })
	names := make(map[string]*series, len(entries))
	families := map[string]*family{}
	var layout []*family
	seen := map[string]bool{}
	for _, e := range entries {
		kind, ok := kindOf(e.m)
		s := c.names[e.name]
		if s == nil || s.ok != ok || s.kind != kind {
			s = newSeries(e.name, kind, ok)
		} else {
			s = s.clone()
		}
		names[e.name] = s
		if !s.ok || s.fam == "" {
			continue // EWMA (a rate: dropped like the JMX exporter's rules drop rates), health checks
		}
		f := families[s.fam]
		if f == nil {
			f = &family{name: s.fam, help: helpText(e.name, s.kind), kind: s.kind}
			families[s.fam] = f
			layout = append(layout, f)
		} else if f.kind != s.kind {
			continue
		}
		if seen[s.key] {
			continue
		}
		seen[s.key] = true
		if s.valid {
			f.series = append(f.series, s)
		}
	}
	c.names = names
	// As a Prometheus registry's Gather: families by name, empty ones left out, series by
	// their (name-sorted) label values.
	layout = slices.DeleteFunc(layout, func(f *family) bool { return len(f.series) == 0 })
	slices.SortFunc(layout, func(a, b *family) int { return cmp.Compare(a.name, b.name) })
	slot := 0
	for _, f := range layout {
		slices.SortStableFunc(f.series, compareSeries)
		for _, s := range f.series {
			s.slot = slot
			slot++
		}
	}
	if layout == nil {
		layout = []*family{}
	}
	c.layout, c.nslots = layout, slot
}

// compareSeries orders series as the Prometheus client's MetricSorter does: fewer labels
// first, then by label values in label-name order.
func compareSeries(a, b *series) int {
	if len(a.pairs) != len(b.pairs) {
		return cmp.Compare(len(a.pairs), len(b.pairs))
	}
	for i, lp := range a.pairs {
		if c := cmp.Compare(lp.GetValue(), b.pairs[i].GetValue()); c != 0 {
			return c
		}
	}
	return 0
}

// clone is a copy of s for a new layout, not yet exported (the old layout keeps s).
func (s *series) clone() *series {
	c := *s
	c.slot = -1
	return &c
}

// newSeries works out what registry name exports a metric of kind as (ok: the kind is
// exported).
func newSeries(name string, kind Kind, ok bool) *series {
	s := &series{kind: kind, ok: ok, slot: -1}
	if !ok {
		return s
	}
	s.fam, s.labels = FamilyName(name, kind)
	if s.fam == "" {
		return s
	}
	sorted := append([]Label(nil), s.labels...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	key := s.fam
	s.valid = true
	for _, l := range sorted {
		key += "\xff" + l.Name + "\xfe" + l.Value
		s.pairs = append(s.pairs, &dto.LabelPair{Name: new(l.Name), Value: new(l.Value)})
		if !utf8.ValidString(l.Value) {
			s.valid = false
		}
	}
	s.key = key
	return s
}
