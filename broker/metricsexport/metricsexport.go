// Package metricsexport owns the broker's HTTP metrics endpoint: it renders a go-metrics
// registry, whose metrics are named like Kafka's JMX MBeans
// ("kafka.server:type=ReplicaManager,name=UnderReplicatedPartitions"), as Prometheus text
// exposition format at /metrics, using the Prometheus JMX exporter's default lower-cased
// naming: kafka_server_replicamanager_underreplicatedpartitions. Key properties after
// name (topic=foo, partition=0, clientId=...) become labels. This is how an operator watches
// S12's under-replicated partitions without a JVM.
//
// Mapping by metric kind:
//   - Counter: counter.
//   - Gauge, GaugeFloat64, EWMA: gauge.
//   - Meter: <name>_count (counter, total events) and <name>_oneminuterate,
//     _fiveminuterate, _fifteenminuterate, _meanrate (gauges, events per second).
//   - Histogram: summary <name>{quantile="0.5"|"0.99"}, <name>_sum, <name>_count.
//   - Timer: the same summary with values in milliseconds (Kafka's timers are ...TimeMs),
//     plus <name>_oneminuterate (gauge).
package metricsexport

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	metrics "github.com/rcrowley/go-metrics"
)

// Quantiles are the summary quantiles exported for timers and histograms.
var Quantiles = []float64{0.5, 0.99}

// ContentType is the Prometheus text exposition format version 0.0.4.
const ContentType = "text/plain; version=0.0.4; charset=utf-8"

// Handler serves reg at /metrics (GET and HEAD). Other paths answer 404.
func Handler(reg metrics.Registry) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		body := Render(reg)
		w.Header().Set("Content-Type", ContentType)
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		if r.Method == http.MethodHead {
			return
		}
		_, _ = w.Write(body)
	})
	return mux
}

// Serve listens on addr and serves Handler(reg) until ctx is done; it then shuts the server
// down and returns nil. A listen error is returned at once.
func Serve(ctx context.Context, addr string, reg metrics.Registry) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	return ServeListener(ctx, ln, reg)
}

// ServeListener is Serve on an existing listener (so a caller can report a bind error at
// start-up and serve in the background). It closes ln.
func ServeListener(ctx context.Context, ln net.Listener, reg metrics.Registry) error {
	return ServeHandler(ctx, ln, Handler(reg))
}

// ServeHandler is ServeListener with any handler (main adds the replication page's routes to
// /metrics on the same listener).
func ServeHandler(ctx context.Context, ln net.Listener, h http.Handler) error {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-ctx.Done():
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = srv.Shutdown(sctx)
		case <-done:
		}
	}()
	err := srv.Serve(ln)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Label is one Prometheus label.
type Label struct{ Name, Value string }

type sample struct {
	suffix string // appended to the family name: "", "_sum", "_count"
	labels []Label
	value  float64
}

type family struct {
	name    string
	typ     string // counter, gauge, summary
	samples []sample
	seen    map[string]bool // series already present, so duplicates are dropped
}

type exposition struct {
	families map[string]*family
}

func (e *exposition) add(name, typ, suffix string, labels []Label, v float64) {
	f := e.families[name]
	if f == nil {
		f = &family{name: name, typ: typ, seen: map[string]bool{}}
		e.families[name] = f
	}
	if f.typ != typ {
		return // two registry entries map to one family with different kinds: keep the first
	}
	key := suffix + "{" + renderLabels(labels) + "}"
	if f.seen[key] {
		return // e.g. names differing only in case
	}
	f.seen[key] = true
	f.samples = append(f.samples, sample{suffix: suffix, labels: labels, value: v})
}

// Render returns reg in Prometheus text format, families sorted by name.
func Render(reg metrics.Registry) []byte {
	type entry struct {
		name string
		m    interface{}
	}
	var entries []entry
	reg.Each(func(name string, m interface{}) { entries = append(entries, entry{name, m}) })
	sort.Slice(entries, func(i, j int) bool { return entries[i].name < entries[j].name })

	e := &exposition{families: map[string]*family{}}
	for _, en := range entries {
		name, labels := MetricName(en.name)
		if name == "" {
			continue
		}
		switch m := en.m.(type) {
		case metrics.Counter:
			e.add(name, "counter", "", labels, float64(m.Count()))
		case metrics.Gauge:
			e.add(name, "gauge", "", labels, float64(m.Value()))
		case metrics.GaugeFloat64:
			e.add(name, "gauge", "", labels, m.Value())
		case metrics.EWMA:
			e.add(name, "gauge", "", labels, m.Rate())
		case metrics.Meter:
			s := m.Snapshot()
			e.add(name+"_count", "counter", "", labels, float64(s.Count()))
			e.add(name+"_oneminuterate", "gauge", "", labels, s.Rate1())
			e.add(name+"_fiveminuterate", "gauge", "", labels, s.Rate5())
			e.add(name+"_fifteenminuterate", "gauge", "", labels, s.Rate15())
			e.add(name+"_meanrate", "gauge", "", labels, s.RateMean())
		case metrics.Timer:
			s := m.Snapshot()
			const nsPerMs = float64(time.Millisecond)
			qs := s.Percentiles(Quantiles)
			for i, q := range Quantiles {
				e.add(name, "summary", "", withQuantile(labels, q), qs[i]/nsPerMs)
			}
			e.add(name, "summary", "_sum", labels, float64(s.Sum())/nsPerMs)
			e.add(name, "summary", "_count", labels, float64(s.Count()))
			e.add(name+"_oneminuterate", "gauge", "", labels, s.Rate1())
		case metrics.Histogram:
			s := m.Snapshot()
			qs := s.Percentiles(Quantiles)
			for i, q := range Quantiles {
				e.add(name, "summary", "", withQuantile(labels, q), qs[i])
			}
			e.add(name, "summary", "_sum", labels, float64(s.Sum()))
			e.add(name, "summary", "_count", labels, float64(s.Count()))
		}
	}

	names := make([]string, 0, len(e.families))
	for n := range e.families {
		names = append(names, n)
	}
	sort.Strings(names)
	var b bytes.Buffer
	for _, n := range names {
		f := e.families[n]
		b.WriteString("# TYPE ")
		b.WriteString(f.name)
		b.WriteByte(' ')
		b.WriteString(f.typ)
		b.WriteByte('\n')
		for _, s := range f.samples {
			b.WriteString(f.name)
			b.WriteString(s.suffix)
			if len(s.labels) > 0 {
				b.WriteByte('{')
				b.WriteString(renderLabels(s.labels))
				b.WriteByte('}')
			}
			b.WriteByte(' ')
			b.WriteString(formatValue(s.value))
			b.WriteByte('\n')
		}
	}
	return b.Bytes()
}

func withQuantile(labels []Label, q float64) []Label {
	out := make([]Label, 0, len(labels)+1)
	out = append(out, labels...)
	return append(out, Label{"quantile", strconv.FormatFloat(q, 'g', -1, 64)})
}

func formatValue(v float64) string {
	// FormatFloat renders NaN, +Inf and -Inf exactly as the text format wants them.
	return strconv.FormatFloat(v, 'g', -1, 64)
}

func renderLabels(labels []Label) string {
	var b strings.Builder
	for i, l := range labels {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(l.Name)
		b.WriteString(`="`)
		b.WriteString(escapeLabelValue(l.Value))
		b.WriteByte('"')
	}
	return b.String()
}

func escapeLabelValue(s string) string {
	if !strings.ContainsAny(s, "\\\"\n") {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '\\':
			b.WriteString(`\\`)
		case '"':
			b.WriteString(`\"`)
		case '\n':
			b.WriteString(`\n`)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// MetricName maps a JMX-style registry name to a Prometheus metric name and labels:
// "domain:type=T,name=N,k=v" becomes "domain_t_n" (lower case, every character outside
// [a-z0-9_] replaced by '_') with label k="v". Values may be quoted, as JMX allows. A name
// without ':' is only sanitised. Labels keep the order of the registry name.
func MetricName(s string) (string, []Label) {
	domain, props, ok := strings.Cut(s, ":")
	if !ok {
		return sanitizeName(s), nil
	}
	parts := []string{domain}
	var typ, name string
	var labels []Label
	used := map[string]bool{}
	for _, kv := range splitProps(props) {
		k, v, ok := strings.Cut(kv, "=")
		k = strings.TrimSpace(k)
		v = unquote(strings.TrimSpace(v))
		if !ok || k == "" {
			continue
		}
		switch k {
		case "type":
			typ = v
		case "name":
			name = v
		default:
			ln := sanitizeLabel(k)
			if used[ln] || ln == "quantile" {
				ln += "_"
			}
			used[ln] = true
			labels = append(labels, Label{ln, v})
		}
	}
	if typ != "" {
		parts = append(parts, typ)
	}
	if name != "" {
		parts = append(parts, name)
	}
	return sanitizeName(strings.Join(parts, "_")), labels
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
	return string(b)
}
