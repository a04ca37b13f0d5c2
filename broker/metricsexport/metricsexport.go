// Package metricsexport owns the broker's HTTP metrics endpoint. The broker's metrics live in
// a go-metrics registry under Kafka's JMX MBean names
// ("kafka.server:type=ReplicaManager,name=UnderReplicatedPartitions"); a Collector exports
// them through the Prometheus client library, named as the Prometheus JMX exporter's Kafka
// rules name Kafka's MBeans (the rules Grafana's Kafka dashboards are written against):
// kafka_server_replicamanager_underreplicatedpartitions,
// kafka_server_brokertopicmetrics_bytesin_total{topic="foo"}. Key properties after name
// (topic, partition, request, clientId ...) become labels. The Go runtime and process
// collectors are served beside them, in the text format or OpenMetrics (by Accept header).
// docs/metrics.md states the naming rule and lists the metrics.
package metricsexport

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	metrics "github.com/rcrowley/go-metrics"
)

// NewRegistry returns a Prometheus registry with the collector of reg and the Go runtime and
// process collectors. (The handler serves NewGatherer's families instead: the same, without a
// Prometheus registry's per-series checks, which the collector's layout makes needless.)
func NewRegistry(reg metrics.Registry) *prometheus.Registry {
	pr := runtimeRegistry()
	pr.MustRegister(NewCollector(reg))
	return pr
}

func runtimeRegistry() *prometheus.Registry {
	pr := prometheus.NewRegistry()
	pr.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	return pr
}

// NewGatherer returns a gatherer of reg's families (Collector.Gather) and the Go runtime and
// process collectors' ones, sorted by name. A family of reg named like a runtime one is left
// out.
func NewGatherer(reg metrics.Registry) prometheus.Gatherer {
	return gatherer{c: NewCollector(reg), runtime: runtimeRegistry()}
}

type gatherer struct {
	c       *Collector
	runtime *prometheus.Registry
}

func (g gatherer) Gather() ([]*dto.MetricFamily, error) {
	rt, err := g.runtime.Gather()
	own, _ := g.c.Gather()
	taken := make(map[string]bool, len(rt))
	for _, mf := range rt {
		taken[mf.GetName()] = true
	}
	out := rt
	for _, mf := range own {
		if !taken[mf.GetName()] {
			out = append(out, mf)
		}
	}
	slices.SortFunc(out, func(a, b *dto.MetricFamily) int { return strings.Compare(a.GetName(), b.GetName()) })
	return out, err
}

// Handler serves reg at /metrics (GET and HEAD; other methods 405). Other paths answer 404.
func Handler(reg metrics.Registry) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", MetricsHandler(reg))
	return mux
}

// MetricsHandler is the /metrics handler alone, for a caller that builds its own mux.
func MetricsHandler(reg metrics.Registry) http.Handler {
	h := promhttp.HandlerFor(NewGatherer(reg), promhttp.HandlerOpts{
		EnableOpenMetrics: true,
		// A metric that fails to collect is left out; the others are still served.
		ErrorHandling: promhttp.ContinueOnError,
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		h.ServeHTTP(w, r)
	})
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

// Render returns reg's metrics (without the runtime collectors) in the Prometheus text
// format, families sorted by name: for tests and tools that want the text without HTTP.
func Render(reg metrics.Registry) []byte {
	mfs, _ := NewCollector(reg).Gather()
	var b bytes.Buffer
	enc := expfmt.NewEncoder(&b, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		_ = enc.Encode(mf)
	}
	return b.Bytes()
}
