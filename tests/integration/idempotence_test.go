package integration

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/isrbroker/isrbroker/broker/kproto"
	"github.com/isrbroker/isrbroker/tests/cluster"
)

// producerIDBlock reads /latest_producer_id_block (Kafka 2.4 ProducerIdManager JSON:
// block_start and block_end are strings).
func producerIDBlock(t *testing.T, c *cluster.Cluster) (start, end string, broker float64) {
	t.Helper()
	m := decodeZNode(t, c, "/latest_producer_id_block", false)
	checkKeys(t, "/latest_producer_id_block", m, "version", "broker", "block_start", "block_end")
	checkNumber(t, "/latest_producer_id_block", m, "version", 1)
	start, _ = m["block_start"].(string)
	end, _ = m["block_end"].(string)
	broker, _ = m["broker"].(float64)
	if start == "" || end == "" {
		t.Fatalf("/latest_producer_id_block: block_start/block_end not strings: %v", m)
	}
	return start, end, broker
}

func initProducerID(t *testing.T, addr string) *kmsg.InitProducerIDResponse {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	conn, err := kproto.Dial(ctx, addr, "", "idempotence-test", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	req := kmsg.NewPtrInitProducerIDRequest()
	req.Version = 4
	req.TransactionTimeoutMillis = 60000
	req.ProducerID, req.ProducerEpoch = -1, -1
	kresp, err := conn.Request(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	resp := kresp.(*kmsg.InitProducerIDResponse)
	if resp.ErrorCode != 0 || resp.ProducerEpoch != 0 {
		t.Fatalf("InitProducerId at %s: %+v", addr, resp)
	}
	return resp
}

// Producer ids come from per-broker blocks in /latest_producer_id_block: two brokers never
// hand out the same id, and each new block advances the znode.
func TestIdempotence_DistinctProducerIDsAcrossBrokers(t *testing.T) {
	c := cluster.Start(t, cluster.Options{Brokers: 2})
	ids := c.IDs()
	seen := map[int64]int32{}
	var blocks []string
	for _, id := range ids {
		for i := 0; i < 3; i++ {
			resp := initProducerID(t, c.Broker(id).Addr)
			if other, dup := seen[resp.ProducerID]; dup {
				t.Fatalf("producer id %d handed out by broker %d and broker %d", resp.ProducerID, other, id)
			}
			seen[resp.ProducerID] = id
		}
		start, end, owner := producerIDBlock(t, c)
		if int32(owner) != id {
			t.Fatalf("/latest_producer_id_block owned by %v after broker %d allocated", owner, id)
		}
		blocks = append(blocks, start+"-"+end)
	}
	if len(blocks) != 2 || blocks[0] != "0-999" || blocks[1] != "1000-1999" {
		t.Fatalf("blocks %v, want [0-999 1000-1999]", blocks)
	}

	// A default (idempotent) kgo producer really gets a producer id now.
	const topic = "idempotent"
	c.CreateTopic(topic, 1, 2)
	cl := c.Client(kgo.DefaultProduceTopic(topic))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := 0; i < 3; i++ {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte{byte('a' + i)}}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	recs := readAll(t, c, topic, 1)[0]
	if len(recs) != 3 {
		t.Fatalf("read %d records, want 3", len(recs))
	}
	for _, r := range recs {
		if r.ProducerID < 0 {
			t.Fatalf("record at offset %d has producer id %d: kgo produced without InitProducerId", r.Offset, r.ProducerID)
		}
	}
}
