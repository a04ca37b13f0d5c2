package metricsexport

import (
	"strconv"
	"strings"
)

// Label is one Prometheus label.
type Label struct{ Name, Value string }

// Kind is how a go-metrics metric is exported (docs/metrics.md, "Naming").
type Kind int

const (
	// KindGauge: go-metrics Gauge, GaugeFloat64 and functional gauges; a gauge named
	// kafka_<domain>_<type>_<name>.
	KindGauge Kind = iota
	// KindCounter: go-metrics Counter; a counter named kafka_<domain>_<type>_<name>_total.
	KindCounter
	// KindMeter: go-metrics Meter; a counter of its events named like the JMX exporter's
	// Kafka rule `name=(.+)PerSec\w*` → kafka_<domain>_<type>_<$1>_total (BytesInPerSec →
	// ..._bytesin_total). A meter without PerSec keeps its whole name: ..._<name>_total. The
	// rates (OneMinuteRate ...) are not exported: Prometheus computes rates with rate().
	KindMeter
	// KindSummary: go-metrics Timer (values in milliseconds, as Kafka's ...TimeMs) and
	// Histogram; a summary named kafka_<domain>_<type>_<name> with quantiles, _sum and _count.
	KindSummary
)

// jmxName is a go-metrics registry name split like a JMX ObjectName:
// "domain:type=T,name=N,k=v,...".
type jmxName struct {
	domain, typ, name string
	labels            []Label // key properties other than type and name, in registry order
}

// parseJMX splits s. Values may be quoted, as JMX allows; a name without ':' is all domain.
func parseJMX(s string) jmxName {
	domain, props, ok := strings.Cut(s, ":")
	if !ok {
		return jmxName{domain: s}
	}
	j := jmxName{domain: domain}
	used := func(ln string) bool {
		for _, l := range j.labels {
			if l.Name == ln {
				return true
			}
		}
		return false
	}
	for _, kv := range splitProps(props) {
		k, v, ok := strings.Cut(kv, "=")
		k = strings.TrimSpace(k)
		v = unquote(strings.TrimSpace(v))
		if !ok || k == "" {
			continue
		}
		switch k {
		case "type":
			j.typ = v
		case "name":
			j.name = v
		default:
			ln := sanitizeLabel(k)
			// quantile is the summary's own label; le the histogram's.
			for used(ln) || ln == "quantile" || ln == "le" {
				ln += "_"
			}
			j.labels = append(j.labels, Label{ln, v})
		}
	}
	return j
}

func (j jmxName) base(name string) string {
	parts := []string{j.domain}
	if j.typ != "" {
		parts = append(parts, j.typ)
	}
	if name != "" {
		parts = append(parts, name)
	}
	return sanitizeName(strings.Join(parts, "_"))
}

// MetricName maps a JMX-style registry name to the JMX exporter's lower-cased base name and
// labels: "domain:type=T,name=N,k=v" becomes "domain_t_n" (lower case, every character
// outside [a-z0-9_] replaced by '_') with label k="v". A name without ':' is only sanitised.
// Labels keep the order of the registry name.
func MetricName(s string) (string, []Label) {
	j := parseJMX(s)
	return j.base(j.name), j.labels
}

// FamilyName is the Prometheus metric family of registry name s exported as kind k, and its
// labels: MetricName plus the kind's suffix rule (see Kind).
func FamilyName(s string, k Kind) (string, []Label) {
	j := parseJMX(s)
	switch k {
	case KindMeter:
		n := j.name
		// The JMX exporter's `(.+)PerSec\w*`: the last PerSec with something before it.
		if i := strings.LastIndex(n, "PerSec"); i > 0 && isWord(n[i+len("PerSec"):]) {
			n = n[:i]
		}
		return withTotal(j.base(n)), j.labels
	case KindCounter:
		return withTotal(j.base(j.name)), j.labels
	default:
		return j.base(j.name), j.labels
	}
}

// helpText is the HELP line of a family: the registry name without its key properties and
// what the value is.
func helpText(s string, k Kind) string {
	j := parseJMX(s)
	mbean := j.domain
	if j.typ != "" || j.name != "" {
		mbean += ":type=" + j.typ + ",name=" + j.name
	}
	switch k {
	case KindMeter:
		return mbean + " (meter: events since the broker started)"
	case KindCounter:
		return mbean + " (counter)"
	case KindSummary:
		return mbean + " (recent samples: exponentially decaying reservoir)"
	default:
		return mbean
	}
}

func withTotal(n string) string {
	if strings.HasSuffix(n, "_total") {
		return n
	}
	return n + "_total"
}

func isWord(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// splitProps splits JMX key properties on commas outside quoted values.
func splitProps(s string) []string {
	var out []string
	inQuote, start := false, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			if inQuote {
				i++
			}
		case '"':
			inQuote = !inQuote
		case ',':
			if !inQuote {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	if start <= len(s) {
		out = append(out, s[start:])
	}
	return out
}

func unquote(v string) string {
	if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
		if u, err := strconv.Unquote(v); err == nil {
			return u
		}
		return v[1 : len(v)-1]
	}
	return v
}

func sanitizeName(s string) string {
	s = strings.ToLower(s)
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			b[i] = '_'
		}
	}
	if len(b) > 0 && b[0] >= '0' && b[0] <= '9' {
		return "_" + string(b)
	}
	return string(b)
}

func sanitizeLabel(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			b[i] = '_'
		}
	}
	if len(b) == 0 || b[0] >= '0' && b[0] <= '9' {
		return "_" + string(b)
	}
	// Names beginning with __ are reserved by Prometheus.
	if strings.HasPrefix(string(b), "__") {
		return "x" + string(b)
	}
	return string(b)
}
