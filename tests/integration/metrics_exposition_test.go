package integration

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/isrbroker/isrbroker/tests/cluster"
)

// scrape GETs broker id's /metrics and parses it with the Prometheus text parser.
func scrape(t *testing.T, c *cluster.Cluster, id int32) (map[string]*dto.MetricFamily, error) {
	t.Helper()
	text, err := c.Broker(id).Metrics()
	if err != nil {
		return nil, err
	}
	return cluster.ParseMetrics(text)
}

// sampleOf is the value of family name's series whose labels include match (-1 when absent).
func sampleOf(mfs map[string]*dto.MetricFamily, name string, match map[string]string) float64 {
	for _, s := range cluster.FamilySamples(mfs, name) {
		ok := len(s.Labels) == len(match)
		for k, v := range match {
			if s.Labels[k] != v {
				ok = false
			}
		}
		if ok {
			return s.Value
		}
	}
	return -1
}

// Issue 14: /metrics is the Prometheus client's exposition with the JMX exporter's Kafka names.
// On a 3-broker cluster: it parses with the Prometheus text parser (and OpenMetrics is served
// by Accept header); bytes and messages in grow per topic after a produce; Produce has request
// counts and total-time samples with p50/p99; every replica's Log gauges track the log; the
// ZooKeeper session meters, the idle ratio and the Go and process collectors are there; no rate
// gauge is exported; after SIGSTOP of a follower the leader's UnderReplicatedPartitions reads 1
// and IsrShrinks counts (under a steady acks=all load), and both recover after SIGCONT. The dashboard and the alert rules in
// docs/ query only families the brokers expose. Deleting the topic removes its series.
func TestMetricsExposition_KafkaNamesMoveAndURPFollowsStoppedFollower(t *testing.T) {
	const lag = 2 * time.Second
	c := cluster.Start(t, cluster.Options{Brokers: 3, SessionTimeout: 12 * time.Second,
		Overrides: map[string]string{"replica.lag.time.max.ms": fmt.Sprint(lag.Milliseconds())}})
	const topic = "metrics-exposition"
	assignment := c.CreateTopic(topic, 1, 3)
	waitFullISR(t, c, topic, assignment, failoverTimeout)
	c.WaitMetadataLeaders(topic, 1, 30*time.Second)
	st, err := c.ZK.PartitionState(topic, 0)
	if err != nil {
		t.Fatal(err)
	}
	leader := st.Leader
	topicLabel := map[string]string{"topic": topic}
	const bytesIn = "kafka_server_brokertopicmetrics_bytesin_total"
	before, err := scrape(t, c, leader)
	if err != nil {
		t.Fatal(err)
	}
	if v := sampleOf(before, bytesIn, topicLabel); v > 0 {
		t.Fatalf("%s%v = %v before any produce", bytesIn, topicLabel, v)
	}

	cl := c.Client(kgo.RequiredAcks(kgo.AllISRAcks()))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const n = 20
	for i := 0; i < n; i++ {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(fmt.Sprintf("value-%03d", i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	ends, err := c.EndOffsets(ctx, topic)
	if err != nil || ends[0] != n {
		t.Fatalf("end offsets %v (%v), want %d", ends, err, n)
	}

	var mfs map[string]*dto.MetricFamily
	cluster.WaitFor(t, 20*time.Second, func() (bool, string) {
		mfs, err = scrape(t, c, leader)
		if err != nil {
			return false, err.Error()
		}
		checks := []struct {
			what string
			ok   bool
		}{
			{"bytes in of the topic", sampleOf(mfs, bytesIn, topicLabel) > 0},
			{"bytes in of all topics", sampleOf(mfs, bytesIn, nil) >= sampleOf(mfs, bytesIn, topicLabel)},
			{"messages in", sampleOf(mfs, "kafka_server_brokertopicmetrics_messagesin_total", topicLabel) == n},
			{"total produce requests", sampleOf(mfs, "kafka_server_brokertopicmetrics_totalproducerequests_total", topicLabel) >= n},
			{"Produce requests", sampleOf(mfs, "kafka_network_requestmetrics_requests_total", map[string]string{"request": "Produce"}) >= n},
			{"FetchFollower requests", sampleOf(mfs, "kafka_network_requestmetrics_requests_total", map[string]string{"request": "FetchFollower"}) > 0},
			{"Produce total time count", sampleOf(mfs, "kafka_network_requestmetrics_totaltimems_count", map[string]string{"request": "Produce"}) >= n},
		}
		for _, ch := range checks {
			if !ch.ok {
				return false, "leader lacks " + ch.what
			}
		}
		return true, ""
	})
	if mf := mfs[bytesIn]; mf.GetType() != dto.MetricType_COUNTER || !strings.Contains(mf.GetHelp(), "BytesInPerSec") {
		t.Errorf("%s: type %v help %q, want a counter whose HELP names the MBean", bytesIn, mf.GetType(), mf.GetHelp())
	}
	for _, q := range []float64{0.5, 0.99} {
		v, count, ok := cluster.SummaryQuantile(mfs, "kafka_network_requestmetrics_totaltimems", map[string]string{"request": "Produce"}, q)
		if !ok || count < n || v < 0 {
			t.Errorf("TotalTimeMs{request=Produce} quantile %v = %v over %d samples (present %v)", q, v, count, ok)
		}
	}
	idle := sampleOf(mfs, "kafka_server_kafkarequesthandlerpool_requesthandleravgidlepercent", nil)
	if idle < 0 || idle > 1 {
		t.Errorf("RequestHandlerAvgIdlePercent = %v, want a ratio in [0, 1]", idle)
	}
	for _, f := range []string{"go_goroutines", "process_cpu_seconds_total", "process_resident_memory_bytes",
		"kafka_server_sessionexpirelistener_zookeeperdisconnects_total", "kafka_server_sessionexpirelistener_zookeeperexpires_total"} {
		if mfs[f] == nil {
			t.Errorf("family %s missing", f)
		}
	}
	if v := sampleOf(mfs, "kafka_server_sessionexpirelistener_zookeepersyncconnects_total", nil); v < 1 {
		t.Errorf("ZooKeeperSyncConnects = %v, want >= 1", v)
	}
	for name := range mfs {
		for _, bad := range []string{"persec", "oneminuterate", "fiveminuterate", "fifteenminuterate", "meanrate"} {
			if strings.Contains(name, bad) {
				t.Errorf("family %s: rates are not exported (%s)", name, bad)
			}
		}
	}

	// Every replica, leader or follower, has the partition's Log gauges.
	part := map[string]string{"topic": topic, "partition": "0"}
	all := map[string]bool{}
	for _, id := range c.IDs() {
		cluster.WaitFor(t, 20*time.Second, func() (bool, string) {
			m, err := scrape(t, c, id)
			if err != nil {
				return false, err.Error()
			}
			for name := range m {
				all[name] = true
			}
			leo := sampleOf(m, "kafka_log_log_logendoffset", part)
			size := sampleOf(m, "kafka_log_log_size", part)
			start := sampleOf(m, "kafka_log_log_logstartoffset", part)
			return leo == n && size > 0 && start == 0, fmt.Sprintf("broker %d: LogEndOffset %v Size %v LogStartOffset %v", id, leo, size, start)
		})
	}
	checkOpenMetrics(t, c.Broker(leader).MetricsAddr)
	checkDocsQueryExposedFamilies(t, all)

	// SIGSTOP of a follower: the leader's UnderReplicatedPartitions reads 1 within the lag bound.
	var follower int32 = -1
	for _, r := range assignment[0] {
		if r != leader {
			follower = r
			break
		}
	}
	const urp = "kafka_server_replicamanager_underreplicatedpartitions"
	shrinksBefore := sampleOf(mfs, "kafka_server_replicamanager_isrshrinks_total", nil)
	// A follower that has the leader's LEO stays in the ISR (Kafka 2.4's isFollowerOutOfSync):
	// keep producing so the stopped one falls behind.
	pcl := c.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	w := startAckProducer(t, pcl, topic, ackProducerOptions{every: 20 * time.Millisecond, perTick: 1, partitions: 1})
	cluster.WaitFor(t, 20*time.Second, func() (bool, string) { n := w.count(); return n >= 20, fmt.Sprintf("%d acknowledged", n) })
	c.Broker(follower).Pause()
	stopped := true
	defer func() {
		if stopped {
			c.Broker(follower).Resume()
		}
	}()
	cluster.WaitFor(t, lag*3/2+5*time.Second, func() (bool, string) {
		m, err := scrape(t, c, leader)
		if err != nil {
			return false, err.Error()
		}
		v := sampleOf(m, urp, nil)
		shrinks := sampleOf(m, "kafka_server_replicamanager_isrshrinks_total", nil)
		return v == 1 && shrinks > shrinksBefore, fmt.Sprintf("leader %d: %s = %v, IsrShrinks %v (before %v) after SIGSTOP of %d", leader, urp, v, shrinks, shrinksBefore, follower)
	})
	c.Broker(follower).Resume()
	stopped = false
	cluster.WaitFor(t, 30*time.Second, func() (bool, string) {
		m, err := scrape(t, c, leader)
		if err != nil {
			return false, err.Error()
		}
		v := sampleOf(m, urp, nil)
		expands := sampleOf(m, "kafka_server_replicamanager_isrexpands_total", nil)
		return v == 0 && expands > 0, fmt.Sprintf("%s = %v, IsrExpands %v after SIGCONT", urp, v, expands)
	})

	// Deleting the topic removes its Log gauges and its BrokerTopicMetrics on every broker.
	w.stop(t)
	pcl.Close()
	cl.Close() // no client left that could auto-create the topic again
	dctx, dcancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer dcancel()
	if _, err := c.Admin().DeleteTopics(dctx, topic); err != nil {
		t.Fatal(err)
	}
	for _, id := range c.IDs() {
		cluster.WaitFor(t, 30*time.Second, func() (bool, string) {
			m, err := scrape(t, c, id)
			if err != nil {
				return false, err.Error()
			}
			for name := range m {
				if !strings.HasPrefix(name, "kafka_log_log_") && !strings.HasPrefix(name, "kafka_server_brokertopicmetrics_") {
					continue
				}
				for _, s := range cluster.FamilySamples(m, name) {
					if s.Labels["topic"] == topic {
						return false, fmt.Sprintf("broker %d still exposes %s%v after the topic's deletion", id, name, s.Labels)
					}
				}
			}
			return true, ""
		})
	}
}

// checkOpenMetrics asks for OpenMetrics: counters are declared without _total and sampled with
// it, summaries carry quantiles, and the exposition ends with # EOF.
func checkOpenMetrics(t *testing.T, addr string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/metrics", nil)
	req.Header.Set("Accept", "application/openmetrics-text; version=1.0.0; charset=utf-8")
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	text := string(body)
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/openmetrics-text") {
		t.Fatalf("OpenMetrics content type %q", ct)
	}
	for _, want := range []string{
		"# TYPE kafka_server_brokertopicmetrics_bytesin counter\n",
		"# HELP kafka_server_brokertopicmetrics_bytesin ",
		`kafka_server_brokertopicmetrics_bytesin_total{topic="metrics-exposition"} `,
		"# TYPE kafka_network_requestmetrics_totaltimems summary\n",
		`kafka_network_requestmetrics_totaltimems{request="Produce",quantile="0.99"} `,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("OpenMetrics exposition lacks %q", want)
		}
	}
	if !strings.HasSuffix(text, "# EOF\n") {
		t.Errorf("OpenMetrics exposition does not end with # EOF")
	}
}

// checkDocsQueryExposedFamilies checks that every metric the shipped dashboard and alert rules
// query is a family the brokers expose (families: the union over the brokers' scrapes).
func checkDocsQueryExposedFamilies(t *testing.T, families map[string]bool) {
	t.Helper()
	queries, err := cluster.DocsQueries("../..")
	if err != nil {
		t.Fatal(err)
	}
	if len(queries) < 10 {
		t.Fatalf("only %d queries in the dashboard and alert rules", len(queries))
	}
	for where, expr := range queries {
		names := cluster.QueriedMetricNames(expr)
		if len(names) == 0 {
			t.Errorf("%s: %q queries no metric", where, expr)
		}
		for _, n := range names {
			if _, ok := cluster.FamilyOf(n, families); !ok {
				t.Errorf("%s queries %s, which no broker exposes", where, n)
			}
		}
	}
}
