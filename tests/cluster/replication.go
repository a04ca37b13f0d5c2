package cluster

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Helpers for the replication tests: topic creation with topic configs, per-broker ListOffsets,
// the partition directories on disk read as Kafka's log format, and metric sums.

// CreateTopicWithConfigs is CreateTopic with topic configs (CreateTopics configs, e.g.
// min.insync.replicas, segment.bytes).
func (c *Cluster) CreateTopicWithConfigs(topic string, partitions int32, rf int16, configs map[string]string) map[int32][]int32 {
	c.t.Helper()
	cfg := make(map[string]*string, len(configs))
	for k, v := range configs {
		v := v
		cfg[k] = &v
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := c.Admin().CreateTopic(ctx, partitions, rf, cfg, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		c.t.Fatalf("cluster: create topic %s (%d partitions, RF %d, configs %v): %v", topic, partitions, rf, configs, err)
	}
	assignment := c.ZK.WaitTopicOnline(topic, 30*time.Second)
	if int32(len(assignment)) != partitions {
		c.t.Fatalf("cluster: topic %s has %d partitions in ZooKeeper, want %d", topic, len(assignment), partitions)
	}
	c.WaitMetadataLeaders(topic, partitions, 30*time.Second)
	return assignment
}

// SameMembers reports whether two broker id lists hold the same ids (order ignored).
func SameMembers(a, b []int32) bool {
	x := append([]int32(nil), a...)
	y := append([]int32(nil), b...)
	sort.Slice(x, func(i, j int) bool { return x[i] < x[j] })
	sort.Slice(y, func(i, j int) bool { return y[i] < y[j] })
	return reflect.DeepEqual(x, y)
}

// ListOffset sends one ListOffsets request for topic-p straight to the broker and returns the
// offset. timestamp is -2 (earliest: the log start offset) or -1 (latest); replicaID -1 asks
// as a consumer (latest = HW), a broker id asks as a replica (latest = LEO). A partition error is
// returned as the kerr error.
func (b *Broker) ListOffset(ctx context.Context, topic string, p int32, timestamp int64, replicaID int32) (int64, error) {
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = replicaID
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition = p
	rp.Timestamp = timestamp
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := brokerRequest[*kmsg.ListOffsetsResponse](ctx, req, kgo.SeedBrokers(b.Addr))
	if err != nil {
		return -1, err
	}
	for _, t := range resp.Topics {
		for _, rp := range t.Partitions {
			if t.Topic != topic || rp.Partition != p {
				continue
			}
			if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
				return -1, err
			}
			return rp.Offset, nil
		}
	}
	return -1, fmt.Errorf("broker %d: ListOffsets answer lacks %s-%d", b.ID, topic, p)
}

// MetricSum fetches the broker's metrics and sums every sample of name; an absent metric is an
// error.
func (b *Broker) MetricSum(name string) (float64, error) {
	text, err := b.Metrics()
	if err != nil {
		return 0, err
	}
	vs := MetricSamples(text, name)
	if len(vs) == 0 {
		return 0, fmt.Errorf("broker %d exposes no %s", b.ID, name)
	}
	sum := 0.0
	for _, v := range vs {
		sum += v
	}
	return sum, nil
}

// SegmentBaseOffsets lists the base offsets of the .log segments in a partition directory, in
// order (segment names are 20-digit zero-padded base offsets).
func SegmentBaseOffsets(partDir string) ([]int64, error) {
	entries, err := os.ReadDir(partDir)
	if err != nil {
		return nil, err
	}
	var bases []int64
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".log") {
			continue
		}
		base, err := strconv.ParseInt(strings.TrimSuffix(name, ".log"), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%s: segment name %q is not a base offset", partDir, name)
		}
		bases = append(bases, base)
	}
	sort.Slice(bases, func(i, j int) bool { return bases[i] < bases[j] })
	return bases, nil
}

// SegmentBatch is the header of one v2 record batch as stored in a segment file.
type SegmentBatch struct {
	Segment              int64 // base offset of the segment file holding it
	Position             int64 // byte position in that file
	BaseOffset           int64
	Length               int32 // batchLength: bytes after the length field
	PartitionLeaderEpoch int32
	Magic                int8
	CRC                  uint32
	LastOffsetDelta      int32
}

// LastOffset is the offset of the batch's last record.
func (b SegmentBatch) LastOffset() int64 { return b.BaseOffset + int64(b.LastOffsetDelta) }

// Same reports whether two replicas' copies of a batch are identical in everything the
// replication checker compares (offset, leader epoch, CRC, length).
func (b SegmentBatch) Same(o SegmentBatch) bool {
	return b.BaseOffset == o.BaseOffset && b.PartitionLeaderEpoch == o.PartitionLeaderEpoch &&
		b.CRC == o.CRC && b.Length == o.Length && b.LastOffsetDelta == o.LastOffsetDelta
}

func (b SegmentBatch) String() string {
	return fmt.Sprintf("{offsets %d..%d epoch %d crc %08x len %d @%d:%d}",
		b.BaseOffset, b.LastOffset(), b.PartitionLeaderEpoch, b.CRC, b.Length, b.Segment, b.Position)
}

// v2HeaderSize is the fixed part of a v2 record batch: baseOffset(8) batchLength(4)
// partitionLeaderEpoch(4) magic(1) crc(4) attributes(2) lastOffsetDelta(4) baseTimestamp(8)
// maxTimestamp(8) producerId(8) producerEpoch(2) baseSequence(4) recordCount(4).
const v2HeaderSize = 61

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ReadPartitionBatches parses every .log segment of a partition directory as Kafka's v2 log
// format, independently of the broker's own parser, and returns the batch headers in offset
// order. Each batch's CRC-32C (over attributes..end) is checked. An incomplete batch at the end
// of the last segment (a write in flight) ends the listing; anything else malformed is an error.
func ReadPartitionBatches(partDir string) ([]SegmentBatch, error) {
	bases, err := SegmentBaseOffsets(partDir)
	if err != nil {
		return nil, err
	}
	var out []SegmentBatch
	for i, base := range bases {
		name := filepath.Join(partDir, fmt.Sprintf("%020d.log", base))
		data, err := os.ReadFile(name)
		if err != nil {
			return out, err
		}
		last := i == len(bases)-1
		pos := 0
		for pos < len(data) {
			rest := data[pos:]
			if len(rest) < 12 {
				if last {
					break
				}
				return out, fmt.Errorf("%s: %d stray bytes at %d", name, len(rest), pos)
			}
			length := int32(binary.BigEndian.Uint32(rest[8:]))
			if length < v2HeaderSize-12 {
				return out, fmt.Errorf("%s: batch at %d has length %d", name, pos, length)
			}
			size := 12 + int(length)
			if len(rest) < size {
				if last {
					break
				}
				return out, fmt.Errorf("%s: batch at %d needs %d bytes, %d left", name, pos, size, len(rest))
			}
			b := SegmentBatch{
				Segment:              base,
				Position:             int64(pos),
				BaseOffset:           int64(binary.BigEndian.Uint64(rest)),
				Length:               length,
				PartitionLeaderEpoch: int32(binary.BigEndian.Uint32(rest[12:])),
				Magic:                int8(rest[16]),
				CRC:                  binary.BigEndian.Uint32(rest[17:]),
				LastOffsetDelta:      int32(binary.BigEndian.Uint32(rest[23:])),
			}
			if b.Magic != 2 {
				return out, fmt.Errorf("%s: batch at %d has magic %d", name, pos, b.Magic)
			}
			if got := crc32.Checksum(rest[21:size], castagnoli); got != b.CRC {
				return out, fmt.Errorf("%s: batch at %d (offset %d): CRC %08x, computed %08x", name, pos, b.BaseOffset, b.CRC, got)
			}
			if n := len(out); n > 0 && b.BaseOffset <= out[n-1].LastOffset() {
				return out, fmt.Errorf("%s: batch at %d starts at offset %d, not after %d", name, pos, b.BaseOffset, out[n-1].LastOffset())
			}
			out = append(out, b)
			pos += size
		}
	}
	return out, nil
}

// LogEndOffsetOnDisk is the offset after the last complete batch of a partition directory
// (0 when it holds none; then the first segment's base offset when there is one).
func LogEndOffsetOnDisk(partDir string) (int64, error) {
	bs, err := ReadPartitionBatches(partDir)
	if err != nil {
		return -1, err
	}
	if len(bs) > 0 {
		return bs[len(bs)-1].LastOffset() + 1, nil
	}
	bases, err := SegmentBaseOffsets(partDir)
	if err != nil {
		return -1, err
	}
	if len(bases) > 0 {
		return bases[len(bases)-1], nil
	}
	return 0, nil
}

// CompareReplicas is checker R: the replicas must report the same log start offset (what
// ListOffsets earliest answers on each of them: a follower takes the leader's, KIP-107, so a
// replica that kept or lost older data than its peers is a divergence even when the batches
// they share agree), and from that offset they must hold the same batches (offset, leader epoch,
// CRC, length) for every batch wholly below hw. Batches a replica still holds below the log
// start offset (retention deletes whole segments on each replica on its own) are not compared.
// It returns a description of the first difference, or "" when they match.
func CompareReplicas(hw int64, logStarts map[int32]int64, logs map[int32][]SegmentBatch) string {
	ids := make([]int32, 0, len(logs))
	for id := range logs {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	if len(ids) == 0 {
		return ""
	}
	from, ok := logStarts[ids[0]]
	if !ok {
		return fmt.Sprintf("broker %d: no log start offset", ids[0])
	}
	for _, id := range ids[1:] {
		ls, ok := logStarts[id]
		switch {
		case !ok:
			return fmt.Sprintf("broker %d: no log start offset", id)
		case ls != from:
			return fmt.Sprintf("log start offsets differ: broker %d starts at %d, broker %d at %d", ids[0], from, id, ls)
		}
	}
	for _, id := range ids {
		if bs := logs[id]; hw > from && (len(bs) == 0 || bs[0].BaseOffset > from) {
			first := int64(-1)
			if len(bs) > 0 {
				first = bs[0].BaseOffset
			}
			return fmt.Sprintf("broker %d reports log start offset %d but its first batch on disk is at %d", id, from, first)
		}
	}
	below := func(bs []SegmentBatch) []SegmentBatch {
		var out []SegmentBatch
		for _, b := range bs {
			// The batch holding the log start offset is kept (DeleteRecords may move the
			// log start into a batch); the ones wholly below it are not compared.
			if b.LastOffset() >= from && b.LastOffset() < hw {
				out = append(out, b)
			}
		}
		return out
	}
	ref := below(logs[ids[0]])
	if n := len(ref); hw > from && (n == 0 || ref[0].BaseOffset > from || ref[n-1].LastOffset() != hw-1) {
		return fmt.Sprintf("broker %d's batches below HW %d do not cover [%d, %d): %d batches", ids[0], hw, from, hw, n)
	}
	for _, id := range ids[1:] {
		got := below(logs[id])
		for i := 0; i < len(ref) || i < len(got); i++ {
			switch {
			case i >= len(got):
				return fmt.Sprintf("broker %d lacks batch %v that broker %d has (it holds %d batches below HW %d)", id, ref[i], ids[0], len(got), hw)
			case i >= len(ref):
				return fmt.Sprintf("broker %d has extra batch %v that broker %d lacks", id, got[i], ids[0])
			case !ref[i].Same(got[i]):
				return fmt.Sprintf("batch %d below HW %d differs: broker %d %v, broker %d %v", i, hw, ids[0], ref[i], id, got[i])
			}
		}
	}
	return ""
}

// AgreedLogStarts is LogStartOffsets with the condition the replica comparison waits for: why
// is "" once every replica of ids reports the same log start offset (a follower takes the
// leader's with its next fetch; CompareReplicas reports a lasting split).
func (c *Cluster) AgreedLogStarts(topic string, p int32, ids []int32) (starts map[int32]int64, why string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ls, err := c.LogStartOffsets(ctx, topic, p, ids)
	if err != nil {
		return nil, err.Error()
	}
	for _, id := range ids[1:] {
		if ls[id] != ls[ids[0]] {
			return ls, fmt.Sprintf("%s-%d: log start offsets %v", topic, p, ls)
		}
	}
	return ls, ""
}

// LogStartOffsets asks every broker of ids for its own replica's log start offset of topic-p
// (ListOffsets earliest as Kafka's debugging consumer, replica id -2, which any replica
// answers, not only the leader).
func (c *Cluster) LogStartOffsets(ctx context.Context, topic string, p int32, ids []int32) (map[int32]int64, error) {
	out := make(map[int32]int64, len(ids))
	for _, id := range ids {
		off, err := c.Broker(id).ListOffset(ctx, topic, p, -2, -2)
		if err != nil {
			return nil, fmt.Errorf("broker %d log start offset of %s-%d: %w", id, topic, p, err)
		}
		out[id] = off
	}
	return out, nil
}

// ProduceOnce sends one ProduceRequest (acks, timeout) with a single uncompressed, non-idempotent
// v2 batch of values to topic-p straight to the broker, without retries, and returns the base
// offset or the partition's protocol error (a kerr error).
func (b *Broker) ProduceOnce(ctx context.Context, topic string, p int32, acks int16, timeout time.Duration, values ...[]byte) (int64, error) {
	raw := EncodeBatch(0, -1, time.Now().UnixMilli(), values...)

	// kgo writes its own acks setting into every produce request it sends, so the client is
	// configured with the acks asked for.
	opts := []kgo.Opt{kgo.SeedBrokers(b.Addr), kgo.RequestRetries(0)}
	switch acks {
	case -1:
	case 1:
		opts = append(opts, kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	default:
		return -1, fmt.Errorf("ProduceOnce: acks %d not supported (use -1 or 1)", acks)
	}
	req := kmsg.NewPtrProduceRequest()
	req.Acks = acks
	req.TimeoutMillis = int32(timeout.Milliseconds())
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition = p
	rp.Records = raw
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := brokerRequest[*kmsg.ProduceResponse](ctx, req, opts...)
	if err != nil {
		return -1, err
	}
	for _, t := range resp.Topics {
		for _, rp := range t.Partitions {
			if t.Topic != topic || rp.Partition != p {
				continue
			}
			if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
				return -1, err
			}
			return rp.BaseOffset, nil
		}
	}
	return -1, fmt.Errorf("broker %d: Produce answer lacks %s-%d", b.ID, topic, p)
}

// EncodeBatch builds one uncompressed, non-idempotent v2 record batch of values from kmsg's
// Record and RecordBatch; only the length fields and the CRC-32C are filled in here.
func EncodeBatch(baseOffset int64, leaderEpoch int32, timestampMs int64, values ...[]byte) []byte {
	var records []byte
	for i, v := range values {
		r := kmsg.Record{OffsetDelta: int32(i), Value: v}
		body := r.AppendTo(nil) // Length 0 encodes as one varint byte
		r.Length = int32(len(body) - 1)
		records = r.AppendTo(records)
	}
	batch := kmsg.RecordBatch{
		FirstOffset: baseOffset, PartitionLeaderEpoch: leaderEpoch, Magic: 2,
		LastOffsetDelta: int32(len(values) - 1), FirstTimestamp: timestampMs, MaxTimestamp: timestampMs,
		ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1,
		NumRecords: int32(len(values)), Records: records,
	}
	batch.Length = int32(49 + len(records))
	raw := batch.AppendTo(nil)
	binary.BigEndian.PutUint32(raw[17:], crc32.Checksum(raw[21:], castagnoli))
	return raw
}
