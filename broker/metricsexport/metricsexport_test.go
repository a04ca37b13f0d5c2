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

func TestRender(t *testing.T) {
	out := string(Render(testRegistry(t)))
	want := []string{
		"# TYPE kafka_server_replicamanager_underreplicatedpartitions gauge\nkafka_server_replicamanager_underreplicatedpartitions 3\n",
		"# TYPE kafka_server_kafkarequesthandlerpool_requesthandleravgidlepercent gauge\nkafka_server_kafkarequesthandlerpool_requesthandleravgidlepercent 99.5\n",
		"# TYPE kafka_controller_controllerstats_elections counter\nkafka_controller_controllerstats_elections 7\n",
		"# TYPE kafka_server_brokertopicmetrics_bytesinpersec_count counter\n" +
			"kafka_server_brokertopicmetrics_bytesinpersec_count 8\n" +
			"kafka_server_brokertopicmetrics_bytesinpersec_count{topic=\"foo\"} 42\n",
		"# TYPE kafka_server_brokertopicmetrics_bytesinpersec_oneminuterate gauge\n",
		"# TYPE kafka_controller_controllerstats_leaderelectionrateandtimems summary\n" +
			"kafka_controller_controllerstats_leaderelectionrateandtimems{quantile=\"0.5\"} 50.5\n" +
			"kafka_controller_controllerstats_leaderelectionrateandtimems{quantile=\"0.99\"} 99.99\n" +
			"kafka_controller_controllerstats_leaderelectionrateandtimems_sum 5050\n" +
			"kafka_controller_controllerstats_leaderelectionrateandtimems_count 100\n",
		"# TYPE kafka_controller_controllerstats_leaderelectionrateandtimems_oneminuterate gauge\n",
		"# TYPE kafka_network_requestmetrics_requestbytes summary\n" +
			"kafka_network_requestmetrics_requestbytes{request=\"Produce\",quantile=\"0.5\"} 5.5\n" +
			"kafka_network_requestmetrics_requestbytes{request=\"Produce\",quantile=\"0.99\"} 10\n" +
			"kafka_network_requestmetrics_requestbytes_sum{request=\"Produce\"} 55\n" +
			"kafka_network_requestmetrics_requestbytes_count{request=\"Produce\"} 10\n",
	}
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks\n%s\n--- output:\n%s", w, out)
		}
	}
	if n := strings.Count(out, "\nkafka_server_replicamanager_underreplicatedpartitions "); n != 1 {
		t.Errorf("series rendered %d times", n)
	}
	checkExposition(t, out)
}

// checkExposition checks the text format's structure: every sample belongs to the family of
// the preceding # TYPE line, a family is declared once, and every value parses.
func checkExposition(t *testing.T, out string) {
	t.Helper()
	declared := map[string]bool{}
	current := ""
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if strings.HasPrefix(line, "# TYPE ") {
			f := strings.Fields(line)
			if len(f) != 4 {
				t.Fatalf("bad TYPE line %q", line)
			}
			if declared[f[2]] {
				t.Fatalf("family %s declared twice", f[2])
			}
			declared[f[2]] = true
			current = f[2]
			continue
		}
		if current == "" || !strings.HasPrefix(line, current) {
			t.Fatalf("sample %q outside its family %q", line, current)
		}
		sp := strings.LastIndexByte(line, ' ')
		if sp < 0 || line[sp+1:] == "" {
			t.Fatalf("bad sample %q", line)
		}
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
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != ContentType {
		t.Fatalf("status %d content type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	if !strings.Contains(string(body), "kafka_server_replicamanager_underreplicatedpartitions 3") {
		t.Fatalf("body:\n%s", body)
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
