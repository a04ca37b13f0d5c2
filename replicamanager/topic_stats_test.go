package replicamanager

import (
	"testing"

	metrics "github.com/rcrowley/go-metrics"
	"github.com/twmb/franz-go/pkg/kerr"
)

func TestBrokerTopicStats(t *testing.T) {
	reg := metrics.NewRegistry()
	s := NewBrokerTopicStats(reg)
	count := func(name, topic string) int64 {
		m, ok := reg.Get(BrokerTopicMetricName(name, topic)).(metrics.Meter)
		if !ok {
			return -1
		}
		return m.Count()
	}
	s.markProduce("a", 0, 3, 100)
	s.markProduce("b", 0, 1, 10)
	s.markProduce("a", kerr.NotLeaderForPartition.Code, 0, 50) // a client retry: not failed
	s.markProduce("a", kerr.NotEnoughReplicas.Code, 0, 50)     // counted as failed, as Kafka does
	s.markProduce("a", kerr.MessageTooLarge.Code, 0, 70)       // rejected bytes
	s.MarkFetch("a", 0)
	s.MarkFetch("a", kerr.OffsetOutOfRange.Code)
	s.MarkFetch("b", kerr.UnknownServerError.Code)
	s.MarkBytesOut("a", 40)
	for _, c := range []struct {
		name, topic string
		want        int64
	}{
		{MetricMessagesIn, "a", 3}, {MetricMessagesIn, "", 4},
		{MetricBytesIn, "a", 100}, {MetricBytesIn, "b", 10}, {MetricBytesIn, "", 110},
		{MetricTotalProduceRequests, "a", 4}, {MetricTotalProduceRequests, "", 5},
		{MetricFailedProduceRequests, "a", 1}, {MetricFailedProduceRequests, "", 1},
		{MetricBytesRejected, "a", 70},
		{MetricTotalFetchRequests, "a", 2}, {MetricTotalFetchRequests, "", 3},
		{MetricFailedFetchRequests, "a", 0}, {MetricFailedFetchRequests, "b", 1},
		{MetricBytesOut, "a", 40}, {MetricBytesOut, "", 40},
	} {
		if got := count(c.name, c.topic); got != c.want {
			t.Errorf("%s topic %q = %d, want %d", c.name, c.topic, got, c.want)
		}
	}
	s.Remove("a")
	if got := count(MetricBytesIn, "a"); got != -1 {
		t.Errorf("a's meters still registered after Remove")
	}
	if got := count(MetricBytesIn, ""); got != 110 {
		t.Errorf("all-topics meter changed by Remove: %d", got)
	}
	s.MarkFetch("a", kerr.UnknownTopicOrPartition.Code) // a fetch for the deleted topic
	if got := count(MetricTotalFetchRequests, "a"); got != -1 {
		t.Errorf("a fetch answered UNKNOWN_TOPIC_OR_PARTITION brought a's meters back")
	}
	if got := count(MetricTotalFetchRequests, ""); got != 4 {
		t.Errorf("all-topics TotalFetchRequests %d, want 4", got)
	}
	s.markProduce("a", 0, 1, 5) // re-created on use
	if got := count(MetricBytesIn, "a"); got != 5 {
		t.Errorf("re-created a: %d, want 5", got)
	}
}
