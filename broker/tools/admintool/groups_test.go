package admintool

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/urfave/cli/v2"
)

// fakeGroups is an in-memory cluster for `consumer-groups`: topics with log start/end
// offsets and record timestamps, groups with state, members and committed offsets.
type fakeGroups struct {
	topics  map[string]*fakeTopic
	groups  map[string]*fakeGroup
	commits []map[topicPartition]int64 // every commit call, in order
	closed  bool
}

type fakeTopic struct {
	start, end []int64   // per partition
	times      [][]int64 // per partition: timestamp of offset start+i
}

type fakeGroup struct {
	state, protocolType, protocol string
	members                       []groupMember
	committed                     map[topicPartition]int64
}

func newFakeGroups() *fakeGroups {
	return &fakeGroups{topics: map[string]*fakeTopic{}, groups: map[string]*fakeGroup{}}
}

func (f *fakeGroups) group(id, state string, committed map[topicPartition]int64, members ...groupMember) {
	pt := "consumer"
	if len(members) == 0 && state == "Empty" {
		pt = "" // a group that only committed offsets
	}
	f.groups[id] = &fakeGroup{state: state, protocolType: pt, protocol: map[bool]string{true: "range"}[len(members) > 0], members: members, committed: committed}
}

func (f *fakeGroups) listGroups(context.Context) ([]string, error) {
	var out []string
	for g, fg := range f.groups {
		if fg.protocolType == "consumer" || fg.protocolType == "" {
			out = append(out, g)
		}
	}
	sort.Strings(out)
	return out, nil
}

func (f *fakeGroups) describeGroups(_ context.Context, groups []string) (map[string]groupDescription, error) {
	out := map[string]groupDescription{}
	for _, g := range groups {
		d := groupDescription{Group: g, State: "Dead", Coordinator: coordinatorNode{ID: 2, Host: "127.0.0.1", Port: 9092}}
		if fg, ok := f.groups[g]; ok {
			d.State, d.ProtocolType, d.Protocol, d.Members = fg.state, fg.protocolType, fg.protocol, fg.members
		}
		out[g] = d
	}
	return out, nil
}

func (f *fakeGroups) committedOffsets(_ context.Context, group string) (map[topicPartition]int64, error) {
	out := map[topicPartition]int64{}
	if fg, ok := f.groups[group]; ok {
		for p, o := range fg.committed {
			out[p] = o
		}
	}
	return out, nil
}

func (f *fakeGroups) offsets(ps []topicPartition, pick func(t *fakeTopic, p int32) (int64, bool)) map[topicPartition]int64 {
	out := map[topicPartition]int64{}
	for _, p := range ps {
		if t, ok := f.topics[p.Topic]; ok && int(p.Partition) < len(t.end) {
			if o, ok := pick(t, p.Partition); ok {
				out[p] = o
			}
		}
	}
	return out
}

func (f *fakeGroups) startOffsets(_ context.Context, ps []topicPartition) (map[topicPartition]int64, error) {
	return f.offsets(ps, func(t *fakeTopic, p int32) (int64, bool) { return t.start[p], true }), nil
}

func (f *fakeGroups) endOffsets(_ context.Context, ps []topicPartition) (map[topicPartition]int64, error) {
	return f.offsets(ps, func(t *fakeTopic, p int32) (int64, bool) { return t.end[p], true }), nil
}

func (f *fakeGroups) offsetsForTime(_ context.Context, ps []topicPartition, ms int64) (map[topicPartition]int64, error) {
	return f.offsets(ps, func(t *fakeTopic, p int32) (int64, bool) {
		for i, ts := range t.times[p] {
			if ts >= ms {
				return t.start[p] + int64(i), true
			}
		}
		return t.end[p], true
	}), nil
}

func (f *fakeGroups) partitions(_ context.Context, topic string) ([]int32, error) {
	t, ok := f.topics[topic]
	if !ok {
		return nil, kerr.UnknownTopicOrPartition
	}
	var ids []int32
	for i := range t.end {
		ids = append(ids, int32(i))
	}
	return ids, nil
}

func (f *fakeGroups) commit(_ context.Context, group string, offsets map[topicPartition]int64) error {
	fg, ok := f.groups[group]
	if !ok {
		fg = &fakeGroup{state: "Empty", committed: map[topicPartition]int64{}}
		f.groups[group] = fg
	}
	c := map[topicPartition]int64{}
	for p, o := range offsets {
		fg.committed[p] = o
		c[p] = o
	}
	f.commits = append(f.commits, c)
	return nil
}

func (f *fakeGroups) deleteGroups(_ context.Context, groups []string) (map[string]error, error) {
	out := map[string]error{}
	for _, g := range groups {
		fg, ok := f.groups[g]
		switch {
		case !ok:
			out[g] = kerr.GroupIDNotFound
		case fg.state != "Empty":
			out[g] = kerr.NonEmptyGroup
		default:
			delete(f.groups, g)
			out[g] = nil
		}
	}
	return out, nil
}

func (f *fakeGroups) deleteOffsets(_ context.Context, group string, ps []topicPartition) (error, map[topicPartition]error, error) {
	fg, ok := f.groups[group]
	if !ok {
		return kerr.GroupIDNotFound, nil, nil
	}
	out := map[topicPartition]error{}
	for _, p := range ps {
		subscribed := false
		for _, m := range fg.members {
			for _, a := range m.Assignment {
				subscribed = subscribed || a.Topic == p.Topic
			}
		}
		if subscribed {
			out[p] = kerr.GroupSubscribedToTopic
			continue
		}
		delete(fg.committed, p)
		out[p] = nil
	}
	return nil, out, nil
}

func (f *fakeGroups) close() { f.closed = true }

// cgResult is one `consumer-groups` run: stdout, Kafka's notes on stderr, the one-line
// error as main prints it, and the exit status.
type cgResult struct {
	out, notes, err string
	code            int
}

var fixedNow = time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)

func runCG(f *fakeGroups, args ...string) cgResult {
	var out, notes bytes.Buffer
	tool := &cgTool{stderr: &notes, now: func() time.Time { return fixedNow }, dial: func(bootstrap string, timeout time.Duration) (groupsBackend, error) {
		if bootstrap != "b:9092" || timeout != 30*time.Second && timeout != 7*time.Second {
			return nil, failf("unexpected dial %q %v", bootstrap, timeout)
		}
		return f, nil
	}}
	cmd := tool.command()
	app := &cli.App{Name: "isrbroker", Writer: &out, ErrWriter: &out, DisableSliceFlagSeparator: true,
		ExitErrHandler: func(*cli.Context, error) {}, Commands: []*cli.Command{cmd}}
	err := app.Run(append([]string{"isrbroker", "consumer-groups", "--bootstrap-server", "b:9092"}, args...))
	r := cgResult{out: out.String(), notes: notes.String(), code: ExitCode(err)}
	if err != nil {
		r.err = "isrbroker: " + oneLine(err.Error())
	}
	return r
}

func cgOK(t *testing.T, r cgResult) string {
	t.Helper()
	if r.code != 0 {
		t.Fatalf("exit %d: %s\nstdout: %s\nnotes: %s", r.code, r.err, r.out, r.notes)
	}
	return r.out
}

func cgFail(t *testing.T, r cgResult, want string) {
	t.Helper()
	if r.code != 1 || !strings.Contains(r.err, want) {
		t.Fatalf("want exit 1 with %q, got exit %d %q (stdout %q)", want, r.code, r.err, r.out)
	}
	if strings.Contains(r.err, "\n") || strings.Contains(r.err, "goroutine") {
		t.Fatalf("error is not one line: %q", r.err)
	}
}

func tps(topic string, ps ...int32) []topicPartition {
	var out []topicPartition
	for _, p := range ps {
		out = append(out, topicPartition{topic, p})
	}
	return out
}

// cgCluster: topic "orders" (3 partitions, log start 5 / 0 / 0, log end 100 / 50 / 10),
// topic "logs" (1 partition, end 7); group "billing" Stable with two members, "audit"
// Empty with committed offsets, "connect-x" of protocol type connect.
func cgCluster() *fakeGroups {
	f := newFakeGroups()
	f.topics["orders"] = &fakeTopic{start: []int64{5, 0, 0}, end: []int64{100, 50, 10},
		times: [][]int64{{}, {1000, 2000, 3000}, {}}}
	f.topics["logs"] = &fakeTopic{start: []int64{0}, end: []int64{7}, times: [][]int64{{}}}
	f.group("billing", "Stable", map[topicPartition]int64{{"orders", 0}: 90, {"orders", 1}: 50, {"logs", 0}: 3},
		groupMember{ID: "consumer-1-aaaa", ClientID: "consumer-1", Host: "/10.0.0.1", Assignment: append(tps("orders", 0), tps("orders", 2)...)},
		groupMember{ID: "consumer-2-bbbb", ClientID: "consumer-2", Host: "/10.0.0.2", Assignment: tps("orders", 1)},
		groupMember{ID: "consumer-3-idle", ClientID: "consumer-3", Host: "/10.0.0.3"})
	f.group("audit", "Empty", map[topicPartition]int64{{"orders", 0}: 20, {"orders", 1}: 30})
	f.groups["connect-x"] = &fakeGroup{state: "Stable", protocolType: "connect"}
	return f
}

func TestConsumerGroupsUsageErrors(t *testing.T) {
	f := cgCluster()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "Command must include exactly one action: --list, --describe, --delete, --reset-offsets, --delete-offsets"},
		{[]string{"--list", "--describe"}, "exactly one action"},
		{[]string{"--describe"}, "Option --describe takes one of these options: --group, --all-groups"},
		{[]string{"--delete"}, "Option --delete takes one of these options: --group, --all-groups"},
		{[]string{"--describe", "--group", "g", "--all-groups"}, "Option --group can't be used with option --all-groups"},
		{[]string{"--list", "--group", "g"}, "Option --group can't be used with option --list"},
		{[]string{"--describe", "--group", "g", "--topic", "t"}, "Option --topic can't be used with option --describe"},
		{[]string{"--delete", "--group", "g", "--topic", "t"}, "The consumer does not support topic-specific offset deletion from a consumer group."},
		{[]string{"--describe", "--group", "g", "--members", "--state"}, "--offsets, --members and --state are mutually exclusive"},
		{[]string{"--list", "--members"}, "Option --members is only valid with --describe"},
		{[]string{"--list", "--to-earliest"}, "Option --to-earliest is only valid with --reset-offsets"},
		{[]string{"--delete-offsets", "--group", "g"}, "Option --delete-offsets takes the following options: --group, --topic"},
		{[]string{"--delete-offsets", "--group", "g", "--group", "h", "--topic", "t"}, "takes a single --group"},
		{[]string{"--reset-offsets", "--group", "g", "--topic", "t"}, "Option --reset-offsets requires one of the following scenarios: --to-offset"},
		{[]string{"--reset-offsets", "--group", "g", "--topic", "t", "--to-earliest", "--to-latest"}, "Option --to-earliest can't be used with option --to-latest"},
		{[]string{"--reset-offsets", "--group", "g", "--to-earliest"}, "One of the reset scopes should be defined: --all-topics, --topic."},
		{[]string{"--reset-offsets", "--topic", "t", "--to-earliest"}, "Option --reset-offsets takes one of these options: --group, --all-groups"},
		{[]string{"--reset-offsets", "--group", "g", "--topic", "t", "--to-earliest", "--execute", "--dry-run"}, "Option --reset-offsets only accepts one of --execute and --dry-run"},
		{[]string{"--reset-offsets", "--group", "g", "--topic", "t:0,x", "--to-earliest"}, `invalid --topic "t:0,x": "x" is not a partition number`},
		{[]string{"--reset-offsets", "--group", "g", "--topic", ":1", "--to-earliest"}, `invalid --topic ":1": no topic name`},
		{[]string{"--reset-offsets", "--group", "g", "--topic", "t", "--to-datetime", "2024-05-01 12:00:00"}, `invalid --to-datetime "2024-05-01 12:00:00": want YYYY-MM-DDTHH:mm:SS.sss`},
		{[]string{"--reset-offsets", "--group", "g", "--topic", "t", "--to-datetime", "2024-02-30T12:00:00.000"}, "no such date or time"},
		{[]string{"--reset-offsets", "--group", "g", "--topic", "t", "--by-duration", "30m"}, `invalid --by-duration "30m": want an ISO-8601 duration PnDTnHnMnS`},
		{[]string{"--reset-offsets", "--group", "g", "--topic", "t", "--from-file", "/nonexistent/plan.csv"}, "cannot read --from-file /nonexistent/plan.csv"},
		{[]string{"--list", "--timeout", "0"}, "invalid --timeout 0"},
		{[]string{"--list", "extra"}, `unexpected argument "extra"`},
	} {
		cgFail(t, runCG(f, tc.args...), tc.want)
	}
	if len(f.commits) != 0 {
		t.Fatalf("a usage error committed offsets: %v", f.commits)
	}
	var out bytes.Buffer
	app := &cli.App{Name: "isrbroker", Writer: &out, ErrWriter: &out, ExitErrHandler: func(*cli.Context, error) {}, Commands: Commands()}
	err := app.Run([]string{"isrbroker", "consumer-groups", "--list"})
	if err == nil || err.Error() != "--bootstrap-server is required" {
		t.Fatalf("without --bootstrap-server: %v", err)
	}
	out.Reset()
	if err := app.Run([]string{"isrbroker", "consumer-groups", "--help"}); err != nil || !strings.Contains(out.String(), "isrbroker consumer-groups --bootstrap-server localhost:9092 --describe --group billing") {
		t.Fatalf("help: %v %s", err, out.String())
	}
}

func TestConsumerGroupsList(t *testing.T) {
	f := cgCluster()
	// connect-x has another protocol type: not a consumer group, not listed (Kafka's
	// listConsumerGroups).
	if out := cgOK(t, runCG(f, "--list")); out != "audit\nbilling\n" {
		t.Fatalf("list: %q", out)
	}
	if out := cgOK(t, runCG(f, "--list", "--timeout", "7000")); out != "audit\nbilling\n" {
		t.Fatalf("list --timeout: %q", out)
	}
	if !f.closed {
		t.Fatal("the backend was not closed")
	}
}

func TestConsumerGroupsDescribeOffsets(t *testing.T) {
	f := cgCluster()
	r := runCG(f, "--describe", "--group", "billing")
	// Members with the most partitions first; orders-2 has no committed offset ("-");
	// logs-0 has a committed offset but no member; consumer-3 has no partitions (no row).
	want := "\n" +
		"GROUP           TOPIC           PARTITION  CURRENT-OFFSET  LOG-END-OFFSET  LAG             CONSUMER-ID     HOST            CLIENT-ID\n" +
		"billing         orders          0          90              100             10              consumer-1-aaaa /10.0.0.1       consumer-1\n" +
		"billing         orders          2          -               10              -               consumer-1-aaaa /10.0.0.1       consumer-1\n" +
		"billing         orders          1          50              50              0               consumer-2-bbbb /10.0.0.2       consumer-2\n" +
		"billing         logs            0          3               7               4               -               -               -\n"
	if out := cgOK(t, r); out != want {
		t.Fatalf("describe:\n%s\nwant\n%s", out, want)
	}
	if r.notes != "" {
		t.Fatalf("notes for a Stable group: %q", r.notes)
	}

	// An Empty group: Kafka's note on stderr, its offsets with "-" consumers.
	r = runCG(f, "--describe", "--group", "audit")
	if !strings.Contains(cgOK(t, r), "audit           orders          1          30              50              20              -               -               -\n") {
		t.Fatalf("describe audit:\n%s", r.out)
	}
	if r.notes != "\nConsumer group 'audit' has no active members.\n" {
		t.Fatalf("notes: %q", r.notes)
	}

	// A group that does not exist (the coordinator describes it as Dead).
	r = runCG(f, "--describe", "--group", "nope")
	cgFail(t, r, "isrbroker: Consumer group 'nope' does not exist.")
	if r.out != "" {
		t.Fatalf("stdout for a missing group: %q", r.out)
	}
	// Several groups: the existing ones are printed, the missing ones named.
	r = runCG(f, "--describe", "--group", "nope", "--group", "audit", "--group", "gone")
	cgFail(t, r, "isrbroker: Consumer groups 'gone', 'nope' do not exist.")
	if !strings.Contains(r.out, "\naudit ") {
		t.Fatalf("describe of several groups lost audit: %q", r.out)
	}

	// Rebalancing: Kafka's warning, then the table.
	f.groups["billing"].state = "PreparingRebalance"
	r = runCG(f, "--describe", "--group", "billing")
	if cgOK(t, r) != want || r.notes != "\nWarning: Consumer group 'billing' is rebalancing.\n" {
		t.Fatalf("rebalancing: %q %q", r.out, r.notes)
	}

	// --all-groups describes the listed consumer groups in order.
	out := cgOK(t, runCG(f, "--describe", "--all-groups"))
	if i, j := strings.Index(out, "\naudit "), strings.Index(out, "\nbilling "); i < 0 || j < i {
		t.Fatalf("all groups:\n%s", out)
	}
	cgFail(t, runCG(f, "--describe", "--group", "connect-x"), "Group 'connect-x' is not a consumer group (protocol type connect).")
}

func TestConsumerGroupsDescribeColumnsWiden(t *testing.T) {
	f := cgCluster()
	long := "a-consumer-group-with-a-long-name"
	f.group(long, "Empty", map[topicPartition]int64{{"orders", 0}: 1})
	out := cgOK(t, runCG(f, "--describe", "--group", long))
	lines := strings.Split(out, "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[1], "GROUP"+strings.Repeat(" ", len(long)-len("GROUP")+1)+"TOPIC ") ||
		!strings.HasPrefix(lines[2], long+" orders ") {
		t.Fatalf("columns:\n%s", out)
	}
}

func TestConsumerGroupsDescribeMembersAndState(t *testing.T) {
	f := cgCluster()
	out := cgOK(t, runCG(f, "--describe", "--group", "billing", "--members"))
	want := "\n" +
		"GROUP           CONSUMER-ID     HOST            CLIENT-ID       #PARTITIONS     \n" +
		"billing         consumer-1-aaaa /10.0.0.1       consumer-1      2               \n" +
		"billing         consumer-2-bbbb /10.0.0.2       consumer-2      1               \n" +
		"billing         consumer-3-idle /10.0.0.3       consumer-3      0               \n"
	if out != want {
		t.Fatalf("members:\n%q\nwant\n%q", out, want)
	}
	f.groups["billing"].members[0].Assignment = append(f.groups["billing"].members[0].Assignment, tps("logs", 0)...)
	out = cgOK(t, runCG(f, "--describe", "--group", "billing", "--members", "--verbose"))
	want = "\n" +
		"GROUP           CONSUMER-ID     HOST            CLIENT-ID       #PARTITIONS     ASSIGNMENT\n" +
		"billing         consumer-1-aaaa /10.0.0.1       consumer-1      3               logs(0), orders(0,2)\n" +
		"billing         consumer-2-bbbb /10.0.0.2       consumer-2      1               orders(1)\n" +
		"billing         consumer-3-idle /10.0.0.3       consumer-3      0               -\n"
	if out != want {
		t.Fatalf("members --verbose:\n%q\nwant\n%q", out, want)
	}
	// An Empty group has no members: the note, no table.
	r := runCG(f, "--describe", "--group", "audit", "--members")
	if cgOK(t, r) != "" || !strings.Contains(r.notes, "Consumer group 'audit' has no active members.") {
		t.Fatalf("members of an empty group: %q %q", r.out, r.notes)
	}

	out = cgOK(t, runCG(f, "--describe", "--group", "billing", "--state"))
	want = "\n" +
		"GROUP                     COORDINATOR (ID)          ASSIGNMENT-STRATEGY  STATE           #MEMBERS\n" +
		"billing                   127.0.0.1:9092 (2)        range                Stable          3\n"
	if out != want {
		t.Fatalf("state:\n%q\nwant\n%q", out, want)
	}
	r = runCG(f, "--describe", "--group", "audit", "--state")
	if !strings.Contains(cgOK(t, r), "audit                     127.0.0.1:9092 (2)                             Empty           0\n") {
		t.Fatalf("state of an empty group: %q", r.out)
	}
	cgFail(t, runCG(f, "--describe", "--group", "nope", "--state"), "Consumer group 'nope' does not exist.")
}

func resetTable(rows ...string) string {
	s := "\nGROUP                          TOPIC                          PARTITION  NEW-OFFSET     \n"
	for _, r := range rows {
		s += r + "\n"
	}
	return s
}

func resetRow(group, topic string, p, o int) string {
	return padRight(group, 30) + " " + padRight(topic, 30) + " " + padRight(strconv.Itoa(p), 10) + " " + padRight(strconv.Itoa(o), 15)
}

func padRight(s string, n int) string { return s + strings.Repeat(" ", max(0, n-len(s))) }

func TestConsumerGroupsResetOffsets(t *testing.T) {
	t.Run("dry run by default", func(t *testing.T) {
		f := cgCluster()
		r := runCG(f, "--reset-offsets", "--group", "audit", "--topic", "orders", "--to-earliest")
		want := resetTable(resetRow("audit", "orders", 0, 5), resetRow("audit", "orders", 1, 0), resetRow("audit", "orders", 2, 0))
		if cgOK(t, r) != want {
			t.Fatalf("dry run:\n%q\nwant\n%q", r.out, want)
		}
		if !strings.HasPrefix(r.notes, "WARN: No action will be performed as the --execute option is missing.") {
			t.Fatalf("notes: %q", r.notes)
		}
		if len(f.commits) != 0 {
			t.Fatalf("dry run committed %v", f.commits)
		}
		r = runCG(f, "--reset-offsets", "--group", "audit", "--topic", "orders", "--to-earliest", "--dry-run")
		if cgOK(t, r) != want || r.notes != "" || len(f.commits) != 0 {
			t.Fatalf("--dry-run: %q %q %v", r.out, r.notes, f.commits)
		}
	})
	t.Run("execute commits", func(t *testing.T) {
		f := cgCluster()
		out := cgOK(t, runCG(f, "--reset-offsets", "--group", "audit", "--topic", "orders:1,2", "--to-latest", "--execute"))
		if out != resetTable(resetRow("audit", "orders", 1, 50), resetRow("audit", "orders", 2, 10)) {
			t.Fatalf("to-latest: %q", out)
		}
		if len(f.commits) != 1 || len(f.commits[0]) != 2 || f.commits[0][topicPartition{"orders", 1}] != 50 || f.commits[0][topicPartition{"orders", 2}] != 10 {
			t.Fatalf("commits %v", f.commits)
		}
		if f.groups["audit"].committed[topicPartition{"orders", 0}] != 20 {
			t.Fatal("orders-0 is outside the scope but changed")
		}
	})
	t.Run("refused while active", func(t *testing.T) {
		f := cgCluster()
		r := runCG(f, "--reset-offsets", "--group", "billing", "--topic", "orders", "--to-earliest", "--execute")
		cgFail(t, r, "isrbroker: Assignments can only be reset if the group 'billing' is inactive, but the current state is Stable.")
		if len(f.commits) != 0 || r.out != "" {
			t.Fatalf("an active group was reset: %v %q", f.commits, r.out)
		}
		// With an inactive group beside it, that one is still reset.
		r = runCG(f, "--reset-offsets", "--group", "billing", "--group", "audit", "--topic", "orders:0", "--to-offset", "42", "--execute")
		cgFail(t, r, "the group 'billing' is inactive, but the current state is Stable.")
		if len(f.commits) != 1 || f.commits[0][topicPartition{"orders", 0}] != 42 || r.out != resetTable(resetRow("audit", "orders", 0, 42)) {
			t.Fatalf("commits %v out %q", f.commits, r.out)
		}
	})
	t.Run("to-offset and shift-by are clamped", func(t *testing.T) {
		f := cgCluster()
		r := runCG(f, "--reset-offsets", "--group", "audit", "--all-topics", "--shift-by", "-25", "--dry-run")
		// orders-0: 20-25 = -5 < log start 5 → 5; orders-1: 30-25 = 5.
		if cgOK(t, r) != resetTable(resetRow("audit", "orders", 0, 5), resetRow("audit", "orders", 1, 5)) {
			t.Fatalf("shift-by -25: %q", r.out)
		}
		if r.notes != "WARN: New offset (-5) is lower than earliest offset for topic partition orders-0. Value will be set to 5\n" {
			t.Fatalf("notes: %q", r.notes)
		}
		r = runCG(f, "--reset-offsets", "--group", "audit", "--all-topics", "--shift-by", "70", "--dry-run")
		if cgOK(t, r) != resetTable(resetRow("audit", "orders", 0, 90), resetRow("audit", "orders", 1, 50)) ||
			r.notes != "WARN: New offset (100) is higher than latest offset for topic partition orders-1. Value will be set to 50\n" {
			t.Fatalf("shift-by 70: %q %q", r.out, r.notes)
		}
		r = runCG(f, "--reset-offsets", "--group", "audit", "--topic", "logs", "--to-offset", "9", "--dry-run")
		if cgOK(t, r) != resetTable(resetRow("audit", "logs", 0, 7)) || !strings.Contains(r.notes, "New offset (9) is higher than latest offset for topic partition logs-0. Value will be set to 7") {
			t.Fatalf("to-offset 9: %q %q", r.out, r.notes)
		}
		cgFail(t, runCG(f, "--reset-offsets", "--group", "audit", "--topic", "logs", "--shift-by", "1"),
			"Cannot shift offset for partition logs-0 since there is no current committed offset")
		cgFail(t, runCG(f, "--reset-offsets", "--group", "audit", "--topic", "nope", "--to-earliest"), "--topic nope: UNKNOWN_TOPIC_OR_PARTITION")
		cgFail(t, runCG(f, "--reset-offsets", "--group", "audit", "--topic", "orders:9", "--to-offset", "1"), "cannot get the log start and end offsets of topic partition orders-9")
		if len(f.commits) != 0 {
			t.Fatalf("commits %v", f.commits)
		}
	})
	t.Run("to-current, to-datetime, by-duration", func(t *testing.T) {
		f := cgCluster()
		// orders-2 has no committed offset: the log end offset.
		out := cgOK(t, runCG(f, "--reset-offsets", "--group", "audit", "--topic", "orders", "--to-current", "--dry-run"))
		if out != resetTable(resetRow("audit", "orders", 0, 20), resetRow("audit", "orders", 1, 30), resetRow("audit", "orders", 2, 10)) {
			t.Fatalf("to-current: %q", out)
		}
		// orders-1 holds offsets 0,1,2 with timestamps 1000,2000,3000 ms: 1.5 s → offset 1;
		// after the last record → the log end offset.
		out = cgOK(t, runCG(f, "--reset-offsets", "--group", "audit", "--topic", "orders:1", "--to-datetime", "1970-01-01T00:00:01.500", "--dry-run"))
		if out != resetTable(resetRow("audit", "orders", 1, 1)) {
			t.Fatalf("to-datetime: %q", out)
		}
		out = cgOK(t, runCG(f, "--reset-offsets", "--group", "audit", "--topic", "orders:1", "--to-datetime", "1970-01-01T01:00:02.000+01:00", "--dry-run"))
		if out != resetTable(resetRow("audit", "orders", 1, 1)) {
			t.Fatalf("to-datetime with zone: %q", out)
		}
		out = cgOK(t, runCG(f, "--reset-offsets", "--group", "audit", "--topic", "orders:1", "--to-datetime", "1970-01-01T00:00:03.001Z", "--dry-run"))
		if out != resetTable(resetRow("audit", "orders", 1, 50)) {
			t.Fatalf("to-datetime after the last record: %q", out)
		}
		// now - PT... lands at 2500 ms → offset 2.
		d := fixedNow.Sub(time.UnixMilli(2500))
		iso := "PT" + strconv.Itoa(int(d/time.Second)) + ".5S"
		out = cgOK(t, runCG(f, "--reset-offsets", "--group", "audit", "--topic", "orders:1", "--by-duration", iso, "--dry-run"))
		if out != resetTable(resetRow("audit", "orders", 1, 2)) {
			t.Fatalf("by-duration %s: %q", iso, out)
		}
	})
	t.Run("a group that does not exist yet", func(t *testing.T) {
		f := cgCluster()
		// Dead (unknown) groups may be reset: the commit creates the group's offsets.
		cgOK(t, runCG(f, "--reset-offsets", "--group", "fresh", "--topic", "logs", "--to-earliest", "--execute"))
		if f.groups["fresh"] == nil || f.groups["fresh"].committed[topicPartition{"logs", 0}] != 0 || len(f.commits) != 1 {
			t.Fatalf("fresh group: %v", f.commits)
		}
	})
	t.Run("export and from-file", func(t *testing.T) {
		f := cgCluster()
		out := cgOK(t, runCG(f, "--reset-offsets", "--group", "audit", "--all-topics", "--to-latest", "--export"))
		if out != "orders,0,100\norders,1,50\n" {
			t.Fatalf("export: %q", out)
		}
		path := filepath.Join(t.TempDir(), "plan.csv")
		if err := os.WriteFile(path, []byte("orders,0,60\norders,1,999\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		r := runCG(f, "--reset-offsets", "--group", "audit", "--from-file", path, "--execute")
		if cgOK(t, r) != resetTable(resetRow("audit", "orders", 0, 60), resetRow("audit", "orders", 1, 50)) || !strings.Contains(r.notes, "New offset (999)") {
			t.Fatalf("from-file: %q %q", r.out, r.notes)
		}
		if len(f.commits) != 1 || f.commits[0][topicPartition{"orders", 1}] != 50 {
			t.Fatalf("commits %v", f.commits)
		}
		// --all-groups: billing is active (refused), audit is exported in the group format.
		r = runCG(f, "--reset-offsets", "--all-groups", "--all-topics", "--to-current", "--export")
		cgFail(t, r, "the group 'billing' is inactive, but the current state is Stable.")
		if r.out != "audit,orders,0,60\naudit,orders,1,50\n" {
			t.Fatalf("export of all groups: %q", r.out)
		}
		if err := os.WriteFile(path, []byte("orders,0\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		cgFail(t, runCG(f, "--reset-offsets", "--group", "audit", "--from-file", path), `line 1 "orders,0": want topic,partition,offset or group,topic,partition,offset`)
	})
}

func TestConsumerGroupsDelete(t *testing.T) {
	f := cgCluster()
	f.group("old", "Empty", map[topicPartition]int64{{"logs", 0}: 1})
	out := cgOK(t, runCG(f, "--delete", "--group", "old", "--group", "audit"))
	if out != "Deletion of requested consumer groups ('audit', 'old') was successful.\n" {
		t.Fatalf("delete: %q", out)
	}
	if f.groups["audit"] != nil || f.groups["old"] != nil {
		t.Fatal("groups not deleted")
	}
	r := runCG(f, "--delete", "--group", "billing")
	cgFail(t, r, "isrbroker: Deletion of some consumer groups failed: group 'billing': NON_EMPTY_GROUP: The group is not empty.")
	if r.out != "* Group 'billing' could not be deleted due to: NON_EMPTY_GROUP: The group is not empty.\n" {
		t.Fatalf("stdout: %q", r.out)
	}
	f.group("old", "Empty", nil)
	r = runCG(f, "--delete", "--group", "billing", "--group", "nope", "--group", "old")
	cgFail(t, r, "Deletion of some consumer groups failed: groups 'billing', 'nope'")
	if !strings.Contains(r.out, "* Group 'nope' could not be deleted due to: GROUP_ID_NOT_FOUND") ||
		!strings.HasSuffix(r.out, "\nThese consumer groups were deleted successfully: 'old'\n") {
		t.Fatalf("stdout: %q", r.out)
	}
}

func TestConsumerGroupsDeleteOffsets(t *testing.T) {
	f := cgCluster()
	out := cgOK(t, runCG(f, "--delete-offsets", "--group", "audit", "--topic", "orders"))
	want := "Request succeed for deleting offsets with topic orders group audit\n\n" +
		"TOPIC                          PARTITION       STATUS         \n" +
		"orders                         0               Successful     \n" +
		"orders                         1               Successful     \n" +
		"orders                         2               Successful     \n"
	if out != want {
		t.Fatalf("delete-offsets:\n%q\nwant\n%q", out, want)
	}
	if len(f.groups["audit"].committed) != 0 {
		t.Fatalf("offsets left: %v", f.groups["audit"].committed)
	}
	// Kafka's group-level messages.
	r := runCG(f, "--delete-offsets", "--group", "nope", "--topic", "orders:0")
	cgFail(t, r, "isrbroker: 'nope' does not exist.")
	if !strings.Contains(r.out, "orders                         0               Error: GROUP_ID_NOT_FOUND") {
		t.Fatalf("stdout: %q", r.out)
	}
	// Partition-level errors: the group consumes the topic; an unknown topic.
	r = runCG(f, "--delete-offsets", "--group", "billing", "--topic", "orders:1", "--topic", "ghost")
	cgFail(t, r, "Encounter some partition level error, see the follow-up details: 2 of 2 partitions failed")
	if !strings.Contains(r.out, "ghost                          Not Provided    Error: UNKNOWN_TOPIC_OR_PARTITION") ||
		!strings.Contains(r.out, "orders                         1               Error: GROUP_SUBSCRIBED_TO_TOPIC") {
		t.Fatalf("stdout: %q", r.out)
	}
	if f.groups["billing"].committed[topicPartition{"orders", 1}] != 50 {
		t.Fatal("a subscribed topic's offset was deleted")
	}
}

func TestParseResetDateTime(t *testing.T) {
	for in, want := range map[string]int64{
		"1970-01-01T00:00:00.000":       0,
		"1970-01-01T00:00:01.234Z":      1234,
		"1970-01-01T01:00:00.000+01:00": 0,
		"1970-01-01T01:00:00.000+0100":  0,
		"1970-01-01T01:00:00.000+01":    0,
		"1969-12-31T23:30:00.000-00:30": 0,
		"2024-05-01T12:00:00.000+02:00": time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC).UnixMilli(),
		" 2024-02-29T23:59:59.999 ":     time.Date(2024, 2, 29, 23, 59, 59, 999e6, time.UTC).UnixMilli(),
	} {
		got, err := parseResetDateTime(in)
		if err != nil || got != want {
			t.Errorf("%q: %d %v, want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "2024-05-01", "2024-05-01T12:00:00", "2024-05-01T12:00:00.0", "2024-13-01T00:00:00.000",
		"2023-02-29T00:00:00.000", "2024-05-01T24:00:00.000", "2024-05-01T12:00:00.000+25:00", "2024-05-01T12:00:00.000 UTC"} {
		if _, err := parseResetDateTime(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestParseISODuration(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"PT30M":          30 * time.Minute,
		"P1DT12H":        36 * time.Hour,
		"P2D":            48 * time.Hour,
		"pt1.5s":         1500 * time.Millisecond,
		"PT-1H30M":       -30 * time.Minute,
		"-PT10S":         -10 * time.Second,
		"PT0.000000001S": 1,
	} {
		got, err := parseISODuration(in)
		if err != nil || got != want {
			t.Errorf("%q: %v %v, want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "P", "PT", "30m", "P1H", "PT1D", "P1DT", "PT1.S1", "P99999999999999D"} {
		if _, err := parseISODuration(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func FuzzParseISODuration(f *testing.F) {
	f.Add("P1DT2H3M4.5S")
	f.Fuzz(func(t *testing.T, s string) { _, _ = parseISODuration(s) })
}

func FuzzParseResetDateTime(f *testing.F) {
	f.Add("2024-05-01T12:00:00.000+02:00")
	f.Fuzz(func(t *testing.T, s string) { _, _ = parseResetDateTime(s) })
}

// Through the real kadm backend: an unreachable broker is one error line, not a hang.
func TestConsumerGroupsUnreachableBroker(t *testing.T) {
	start := time.Now()
	mustFail(t, run("consumer-groups", "--bootstrap-server", "127.0.0.1:1", "--timeout", "2000", "--list"), 1,
		"isrbroker: list groups: Kafka brokers at 127.0.0.1:1:")
	mustFail(t, run("consumer-groups", "--bootstrap-server", "127.0.0.1:1", "--timeout", "2000", "--describe", "--group", "g"), 1,
		"isrbroker: describe groups: Kafka brokers at 127.0.0.1:1:")
	mustFail(t, run("consumer-groups", "--bootstrap-server", " , ", "--list"), 1, `--bootstrap-server "," names no broker`)
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("took %v", d)
	}
}
