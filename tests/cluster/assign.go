package cluster

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// CreateTopicWithAssignment creates topic with an explicit replica assignment (partition →
// replicas, the first replica being the preferred leader) through a CreateTopics request with
// ReplicaAssignment, plus topic configs. It waits until every partition has a live leader in
// ZooKeeper and in every live broker's Metadata answer, and returns the assignment read from
// ZooKeeper.
func (c *Cluster) CreateTopicWithAssignment(topic string, assignment map[int32][]int32, configs map[string]string) map[int32][]int32 {
	c.t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 30000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic = topic
	rt.NumPartitions = -1
	rt.ReplicationFactor = -1
	parts := make([]int32, 0, len(assignment))
	for p := range assignment {
		parts = append(parts, p)
	}
	sort.Slice(parts, func(i, j int) bool { return parts[i] < parts[j] })
	for _, p := range parts {
		ra := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		ra.Partition = p
		ra.Replicas = append([]int32(nil), assignment[p]...)
		rt.ReplicaAssignment = append(rt.ReplicaAssignment, ra)
	}
	keys := make([]string, 0, len(configs))
	for k := range configs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		cfg := kmsg.NewCreateTopicsRequestTopicConfig()
		cfg.Name = k
		cfg.Value = kmsg.StringPtr(configs[k])
		rt.Configs = append(rt.Configs, cfg)
	}
	req.Topics = append(req.Topics, rt)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, c.Client())
	if err != nil {
		c.t.Fatalf("cluster: CreateTopics %s with assignment: %v", topic, err)
	}
	for _, t := range resp.Topics {
		if err := kerr.ErrorForCode(t.ErrorCode); err != nil {
			msg := ""
			if t.ErrorMessage != nil {
				msg = *t.ErrorMessage
			}
			c.t.Fatalf("cluster: CreateTopics %s with assignment %v: %v %s", topic, assignment, err, msg)
		}
	}
	got := c.ZK.WaitTopicOnline(topic, 30*time.Second)
	if len(got) != len(assignment) {
		c.t.Fatalf("cluster: topic %s has %d partitions in ZooKeeper, want %d", topic, len(got), len(assignment))
	}
	c.WaitMetadataLeaders(topic, int32(len(assignment)), 30*time.Second)
	return got
}

// FetcherPartitionCounts reads the broker's /metrics and returns the PartitionCount of every
// running replica fetcher by its clientId ("ReplicaFetcherThread-<fetcherId>-<leaderId>") and the
// FetcherThreadCount gauge (-1 when absent).
func (b *Broker) FetcherPartitionCounts() (map[string]float64, float64, error) {
	text, err := b.Metrics()
	if err != nil {
		return nil, 0, err
	}
	counts := map[string]float64{}
	for _, s := range MetricSamplesWithLabels(text, "kafka_server_fetcherstats_partitioncount") {
		cid, ok := s.Labels["clientId"]
		if !ok {
			return nil, 0, fmt.Errorf("broker %d: PartitionCount sample without clientId: %v", b.ID, s.Labels)
		}
		counts[cid] = s.Value
	}
	threads := -1.0
	if vs := MetricSamples(text, "kafka_server_replicafetchermanager_fetcherthreadcount"); len(vs) == 1 {
		threads = vs[0]
	}
	return counts, threads, nil
}
