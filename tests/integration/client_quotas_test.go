package integration

import (
	"context"
	"math/rand"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/isrbroker/isrbroker/tests/cluster"
)

// Issue 32 item 3: client quotas (docs/quotas.md). A franz-go producer whose client id has
// producer_byte_rate=1048576, set with `isrbroker configs`, runs at about 1 MiB/s and sees
// throttle_time_ms (kgo's OnBrokerThrottle); removing the quota brings back a much higher rate
// without a restart.
//
// The broker runs with quota.window.num=2: with Kafka's Rate over 11 windows a producer may
// first send 10 windows' worth (10 MiB) at full speed and then waits, so a 5 s measurement would
// see either the burst or the wait; over 2 windows the allowance is one window's worth.

const quotaRate = 1 << 20

type throttleHook struct{ n, ms atomic.Int64 }

func (h *throttleHook) OnBrokerThrottle(_ kgo.BrokerMetadata, d time.Duration, _ bool) {
	h.n.Add(1)
	h.ms.Add(d.Milliseconds())
}

// produceFor writes 16 KiB random records to topic for d (acks=all) and returns the bytes
// acknowledged per second.
func produceFor(t *testing.T, cl *kgo.Client, topic string, d time.Duration, rng *rand.Rand) float64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d+time.Minute)
	defer cancel()
	start := time.Now()
	var total int64
	for time.Since(start) < d {
		batch := make([]*kgo.Record, 16)
		for i := range batch {
			v := make([]byte, 16<<10)
			rng.Read(v)
			batch[i] = &kgo.Record{Topic: topic, Value: v}
		}
		if err := cl.ProduceSync(ctx, batch...).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
		total += 16 * 16 << 10
	}
	return float64(total) / time.Since(start).Seconds()
}

func TestClientQuotaProducerByteRate(t *testing.T) {
	c := cluster.Start(t, cluster.Options{Brokers: 1, Overrides: map[string]string{"quota.window.num": "2"}})
	requireAdminCommands(t)
	zkArg := "--zookeeper=" + c.ZK.Addr
	c.CreateTopic("quota", 1, 1)
	c.WaitMetadataLeaders("quota", 1, 30*time.Second)
	hook := &throttleHook{}
	cl := c.Client(kgo.ClientID("quota-producer"), kgo.WithHooks(hook), kgo.ProducerBatchMaxBytes(1<<20), kgo.ProducerLinger(0))
	rng := rand.New(rand.NewSource(7))

	entity := []string{"configs", zkArg, "--alter", "--entity-type", "clients", "--entity-name", "quota-producer"}
	out := adminOK(t, append(entity, "--add-config", "producer_byte_rate=1048576")...)
	if !strings.Contains(out, "Completed Updating config for entity: client-id 'quota-producer'.") {
		t.Fatalf("alter output %q", out)
	}
	// The quota is in force once the broker measures the client's entity.
	deadline := time.Now().Add(30 * time.Second)
	for {
		if err := cl.ProduceSync(context.Background(), &kgo.Record{Topic: "quota", Value: []byte("warm-up")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Broker(1).MetricSum("kafka_server_produce_byte_rate"); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the broker never measured the quota entity: the quota did not arrive")
		}
	}

	rate := produceFor(t, cl, "quota", 5*time.Second, rng)
	t.Logf("with producer_byte_rate=%d: %.0f B/s, %d throttled responses (%d ms in all)", quotaRate, rate, hook.n.Load(), hook.ms.Load())
	if rate < 0.5*quotaRate || rate > 2*quotaRate {
		t.Fatalf("produced at %.0f B/s under a %d B/s quota, want 0.5-2x the quota", rate, quotaRate)
	}
	if hook.n.Load() == 0 {
		t.Fatal("no throttle_time_ms reported to the client")
	}
	if _, err := c.Broker(1).MetricSum("kafka_server_produce_throttle_time"); err != nil {
		t.Fatal(err)
	}

	// Removed: the rate comes back without a restart.
	adminOK(t, append(entity, "--delete-config", "producer_byte_rate")...)
	deadline = time.Now().Add(60 * time.Second)
	for {
		free := produceFor(t, cl, "quota", 2*time.Second, rng)
		t.Logf("after removing the quota: %.0f B/s", free)
		if free > 4*quotaRate {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("still %.0f B/s a minute after removing the quota", free)
		}
	}
}
