package fetcher

import (
	"fmt"
	"strings"
	"testing"

	"github.com/rcrowley/go-metrics"

	"github.com/isrbroker/isrbroker/broker/metricsexport"
)

// gaugeValue returns the value of the gauge registered as name, or ok=false when none is.
func gaugeValue(reg metrics.Registry, name string) (int64, bool) {
	g, ok := reg.Get(name).(metrics.Gauge)
	if !ok {
		return 0, false
	}
	return g.Value(), true
}

// partitionCountGauges lists every registered FetcherStats PartitionCount gauge by clientId.
func partitionCountGauges(reg metrics.Registry) map[string]int64 {
	const prefix = "kafka.server:type=FetcherStats,name=PartitionCount,clientId="
	out := map[string]int64{}
	reg.Each(func(name string, m interface{}) {
		if id, ok := strings.CutPrefix(name, prefix); ok {
			if g, ok := m.(metrics.Gauge); ok {
				out[id] = g.Value()
			}
		}
	})
	return out
}

func requireGauges(t *testing.T, reg metrics.Registry, wantThreads int64, want map[string]int64) {
	t.Helper()
	if got, ok := gaugeValue(reg, MetricFetcherThreadCount); !ok || got != wantThreads {
		t.Errorf("FetcherThreadCount = %d (registered %v), want %d", got, ok, wantThreads)
	}
	got := partitionCountGauges(reg)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("PartitionCount gauges = %v, want %v", got, want)
	}
}

// S15/S23 observability: every fetcher registers a PartitionCount gauge named after the thread
// (ReplicaFetcherThread-<fetcherId>-<leaderId>) holding the number of partitions it serves, and
// unregisters it when it shuts down; FetcherThreadCount follows the number of running fetchers.
func TestS15_S23_FetcherMetricsFollowThreadsAndPartitions(t *testing.T) {
	c := newCluster(t, Config{NumFetchers: 2}, 1, 3)
	const topic = "orders-v2" // Java hash: even partitions → fetcher 0, odd → fetcher 1
	requireGauges(t, c.reg, 0, map[string]int64{})

	parts := make(map[TopicPartition]InitialFetchState)
	for p := int32(0); p < 8; p++ {
		x := tp(topic, p)
		c.local.log(x)
		c.leaders[1].lead(x, 0, &memLog{})
		parts[x] = InitialFetchState{Leader: ep(1), CurrentLeaderEpoch: 0, InitOffset: 0}
	}
	c.mgr.AddFetcherForPartitions(parts)
	requireGauges(t, c.reg, 2, map[string]int64{"ReplicaFetcherThread-0-1": 4, "ReplicaFetcherThread-1-1": 4})

	// The /metrics exporter turns clientId into a label.
	text := string(metricsexport.Render(c.reg))
	for _, want := range []string{
		`kafka_server_fetcherstats_partitioncount{clientId="ReplicaFetcherThread-0-1"} 4`,
		`kafka_server_fetcherstats_partitioncount{clientId="ReplicaFetcherThread-1-1"} 4`,
		`kafka_server_replicafetchermanager_fetcherthreadcount{clientId="Replica"} 2`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("rendered metrics lack %q:\n%s", want, text)
		}
	}

	// Leadership of the odd partitions moves to broker 3. Until ShutdownIdleFetcherThreads the
	// fetcher toward 1 stays with 0 partitions; then its gauge disappears.
	var odd []TopicPartition
	moved := make(map[TopicPartition]InitialFetchState)
	for p := int32(1); p < 8; p += 2 {
		x := tp(topic, p)
		odd = append(odd, x)
		c.leaders[3].lead(x, 1, c.leaders[1].cloneLog(x))
		moved[x] = InitialFetchState{Leader: ep(3), CurrentLeaderEpoch: 1, InitOffset: 0}
	}
	c.mgr.RemoveFetcherForPartitions(odd)
	requireGauges(t, c.reg, 2, map[string]int64{"ReplicaFetcherThread-0-1": 4, "ReplicaFetcherThread-1-1": 0})
	c.mgr.AddFetcherForPartitions(moved)
	c.mgr.ShutdownIdleFetcherThreads()
	requireGauges(t, c.reg, 2, map[string]int64{"ReplicaFetcherThread-0-1": 4, "ReplicaFetcherThread-1-3": 4})

	// A leader endpoint change replaces the fetcher: same name, the gauge keeps counting.
	newEP := BrokerEndPoint{ID: 3, Addr: "leader-3-moved:9092"}
	c.mgr.AddFetcherForPartitions(map[TopicPartition]InitialFetchState{
		tp(topic, 1): {Leader: newEP, CurrentLeaderEpoch: 1, InitOffset: 0},
	})
	requireGauges(t, c.reg, 2, map[string]int64{"ReplicaFetcherThread-0-1": 4, "ReplicaFetcherThread-1-3": 4})

	// This broker leads everything: all fetchers go idle and are shut down.
	all := make([]TopicPartition, 0, len(parts))
	for x := range parts {
		all = append(all, x)
	}
	c.mgr.RemoveFetcherForPartitions(all)
	c.mgr.ShutdownIdleFetcherThreads()
	requireGauges(t, c.reg, 0, map[string]int64{})

	c.mgr.Close()
	if _, ok := gaugeValue(c.reg, MetricFetcherThreadCount); ok {
		t.Errorf("FetcherThreadCount still registered after Close")
	}
}

// A partition failed with FENCED_LEADER_EPOCH leaves its fetcher: PartitionCount drops.
func TestFetcherMetrics_FailedPartitionLeavesCount(t *testing.T) {
	c := newCluster(t, Config{}, 1)
	a, b := tp("t", 0), tp("t", 1)
	for _, x := range []TopicPartition{a, b} {
		c.local.log(x)
	}
	c.leaders[1].lead(a, 0, &memLog{})
	c.leaders[1].lead(b, 5, &memLog{}) // the leader is at epoch 5; we follow with epoch 0
	c.mgr.AddFetcherForPartitions(map[TopicPartition]InitialFetchState{
		a: {Leader: ep(1), CurrentLeaderEpoch: 0},
		b: {Leader: ep(1), CurrentLeaderEpoch: 0},
	})
	name := MetricPartitionCount(0, 1)
	eventually(t, "PartitionCount 1 after the fenced partition failed", func() bool {
		v, ok := gaugeValue(c.reg, name)
		return ok && v == 1
	})
	if got := c.mgr.FailedPartitions(); len(got) != 1 || got[0] != b {
		t.Fatalf("failed partitions = %v, want [%v]", got, b)
	}
}
