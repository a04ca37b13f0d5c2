package faults

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/isrbroker/isrbroker/tests/cluster"
)

// The independent checker (docs/reliability.md, "The fault matrix"): it judges the broker only by the producers'
// acknowledgements, what consumers read, the segment files parsed by tests/cluster and the
// znodes read with its own ZooKeeper client.

// readableWithin is checker U's bound: after healing, everything must be readable within this.
const readableWithin = 60 * time.Second

// analysis is the outcome of checkers L, D and O over one producer's acknowledgements.
type analysis struct {
	Acked      int
	Lost       int      // L: acknowledged values absent from the final read
	Duplicates int      // D: extra copies of the producer's values in the final read
	Conflicts  int      // O: offsets with two values (acknowledged, read during the run, final)
	Examples   []string // the first few findings, for the test log
}

func (a *analysis) note(format string, args ...any) {
	if len(a.Examples) < 12 {
		a.Examples = append(a.Examples, fmt.Sprintf(format, args...))
	}
}

type offsetKey struct {
	p   int32
	off int64
}

// analyse checks one producer's acknowledgements (values starting with prefix+"-") against the
// final read, and everything read during the run against it too:
//   - L: an acknowledged value that the final read does not hold is lost;
//   - D: a value of the producer the final read holds n > 1 times counts n-1 duplicates;
//   - O: an acknowledged (partition, offset) holding another value in the final read, a record
//     read during the run whose offset holds another value (or nothing) in the final read, and
//     an offset the final read returned twice with different values, each count once per offset.
//
// With checkOffsets false (acks=1 producers, whose acknowledged offsets may legitimately be
// truncated) only L and D are counted.
func analyse(prefix string, acks []ack, final []readRec, during []readRec, checkOffsets bool) analysis {
	res := analysis{Acked: len(acks)}
	finalAt := map[offsetKey]string{}
	finalEnd := map[int32]int64{}
	count := map[string]int{}
	conflict := map[offsetKey]bool{}
	for _, r := range final {
		k := offsetKey{r.Partition, r.Offset}
		if v, ok := finalAt[k]; ok && v != r.Value && !conflict[k] {
			conflict[k] = true
			res.note("O: final read returned partition %d offset %d twice: %q and %q", r.Partition, r.Offset, v, r.Value)
		}
		finalAt[k] = r.Value
		if r.Offset+1 > finalEnd[r.Partition] {
			finalEnd[r.Partition] = r.Offset + 1
		}
		if strings.HasPrefix(r.Value, prefix+"-") {
			count[r.Value]++
		}
	}
	for v, n := range count {
		if n > 1 {
			res.Duplicates += n - 1
			res.note("D: %q read %d times", v, n)
		}
	}
	for _, a := range acks {
		if count[a.Value] == 0 {
			res.Lost++
			res.note("L: %q acknowledged at partition %d offset %d (at %s) is gone", a.Value, a.Partition, a.Offset, a.At.Format("15:04:05.000"))
			continue
		}
		if !checkOffsets {
			continue
		}
		k := offsetKey{a.Partition, a.Offset}
		if v := finalAt[k]; v != a.Value && !conflict[k] {
			conflict[k] = true
			res.note("O: %q acknowledged at partition %d offset %d; the final read has %q there", a.Value, a.Partition, a.Offset, v)
		}
	}
	if checkOffsets {
		for _, r := range during {
			k := offsetKey{r.Partition, r.Offset}
			if v, ok := finalAt[k]; (!ok || v != r.Value) && !conflict[k] {
				conflict[k] = true
				res.note("O: %q read during the run at partition %d offset %d; the final read has %q (present %v, read up to %d)",
					r.Value, r.Partition, r.Offset, v, ok, finalEnd[r.Partition])
			}
		}
	}
	res.Conflicts = len(conflict)
	return res
}

// longestGap is the longest time between two consecutive acknowledgements on one partition:
// the longest unavailability the producer saw.
func longestGap(acks []ack) time.Duration {
	byPart := map[int32][]time.Time{}
	for _, a := range acks {
		byPart[a.Partition] = append(byPart[a.Partition], a.At)
	}
	var longest time.Duration
	for _, ts := range byPart {
		sort.Slice(ts, func(i, j int) bool { return ts[i].Before(ts[j]) })
		for i := 1; i < len(ts); i++ {
			if d := ts[i].Sub(ts[i-1]); d > longest {
				longest = d
			}
		}
	}
	return longest
}

// readAll consumes every partition of topic from the start with a fresh assign-mode client
// until each reaches the end offset (HW) listed first, all before deadline.
func readAll(c *cluster.Cluster, topic string, partitions int32, deadline time.Time) ([]readRec, error) {
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	var ends map[int32]int64
	var lastErr error
	for {
		lctx, lcancel := context.WithTimeout(ctx, 5*time.Second)
		e, err := c.EndOffsets(lctx, topic)
		lcancel()
		if err == nil && int32(len(e)) == partitions {
			ends = e
			break
		}
		lastErr = fmt.Errorf("list end offsets: %v (%d partitions)", err, len(e))
		select {
		case <-ctx.Done():
			return nil, lastErr
		case <-time.After(200 * time.Millisecond): // retry back-off while leaders move
		}
	}
	parts := map[int32]kgo.Offset{}
	for p := int32(0); p < partitions; p++ {
		parts[p] = kgo.NewOffset().AtStart()
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.BootstrapAddrs()...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: parts}),
		kgo.FetchMaxWait(200*time.Millisecond), kgo.MetadataMinAge(250*time.Millisecond))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	var out []readRec
	next := map[int32]int64{}
	done := func() (bool, string) {
		for p, end := range ends {
			if next[p] < end {
				return false, fmt.Sprintf("partition %d read up to %d of %d", p, next[p], end)
			}
		}
		return true, ""
	}
	for {
		if ok, _ := done(); ok {
			return out, nil
		}
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			_, msg := done()
			return out, fmt.Errorf("reading %s: %s", topic, msg)
		}
		fs.EachRecord(func(r *kgo.Record) {
			out = append(out, readRec{r.Partition, r.Offset, string(r.Value)})
			if r.Offset+1 > next[r.Partition] {
				next[r.Partition] = r.Offset + 1
			}
		})
	}
}

// checkReplicas is checker R: it waits until every partition's leader has HW = LEO and every
// replica's log on disk ends at that LEO (the writes have stopped and replication caught up),
// then compares the replicas' batches below the HW (offset, leader epoch, CRC, length). It
// returns the number of partitions whose replicas differ; not converging fails the test.
func checkReplicas(t *testing.T, c *cluster.Cluster, topic string, assignment map[int32][]int32, timeout time.Duration) int {
	t.Helper()
	differ := 0
	parts := make([]int32, 0, len(assignment))
	for p := range assignment {
		parts = append(parts, p)
	}
	sort.Slice(parts, func(i, j int) bool { return parts[i] < parts[j] })
	for _, p := range parts {
		replicas := assignment[p]
		var logs map[int32][]cluster.SegmentBatch
		var starts map[int32]int64
		var hw int64
		ok, msg := cluster.Poll(timeout, func() (bool, string) {
			st, err := c.ZK.PartitionState(topic, p)
			if err != nil {
				return false, err.Error()
			}
			if st.Leader < 0 {
				return false, fmt.Sprintf("partition %d has no leader", p)
			}
			asReplica := replicas[0]
			if asReplica == st.Leader {
				asReplica = replicas[len(replicas)-1]
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			leo, err := c.Broker(st.Leader).ListOffset(ctx, topic, p, -1, asReplica)
			if err != nil {
				return false, fmt.Sprintf("leader %d LEO: %v", st.Leader, err)
			}
			h, err := c.Broker(st.Leader).ListOffset(ctx, topic, p, -1, -1)
			if err != nil {
				return false, fmt.Sprintf("leader %d HW: %v", st.Leader, err)
			}
			if h != leo {
				return false, fmt.Sprintf("partition %d: leader %d HW %d, LEO %d", p, st.Leader, h, leo)
			}
			logs = map[int32][]cluster.SegmentBatch{}
			for _, id := range replicas {
				bs, err := cluster.ReadPartitionBatches(c.Broker(id).PartitionDir(topic, p))
				if err != nil {
					return false, fmt.Sprintf("broker %d: %v", id, err)
				}
				end := int64(0)
				if len(bs) > 0 {
					end = bs[len(bs)-1].LastOffset() + 1
				}
				if end != leo {
					return false, fmt.Sprintf("partition %d: broker %d's log ends at %d on disk, leader %d's LEO is %d", p, id, end, st.Leader, leo)
				}
				logs[id] = bs
			}
			var why string
			if starts, why = c.AgreedLogStarts(topic, p, replicas); why != "" {
				return false, why
			}
			hw = h
			return true, ""
		})
		if !ok {
			t.Errorf("R: %s-%d replicas did not converge within %v: %s", topic, p, timeout, msg)
			continue
		}
		if diff := cluster.CompareReplicas(hw, starts, logs); diff != "" {
			t.Errorf("R: %s-%d replicas differ below HW %d: %s", topic, p, hw, diff)
			differ++
			continue
		}
		t.Logf("R: %s-%d: %d batches below HW %d identical on brokers %v", topic, p, len(logs[replicas[0]]), hw, replicas)
	}
	return differ
}

// result is one scenario's outcome, printed as one line.
type result struct {
	Scenario    string
	Acked       int
	Lost        int
	Duplicates  int
	Divergent   int
	NewLeader   time.Duration // < 0: no leader moved
	Unavailable time.Duration
	Extra       []string // further key=value fields
}

// Line is the fixed one-line report scripts/faults.sh collects.
func (r result) Line() string {
	nl := "-"
	if r.NewLeader >= 0 {
		nl = fmtDur(r.NewLeader)
	}
	line := fmt.Sprintf("scenario=%s acked=%d lost=%d duplicates=%d divergent=%d new_leader=%s unavailable=%s",
		r.Scenario, r.Acked, r.Lost, r.Duplicates, r.Divergent, nl, fmtDur(r.Unavailable))
	if len(r.Extra) > 0 {
		line += " " + strings.Join(r.Extra, " ")
	}
	return line
}

func fmtDur(d time.Duration) string {
	if d < 0 {
		return "-"
	}
	if d < time.Second {
		return d.Round(time.Millisecond).String()
	}
	return d.Round(10 * time.Millisecond).String()
}

// sequenceViolations is checker S for one idempotent producer: its values carry a rising
// sequence number ("<prefix>-<seq>", sent in that order to each partition), and Kafka's
// idempotent producer keeps a partition's batches in the order they were sent (sequence
// numbers, KIP-98), so within every partition of the final read the producer's sequence
// numbers must rise with the offsets. A retry appended behind a later batch, or a batch
// copied twice around another, breaks it even when nothing is lost or duplicated.
func sequenceViolations(prefix string, final []readRec) []string {
	type rec struct {
		off int64
		seq int
	}
	byPart := map[int32][]rec{}
	for _, r := range final {
		if !strings.HasPrefix(r.Value, prefix+"-") {
			continue
		}
		seq, err := strconv.Atoi(strings.TrimPrefix(r.Value, prefix+"-"))
		if err != nil {
			continue
		}
		byPart[r.Partition] = append(byPart[r.Partition], rec{r.Offset, seq})
	}
	var bad []string
	parts := make([]int32, 0, len(byPart))
	for p := range byPart {
		parts = append(parts, p)
	}
	sort.Slice(parts, func(i, j int) bool { return parts[i] < parts[j] })
	for _, p := range parts {
		rs := byPart[p]
		sort.Slice(rs, func(i, j int) bool { return rs[i].off < rs[j].off })
		for i := 1; i < len(rs); i++ {
			if rs[i].seq <= rs[i-1].seq {
				bad = append(bad, fmt.Sprintf("S: partition %d: sequence %d at offset %d after sequence %d at offset %d",
					p, rs[i].seq, rs[i].off, rs[i-1].seq, rs[i-1].off))
			}
		}
	}
	return bad
}

// refusedPresent is checker X: a write the broker refused (an error answer for its
// partition, never a retry) must not appear in the final read. It returns one finding per
// refused value found, with the offset it was read at.
func refusedPresent(refused []string, final []readRec) []string {
	if len(refused) == 0 {
		return nil
	}
	want := make(map[string]bool, len(refused))
	for _, v := range refused {
		want[v] = true
	}
	var bad []string
	for _, r := range final {
		if want[r.Value] {
			bad = append(bad, fmt.Sprintf("X: refused write %q is in the log at partition %d offset %d", r.Value, r.Partition, r.Offset))
		}
	}
	return bad
}
