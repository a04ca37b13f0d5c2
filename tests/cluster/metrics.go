package cluster

import (
	"sort"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Sample is one sample of a Prometheus exposition: its labels and value.
type Sample struct {
	Labels map[string]string
	Value  float64
}

// ParseMetrics parses a Prometheus text exposition with the Prometheus text parser.
func ParseMetrics(text string) (map[string]*dto.MetricFamily, error) {
	p := expfmt.NewTextParser(model.LegacyValidation)
	return p.TextToMetricFamilies(strings.NewReader(text))
}

// MetricSamplesWithLabels returns every sample named name in a Prometheus text exposition,
// with its labels: the series of a counter or gauge family name, or the _count / _sum of a
// summary or histogram family. Text the parser refuses gives nil.
func MetricSamplesWithLabels(text, name string) []Sample {
	mfs, err := ParseMetrics(text)
	if err != nil {
		return nil
	}
	return FamilySamples(mfs, name)
}

// FamilySamples is MetricSamplesWithLabels on parsed families.
func FamilySamples(mfs map[string]*dto.MetricFamily, name string) []Sample {
	family, suffix := name, ""
	if mfs[name] == nil {
		for _, s := range []string{"_count", "_sum"} {
			if base, ok := strings.CutSuffix(name, s); ok && mfs[base] != nil {
				family, suffix = base, s
			}
		}
	}
	mf := mfs[family]
	if mf == nil {
		return nil
	}
	var out []Sample
	for _, m := range mf.GetMetric() {
		labels := map[string]string{}
		for _, lp := range m.GetLabel() {
			labels[lp.GetName()] = lp.GetValue()
		}
		var v float64
		switch {
		case m.Counter != nil && suffix == "":
			v = m.Counter.GetValue()
		case m.Gauge != nil && suffix == "":
			v = m.Gauge.GetValue()
		case m.Untyped != nil && suffix == "":
			v = m.Untyped.GetValue()
		case m.Summary != nil && suffix == "_count":
			v = float64(m.Summary.GetSampleCount())
		case m.Summary != nil && suffix == "_sum":
			v = m.Summary.GetSampleSum()
		case m.Histogram != nil && suffix == "_count":
			v = float64(m.Histogram.GetSampleCount())
		case m.Histogram != nil && suffix == "_sum":
			v = m.Histogram.GetSampleSum()
		default:
			continue
		}
		out = append(out, Sample{Labels: labels, Value: v})
	}
	return out
}

// SummaryQuantile returns the quantile q of the summary family name's series whose labels
// include match, and whether it exists.
func SummaryQuantile(mfs map[string]*dto.MetricFamily, name string, match map[string]string, q float64) (float64, uint64, bool) {
	mf := mfs[name]
	if mf == nil || mf.GetType() != dto.MetricType_SUMMARY {
		return 0, 0, false
	}
	for _, m := range mf.GetMetric() {
		if !labelsMatch(m, match) {
			continue
		}
		for _, qq := range m.GetSummary().GetQuantile() {
			if qq.GetQuantile() == q {
				return qq.GetValue(), m.GetSummary().GetSampleCount(), true
			}
		}
	}
	return 0, 0, false
}

// FamilyNames lists the family names of a parsed exposition, sorted.
func FamilyNames(mfs map[string]*dto.MetricFamily) []string {
	out := make([]string, 0, len(mfs))
	for n := range mfs {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

func labelsMatch(m *dto.Metric, match map[string]string) bool {
	got := map[string]string{}
	for _, lp := range m.GetLabel() {
		got[lp.GetName()] = lp.GetValue()
	}
	for k, v := range match {
		if got[k] != v {
			return false
		}
	}
	return true
}
