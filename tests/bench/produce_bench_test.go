package bench

import (
	"context"
	"fmt"
	"math/rand"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/isrbroker/isrbroker/tests/cluster"
)

// partitions is the partition count of every benchmark topic (as in LinkedIn's 2014 test).
const partitions = 6

// recordSizes are the value sizes measured by each benchmark: 1 KB (the Confluent and kfake
// anchors) and 100 B (the LinkedIn anchor).
var recordSizes = []struct {
	name string
	size int
}{
	{"1KB", 1000},
	{"100B", 100},
}

// setup is one sub-benchmark's topic and warmed-up producer.
type setup struct {
	c     *cluster.Cluster
	topic string
	cl    *kgo.Client
	size  int
}

// payload is random (incompressible) bytes; record i's value is the size-byte slice at
// (i*size) mod len(payload), so neighbouring records in a batch never repeat each other.
var payload = func() []byte {
	buf := make([]byte, 8<<20)
	rand.New(rand.NewSource(1)).Read(buf)
	return buf
}()

func value(i, size int) []byte {
	off := (i * size) % (len(payload) - size)
	return payload[off : off+size]
}

// endOffsetSum is the sum of the topic's end offsets (records written, as consumers see them).
func (s *setup) endOffsetSum(b *testing.B) int64 {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ends, err := s.c.EndOffsets(ctx, s.topic)
	if err != nil {
		b.Fatalf("end offsets of %s: %v", s.topic, err)
	}
	var sum int64
	for _, o := range ends {
		sum += o
	}
	return sum
}

// startCluster starts three brokers and creates one topic per record size with rf replicas and
// the given topic configs, and one franz-go producer per topic (defaults plus opts), each warmed
// up by one acknowledged record so that metadata and connections are ready before timing.
// Compression is off (as in the LinkedIn anchor; franz-go's default snappy would otherwise
// spend the shared cores compressing in the load generator).
func startCluster(b *testing.B, rf int16, configs map[string]*string, opts ...kgo.Opt) map[string]*setup {
	b.Helper()
	c := cluster.Start(b, cluster.Options{Brokers: 3})
	out := map[string]*setup{}
	for _, rs := range recordSizes {
		topic := fmt.Sprintf("bench-rf%d-%s", rf, rs.name)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		resp, err := c.Admin().CreateTopic(ctx, partitions, rf, configs, topic)
		cancel()
		if err != nil || resp.Err != nil {
			b.Fatalf("create topic %s: %v %v", topic, err, resp.Err)
		}
		c.ZK.WaitTopicOnline(topic, 30*time.Second)
		c.WaitMetadataLeaders(topic, partitions, 30*time.Second)
		base := []kgo.Opt{kgo.DefaultProduceTopic(topic), kgo.ProducerBatchCompression(kgo.NoCompression())}
		cl := c.Client(append(base, opts...)...)
		ctx, cancel = context.WithTimeout(context.Background(), 30*time.Second)
		err = cl.ProduceSync(ctx, &kgo.Record{Value: []byte("warm-up")}).FirstErr()
		cancel()
		if err != nil {
			b.Fatalf("warm-up produce to %s: %v", topic, err)
		}
		out[rs.name] = &setup{c: c, topic: topic, cl: cl, size: rs.size}
	}
	return out
}

// runProduce produces b.N records (one loop iteration = one record, asynchronously, as a default
// producer does), waits for every acknowledgement and reports records/s and MB/s (values only).
// It checks afterwards that the topic's end offsets grew by b.N.
func runProduce(b *testing.B, s *setup) {
	before := s.endOffsetSum(b)
	var (
		mu       sync.Mutex
		firstErr error
		failed   int
	)
	promise := func(_ *kgo.Record, err error) {
		if err != nil {
			mu.Lock()
			failed++
			if firstErr == nil {
				firstErr = err
			}
			mu.Unlock()
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		s.cl.Produce(ctx, &kgo.Record{Value: value(i, s.size)}, promise)
	}
	if err := s.cl.Flush(ctx); err != nil {
		b.Fatalf("flush: %v", err)
	}
	elapsed := time.Since(start)
	b.StopTimer()
	if firstErr != nil {
		b.Fatalf("%d of %d records failed; first error: %v", failed, b.N, firstErr)
	}
	if after := s.endOffsetSum(b); after-before != int64(b.N) {
		b.Fatalf("end offsets of %s grew by %d, produced %d records", s.topic, after-before, b.N)
	}
	secs := elapsed.Seconds()
	b.ReportMetric(float64(b.N)/secs, "records/s")
	b.ReportMetric(float64(b.N)*float64(s.size)/1e6/secs, "MB/s")
}

// BenchmarkProduce_RF1_Acks1: 3 brokers, 6 partitions without replication, acks=1 (idempotence
// off, as it requires acks=all). LinkedIn's "no replication" row.
func BenchmarkProduce_RF1_Acks1(b *testing.B) {
	setups := startCluster(b, 1, nil, kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	for _, rs := range recordSizes {
		b.Run(rs.name, func(b *testing.B) { runProduce(b, setups[rs.name]) })
	}
}

// BenchmarkProduce_RF3_AcksAll_MinIsr2: 3 brokers, 6 partitions with RF=3 and
// min.insync.replicas=2, a default franz-go producer (acks=all, idempotent). LinkedIn's
// "3× synchronous replication" row; every acknowledgement waits for the HW to pass the record
// (S9), i.e. for both followers' next fetch.
func BenchmarkProduce_RF3_AcksAll_MinIsr2(b *testing.B) {
	minISR := "2"
	setups := startCluster(b, 3, map[string]*string{"min.insync.replicas": &minISR})
	for _, rs := range recordSizes {
		b.Run(rs.name, func(b *testing.B) { runProduce(b, setups[rs.name]) })
	}
}
