package clients

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/segmentio/kafka-go"

	"github.com/isrbroker/isrbroker/tests/cluster"
)

func TestMain(m *testing.M) { cluster.Main(m) }

// consumed is one record as a client read it back.
type consumed struct {
	Partition int32
	Offset    int64
	Key       string
	Value     string
}

// checkRoundTrip checks that the records read back are exactly the n produced ones ("key-i" →
// "value-i"), each once, with offsets 0..k-1 per partition and the produce order kept within
// each partition.
func checkRoundTrip(t *testing.T, n int, got []consumed) {
	t.Helper()
	if len(got) != n {
		t.Errorf("consumed %d records, produced %d", len(got), n)
	}
	seen := map[int]bool{}
	next := map[int32]int64{}
	last := map[int32]int{}
	for _, g := range got {
		i, err := strconv.Atoi(strings.TrimPrefix(g.Key, "key-"))
		if err != nil || g.Value != fmt.Sprintf("value-%d", i) || seen[i] {
			t.Errorf("partition %d offset %d: key %q value %q (duplicate: %v)", g.Partition, g.Offset, g.Key, g.Value, seen[i])
			continue
		}
		seen[i] = true
		if g.Offset != next[g.Partition] {
			t.Errorf("partition %d: offset %d, want %d", g.Partition, g.Offset, next[g.Partition])
		}
		next[g.Partition] = g.Offset + 1
		if prev, ok := last[g.Partition]; ok && i < prev {
			t.Errorf("partition %d: key-%d after key-%d: produce order not kept", g.Partition, i, prev)
		}
		last[g.Partition] = i
	}
}

// waitEndOffsets waits until topic's end offsets add up to n and returns them.
func waitEndOffsets(t *testing.T, c *cluster.Cluster, topic string, n int64) map[int32]int64 {
	t.Helper()
	var ends map[int32]int64
	cluster.WaitFor(t, 30*time.Second, func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		var err error
		if ends, err = c.EndOffsets(ctx, topic); err != nil {
			return false, err.Error()
		}
		var sum int64
		for _, e := range ends {
			sum += e
		}
		return sum == n, fmt.Sprintf("end offsets %v add up to %d, want %d", ends, sum, n)
	})
	return ends
}

// IBM/sarama with its default configuration (Kafka 2.8 protocol versions) produces with a
// SyncProducer and reads every partition back with a partition consumer.
func TestSaramaDefaultConfig_ProduceAndConsume(t *testing.T) {
	c := cluster.Start(t, cluster.Options{Brokers: 3})
	const topic, partitions, n = "sarama", 3, 300
	c.CreateTopic(topic, partitions, 1)

	cfg := sarama.NewConfig()
	cfg.Producer.Return.Successes = true // a SyncProducer requires it
	prod, err := sarama.NewSyncProducer(c.BootstrapAddrs(), cfg)
	if err != nil {
		t.Fatalf("sarama producer: %v", err)
	}
	defer prod.Close()
	for i := 0; i < n; i++ {
		_, _, err := prod.SendMessage(&sarama.ProducerMessage{
			Topic: topic, Key: sarama.StringEncoder(fmt.Sprintf("key-%d", i)), Value: sarama.StringEncoder(fmt.Sprintf("value-%d", i)),
		})
		if err != nil {
			t.Fatalf("sarama send %d: %v", i, err)
		}
	}
	ends := waitEndOffsets(t, c, topic, n)

	cons, err := sarama.NewConsumer(c.BootstrapAddrs(), sarama.NewConfig())
	if err != nil {
		t.Fatalf("sarama consumer: %v", err)
	}
	defer cons.Close()
	var got []consumed
	deadline := time.NewTimer(60 * time.Second)
	defer deadline.Stop()
	for p := int32(0); p < partitions; p++ {
		if ends[p] == 0 {
			continue
		}
		pc, err := cons.ConsumePartition(topic, p, sarama.OffsetOldest)
		if err != nil {
			t.Fatalf("sarama consume %s-%d: %v", topic, p, err)
		}
		for read := int64(0); read < ends[p]; read++ {
			select {
			case m := <-pc.Messages():
				got = append(got, consumed{m.Partition, m.Offset, string(m.Key), string(m.Value)})
			case err := <-pc.Errors():
				t.Fatalf("sarama consume %s-%d: %v", topic, p, err)
			case <-deadline.C:
				t.Fatalf("sarama consume %s-%d: read %d of %d records before the deadline", topic, p, read, ends[p])
			}
		}
		pc.Close()
	}
	checkRoundTrip(t, n, got)
}

// segmentio/kafka-go with default settings: a Writer (its default is acks=0, round-robin
// balancing) and a partition Reader per partition.
func TestKafkaGoDefaults_WriterAndReader(t *testing.T) {
	c := cluster.Start(t, cluster.Options{Brokers: 3})
	const topic, partitions, n = "kafka-go", 3, 300
	c.CreateTopic(topic, partitions, 1)

	w := &kafka.Writer{Addr: kafka.TCP(c.BootstrapAddrs()...), Topic: topic}
	msgs := make([]kafka.Message, n)
	for i := range msgs {
		msgs[i] = kafka.Message{Key: []byte(fmt.Sprintf("key-%d", i)), Value: []byte(fmt.Sprintf("value-%d", i))}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := w.WriteMessages(ctx, msgs...); err != nil {
		t.Fatalf("kafka-go write: %v", err)
	}
	if err := w.Close(); err != nil {
		t.Fatalf("kafka-go writer close: %v", err)
	}
	ends := waitEndOffsets(t, c, topic, n)

	var got []consumed
	// A Reader prefetches in the background; Close waits for its parked fetch (up to MaxWait,
	// 10 s by default), so the readers are closed together at the end.
	var readers []*kafka.Reader
	defer func() {
		var wg sync.WaitGroup
		for _, r := range readers {
			wg.Add(1)
			go func() { defer wg.Done(); r.Close() }()
		}
		wg.Wait()
	}()
	for p := int32(0); p < partitions; p++ {
		if ends[p] == 0 {
			continue
		}
		r := kafka.NewReader(kafka.ReaderConfig{Brokers: c.BootstrapAddrs(), Topic: topic, Partition: int(p)})
		readers = append(readers, r)
		for read := int64(0); read < ends[p]; read++ {
			m, err := r.ReadMessage(ctx)
			if err != nil {
				t.Fatalf("kafka-go read %s-%d after %d of %d records: %v", topic, p, read, ends[p], err)
			}
			got = append(got, consumed{int32(m.Partition), m.Offset, string(m.Key), string(m.Value)})
		}
	}
	checkRoundTrip(t, n, got)
}

// sarama's AsyncProducer with RequiredAcks=NoResponse (acks=0: no Produce response at all) at
// the protocol versions of Kafka 2.1 (no ApiVersions), 2.8.2 (ApiVersions v3, Produce v9
// clamped to what the broker advertises) and 3.6: every record lands, none is refused, the
// connection is never closed under it (a closed connection is sarama's "run out of available
// brokers: EOF"). Issue 32 reported the 2.8.2 case failing at once; it does not at this commit.
func TestSaramaAcksZeroAcrossProtocolVersions(t *testing.T) {
	c := cluster.Start(t, cluster.Options{Brokers: 3})
	const perVersion = 200
	for _, v := range []sarama.KafkaVersion{sarama.V2_1_0_0, sarama.V2_8_2_0, sarama.V3_6_0_0} {
		topic := "sarama-acks0-" + strings.ReplaceAll(v.String(), ".", "-")
		c.CreateTopic(topic, 3, 3)
		cfg := sarama.NewConfig()
		cfg.Version = v
		cfg.Producer.RequiredAcks = sarama.NoResponse
		cfg.Producer.Return.Errors = true
		p, err := sarama.NewAsyncProducer(c.BootstrapAddrs(), cfg)
		if err != nil {
			t.Fatalf("sarama %v acks=0 producer: %v", v, err)
		}
		for i := 0; i < perVersion; i++ {
			p.Input() <- &sarama.ProducerMessage{Topic: topic, Value: sarama.StringEncoder(fmt.Sprintf("value-%d", i))}
		}
		p.AsyncClose() // flushes, then closes Errors
		var errs []error
		for e := range p.Errors() {
			errs = append(errs, e)
		}
		if len(errs) > 0 {
			t.Fatalf("sarama %v acks=0: %d errors, the first %v", v, len(errs), errs[0])
		}
		waitEndOffsets(t, c, topic, perVersion)
	}
}
