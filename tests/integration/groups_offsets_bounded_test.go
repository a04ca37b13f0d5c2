package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/isrbroker/isrbroker/tests/cluster"
)

// Issue 10: `__consumer_offsets` stays bounded under constant commits. The group coordinator
// creates the topic with cleanup.policy=compact and offsets.topic.segment.bytes, so every
// replica's log cleaner keeps only the latest commit per (group, topic, partition) key. A simple
// consumer group commits offsets for 8 partitions in rounds (every commit an acks=all append);
// after each round every replica is cleaned back down to a few segments, however much the rounds
// wrote before, so the partition does not grow with the number of commits. The latest committed
// offsets survive cleaning: they read back through OffsetFetch, also after the coordinator is
// killed and another broker loads the compacted partition.
//
// The bound is checked after each round rather than while committing: how far the cleaner lags
// behind a committer depends on the machine's load, how small it keeps the log does not.
func TestGroups_OffsetsTopicStaysBoundedUnderConstantCommits(t *testing.T) {
	const segmentBytes = 32 << 10
	c := cluster.Start(t, cluster.Options{Brokers: 3, Overrides: map[string]string{
		"offsets.topic.replication.factor": "3",
		"offsets.topic.num.partitions":     "1", // every commit lands in __consumer_offsets-0
		"offsets.topic.segment.bytes":      fmt.Sprint(segmentBytes),
		"log.cleaner.backoff.ms":           "100",
		"group.initial.rebalance.delay.ms": "0",
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	const group, topic, partitions, rounds, perRound = "bounded-group", "bounded-topic", 8, 3, 800
	c.CreateTopic(topic, partitions, 3)
	adm := c.Admin()

	// Each commit record's key alone (version, group, topic, partition) is 36 bytes, so a round
	// writes at least perRound*partitions*36 bytes (225 KiB) before batch and value overhead, and
	// the three rounds together about three times the bound below.
	const bound = 4 * segmentBytes
	if rounds*perRound*partitions*36 < 2*bound {
		t.Fatalf("test too small to show a bound of %d bytes", bound)
	}
	var commits int64
	for round := 1; round <= rounds; round++ {
		for i := 0; i < perRound; i++ {
			commits++
			offs := make(kadm.Offsets)
			for p := int32(0); p < partitions; p++ {
				offs.Add(kadm.Offset{Topic: topic, Partition: p, At: commits, LeaderEpoch: -1, Metadata: "bounded"})
			}
			resp, err := commitWithRetry(ctx, adm, group, offs)
			if err != nil {
				t.Fatalf("commit %d: %v", commits, err)
			}
			if err := resp.Error(); err != nil {
				t.Fatalf("commit %d: %v", commits, err)
			}
		}
		// Every replica is cleaned back down to a few segments.
		for _, id := range c.IDs() {
			dir := c.Broker(id).PartitionDir("__consumer_offsets", 0)
			cluster.WaitFor(t, 90*time.Second, func() (bool, string) {
				n, err := logBytes(dir)
				return err == nil && n <= bound, fmt.Sprintf("round %d: broker %d holds %d bytes in %s (%v), want at most %d (4 segments)", round, id, n, dir, err, bound)
			})
		}
	}
	// What was written: the offsets partition's log end offset counts one record per committed
	// partition (plus the group's own metadata records, none for a simple consumer group).
	leo, err := cluster.LogEndOffsetOnDisk(c.Broker(1).PartitionDir("__consumer_offsets", 0))
	if err != nil {
		t.Fatal(err)
	}
	if leo < commits*partitions {
		t.Fatalf("__consumer_offsets-0 log end offset %d, want at least %d records", leo, commits*partitions)
	}
	t.Logf("wrote %d commit records (>= %d KiB) in %d rounds; every replica back at <= %d bytes after each", leo, leo*36>>10, rounds, bound)

	checkCommitted := func(when string) {
		t.Helper()
		cluster.WaitFor(t, 60*time.Second, func() (bool, string) {
			fetched, err := adm.FetchOffsets(ctx, group)
			if err != nil {
				return false, err.Error()
			}
			for p := int32(0); p < partitions; p++ {
				o, ok := fetched.Lookup(topic, p)
				if !ok || o.Err != nil || o.At != commits || o.Metadata != "bounded" {
					return false, fmt.Sprintf("%s: partition %d committed %+v, want offset %d", when, p, o, commits)
				}
			}
			return true, ""
		})
	}
	checkCommitted("after cleaning")

	// The coordinator's successor loads the compacted partition and finds the same offsets.
	coord := offsetsLeader(t, ctx, adm)
	c.Broker(coord).Kill()
	cluster.WaitFor(t, 60*time.Second, func() (bool, string) {
		l := offsetsLeader(t, ctx, adm)
		return l != coord && l > 0, fmt.Sprintf("__consumer_offsets-0 leader %d (killed %d)", l, coord)
	})
	checkCommitted("after coordinator failover")
}

// commitWithRetry commits, retrying the coordinator errors a client retries (the first commit
// creates __consumer_offsets; a coordinator may be loading).
func commitWithRetry(ctx context.Context, adm *kadm.Client, group string, offs kadm.Offsets) (kadm.OffsetResponses, error) {
	for {
		resp, err := adm.CommitOffsets(ctx, group, offs)
		if err == nil {
			if rerr := resp.Error(); rerr == nil || !retriableCommit(rerr) {
				return resp, nil
			}
		} else if !retriableCommit(err) {
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func retriableCommit(err error) bool {
	s := err.Error()
	return strings.Contains(s, "COORDINATOR") || strings.Contains(s, "NOT_ENOUGH_REPLICAS") || strings.Contains(s, "REQUEST_TIMED_OUT")
}

// offsetsLeader is the leader of __consumer_offsets-0 in the cluster metadata (-1 while none).
func offsetsLeader(t *testing.T, ctx context.Context, adm *kadm.Client) int32 {
	t.Helper()
	md, err := adm.Metadata(ctx, "__consumer_offsets")
	if err != nil {
		return -1
	}
	td, ok := md.Topics["__consumer_offsets"]
	if !ok || td.Err != nil {
		return -1
	}
	p, ok := td.Partitions[0]
	if !ok || p.Err != nil {
		return -1
	}
	return p.Leader
}

// logBytes is the size of the .log segment files of a partition directory.
func logBytes(dir string) (int64, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0, err
	}
	var n int64
	for _, e := range entries {
		if filepath.Ext(e.Name()) != ".log" {
			continue
		}
		if info, err := e.Info(); err == nil {
			n += info.Size()
		}
	}
	return n, nil
}
