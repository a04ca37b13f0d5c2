package metricsexport

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/isrbroker/isrbroker/logstore"
	"github.com/isrbroker/isrbroker/logstore/record"
	"github.com/isrbroker/isrbroker/replicamanager"
	"github.com/prometheus/client_golang/prometheus"
	metrics "github.com/rcrowley/go-metrics"
)

// benchLog stands in for a logstore.Log: each of its gauges takes a read lock, as the real
// Log's Size, LogStartOffset, LogEndOffset and NumLogSegments do.
type benchLog struct {
	mu               sync.RWMutex
	size, start, end int64
	segs             int
}

func (l *benchLog) get(f func() int64) func() int64 {
	return func() int64 {
		l.mu.RLock()
		defer l.mu.RUnlock()
		return f()
	}
}

// brokerRegistry is a go-metrics registry populated as a broker holding replicas partition
// replicas populates it (topics of 100 partitions): the four kafka.log:type=Log gauges per
// replica under logstore.LogMetricName, the BrokerTopicMetrics meters per topic and for all
// topics, the replica manager's gauges and meters, request meters and timers for 20 APIs.
func brokerRegistry(replicas int) metrics.Registry {
	reg := metrics.NewRegistry()
	const perTopic = 100
	topics := map[string]bool{}
	for i := 0; i < replicas; i++ {
		tp := record.TopicPartition{Topic: fmt.Sprintf("topic-%03d", i/perTopic), Partition: int32(i % perTopic)}
		topics[tp.Topic] = true
		l := &benchLog{size: int64(i) * 1000, start: int64(i), end: int64(i) * 10, segs: 1 + i%3}
		gauges := map[string]func() int64{
			"Size":           l.get(func() int64 { return l.size }),
			"LogStartOffset": l.get(func() int64 { return l.start }),
			"LogEndOffset":   l.get(func() int64 { return l.end }),
			"NumLogSegments": l.get(func() int64 { return int64(l.segs) }),
		}
		for name, f := range gauges {
			_ = reg.Register(logstore.LogMetricName(name, tp), metrics.NewFunctionalGauge(f))
		}
	}
	meterNames := []string{
		replicamanager.MetricMessagesIn, replicamanager.MetricBytesIn, replicamanager.MetricBytesOut,
		replicamanager.MetricBytesRejected, replicamanager.MetricTotalProduceRequests,
		replicamanager.MetricFailedProduceRequests, replicamanager.MetricTotalFetchRequests,
		replicamanager.MetricFailedFetchRequests,
	}
	topics[""] = true
	for topic := range topics {
		for _, n := range meterNames {
			metrics.GetOrRegisterMeter(replicamanager.BrokerTopicMetricName(n, topic), reg).Mark(7)
		}
	}
	for _, n := range []string{"UnderReplicatedPartitions", "UnderMinIsrPartitionCount", "AtMinIsrPartitionCount", "LeaderCount", "PartitionCount"} {
		_ = reg.Register("kafka.server:type=ReplicaManager,name="+n, metrics.NewFunctionalGauge(func() int64 { return int64(replicas) }))
	}
	for _, n := range []string{"IsrShrinksPerSec", "IsrExpandsPerSec", "FailedIsrUpdatesPerSec"} {
		metrics.GetOrRegisterMeter("kafka.server:type=ReplicaManager,name="+n, reg).Mark(1)
	}
	for i := 0; i < 20; i++ {
		req := "Api" + strconv.Itoa(i)
		metrics.GetOrRegisterMeter("kafka.network:type=RequestMetrics,name=RequestsPerSec,request="+req, reg).Mark(3)
		tm := metrics.GetOrRegisterTimer("kafka.network:type=RequestMetrics,name=TotalTimeMs,request="+req, reg)
		for j := 1; j <= 100; j++ {
			tm.Update(time.Duration(j) * time.Millisecond)
		}
	}
	return reg
}

// BenchmarkCollect is one scrape's Collect of a broker's registry (docs/metrics.md, "Scrape
// cost"): the series are received and dropped.
func BenchmarkCollect(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run("replicas="+strconv.Itoa(n), func(b *testing.B) {
			c := NewCollector(brokerRegistry(n))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i <= b.N; i++ {
				if i == 1 {
					b.ResetTimer() // the first Collect lays the families out (BenchmarkScrape)
				}
				ch := make(chan prometheus.Metric, 1024)
				done := make(chan int)
				go func() {
					k := 0
					for range ch {
						k++
					}
					done <- k
				}()
				c.Collect(ch)
				close(ch)
				<-done
			}
		})
	}
}

// BenchmarkScrape is one GET /metrics of a broker's registry through Handler: Collect, the
// Prometheus registry's Gather and the text encoding.
func BenchmarkScrape(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run("replicas="+strconv.Itoa(n), func(b *testing.B) {
			h := Handler(brokerRegistry(n))
			scrape := func() {
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
				if rec.Code != http.StatusOK {
					b.Fatalf("status %d", rec.Code)
				}
				b.SetBytes(int64(rec.Body.Len()))
				_, _ = io.Copy(io.Discard, rec.Body)
			}
			// The first scrape of a handler (and the first after the registry's names
			// changed) also lays the families out: reported apart, as first-scrape-ms.
			start := time.Now()
			scrape()
			first := time.Since(start)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				scrape()
			}
			b.ReportMetric(float64(first)/float64(time.Millisecond), "first-scrape-ms")
		})
	}
}
