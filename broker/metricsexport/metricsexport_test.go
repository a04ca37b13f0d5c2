package metricsexport

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	metrics "github.com/rcrowley/go-metrics"
)

func TestMetricName(t *testing.T) {
	cases := []struct {
		in     string
		name   string
		labels []Label
	}{
		{"kafka.server:type=ReplicaManager,name=UnderReplicatedPartitions", "kafka_server_replicamanager_underreplicatedpartitions", nil},
		{"kafka.server:type=BrokerTopicMetrics,name=BytesInPerSec,topic=foo", "kafka_server_brokertopicmetrics_bytesinpersec", []Label{{"topic", "foo"}}},
		{"kafka.server:type=FetcherLagMetrics,name=ConsumerLag,clientId=ReplicaFetcherThread-0-1,topic=t,partition=0",
			"kafka_server_fetcherlagmetrics_consumerlag", []Label{{"clientId", "ReplicaFetcherThread-0-1"}, {"topic", "t"}, {"partition", "0"}}},
		{`kafka.x:type=A,name=B,q="a,b"`, "kafka_x_a_b", []Label{{"q", "a,b"}}},
		{"kafka.x:type=A,name=B,quantile=1,bad-key=2", "kafka_x_a_b", []Label{{"quantile_", "1"}, {"bad_key", "2"}}},
		{"plain.Name-1", "plain_name_1", nil},
		{"9lives", "_9lives", nil},
		{"kafka.x:name=OnlyName", "kafka_x_onlyname", nil},
	}
	for _, tc := range cases {
		name, labels := MetricName(tc.in)
		if name != tc.name || !reflect.DeepEqual(labels, tc.labels) {
			t.Errorf("MetricName(%q) = %q %v, want %q %v", tc.in, name, labels, tc.name, tc.labels)
		}
	}
}

func testRegistry(t *testing.T) metrics.Registry {
	t.Helper()
	reg := metrics.NewRegistry()
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	g := metrics.NewGauge()
	g.Update(3)
	must(reg.Register("kafka.server:type=ReplicaManager,name=UnderReplicatedPartitions", g))
	gf := metrics.NewGaugeFloat64()
	gf.Update(99.5)
	must(reg.Register("kafka.server:type=KafkaRequestHandlerPool,name=RequestHandlerAvgIdlePercent", gf))
	c := metrics.NewCounter()
	c.Inc(7)
	must(reg.Register("kafka.controller:type=ControllerStats,name=Elections", c))
	m := metrics.NewMeter()
	m.Mark(42)
	must(reg.Register("kafka.server:type=BrokerTopicMetrics,name=BytesInPerSec,topic=foo", m))
	m2 := metrics.NewMeter()
	m2.Mark(8)
	must(reg.Register("kafka.server:type=BrokerTopicMetrics,name=BytesInPerSec", m2))
	tm := metrics.NewTimer()
	for i := 1; i <= 100; i++ {
		tm.Update(time.Duration(i) * time.Millisecond)
	}
	must(reg.Register("kafka.controller:type=ControllerStats,name=LeaderElectionRateAndTimeMs", tm))
	h := metrics.NewHistogram(metrics.NewUniformSample(1000))
	for i := 1; i <= 10; i++ {
		h.Update(int64(i))
	}
	must(reg.Register(`kafka.network:type=RequestMetrics,name=RequestBytes,request="Produce"`, h))
	// Two names for one series: the second is dropped, not duplicated.
	g2 := metrics.NewGauge()
	g2.Update(5)
	must(reg.Register("kafka.server:type=replicamanager,name=underreplicatedpartitions", g2))
	return reg
}

func TestFamilyName(t *testing.T) {
	cases := []struct {
		in   string
		kind Kind
		name string
	}{
		{"kafka.server:type=BrokerTopicMetrics,name=BytesInPerSec,topic=foo", KindMeter, "kafka_server_brokertopicmetrics_bytesin_total"},
		{"kafka.network:type=RequestMetrics,name=RequestsPerSec,request=Produce", KindMeter, "kafka_network_requestmetrics_requests_total"},
		{"kafka.controller:type=ControllerStats,name=UncleanLeaderElectionsPerSec", KindMeter, "kafka_controller_controllerstats_uncleanleaderelections_total"},
		{"kafka.server:type=group-coordinator-metrics,name=OffsetCommits", KindMeter, "kafka_server_group_coordinator_metrics_offsetcommits_total"},
		{"kafka.x:type=A,name=PerSec", KindMeter, "kafka_x_a_persec_total"}, // nothing before PerSec
		{"kafka.controller:type=ControllerStats,name=Elections", KindCounter, "kafka_controller_controllerstats_elections_total"},
		{"kafka.x:type=A,name=Done_total", KindCounter, "kafka_x_a_done_total"},
		{"kafka.network:type=RequestMetrics,name=TotalTimeMs,request=Produce", KindSummary, "kafka_network_requestmetrics_totaltimems"},
		{"kafka.log:type=Log,name=Size,topic=t,partition=0", KindGauge, "kafka_log_log_size"},
	}
	for _, tc := range cases {
		if name, _ := FamilyName(tc.in, tc.kind); name != tc.name {
			t.Errorf("FamilyName(%q, %v) = %q, want %q", tc.in, tc.kind, name, tc.name)
		}
	}
}

// parse reads a text exposition with the Prometheus parser (which fails on anything
// malformed: a family declared twice, a sample outside its family, a bad value).
func parse(t *testing.T, text string) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.LegacyValidation)
	mfs, err := p.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatalf("parse: %v\n%s", err, text)
	}
	return mfs
}

// value returns the value of family name's series with exactly labels (a counter's,
// gauge's, or a summary's sample count), and whether it exists.
func value(mfs map[string]*dto.MetricFamily, name string, labels map[string]string) (float64, bool) {
	mf := mfs[name]
	if mf == nil {
		return 0, false
	}
	for _, m := range mf.GetMetric() {
		got := map[string]string{}
		for _, lp := range m.GetLabel() {
			got[lp.GetName()] = lp.GetValue()
		}
		if !reflect.DeepEqual(got, labels) && !(len(got) == 0 && len(labels) == 0) {
			continue
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		case m.Summary != nil:
			return float64(m.Summary.GetSampleCount()), true
		}
	}
	return 0, false
}

func TestRender(t *testing.T) {
	out := string(Render(testRegistry(t)))
	mfs := parse(t, out)
	type want struct {
		name   string
		typ    dto.MetricType
		labels map[string]string
		v      float64
	}
	for _, w := range []want{
		{"kafka_server_replicamanager_underreplicatedpartitions", dto.MetricType_GAUGE, nil, 3},
		{"kafka_server_kafkarequesthandlerpool_requesthandleravgidlepercent", dto.MetricType_GAUGE, nil, 99.5},
		{"kafka_controller_controllerstats_elections_total", dto.MetricType_COUNTER, nil, 7},
		{"kafka_server_brokertopicmetrics_bytesin_total", dto.MetricType_COUNTER, nil, 8},
		{"kafka_server_brokertopicmetrics_bytesin_total", dto.MetricType_COUNTER, map[string]string{"topic": "foo"}, 42},
		{"kafka_controller_controllerstats_leaderelectionrateandtimems", dto.MetricType_SUMMARY, nil, 100},
		{"kafka_network_requestmetrics_requestbytes", dto.MetricType_SUMMARY, map[string]string{"request": "Produce"}, 10},
	} {
		if mf := mfs[w.name]; mf == nil || mf.GetType() != w.typ || !strings.HasPrefix(mf.GetHelp(), "kafka.") {
			t.Errorf("family %s: %v, want type %v with a HELP naming the MBean", w.name, mf, w.typ)
			continue
		}
		if v, ok := value(mfs, w.name, w.labels); !ok || v != w.v {
			t.Errorf("%s%v = %v (present %v), want %v", w.name, w.labels, v, ok, w.v)
		}
	}
	// Rates are not exported (the JMX exporter's rules drop them too).
	for name := range mfs {
		if strings.Contains(name, "rate") && !strings.Contains(name, "rateandtime") || strings.Contains(name, "persec") {
			t.Errorf("rate family %s exported", name)
		}
	}
	// Timers are summaries in milliseconds with p50 and p99.
	s := mfs["kafka_controller_controllerstats_leaderelectionrateandtimems"].GetMetric()[0].GetSummary()
	qs := map[float64]float64{}
	for _, q := range s.GetQuantile() {
		qs[q.GetQuantile()] = q.GetValue()
	}
	if qs[0.5] != 50.5 || qs[0.99] != 99.99 || s.GetSampleSum() != 5050 {
		t.Errorf("timer summary %v", s)
	}
	// Two registry names for one series: exported once.
	if n := len(mfs["kafka_server_replicamanager_underreplicatedpartitions"].GetMetric()); n != 1 {
		t.Errorf("series exported %d times", n)
	}
	if !strings.Contains(out, "# HELP kafka_server_brokertopicmetrics_bytesin_total kafka.server:type=BrokerTopicMetrics,name=BytesInPerSec") {
		t.Errorf("HELP line missing:\n%s", out)
	}
}

func TestRenderLabelEscaping(t *testing.T) {
	reg := metrics.NewRegistry()
	g := metrics.NewGauge()
	_ = reg.Register("kafka.x:type=A,name=B,topic=a\\b\"c\nd", g)
	out := string(Render(reg))
	if !strings.Contains(out, `kafka_x_a_b{topic="a\\b\"c\nd"} 0`) {
		t.Fatalf("bad escaping:\n%s", out)
	}
	parse(t, out)
}

// A summary's quantile label in a registry name does not break the summary.
func TestQuantileKeyProperty(t *testing.T) {
	reg := metrics.NewRegistry()
	h := metrics.NewHistogram(metrics.NewUniformSample(10))
	h.Update(1)
	_ = reg.Register("kafka.x:type=A,name=H,quantile=1", h)
	mfs := parse(t, string(Render(reg)))
	if _, ok := value(mfs, "kafka_x_a_h", map[string]string{"quantile_": "1"}); !ok {
		t.Fatalf("summary with a renamed quantile label missing: %v", mfs)
	}
}

func TestHandler(t *testing.T) {
	srv := httptest.NewServer(Handler(testRegistry(t)))
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain; version=0.0.4") {
		t.Fatalf("status %d content type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	if !strings.Contains(string(body), "kafka_server_replicamanager_underreplicatedpartitions 3") {
		t.Fatalf("body:\n%s", body)
	}
	mfs := parse(t, string(body))
	for _, f := range []string{"go_goroutines", "process_cpu_seconds_total", "kafka_server_brokertopicmetrics_bytesin_total"} {
		if mfs[f] == nil && mfs[strings.TrimSuffix(f, "_total")] == nil {
			t.Errorf("family %s missing", f)
		}
	}

	// OpenMetrics by Accept header: counters keep _total on the sample, the TYPE names the
	// family without it, and the exposition ends with # EOF.
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/metrics", nil)
	req.Header.Set("Accept", "application/openmetrics-text; version=1.0.0")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	om := string(body)
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/openmetrics-text") ||
		!strings.Contains(om, "# TYPE kafka_server_brokertopicmetrics_bytesin counter\n") ||
		!strings.Contains(om, `kafka_server_brokertopicmetrics_bytesin_total{topic="foo"} 42`) ||
		!strings.HasSuffix(om, "# EOF\n") {
		t.Fatalf("OpenMetrics: %q\n%s", resp.Header.Get("Content-Type"), om)
	}
	resp, err = http.Get(srv.URL + "/other")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 404 {
		t.Fatalf("/other: status %d", resp.StatusCode)
	}
	resp, err = http.Post(srv.URL+"/metrics", "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("POST: status %d", resp.StatusCode)
	}
}

func TestServeStopsWithContext(t *testing.T) {
	reg := testRegistry(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ServeListener(ctx, ln, reg) }()
	resp, err := http.Get("http://" + ln.Addr().String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Serve returned %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not stop")
	}

	// A bind error is returned.
	ln2, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln2.Close()
	if err := Serve(context.Background(), ln2.Addr().String(), reg); err == nil {
		t.Fatal("Serve on a used address returned nil")
	}
}

// A collector keeps its layout across scrapes: after names come and go, a name is
// re-registered with another metric or another kind, each scrape is what a fresh collector
// renders, and the values are the current metrics'.
func TestCollectorFollowsRegistryChanges(t *testing.T) {
	reg := testRegistry(t)
	c := NewCollector(reg)
	render := func() string {
		t.Helper()
		mfs, err := c.Gather()
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		enc := expfmt.NewEncoder(&b, expfmt.NewFormat(expfmt.TypeTextPlain))
		for _, mf := range mfs {
			_ = enc.Encode(mf)
		}
		if want := string(Render(reg)); b.String() != want {
			t.Fatalf("kept layout renders\n%s\nfresh collector\n%s", b.String(), want)
		}
		return b.String()
	}
	render()
	render()
	g := metrics.NewGauge()
	g.Update(11)
	_ = reg.Register("kafka.log:type=Log,name=Size,topic=t,partition=0", g)
	if out := render(); !strings.Contains(out, `kafka_log_log_size{partition="0",topic="t"} 11`) {
		t.Fatalf("added gauge missing:\n%s", out)
	}
	g.Update(12)
	if out := render(); !strings.Contains(out, `kafka_log_log_size{partition="0",topic="t"} 12`) {
		t.Fatalf("gauge value not re-read:\n%s", out)
	}
	// Re-registered over another log (logstore replaces a log's gauges): the new one is read.
	reg.Unregister("kafka.log:type=Log,name=Size,topic=t,partition=0")
	_ = reg.Register("kafka.log:type=Log,name=Size,topic=t,partition=0", metrics.NewFunctionalGauge(func() int64 { return 13 }))
	if out := render(); !strings.Contains(out, `kafka_log_log_size{partition="0",topic="t"} 13`) {
		t.Fatalf("re-registered gauge not read:\n%s", out)
	}
	// Another kind under a name: the first name of the family decides again.
	reg.Unregister("kafka.server:type=ReplicaManager,name=UnderReplicatedPartitions")
	cnt := metrics.NewCounter()
	cnt.Inc(2)
	_ = reg.Register("kafka.server:type=ReplicaManager,name=UnderReplicatedPartitions", cnt)
	if out := render(); !strings.Contains(out, "kafka_server_replicamanager_underreplicatedpartitions_total 2") ||
		!strings.Contains(out, "kafka_server_replicamanager_underreplicatedpartitions 5") {
		t.Fatalf("kind change:\n%s", out)
	}
	reg.Unregister("kafka.log:type=Log,name=Size,topic=t,partition=0")
	if out := render(); strings.Contains(out, "kafka_log_log_size") {
		t.Fatalf("removed gauge still exported:\n%s", out)
	}
}

// Scrapes may run concurrently with each other and with the registry changing (run with
// -race).
func TestCollectorConcurrentScrapes(t *testing.T) {
	reg := testRegistry(t)
	h := Handler(reg)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < 200; i++ {
			name := "kafka.log:type=Log,name=Size,topic=t,partition=" + string(rune('0'+i%10))
			reg.Unregister(name)
			_ = reg.Register(name, metrics.NewFunctionalGauge(func() int64 { return int64(i) }))
		}
	}()
	errs := make(chan error, 4)
	for w := 0; w < 4; w++ {
		go func() {
			for i := 0; i < 20; i++ {
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
				if rec.Code != http.StatusOK {
					errs <- io.ErrUnexpectedEOF
					return
				}
				p := expfmt.NewTextParser(model.LegacyValidation)
				if _, err := p.TextToMetricFamilies(rec.Body); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for w := 0; w < 4; w++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	<-done
}
