package integration

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/isrbroker/isrbroker/tests/cluster"
)

// Issue 10 item 4: `isrbroker consumer-groups` (kafka-consumer-groups.sh) through the built
// binary against a live 3-broker cluster with the group coordinator.

// cgDescribeRow is one data line of `consumer-groups --describe`.
type cgDescribeRow struct {
	group, topic               string
	partition                  int32
	current, logEnd, lag       string
	consumerID, host, clientID string
}

// parseDescribe splits --describe output into rows keyed by partition (one group, one topic).
func parseDescribe(t *testing.T, out string) map[int32]cgDescribeRow {
	t.Helper()
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) < 2 || lines[0] != "" || !strings.HasPrefix(lines[1], "GROUP ") ||
		strings.Join(strings.Fields(lines[1]), " ") != "GROUP TOPIC PARTITION CURRENT-OFFSET LOG-END-OFFSET LAG CONSUMER-ID HOST CLIENT-ID" {
		t.Fatalf("describe output has no Kafka header:\n%s", out)
	}
	rows := map[int32]cgDescribeRow{}
	for _, l := range lines[2:] {
		f := strings.Fields(l)
		if len(f) != 9 {
			t.Fatalf("describe line %q has %d columns, want 9:\n%s", l, len(f), out)
		}
		p, err := strconv.Atoi(f[2])
		if err != nil {
			t.Fatalf("describe line %q: partition %q", l, f[2])
		}
		rows[int32(p)] = cgDescribeRow{f[0], f[1], int32(p), f[3], f[4], f[5], f[6], f[7], f[8]}
	}
	return rows
}

func cgGroupState(ctx context.Context, adm *kadm.Client, group string) (string, int, error) {
	ds, err := adm.DescribeGroups(ctx, group)
	if err != nil {
		return "", 0, err
	}
	d, ok := ds[group]
	if !ok {
		return "", 0, fmt.Errorf("no answer for group %s", group)
	}
	if d.Err != nil {
		return "", 0, d.Err
	}
	return d.State, len(d.Members), nil
}

func cgCommitted(t *testing.T, adm *kadm.Client, group string) map[string]map[int32]int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rs, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		t.Fatalf("fetch offsets of %s: %v", group, err)
	}
	out := map[string]map[int32]int64{}
	for topic, ps := range rs {
		for p, r := range ps {
			if r.Err != nil {
				t.Fatalf("fetch offsets of %s: %s-%d: %v", group, topic, p, r.Err)
			}
			if out[topic] == nil {
				out[topic] = map[int32]int64{}
			}
			out[topic][p] = r.At
		}
	}
	return out
}

// TestConsumerGroupsTool: --describe lag of a group that committed, --members/--state of an
// active group, --reset-offsets refused while a member is active, --reset-offsets
// --to-earliest --execute taking effect for the next member, --list, --delete-offsets and
// --delete.
func TestConsumerGroupsTool(t *testing.T) {
	c := cluster.Start(t, cluster.Options{Brokers: 3, Overrides: map[string]string{
		"offsets.topic.replication.factor": "3",
		"offsets.topic.num.partitions":     "10",
		"group.initial.rebalance.delay.ms": "0",
	}})
	bs := "--bootstrap-server=" + strings.Join(c.BootstrapAddrs(), ",")
	cg := func(args ...string) cluster.RunResult {
		return admin(t, append([]string{"consumer-groups", bs}, args...)...)
	}
	cgOK := func(args ...string) cluster.RunResult {
		t.Helper()
		r := cg(args...)
		if r.ExitCode != 0 {
			t.Fatalf("consumer-groups %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.ExitCode, r.Stdout, r.Stderr)
		}
		return r
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	adm := c.Admin()

	const topic, partitions, perPartition = "cgt", 3, 10
	c.CreateTopic(topic, partitions, 3)
	producer := c.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	// Record i of every partition has the timestamp base + i s (CreateTime), for --to-datetime.
	base := time.Now().Add(-time.Hour).Truncate(time.Second).UTC()
	for p := int32(0); p < partitions; p++ {
		for i := 0; i < perPartition; i++ {
			r := &kgo.Record{Topic: topic, Partition: p, Value: []byte(fmt.Sprintf("p%d-%d", p, i)),
				Timestamp: base.Add(time.Duration(i) * time.Second)}
			if err := producer.ProduceSync(ctx, r).FirstErr(); err != nil {
				t.Fatalf("produce to %s-%d: %v", topic, p, err)
			}
		}
	}
	leo := endOffsets(t, c, topic, partitions)

	// A group that only committed (no members): describe shows LAG = LOG-END-OFFSET - committed.
	const lagGroup = "cgt-lag"
	committed := map[int32]int64{0: 4, 1: 7, 2: 9}
	offs := kadm.Offsets{}
	for p, o := range committed {
		offs.AddOffset(topic, p, o, -1)
	}
	cluster.WaitFor(t, 60*time.Second, func() (bool, string) {
		err := adm.CommitAllOffsets(ctx, lagGroup, offs)
		return err == nil, fmt.Sprintf("commit offsets for %s: %v", lagGroup, err)
	})
	r := cgOK("--describe", "--group", lagGroup)
	if strings.TrimSpace(r.Stderr) != "Consumer group 'cgt-lag' has no active members." {
		t.Fatalf("describe %s stderr: %q", lagGroup, r.Stderr)
	}
	rows := parseDescribe(t, r.Stdout)
	if len(rows) != partitions {
		t.Fatalf("describe %s: %d rows, want %d:\n%s", lagGroup, len(rows), partitions, r.Stdout)
	}
	for p := int32(0); p < partitions; p++ {
		row := rows[p]
		want := cgDescribeRow{lagGroup, topic, p, fmt.Sprint(committed[p]), fmt.Sprint(leo[p]), fmt.Sprint(leo[p] - committed[p]), "-", "-", "-"}
		if row != want {
			t.Fatalf("describe %s partition %d: %+v, want %+v (log end offset %d)\n%s", lagGroup, p, row, want, leo[p], r.Stdout)
		}
	}

	// An active member that consumed everything and committed.
	const activeGroup = "cgt-active"
	consumer := func(clientID string, reset kgo.Offset) *kgo.Client {
		return c.Client(kgo.ConsumerGroup(activeGroup), kgo.ConsumeTopics(topic), kgo.ClientID(clientID),
			kgo.DisableAutoCommit(), kgo.ConsumeResetOffset(reset), kgo.FetchMaxWait(500*time.Millisecond))
	}
	first := consumer("cgt-first", kgo.NewOffset().AtStart())
	got := 0
	for got < partitions*perPartition {
		pctx, pcancel := context.WithTimeout(ctx, 60*time.Second)
		fs := first.PollFetches(pctx)
		err := pctx.Err()
		pcancel()
		if err != nil {
			t.Fatalf("first member consumed %d of %d records: %v", got, partitions*perPartition, err)
		}
		fs.EachError(func(tp string, p int32, err error) { t.Logf("fetch %s-%d: %v", tp, p, err) })
		got += fs.NumRecords()
	}
	if err := first.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatalf("first member commit: %v", err)
	}
	cluster.WaitFor(t, 60*time.Second, func() (bool, string) {
		st, n, err := cgGroupState(ctx, adm, activeGroup)
		return st == "Stable" && n == 1, fmt.Sprintf("group %s state %s with %d members (%v)", activeGroup, st, n, err)
	})
	r = cgOK("--describe", "--group", activeGroup)
	rows = parseDescribe(t, r.Stdout)
	for p := int32(0); p < partitions; p++ {
		row := rows[p]
		if row.current != fmt.Sprint(leo[p]) || row.lag != "0" || row.consumerID == "-" || row.clientID != "cgt-first" || row.host == "-" {
			t.Fatalf("describe %s partition %d: %+v, want committed %d, lag 0, member cgt-first\n%s", activeGroup, p, row, leo[p], r.Stdout)
		}
	}
	r = cgOK("--describe", "--group", activeGroup, "--members", "--verbose")
	if lines := strings.Split(strings.TrimSpace(r.Stdout), "\n"); len(lines) != 2 ||
		!strings.HasSuffix(lines[1], fmt.Sprintf(" %-15s %s", "3", "cgt(0,1,2)")) ||
		strings.Fields(lines[1])[0] != activeGroup || strings.Fields(lines[1])[3] != "cgt-first" {
		t.Fatalf("describe --members --verbose:\n%s", r.Stdout)
	}
	ds, err := adm.DescribeGroups(ctx, activeGroup)
	if err != nil {
		t.Fatalf("describe %s: %v", activeGroup, err)
	}
	coord := ds[activeGroup].Coordinator
	r = cgOK("--describe", "--group", activeGroup, "--state")
	if f := strings.Fields(strings.Split(strings.TrimSpace(r.Stdout), "\n")[1]); len(f) != 6 || f[0] != activeGroup ||
		f[1] != fmt.Sprintf("%s:%d", coord.Host, coord.Port) || f[2] != fmt.Sprintf("(%d)", coord.NodeID) ||
		f[3] != ds[activeGroup].Protocol || f[4] != "Stable" || f[5] != "1" {
		t.Fatalf("describe --state, want coordinator %d at %s:%d and protocol %s:\n%s", coord.NodeID, coord.Host, coord.Port, ds[activeGroup].Protocol, r.Stdout)
	}

	// --reset-offsets is refused while the member is active; nothing is committed.
	r = cg("--reset-offsets", "--group", activeGroup, "--topic", topic, "--to-earliest", "--execute")
	if r.ExitCode != 1 || strings.TrimSpace(r.Stderr) != "isrbroker: Assignments can only be reset if the group 'cgt-active' is inactive, but the current state is Stable." {
		t.Fatalf("reset of an active group: exit %d\nstdout: %s\nstderr: %s", r.ExitCode, r.Stdout, r.Stderr)
	}
	for p, o := range cgCommitted(t, adm, activeGroup)[topic] {
		if o != leo[p] {
			t.Fatalf("refused reset changed %s-%d of %s: %d, want %d", topic, p, activeGroup, o, leo[p])
		}
	}
	// --delete of a group with a member: Kafka's NON_EMPTY_GROUP.
	r = cg("--delete", "--group", activeGroup)
	if r.ExitCode != 1 || !strings.Contains(r.Stdout, "* Group 'cgt-active' could not be deleted due to: NON_EMPTY_GROUP") {
		t.Fatalf("delete of an active group: exit %d\nstdout: %s\nstderr: %s", r.ExitCode, r.Stdout, r.Stderr)
	}

	// --delete-offsets of a topic the member consumes: GROUP_SUBSCRIBED_TO_TOPIC, kept.
	r = cg("--delete-offsets", "--group", activeGroup, "--topic", topic+":1")
	if r.ExitCode != 1 || !strings.Contains(r.Stdout, fmt.Sprintf("%-30s %-15s %s", topic, "1", "Error: GROUP_SUBSCRIBED_TO_TOPIC")) {
		t.Fatalf("delete-offsets of a subscribed topic: exit %d\nstdout: %s\nstderr: %s", r.ExitCode, r.Stdout, r.Stderr)
	}
	if o := cgCommitted(t, adm, activeGroup)[topic][1]; o != leo[1] {
		t.Fatalf("refused --delete-offsets changed %s-1 of %s: %d", topic, activeGroup, o)
	}

	// The member leaves; the group becomes Empty; reset to the earliest offsets.
	first.Close()
	cluster.WaitFor(t, 60*time.Second, func() (bool, string) {
		st, n, err := cgGroupState(ctx, adm, activeGroup)
		return st == "Empty", fmt.Sprintf("group %s state %s with %d members (%v)", activeGroup, st, n, err)
	})
	cgOK("--reset-offsets", "--group", activeGroup, "--topic", topic, "--to-earliest", "--dry-run")
	for p, o := range cgCommitted(t, adm, activeGroup)[topic] {
		if o != leo[p] {
			t.Fatalf("--dry-run changed %s-%d of %s: %d", topic, p, activeGroup, o)
		}
	}
	r = cgOK("--reset-offsets", "--group", activeGroup, "--topic", topic, "--to-earliest", "--execute")
	want := "\nGROUP                          TOPIC                          PARTITION  NEW-OFFSET     \n"
	for p := 0; p < partitions; p++ {
		want += fmt.Sprintf("%-30s %-30s %-10d %-15d\n", activeGroup, topic, p, 0)
	}
	if r.Stdout != want {
		t.Fatalf("reset --to-earliest --execute:\n%q\nwant\n%q", r.Stdout, want)
	}
	// The next member starts at the earliest offsets: it reads every record again. Without a
	// committed offset it would start at the end (its reset offset), so reading offset 0
	// means the group's committed offsets put it there.
	second := consumer("cgt-second", kgo.NewOffset().AtEnd())
	firstOffset := map[int32]int64{}
	got = 0
	for got < partitions*perPartition {
		pctx, pcancel := context.WithTimeout(ctx, 60*time.Second)
		fs := second.PollFetches(pctx)
		err := pctx.Err()
		pcancel()
		if err != nil {
			t.Fatalf("after the reset the next member consumed %d of %d records (first offsets %v): %v", got, partitions*perPartition, firstOffset, err)
		}
		fs.EachRecord(func(rec *kgo.Record) {
			if _, ok := firstOffset[rec.Partition]; !ok {
				firstOffset[rec.Partition] = rec.Offset
			}
			got++
		})
	}
	for p := int32(0); p < partitions; p++ {
		if firstOffset[p] != 0 {
			t.Fatalf("after --to-earliest the next member started %s-%d at %d, want 0", topic, p, firstOffset[p])
		}
	}
	second.Close()
	cluster.WaitFor(t, 60*time.Second, func() (bool, string) {
		st, n, err := cgGroupState(ctx, adm, activeGroup)
		return st == "Empty", fmt.Sprintf("group %s state %s with %d members (%v)", activeGroup, st, n, err)
	})

	// --to-datetime: the first offset whose timestamp is at or after base + 5.5 s is 6;
	// --shift-by and --to-offset are clamped to the log start and end offsets.
	for _, tc := range []struct {
		args []string
		want int64
		warn string
	}{
		{[]string{"--to-datetime", base.Add(5500 * time.Millisecond).Format("2006-01-02T15:04:05.000")}, 6, ""},
		{[]string{"--shift-by", "-100"}, 0, "is lower than earliest offset"},
		{[]string{"--to-offset", "100"}, perPartition, "is higher than latest offset"},
	} {
		r = cgOK(append([]string{"--reset-offsets", "--group", activeGroup, "--topic", topic, "--execute"}, tc.args...)...)
		if !strings.Contains(r.Stdout, fmt.Sprintf("%-30s %-30s %-10d %-15d\n", activeGroup, topic, 2, tc.want)) ||
			(tc.warn != "" && strings.Count(r.Stderr, tc.warn) != partitions) {
			t.Fatalf("reset %v, want %d:\nstdout: %s\nstderr: %s", tc.args, tc.want, r.Stdout, r.Stderr)
		}
		for p, o := range cgCommitted(t, adm, activeGroup)[topic] {
			if o != tc.want {
				t.Fatalf("after reset %v %s-%d of %s is at %d, want %d", tc.args, topic, p, activeGroup, o, tc.want)
			}
		}
	}

	// --list shows both groups.
	r = cgOK("--list")
	if lines := strings.Fields(r.Stdout); strings.Join(lines, ",") != "cgt-active,cgt-lag" {
		t.Fatalf("list: %q", r.Stdout)
	}

	// --delete-offsets of one partition of the committed-only group.
	r = cgOK("--delete-offsets", "--group", lagGroup, "--topic", topic+":0")
	if !strings.HasPrefix(r.Stdout, "Request succeed for deleting offsets with topic cgt:0 group cgt-lag\n") ||
		!strings.Contains(r.Stdout, fmt.Sprintf("%-30s %-15s %-15s", topic, "0", "Successful")) {
		t.Fatalf("delete-offsets:\n%s", r.Stdout)
	}
	left := cgCommitted(t, adm, lagGroup)[topic]
	if _, ok := left[0]; ok || left[1] != committed[1] || left[2] != committed[2] {
		t.Fatalf("offsets of %s after --delete-offsets %s:0: %v", lagGroup, topic, left)
	}

	// --delete of the Empty groups.
	r = cgOK("--delete", "--group", lagGroup, "--group", activeGroup)
	if r.Stdout != "Deletion of requested consumer groups ('cgt-active', 'cgt-lag') was successful.\n" {
		t.Fatalf("delete: %q", r.Stdout)
	}
	if r = cgOK("--list"); r.Stdout != "" {
		t.Fatalf("list after delete: %q", r.Stdout)
	}
	r = cg("--describe", "--group", lagGroup)
	if r.ExitCode != 1 || strings.TrimSpace(r.Stderr) != "isrbroker: Consumer group 'cgt-lag' does not exist." {
		t.Fatalf("describe of a deleted group: exit %d\nstdout: %s\nstderr: %s", r.ExitCode, r.Stdout, r.Stderr)
	}
}
