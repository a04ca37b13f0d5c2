package integration

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/isrbroker/isrbroker/tests/cluster"
)

// Issue 28 item 1 ("Done when"): a compacted partition whose leader's cleaner has removed whole
// batches moves, by `isrbroker reassign-partitions`, from broker 1 to broker 2, which had no
// replica. Broker 2's first fetch at offset 0 is answered from the first kept batch, far above
// it; the new replica appends across every gap (docs/kafka-facts.md §4, "Compaction gaps"),
// joins the ISR, and the reassignment completes. Broker 2, the leader then, holds the latest
// value of every key. Before the fix the new replica refused the gap, truncated and fetched the
// same offset forever, and the reassignment never completed.
func TestReassignCleanedCompactedPartition(t *testing.T) {
	c := cluster.Start(t, cluster.Options{Brokers: 2, Overrides: map[string]string{
		"log.cleaner.backoff.ms":         "100",
		"log.cleaner.dedupe.buffer.size": "2097152",
	}, BrokerOverrides: map[int32]map[string]string{
		// one batch per fetch (KIP-74 still returns the first whole), so that broker 2 fetches
		// at the offset after every kept batch, in each gap, not only at offset 0
		2: {"replica.fetch.max.bytes": "1"},
	}})
	const topic = "cleaned"
	c.CreateTopicWithAssignment(topic, map[int32][]int32{0: {1}}, map[string]string{
		"cleanup.policy":            "compact",
		"segment.bytes":             "16384", // many segments, so the cleaner has most of the log to clean
		"min.cleanable.dirty.ratio": "0.01",
	})
	waitFullISR(t, c, topic, map[int32][]int32{0: {1}}, 30*time.Second)

	// 150 rounds over 100 keys. The 90 hot keys are written in two rounds of three each, so
	// their latest values come from the last rounds and the older batches are superseded
	// whole; each of the 10 cold keys is written once, in rounds 10, 25, …, 145, so the
	// cleaned log keeps a batch here and there: a gap before the first kept batch and gaps
	// between them.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cl := c.Client(kgo.DefaultProduceTopic(topic))
	latest := map[string]string{}
	const rounds, keys, hot = 150, 100, 90
	for r := 0; r < rounds; r++ {
		var recs []*kgo.Record
		for k := 0; k < keys; k++ {
			if k < hot && (k*7+r)%3 == 0 || k >= hot && r != (k-hot)*15+10 {
				continue
			}
			recs = append(recs, &kgo.Record{Key: []byte(fmt.Sprintf("k%03d", k)), Value: []byte(fmt.Sprintf("k%03d-r%03d", k, r))})
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatalf("round %d: %v", r, err)
		}
		for _, rec := range recs {
			latest[string(rec.Key)] = string(rec.Value)
		}
	}
	if len(latest) != keys {
		t.Fatalf("%d keys written, want %d", len(latest), keys)
	}
	end := endOffsets(t, c, topic, 1)[0]

	// The leader's cleaner has run: its cleaner checkpoint is set and its log has lost whole
	// batches, so the offsets in the gaps are no batch's.
	leaderDir := c.Broker(1).PartitionDir(topic, 0)
	var firstBase int64
	var gaps int
	cluster.WaitFor(t, 2*time.Minute, func() (bool, string) {
		cp, err := cleanerCheckpoint(c.Broker(1).LogDir, topic, 0)
		if err != nil || cp <= 0 {
			return false, fmt.Sprintf("cleaner checkpoint %d (%v)", cp, err)
		}
		bs, err := cluster.ReadPartitionBatches(leaderDir)
		if err != nil || len(bs) == 0 {
			return false, fmt.Sprintf("leader batches: %d (%v)", len(bs), err)
		}
		firstBase, gaps = bs[0].BaseOffset, 0
		for i := 1; i < len(bs); i++ {
			if bs[i].BaseOffset > bs[i-1].LastOffset()+1 {
				gaps++
			}
		}
		if firstBase == 0 || gaps < 3 {
			return false, fmt.Sprintf("cleaner checkpoint %d, %d gaps between kept batches (first at %d) of %d", cp, gaps, firstBase, len(bs))
		}
		return true, ""
	})
	t.Logf("leader 1: end offset %d, first kept batch at %d, %d gaps between kept batches", end, firstBase, gaps)

	plan := cluster.WriteReassignmentFile(t, topic, map[int32][]int32{0: {2}})
	if r := c.Reassign("--execute", "--reassignment-json-file", plan); r.ExitCode != 0 {
		t.Fatalf("execute: exit %d\n%s%s", r.ExitCode, r.Stdout, r.Stderr)
	}
	out := c.WaitReassignmentVerified(plan, reassignTimeout)
	if !strings.Contains(out, "Reassignment of partition cleaned-0 completed successfully") {
		t.Fatalf("verify output %q", out)
	}
	if c.ZK.Exists(cluster.ReassignmentPath) {
		t.Fatal("/admin/reassign_partitions still exists")
	}
	if a, err := c.ZK.TopicAssignment(topic); err != nil || !reflect.DeepEqual(a[0], []int32{2}) {
		t.Fatalf("assignment after reassignment: %v %v", a, err)
	}
	st := c.ZK.WaitPartitionState(topic, 0, 30*time.Second, func(st cluster.PartitionState) (bool, string) {
		return st.Leader == 2 && cluster.SameMembers(st.ISR, []int32{2}), "want leader 2, ISR [2]"
	})
	c.Broker(1).WaitPartitionDirGone(topic, 0, 30*time.Second)

	// The new replica, now the only one and the leader, holds every key's latest value, at the
	// leader's end offset.
	if leo, err := cluster.LogEndOffsetOnDisk(c.Broker(2).PartitionDir(topic, 0)); err != nil || leo != end {
		t.Fatalf("broker 2 LEO on disk %d (%v), want %d", leo, err, end)
	}
	got := map[string]string{}
	for _, r := range readAll(t, c, topic, 1)[0] {
		got[string(r.Key)] = string(r.Value)
	}
	for k, v := range latest {
		if got[k] != v {
			t.Errorf("key %s: consumed %q last from broker 2, want %q", k, got[k], v)
		}
	}
	if len(got) != len(latest) {
		t.Errorf("%d keys consumed, want %d", len(got), len(latest))
	}
	t.Logf("after the reassignment: %+v", st)
}
