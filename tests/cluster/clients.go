package cluster

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Client returns a franz-go client seeded with every broker and otherwise default settings
// (opts are appended); it is closed at cleanup.
func (c *Cluster) Client(opts ...kgo.Opt) *kgo.Client {
	c.t.Helper()
	all := append([]kgo.Opt{kgo.SeedBrokers(c.BootstrapAddrs()...)}, opts...)
	cl, err := kgo.NewClient(all...)
	if err != nil {
		c.t.Fatalf("cluster: kgo client: %v", err)
	}
	c.track(cl)
	return cl
}

// Admin returns the cluster's kadm client (one per cluster, created on first use, closed at
// cleanup).
func (c *Cluster) Admin() *kadm.Client {
	c.mu.Lock()
	adm := c.admin
	c.mu.Unlock()
	if adm != nil {
		return adm
	}
	adm = kadm.NewClient(c.Client())
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.admin == nil {
		c.admin = adm
	}
	return c.admin
}

// CreateTopic creates topic through CreateTopics (kadm), waits until every partition has a live
// leader in ZooKeeper and in every live broker's Metadata answer, and returns the assignment read
// from ZooKeeper.
func (c *Cluster) CreateTopic(topic string, partitions int32, rf int16) map[int32][]int32 {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := c.Admin().CreateTopic(ctx, partitions, rf, nil, topic); err != nil {
		c.t.Fatalf("cluster: create topic %s (%d partitions, RF %d): %v", topic, partitions, rf, err)
	}
	assignment := c.ZK.WaitTopicOnline(topic, 30*time.Second)
	if int32(len(assignment)) != partitions {
		c.t.Fatalf("cluster: topic %s has %d partitions in ZooKeeper, want %d", topic, len(assignment), partitions)
	}
	c.WaitMetadataLeaders(topic, partitions, 30*time.Second)
	return assignment
}

// MetadataLeaders asks the broker at addr for topic's metadata and returns partition → leader
// (-1 with a partition error). The error is the topic-level error, if any.
func MetadataLeaders(ctx context.Context, addr, topic string) (map[int32]int32, error) {
	parts, err := MetadataPartitions(ctx, addr, topic)
	if err != nil {
		return nil, err
	}
	out := make(map[int32]int32, len(parts))
	for p, mp := range parts {
		out[p] = mp.Leader
	}
	return out, nil
}

// WaitMetadataLeaders waits until every running broker answers Metadata for topic with
// `partitions` partitions, each with a leader.
func (c *Cluster) WaitMetadataLeaders(topic string, partitions int32, timeout time.Duration) {
	c.t.Helper()
	WaitFor(c.t, timeout, func() (bool, string) {
		for _, id := range c.ids {
			b := c.Broker(id)
			if !b.Running() {
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			leaders, err := MetadataLeaders(ctx, b.Addr, topic)
			cancel()
			if err != nil {
				return false, fmt.Sprintf("broker %d metadata for %s: %v", id, topic, err)
			}
			if int32(len(leaders)) != partitions {
				return false, fmt.Sprintf("broker %d metadata: %s has %d partitions, want %d", id, topic, len(leaders), partitions)
			}
			for p, l := range leaders {
				if l < 0 {
					return false, fmt.Sprintf("broker %d metadata: %s-%d has no leader", id, topic, p)
				}
			}
		}
		return true, ""
	})
}

// Metrics fetches the broker's metrics endpoint (GET http://<metrics.listen>/metrics).
func (b *Broker) Metrics() (string, error) {
	hc := http.Client{Timeout: 5 * time.Second}
	resp, err := hc.Get("http://" + b.MetricsAddr + "/metrics")
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return string(body), fmt.Errorf("GET /metrics: %s", resp.Status)
	}
	return string(body), nil
}

// MetricSamples returns the values of every sample of metric name (any labels) in a Prometheus
// text exposition.
func MetricSamples(text, name string) []float64 {
	var out []float64
	for _, s := range MetricSamplesWithLabels(text, name) {
		out = append(out, s.Value)
	}
	return out
}

// EndOffsets lists topic's end offset (the HW, as consumers see it) per partition (ListOffsets
// with timestamp -1, through kadm).
func (c *Cluster) EndOffsets(ctx context.Context, topic string) (map[int32]int64, error) {
	listed, err := c.Admin().ListEndOffsets(ctx, topic)
	if err != nil {
		return nil, err
	}
	if err := listed.Error(); err != nil {
		return nil, err
	}
	ends := map[int32]int64{}
	listed.Each(func(o kadm.ListedOffset) { ends[o.Partition] = o.Offset })
	return ends, nil
}
