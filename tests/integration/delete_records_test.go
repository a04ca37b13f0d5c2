package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/isrbroker/isrbroker/tests/cluster"
)

// DeleteRecords end to end (docs/delete-records.md) on a 3-broker cluster, topic RF=3 led by
// broker 1 with small segments:
//   - DeleteRecords below the HW answers low_watermark = the offset, which requires every live
//     follower to have raised its own log start offset (the low watermark is their minimum);
//   - ListOffsets earliest is the new log start; a fetch below it gets OFFSET_OUT_OF_RANGE and a
//     default consumer asked to start there resets to the log start;
//   - every replica's log-start-offset-checkpoint holds the new start and its segments wholly
//     below it are deleted; both survive a kill -9 of every broker right after;
//   - an offset above the HW → OFFSET_OUT_OF_RANGE; a compact-only topic → POLICY_VIOLATION;
//   - `isrbroker delete-records` prints Kafka's output.
func TestDeleteRecords_EndToEnd(t *testing.T) {
	c := cluster.Start(t, cluster.Options{Brokers: 3, SessionTimeout: 4 * time.Second,
		Overrides: map[string]string{"log.retention.check.interval.ms": "500"}})
	const topic = "dr"
	c.CreateTopicWithAssignment(topic, map[int32][]int32{0: {1, 2, 3}}, map[string]string{"segment.bytes": "1024"})
	c.CreateTopicWithAssignment("drc", map[int32][]int32{0: {1, 2, 3}}, map[string]string{"cleanup.policy": "compact"})
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	cl := c.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for i := 0; i < 100; i++ { // one batch per record: many 1 KiB segments
		r := &kgo.Record{Topic: topic, Key: []byte("k" + strconv.Itoa(i)), Value: []byte(strings.Repeat("v", 100))}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatalf("produce %d: %v", i, err)
		}
		if i == 0 {
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "drc", Key: []byte("k"), Value: []byte("v")}).FirstErr(); err != nil {
				t.Fatalf("produce to drc: %v", err)
			}
		}
	}
	adm := c.Admin()

	del := func(topic string, offset int64) kadm.DeleteRecordsResponse {
		t.Helper()
		o := kadm.Offsets{}
		o.Add(kadm.Offset{Topic: topic, Partition: 0, At: offset, LeaderEpoch: -1})
		resps, err := adm.DeleteRecords(ctx, o)
		if err != nil {
			t.Fatalf("DeleteRecords(%s, %d): %v", topic, offset, err)
		}
		r, ok := resps.Lookup(topic, 0)
		if !ok {
			t.Fatalf("DeleteRecords(%s, %d): no answer for the partition", topic, offset)
		}
		return r
	}
	if r := del(topic, 40); r.Err != nil || r.LowWatermark != 40 {
		t.Fatalf("DeleteRecords(40): low watermark %d, err %v; want 40, nil", r.LowWatermark, r.Err)
	}
	if r := del(topic, 101); r.Err != kerr.OffsetOutOfRange {
		t.Errorf("DeleteRecords above the HW: err %v, want OFFSET_OUT_OF_RANGE", r.Err)
	}
	if r := del("drc", 0); r.Err != kerr.PolicyViolation {
		t.Errorf("DeleteRecords on a compact-only topic: err %v, want POLICY_VIOLATION", r.Err)
	}

	checkStart := func(when string) {
		t.Helper()
		cluster.WaitFor(t, 30*time.Second, func() (bool, string) {
			starts, err := adm.ListStartOffsets(ctx, topic)
			if err != nil {
				return false, err.Error()
			}
			s, ok := starts.Lookup(topic, 0)
			if !ok || s.Err != nil || s.Offset != 40 {
				return false, fmt.Sprintf("%s: ListOffsets earliest = %+v, want 40", when, s)
			}
			return true, ""
		})
		// A fetch below the log start is out of range on the leader (retried: after a restart
		// the client's connections are stale and the leader may still be moving).
		cluster.WaitFor(t, 30*time.Second, func() (bool, string) {
			leaders, err := cluster.MetadataLeaders(ctx, c.Broker(1).Addr, topic)
			if err != nil || leaders[0] < 0 {
				return false, fmt.Sprintf("%s: leader of %s-0: %v %v", when, topic, leaders, err)
			}
			req := kmsg.NewPtrFetchRequest()
			req.Version, req.ReplicaID, req.MaxWaitMillis, req.MaxBytes = 11, -1, 0, 1<<20
			rt := kmsg.NewFetchRequestTopic()
			rt.Topic = topic
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch, rp.LogStartOffset = 0, 10, 1<<20, -1, -1
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
			resp, err := req.RequestWith(ctx, cl.Broker(int(leaders[0])))
			if err != nil {
				return false, fmt.Sprintf("%s: fetch at 10: %v", when, err)
			}
			if code := resp.Topics[0].Partitions[0].ErrorCode; code != kerr.OffsetOutOfRange.Code {
				return false, fmt.Sprintf("%s: fetch at 10 below the log start: error %d, want OFFSET_OUT_OF_RANGE", when, code)
			}
			return true, ""
		})
		// Every replica: the checkpoint holds the new start, and the segments below it are gone.
		for _, id := range c.IDs() {
			dir := c.Broker(id).LogDir
			cluster.WaitFor(t, 30*time.Second, func() (bool, string) {
				start, err := checkpointEntry(filepath.Join(dir, "log-start-offset-checkpoint"), topic, 0)
				if err != nil || start != 40 {
					return false, fmt.Sprintf("%s: broker %d log-start-offset-checkpoint: %d %v, want 40", when, id, start, err)
				}
				first, err := firstSegmentBase(filepath.Join(dir, topic+"-0"))
				if err != nil || first == 0 || first > 40 {
					return false, fmt.Sprintf("%s: broker %d first segment base %d (%v): want the segment holding 40 first", when, id, first, err)
				}
				return true, ""
			})
		}
	}
	checkStart("after DeleteRecords")

	// A consumer asked to start below the log start gets OFFSET_OUT_OF_RANGE and resets to the
	// earliest offset (kgo's default reset).
	cons := c.Client(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().At(10)}}))
	fs := cons.PollFetches(ctx)
	if err := fs.Err(); err != nil {
		t.Fatalf("consume from 10: %v", err)
	}
	if recs := fs.Records(); len(recs) == 0 || recs[0].Offset != 40 {
		t.Errorf("consume from 10: first record %v, want offset 40 after the reset", recs)
	}
	cons.Close()

	// Unclean restart of every broker right after: the new log start stays.
	for _, id := range c.IDs() {
		c.Broker(id).Kill()
	}
	for _, id := range c.IDs() {
		c.Broker(id).Start()
	}
	c.WaitMetadataLeaders(topic, 1, 45*time.Second)
	checkStart("after kill -9 and restart of every broker")

	// The tool: Kafka's output, one line per partition.
	file := filepath.Join(t.TempDir(), "offsets.json")
	json := fmt.Sprintf(`{"partitions":[{"topic":%q,"partition":0,"offset":60},{"topic":%q,"partition":0,"offset":5000}],"version":1}`, topic, "drc")
	if err := os.WriteFile(file, []byte(json), 0o644); err != nil {
		t.Fatal(err)
	}
	out := adminOK(t, "delete-records", "--bootstrap-server", strings.Join(c.BootstrapAddrs(), ","), "--offset-json-file", file)
	want := "Executing records delete operation\nRecords delete operation completed:\n" +
		"partition: dr-0\tlow_watermark: 60\n" +
		"partition: drc-0\terror: POLICY_VIOLATION: "
	if !strings.HasPrefix(out, want) {
		t.Errorf("delete-records output:\n%s\nwant it to start with:\n%s", out, want)
	}
	dup := filepath.Join(t.TempDir(), "dup.json")
	if err := os.WriteFile(dup, []byte(`{"partitions":[{"topic":"dr","partition":0,"offset":1},{"topic":"dr","partition":0,"offset":2}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := admin(t, "delete-records", "--bootstrap-server", c.Broker(1).Addr, "--offset-json-file", dup); r.ExitCode == 0 ||
		!strings.Contains(r.Stderr, "Offset json file contains duplicate topic partitions: dr-0") {
		t.Errorf("duplicate partitions: exit %d stderr %q, want a failure naming dr-0", r.ExitCode, r.Stderr)
	}
}

// checkpointEntry reads one `topic partition offset` entry of an offset checkpoint file.
func checkpointEntry(path, topic string, partition int32) (int64, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return -1, err
	}
	prefix := fmt.Sprintf("%s %d ", topic, partition)
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, prefix) {
			return strconv.ParseInt(strings.TrimPrefix(line, prefix), 10, 64)
		}
	}
	return -1, fmt.Errorf("%s: no entry for %s-%d", path, topic, partition)
}

// firstSegmentBase returns the base offset of the first .log segment in a partition directory.
func firstSegmentBase(dir string) (int64, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return -1, err
	}
	first := int64(-1)
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".log") {
			continue
		}
		base, err := strconv.ParseInt(strings.TrimSuffix(name, ".log"), 10, 64)
		if err != nil {
			continue
		}
		if first < 0 || base < first {
			first = base
		}
	}
	if first < 0 {
		return -1, fmt.Errorf("%s: no segment", dir)
	}
	return first, nil
}
