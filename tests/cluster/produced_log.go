package cluster

import (
	"context"
	"fmt"
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"
)

// ProducedLog is what a test produced to one topic: values[p][offset], the input of
// GroupJournal.Check. Safe for concurrent use.
type ProducedLog struct {
	mu     sync.Mutex
	values map[int32][]string
}

// NewProducedLog returns an empty log.
func NewProducedLog() *ProducedLog { return &ProducedLog{values: map[int32][]string{}} }

// Add records that value was acknowledged at partition/offset.
func (l *ProducedLog) Add(partition int32, offset int64, value string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	vs := l.values[partition]
	for int64(len(vs)) <= offset {
		vs = append(vs, "")
	}
	vs[offset] = value
	l.values[partition] = vs
}

// Gaps describes offsets below a partition's highest recorded one that hold no acknowledged
// record (empty when the offsets are dense, as they are when only this log's producers wrote).
func (l *ProducedLog) Gaps() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	for p, vs := range l.values {
		for o, v := range vs {
			if v == "" {
				return fmt.Sprintf("partition %d offset %d: no acknowledged record", p, o)
			}
		}
	}
	return ""
}

// Values returns a copy of the values per partition.
func (l *ProducedLog) Values() map[int32][]string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[int32][]string{}
	for p, vs := range l.values {
		out[p] = append([]string(nil), vs...)
	}
	return out
}

// Ends returns the end offset (record count) of partitions 0..partitions-1.
func (l *ProducedLog) Ends(partitions int32) map[int32]int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[int32]int64{}
	for p := int32(0); p < partitions; p++ {
		out[p] = int64(len(l.values[p]))
	}
	return out
}

// ProduceRoundRobin writes n records "<prefix>-<first+i>" round-robin over the partitions with
// acks=all on a client of its own, and adds each acknowledged one to log.
func (c *Cluster) ProduceRoundRobin(ctx context.Context, topic string, partitions int32, prefix string, first, n int, log *ProducedLog) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.BootstrapAddrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		return err
	}
	defer cl.Close()
	recs := make([]*kgo.Record, n)
	for i := range recs {
		seq := first + i
		recs[i] = &kgo.Record{Topic: topic, Partition: int32(seq) % partitions,
			Key: []byte(fmt.Sprintf("%s-k%d", prefix, seq)), Value: []byte(fmt.Sprintf("%s-%d", prefix, seq))}
	}
	res := cl.ProduceSync(ctx, recs...)
	for _, r := range res {
		if r.Err == nil {
			log.Add(r.Record.Partition, r.Record.Offset, string(r.Record.Value))
		}
	}
	return res.FirstErr()
}
