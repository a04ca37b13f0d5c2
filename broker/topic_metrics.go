package broker

import (
	"github.com/rcrowley/go-metrics"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/isrbroker/isrbroker/broker/kproto"
	rm "github.com/isrbroker/isrbroker/replicamanager"
)

// Metric names (docs/kafka-facts.md §9, docs/metrics.md). Consumer fetch bytes and follower
// fetch bytes are counted apart: replication traffic is not BytesOut.
const (
	MetricBytesOut            = "kafka.server:type=BrokerTopicMetrics,name=BytesOutPerSec"
	MetricReplicationBytesOut = "kafka.server:type=BrokerTopicMetrics,name=ReplicationBytesOutPerSec"
)

// TopicStatser is what the broker needs of a replica manager to share its BrokerTopicMetrics
// (*replicamanager.Requests implements it): the produce side is marked there, the
// fetch side here, on the same meters.
type TopicStatser interface {
	BrokerTopicStats() *rm.BrokerTopicStats
}

// topicStatsOf is ts' BrokerTopicStats, or new ones over reg (nil ts: unit-test fakes).
func topicStatsOf(ts TopicStatser, reg metrics.Registry) *rm.BrokerTopicStats {
	if ts != nil && ts.BrokerTopicStats() != nil {
		return ts.BrokerTopicStats()
	}
	return rm.NewBrokerTopicStats(reg)
}

// markFetch counts a fetch response: per partition TotalFetchRequestsPerSec (and
// FailedFetchRequestsPerSec on an unexpected error) of its topic; the record bytes as the
// topic's BytesOutPerSec for a consumer (replicaID < 0), as ReplicationBytesOutPerSec (all
// topics) for a follower.
// Record sets spliced in from the segment files (zero-copy reads) count with their length.
func (s *Server) markFetch(replicaID int32, resp *kmsg.FetchResponse, spliced []kproto.SplicedPartition) {
	for i := range resp.Topics {
		t := &resp.Topics[i]
		n := 0
		for j := range t.Partitions {
			p := &t.Partitions[j]
			s.topicStats.MarkFetch(t.Topic, p.ErrorCode)
			n += len(p.RecordBatches)
		}
		for _, sp := range spliced {
			if sp.Topic == i {
				n += int(sp.Records.Len)
			}
		}
		if n == 0 {
			continue
		}
		if replicaID >= 0 {
			s.replBytesOut.Mark(int64(n))
		} else {
			s.topicStats.MarkBytesOut(t.Topic, n)
		}
	}
}

// markOmittedFetches counts in TotalFetchRequestsPerSec the partitions an incremental fetch read
// but left out of its answer (no change: no records, no error), as Kafka counts every
// partition read.
func (s *Server) markOmittedFetches(answers []fetchAnswer, keep []bool) {
	for i := range keep {
		if !keep[i] {
			s.topicStats.MarkFetch(answers[i].topic, answers[i].rp.ErrorCode)
		}
	}
}
