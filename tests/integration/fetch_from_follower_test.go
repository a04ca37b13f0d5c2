package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/isrbroker/isrbroker/tests/cluster"
)

// Issue 32, KIP-392 (fetch from follower): three brokers in racks r1, r2, r3 with Kafka's
// RackAwareReplicaSelector, an RF 3 topic led by broker 1 (r1). A franz-go consumer in rack r2 is
// sent by the leader to broker 2 (preferred_read_replica) and reads every produced record
// there: broker 2's per-topic consumer BytesOutPerSec grows; broker 3 (another rack) serves none.
func TestFetchFromFollowerRack(t *testing.T) {
	c := cluster.Start(t, cluster.Options{
		Overrides: map[string]string{"replica.selector.class": "org.apache.kafka.common.replica.RackAwareReplicaSelector"},
		BrokerOverrides: map[int32]map[string]string{
			1: {"broker.rack": "r1"}, 2: {"broker.rack": "r2"}, 3: {"broker.rack": "r3"},
		},
	})
	const topic = "fetch-from-follower"
	assignment := c.CreateTopicWithAssignment(topic, map[int32][]int32{0: {1, 2, 3}}, nil)
	waitFullISR(t, c, topic, assignment, failoverTimeout)
	c.WaitMetadataLeaders(topic, 1, 30*time.Second)
	if st, err := c.ZK.PartitionState(topic, 0); err != nil || st.Leader != 1 {
		t.Fatalf("%s-0 state %+v (%v), want broker 1 leading", topic, st, err)
	}

	cl := c.Client(kgo.RequiredAcks(kgo.AllISRAcks()))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const n = 200
	for i := 0; i < n; i++ {
		r := &kgo.Record{Topic: topic, Value: []byte(fmt.Sprintf("value-%03d", i))}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}

	got := readAllWith(t, c, topic, 1, kgo.Rack("r2"))[0]
	if len(got) != n {
		t.Fatalf("read %d records, want %d", len(got), n)
	}
	for i, r := range got {
		if want := fmt.Sprintf("value-%03d", i); r.Offset != int64(i) || string(r.Value) != want {
			t.Fatalf("record %d: offset %d value %q, want offset %d value %q", i, r.Offset, r.Value, i, want)
		}
	}

	const bytesOut = "kafka_server_brokertopicmetrics_bytesout_total"
	topicLabel := map[string]string{"topic": topic}
	consumerBytes := func(id int32) float64 {
		mfs, err := scrape(t, c, id)
		if err != nil {
			t.Fatalf("broker %d metrics: %v", id, err)
		}
		return sampleOf(mfs, bytesOut, topicLabel)
	}
	// The meters are marked as each response is sent; by now the consumer has them all.
	cluster.WaitFor(t, 20*time.Second, func() (bool, string) {
		v := consumerBytes(2)
		return v >= float64(n*len("value-000")), fmt.Sprintf("broker 2 (r2) %s%v = %v, want the %d records' bytes", bytesOut, topicLabel, v, n)
	})
	if v := consumerBytes(3); v > 0 {
		t.Errorf("broker 3 (r3) served %v consumer bytes of %s, want none", v, topic)
	}
	t.Logf("consumer bytes out of %s: leader 1 %v, follower 2 %v", topic, consumerBytes(1), consumerBytes(2))
}
