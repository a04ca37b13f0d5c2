package integration

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/isrbroker/isrbroker/tests/cluster"
	zkadmin "github.com/isrbroker/isrbroker/zkcoord/admin"
	"github.com/isrbroker/isrbroker/zkcoord/zkdata"
)

// Issue 12: every broker applies config changes live (docs/live-configs.md §1–2).
// Configs are written the way Kafka 2.4's `kafka-configs.sh --zookeeper` writes them: the
// config znode, then a /config/changes notification (zkcoord/admin AlterTopicConfig,
// AlterBrokerConfig). No broker restarts in these tests.

// zkAdmin connects the ZooKeeper admin client of the test cluster.
func zkAdmin(t *testing.T, c *cluster.Cluster) *zkadmin.Session {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	coord, err := zkadmin.Connect(ctx, c.ZK.Addr, 10*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { coord.Close() })
	return coord
}

func setTopicConfig(t *testing.T, coord *zkadmin.Session, topic string, kv ...string) {
	t.Helper()
	if err := coord.Admin.AlterTopicConfig(topic, func(m map[string]string) { setOrDeleteKeys(m, kv) }); err != nil {
		t.Fatalf("altering %s config %v: %v", topic, kv, err)
	}
}

func setBrokerConfig(t *testing.T, coord *zkadmin.Session, entity string, kv ...string) {
	t.Helper()
	if err := coord.Admin.AlterBrokerConfig(entity, func(m map[string]string) { setOrDeleteKeys(m, kv) }); err != nil {
		t.Fatalf("altering broker %s config %v: %v", entity, kv, err)
	}
}

// setOrDeleteKeys applies key, value pairs; an empty value deletes the key (kafka-configs.sh
// --delete-config).
func setOrDeleteKeys(m map[string]string, kv []string) {
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == "" {
			delete(m, kv[i])
		} else {
			m[kv[i]] = kv[i+1]
		}
	}
}

// TestLiveConfig_MinInsyncReplicas: with one follower of an RF=3 topic shut down (ISR [1 2]),
// raising min.insync.replicas to 3 in /config/topics makes the leader answer an acks=all
// produce with NOT_ENOUGH_REPLICAS within seconds, without a restart (K2); lowering it to 2
// lets produces succeed again; deleting the override falls back to the broker's value (1).
func TestLiveConfig_MinInsyncReplicas(t *testing.T) {
	c := cluster.Start(t, cluster.Options{Brokers: 3})
	const topic = "live-minisr"
	c.CreateTopicWithAssignment(topic, map[int32][]int32{0: {1, 2, 3}}, nil)
	coord := zkAdmin(t, c)

	if code := c.Broker(3).Terminate(); code != 0 {
		t.Fatalf("broker 3 exited with %d", code)
	}
	c.ZK.WaitPartitionState(topic, 0, 30*time.Second, func(st cluster.PartitionState) (bool, string) {
		return st.Leader == 1 && cluster.SameMembers(st.ISR, []int32{1, 2}), fmt.Sprintf("leader %d ISR %v, want 1 [1 2]", st.Leader, st.ISR)
	})
	produce := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err := c.Broker(1).ProduceOnce(ctx, topic, 0, -1, 5*time.Second, []byte("v"))
		return err
	}
	if err := produce(); err != nil {
		t.Fatalf("acks=all produce with ISR [1 2] and min.insync.replicas 1: %v", err)
	}
	expect := func(what string, want error) {
		t.Helper()
		start := time.Now()
		cluster.WaitFor(t, 15*time.Second, func() (bool, string) {
			err := produce()
			if want == nil {
				return err == nil, fmt.Sprintf("%s: produce error %v, want success", what, err)
			}
			return errors.Is(err, want), fmt.Sprintf("%s: produce error %v, want %v", what, err, want)
		})
		t.Logf("%s: took effect after %v", what, time.Since(start).Round(time.Millisecond))
	}
	setTopicConfig(t, coord, topic, "min.insync.replicas", "3")
	expect("min.insync.replicas=3", kerr.NotEnoughReplicas)
	setTopicConfig(t, coord, topic, "min.insync.replicas", "2")
	expect("min.insync.replicas=2", nil)
	setTopicConfig(t, coord, topic, "min.insync.replicas", "3")
	expect("min.insync.replicas=3 again", kerr.NotEnoughReplicas)
	setTopicConfig(t, coord, topic, "min.insync.replicas", "") // deleted: broker default 1
	expect("min.insync.replicas deleted", nil)
}

// segmentFiles lists the .log files of topic-p on broker id, oldest first, with their sizes.
func segmentFiles(t *testing.T, c *cluster.Cluster, id int32, topic string, p int32) (names []string, sizes []int64) {
	t.Helper()
	dir := filepath.Join(c.Broker(id).LogDir, fmt.Sprintf("%s-%d", topic, p))
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".log") {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			continue // deleted meanwhile
		}
		names = append(names, e.Name())
		sizes = append(sizes, fi.Size())
	}
	sort.Strings(names) // zero-padded base offsets
	return names, sizes
}

// produceN writes n acks=all batches of one ~size-byte record each to topic-0 on broker id.
func produceN(t *testing.T, c *cluster.Cluster, id int32, topic string, n, size int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	v := []byte(strings.Repeat("x", size))
	for i := 0; i < n; i++ {
		if _, err := c.Broker(id).ProduceOnce(ctx, topic, 0, -1, 5*time.Second, v); err != nil {
			t.Fatalf("produce %d to %s: %v", i, topic, err)
		}
	}
}

// TestLiveConfig_SegmentBytesAndRetention: segment.bytes changed in /config/topics is used by
// the next roll (the segments written afterwards are at most that size), and retention.ms
// lowered live deletes the old segments at the next retention check
// (log.retention.check.interval.ms=500) and moves the log start offset.
func TestLiveConfig_SegmentBytesAndRetention(t *testing.T) {
	c := cluster.Start(t, cluster.Options{Brokers: 1, Overrides: map[string]string{"log.retention.check.interval.ms": "500"}})
	const topic = "live-segments"
	c.CreateTopicWithAssignment(topic, map[int32][]int32{0: {1}}, nil)
	coord := zkAdmin(t, c)

	produceN(t, c, 1, topic, 20, 400)
	if names, _ := segmentFiles(t, c, 1, topic, 0); len(names) != 1 {
		t.Fatalf("segments before the change: %v, want 1 (segment.bytes 1 GiB)", names)
	}

	const segBytes = 2048
	setTopicConfig(t, coord, topic, "segment.bytes", fmt.Sprint(segBytes))
	// Produce until the log rolls: the first append after the change rolls the oversized
	// segment, later ones roll every ~segBytes.
	var names []string
	var sizes []int64
	cluster.WaitFor(t, 20*time.Second, func() (bool, string) {
		produceN(t, c, 1, topic, 5, 400)
		names, sizes = segmentFiles(t, c, 1, topic, 0)
		return len(names) >= 4, fmt.Sprintf("segments %v (sizes %v), want >= 4 after segment.bytes=%d", names, sizes, segBytes)
	})
	for i := 1; i < len(names)-1; i++ { // closed segments written after the change
		if sizes[i] > segBytes {
			t.Fatalf("segment %s is %d bytes, above segment.bytes=%d (sizes %v)", names[i], sizes[i], segBytes, sizes)
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	startOffset := func() int64 {
		so, err := c.Admin().ListStartOffsets(ctx, topic)
		if err != nil {
			t.Fatal(err)
		}
		o, _ := so.Lookup(topic, 0)
		if o.Err != nil {
			t.Fatal(o.Err)
		}
		return o.Offset
	}
	if so := startOffset(); so != 0 {
		t.Fatalf("log start offset %d before retention.ms changed, want 0", so)
	}
	end, err := c.EndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	// The records are less than a minute old: retention.ms=1000 makes every closed segment
	// deletable once its records are a second old.
	setTopicConfig(t, coord, topic, "retention.ms", "1000")
	cluster.WaitFor(t, 20*time.Second, func() (bool, string) {
		so := startOffset()
		names, _ := segmentFiles(t, c, 1, topic, 0)
		return so > 0 && len(names) <= 2, fmt.Sprintf("log start offset %d (end %d), segments %v: want old segments deleted", so, end[0], names)
	})
}

// TestLiveConfig_LogAppendTime: with message.timestamp.type=LogAppendTime set live on a topic,
// the produce response carries log_append_time, and consumers see every record with the
// LogAppendTime timestamp type and the broker's clock instead of the producer's (old)
// timestamp. message.timestamp.difference.max.ms rejects a CreateTime batch whose timestamp is
// too far off with INVALID_TIMESTAMP.
func TestLiveConfig_LogAppendTime(t *testing.T) {
	c := cluster.Start(t, cluster.Options{Brokers: 2})
	const topic = "live-timestamps"
	c.CreateTopicWithAssignment(topic, map[int32][]int32{0: {1, 2}}, nil)
	coord := zkAdmin(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	producerTs := time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC).UnixMilli()

	cl := c.Client(kgo.RequestRetries(0))
	produceRaw := func() (*kmsg.ProduceResponseTopicPartition, error) {
		req := kmsg.NewPtrProduceRequest()
		req.Acks = -1
		req.TimeoutMillis = 5000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = cluster.EncodeBatch(0, -1, producerTs, []byte("a"), []byte("b"))
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := cl.Broker(1).Request(ctx, req)
		if err != nil {
			return nil, err
		}
		r := resp.(*kmsg.ProduceResponse)
		return &r.Topics[0].Partitions[0], nil
	}

	// CreateTime (default): the producer's timestamp is kept and log_append_time is -1.
	r, err := produceRaw()
	if err != nil || r.ErrorCode != 0 || r.LogAppendTime != -1 {
		t.Fatalf("CreateTime produce: %+v %v, want success with log_append_time -1", r, err)
	}

	setTopicConfig(t, coord, topic, "message.timestamp.type", "LogAppendTime")
	before := time.Now().UnixMilli()
	var appendTime int64
	cluster.WaitFor(t, 15*time.Second, func() (bool, string) {
		r, err := produceRaw()
		if err != nil || r.ErrorCode != 0 {
			return false, fmt.Sprintf("produce: %v %v", err, r)
		}
		appendTime = r.LogAppendTime
		return appendTime != -1, "log_append_time still -1"
	})
	after := time.Now().UnixMilli()
	if appendTime < before-1000 || appendTime > after+1000 {
		t.Fatalf("log_append_time %d outside the broker's clock [%d, %d]", appendTime, before, after)
	}

	// Consume everything: the first batch keeps CreateTime and the producer's timestamp; the
	// LogAppendTime batch carries the broker's time on both records.
	cons := c.Client(kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	var got []*kgo.Record
	cluster.WaitFor(t, 20*time.Second, func() (bool, string) {
		pctx, pcancel := context.WithTimeout(ctx, 2*time.Second)
		defer pcancel()
		fs := cons.PollFetches(pctx)
		got = append(got, fs.Records()...)
		return len(got) >= 4, fmt.Sprintf("consumed %d records", len(got))
	})
	if got[0].Timestamp.UnixMilli() != producerTs || got[0].Attrs.TimestampType() != 0 {
		t.Fatalf("CreateTime record: timestamp %d type %d, want %d type 0", got[0].Timestamp.UnixMilli(), got[0].Attrs.TimestampType(), producerTs)
	}
	var stamped int
	for _, rec := range got[2:] {
		if rec.Attrs.TimestampType() == 1 {
			stamped++
			if ts := rec.Timestamp.UnixMilli(); ts < before-1000 || ts > after+1000 {
				t.Fatalf("LogAppendTime record at offset %d has timestamp %d, want the broker's clock [%d, %d]", rec.Offset, ts, before, after)
			}
		}
	}
	if stamped < 2 {
		t.Fatalf("%d records with timestamp type LogAppendTime after the change, want >= 2: %v", stamped, got)
	}

	// Back to CreateTime with a one-hour limit: a 2001 timestamp is INVALID_TIMESTAMP.
	setTopicConfig(t, coord, topic, "message.timestamp.type", "CreateTime", "message.timestamp.difference.max.ms", "3600000")
	cluster.WaitFor(t, 15*time.Second, func() (bool, string) {
		r, err := produceRaw()
		if err != nil {
			return false, err.Error()
		}
		return r.ErrorCode == kerr.InvalidTimestamp.Code, fmt.Sprintf("produce error code %d, want INVALID_TIMESTAMP", r.ErrorCode)
	})
}

// TestLiveConfig_DynamicBrokerConfigs (KIP-226): log.segment.bytes in /config/brokers/<default>
// applies to a topic without its own segment.bytes but not to one with it (topic override >
// cluster default); a per-broker value wins over the cluster default; num.replica.fetchers
// changed in /config/brokers/<default> resizes every broker's fetcher pool (FetcherThreadCount)
// while acks=all produces keep succeeding and no acknowledged record is lost.
func TestLiveConfig_DynamicBrokerConfigs(t *testing.T) {
	c := cluster.Start(t, cluster.Options{Brokers: 3})
	coord := zkAdmin(t, c)

	c.CreateTopicWithAssignment("live-plain", map[int32][]int32{0: {1}}, nil)
	c.CreateTopicWithAssignment("live-own", map[int32][]int32{0: {1}}, map[string]string{"segment.bytes": "1073741824"})
	setBrokerConfig(t, coord, zkdata.DefaultBrokerEntity, "log.segment.bytes", "2048")
	cluster.WaitFor(t, 20*time.Second, func() (bool, string) {
		produceN(t, c, 1, "live-plain", 5, 400)
		names, sizes := segmentFiles(t, c, 1, "live-plain", 0)
		return len(names) >= 3, fmt.Sprintf("live-plain segments %v (sizes %v), want >= 3 after log.segment.bytes=2048 in <default>", names, sizes)
	})
	produceN(t, c, 1, "live-own", 20, 400)
	if names, _ := segmentFiles(t, c, 1, "live-own", 0); len(names) != 1 {
		t.Fatalf("live-own (segment.bytes override) rolled by the cluster default: %v", names)
	}
	// Per-broker over cluster default: broker 1 back to 1 GiB stops the rolling.
	setBrokerConfig(t, coord, "1", "log.segment.bytes", "1073741824")
	cluster.WaitFor(t, 20*time.Second, func() (bool, string) {
		n0, _ := segmentFiles(t, c, 1, "live-plain", 0)
		produceN(t, c, 1, "live-plain", 10, 400)
		n1, _ := segmentFiles(t, c, 1, "live-plain", 0)
		return len(n1) == len(n0), fmt.Sprintf("live-plain still rolls (%d → %d segments) after broker 1's log.segment.bytes=1 GiB", len(n0), len(n1))
	})

	// num.replica.fetchers: 8 partitions led by broker 1 and followed by 2 and 3.
	const topic = "live-fetchers"
	const partitions = 8
	assignment := map[int32][]int32{}
	for p := int32(0); p < partitions; p++ {
		assignment[p] = []int32{1, 2, 3}
	}
	c.CreateTopicWithAssignment(topic, assignment, nil)
	threadsOf := func(id int32) float64 {
		_, threads, err := c.Broker(id).FetcherPartitionCounts()
		if err != nil {
			t.Fatal(err)
		}
		return threads
	}
	cluster.WaitFor(t, 20*time.Second, func() (bool, string) {
		return threadsOf(2) == 1, fmt.Sprintf("broker 2 FetcherThreadCount %v, want 1", threadsOf(2))
	})

	p := startAckProducer(t, c.Client(kgo.RecordPartitioner(kgo.ManualPartitioner())), topic, ackProducerOptions{partitions: partitions})
	p.waitProgress(t, 200, 30*time.Second, "before the resize")
	setBrokerConfig(t, coord, zkdata.DefaultBrokerEntity, "num.replica.fetchers", "3")
	cluster.WaitFor(t, 20*time.Second, func() (bool, string) {
		a, b := threadsOf(2), threadsOf(3)
		return a > 1 && a <= 3 && b > 1 && b <= 3, fmt.Sprintf("FetcherThreadCount broker 2 = %v, broker 3 = %v, want 2..3 after num.replica.fetchers=3", a, b)
	})
	p.waitProgress(t, 200, 30*time.Second, "after the resize")
	setBrokerConfig(t, coord, zkdata.DefaultBrokerEntity, "num.replica.fetchers", "") // back to server.properties: 1
	cluster.WaitFor(t, 20*time.Second, func() (bool, string) {
		return threadsOf(2) == 1 && threadsOf(3) == 1, fmt.Sprintf("FetcherThreadCount broker 2 = %v, broker 3 = %v, want 1", threadsOf(2), threadsOf(3))
	})
	p.waitProgress(t, 200, 30*time.Second, "after shrinking back")
	acked, all := p.stop(t)
	for _, f := range all {
		if !f.Stopping {
			t.Fatalf("acks=all produce seq %d failed across the resizes: %v", f.Seq, f.Err)
		}
	}
	// The log holds exactly the acknowledged records, and every follower's copy is the leader's,
	// byte for byte (no fetch state lost or replayed by the moves between fetchers).
	checkPartitionLogs(t, readAll(t, c, topic, partitions), acked)
	cluster.WaitFor(t, 30*time.Second, func() (bool, string) {
		for q := int32(0); q < partitions; q++ {
			var total [3]int64
			for i, id := range []int32{1, 2, 3} {
				_, sizes := segmentFiles(t, c, id, topic, q)
				for _, n := range sizes {
					total[i] += n
				}
			}
			if total[1] != total[0] || total[2] != total[0] {
				return false, fmt.Sprintf("%s-%d: log bytes on brokers 1,2,3 = %v, want equal", topic, q, total)
			}
		}
		return true, ""
	})
}
