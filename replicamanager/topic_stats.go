package replicamanager

import (
	"sync"

	metrics "github.com/rcrowley/go-metrics"
	"github.com/twmb/franz-go/pkg/kerr"
)

// Kafka's BrokerTopicMetrics (kafka.server:type=BrokerTopicMetrics,name=...PerSec): one set
// per topic (with a topic key property) and the all-topics set (without), every per-topic
// mark also marking the all-topics meter, as Kafka's BrokerTopicStats does
// (docs/metrics.md). The replication meters (ReplicationBytesIn/OutPerSec) exist for all
// topics only and are kept by the fetcher and the broker.
const (
	MetricMessagesIn            = "MessagesInPerSec"
	MetricBytesIn               = "BytesInPerSec"
	MetricBytesOut              = "BytesOutPerSec"
	MetricBytesRejected         = "BytesRejectedPerSec"
	MetricTotalProduceRequests  = "TotalProduceRequestsPerSec"
	MetricFailedProduceRequests = "FailedProduceRequestsPerSec"
	MetricTotalFetchRequests    = "TotalFetchRequestsPerSec"
	MetricFailedFetchRequests   = "FailedFetchRequestsPerSec"
)

var topicMeterNames = []string{MetricMessagesIn, MetricBytesIn, MetricBytesOut, MetricBytesRejected,
	MetricTotalProduceRequests, MetricFailedProduceRequests, MetricTotalFetchRequests, MetricFailedFetchRequests}

// BrokerTopicMetricName is the registry name of meter name for topic ("" for all topics).
func BrokerTopicMetricName(name, topic string) string {
	n := "kafka.server:type=BrokerTopicMetrics,name=" + name
	if topic != "" {
		n += ",topic=" + topic
	}
	return n
}

// TopicMeters is one topic's (or all topics') BrokerTopicMetrics meters.
type TopicMeters struct {
	MessagesIn, BytesIn, BytesOut, BytesRejected                                         metrics.Meter
	TotalProduceRequests, FailedProduceRequests, TotalFetchRequests, FailedFetchRequests metrics.Meter
}

func newTopicMeters(reg metrics.Registry, topic string) *TopicMeters {
	m := func(name string) metrics.Meter {
		return metrics.GetOrRegisterMeter(BrokerTopicMetricName(name, topic), reg)
	}
	return &TopicMeters{
		MessagesIn: m(MetricMessagesIn), BytesIn: m(MetricBytesIn), BytesOut: m(MetricBytesOut),
		BytesRejected: m(MetricBytesRejected), TotalProduceRequests: m(MetricTotalProduceRequests),
		FailedProduceRequests: m(MetricFailedProduceRequests), TotalFetchRequests: m(MetricTotalFetchRequests),
		FailedFetchRequests: m(MetricFailedFetchRequests),
	}
}

// BrokerTopicStats holds the BrokerTopicMetrics. The meters of a topic are made on first use
// and cached (a lock-free lookup by topic name on the request path, no name formatting), and
// removed when the broker stops hosting the topic.
type BrokerTopicStats struct {
	reg    metrics.Registry
	all    *TopicMeters
	mu     sync.Mutex // serialises creation and removal
	topics sync.Map   // topic → *TopicMeters
}

// NewBrokerTopicStats registers the all-topics meters in reg.
func NewBrokerTopicStats(reg metrics.Registry) *BrokerTopicStats {
	return &BrokerTopicStats{reg: reg, all: newTopicMeters(reg, "")}
}

// All is the all-topics meters.
func (s *BrokerTopicStats) All() *TopicMeters { return s.all }

// Topic is topic's meters, created on first use.
func (s *BrokerTopicStats) Topic(topic string) *TopicMeters {
	if m, ok := s.topics.Load(topic); ok {
		return m.(*TopicMeters)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if m, ok := s.topics.Load(topic); ok {
		return m.(*TopicMeters)
	}
	m := newTopicMeters(s.reg, topic)
	s.topics.Store(topic, m)
	return m
}

// Remove unregisters topic's meters.
func (s *BrokerTopicStats) Remove(topic string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.topics.Delete(topic)
	for _, n := range topicMeterNames {
		s.reg.Unregister(BrokerTopicMetricName(n, topic))
	}
}

// mark marks meter f of topic and of all topics.
func (s *BrokerTopicStats) mark(topic string, n int64, f func(*TopicMeters) metrics.Meter) {
	f(s.Topic(topic)).Mark(n)
	f(s.all).Mark(n)
}

// MarkBytesOut counts record bytes fetched by consumers from topic.
func (s *BrokerTopicStats) MarkBytesOut(topic string, n int) {
	if n > 0 {
		s.mark(topic, int64(n), func(m *TopicMeters) metrics.Meter { return m.BytesOut })
	}
}

// MarkFetch counts one partition of a fetch request (consumer or follower) with its result
// code: TotalFetchRequestsPerSec always, FailedFetchRequestsPerSec for an unexpected error
// (Kafka's readFromLocalLog does not count the errors of a client that must retry
// elsewhere: NOT_LEADER_OR_FOLLOWER, UNKNOWN_TOPIC_OR_PARTITION, OFFSET_OUT_OF_RANGE, ...).
//
// A partition answered UNKNOWN_TOPIC_OR_PARTITION counts for all topics only: a fetch for a
// deleted topic would otherwise bring its meters back after Remove.
func (s *BrokerTopicStats) MarkFetch(topic string, code int16) {
	if code == kerr.UnknownTopicOrPartition.Code {
		s.all.TotalFetchRequests.Mark(1)
		return
	}
	s.mark(topic, 1, func(m *TopicMeters) metrics.Meter { return m.TotalFetchRequests })
	switch code {
	case 0, kerr.UnknownTopicOrPartition.Code, kerr.NotLeaderForPartition.Code, kerr.UnknownLeaderEpoch.Code,
		kerr.FencedLeaderEpoch.Code, kerr.ReplicaNotAvailable.Code, kerr.KafkaStorageError.Code,
		kerr.OffsetOutOfRange.Code:
		return
	}
	s.mark(topic, 1, func(m *TopicMeters) metrics.Meter { return m.FailedFetchRequests })
}

// markProduce counts one partition of a produce request appended as leader: messages and
// bytes in on success; FailedProduceRequestsPerSec for an unexpected error (Kafka's
// appendToLocalLog does not count NOT_LEADER_OR_FOLLOWER, UNKNOWN_TOPIC_OR_PARTITION,
// MESSAGE_TOO_LARGE, RECORD_LIST_TOO_LARGE, CORRUPT_MESSAGE, KAFKA_STORAGE_ERROR,
// INVALID_TIMESTAMP; it does count NOT_ENOUGH_REPLICAS), BytesRejectedPerSec for a too
// large batch.
func (s *BrokerTopicStats) markProduce(topic string, code int16, records, bytes int) {
	m := s.Topic(topic)
	m.TotalProduceRequests.Mark(1)
	s.all.TotalProduceRequests.Mark(1)
	switch code {
	case 0:
		m.MessagesIn.Mark(int64(records))
		s.all.MessagesIn.Mark(int64(records))
		m.BytesIn.Mark(int64(bytes))
		s.all.BytesIn.Mark(int64(bytes))
	case kerr.MessageTooLarge.Code, kerr.RecordListTooLarge.Code:
		m.BytesRejected.Mark(int64(bytes))
		s.all.BytesRejected.Mark(int64(bytes))
	case kerr.UnknownTopicOrPartition.Code, kerr.NotLeaderForPartition.Code, kerr.CorruptMessage.Code,
		kerr.KafkaStorageError.Code, kerr.InvalidTimestamp.Code:
	default:
		m.FailedProduceRequests.Mark(1)
		s.all.FailedProduceRequests.Mark(1)
	}
}

// removeTopicStatsOfDeleted removes the meters of the topics of deleted partitions that the
// broker no longer hosts any partition of (StopReplica with delete: topic deletion).
func (c *controllerRequests) removeTopicStatsOfDeleted(deleted []TopicPartition) {
	gone := map[string]bool{}
	for _, tp := range deleted {
		gone[tp.Topic] = true
	}
	c.pool.mu.RLock()
	for tp := range c.pool.partitions {
		delete(gone, tp.Topic)
	}
	c.pool.mu.RUnlock()
	for t := range gone {
		c.topicStats.Remove(t)
	}
}
