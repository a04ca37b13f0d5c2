package admintool

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"
)

const consumerGroupsDescription = `List, describe and delete consumer groups and reset or delete their offsets, like Kafka 2.4's
kafka-consumer-groups.sh, through the Kafka protocol (--bootstrap-server). Exactly one of
--list, --describe, --delete, --reset-offsets or --delete-offsets is required.

Examples:
  isrbroker consumer-groups --bootstrap-server localhost:9092 --list
  isrbroker consumer-groups --bootstrap-server localhost:9092 --describe --group billing
  isrbroker consumer-groups --bootstrap-server localhost:9092 --describe --all-groups --members --verbose
  isrbroker consumer-groups --bootstrap-server localhost:9092 --describe --group billing --state
  isrbroker consumer-groups --bootstrap-server localhost:9092 --reset-offsets --group billing --topic orders --to-earliest --execute
  isrbroker consumer-groups --bootstrap-server localhost:9092 --reset-offsets --group billing --topic orders:0,1 --shift-by -100
  isrbroker consumer-groups --bootstrap-server localhost:9092 --reset-offsets --group billing --all-topics --to-datetime 2024-05-01T12:00:00.000+02:00 --execute
  isrbroker consumer-groups --bootstrap-server localhost:9092 --delete --group billing
  isrbroker consumer-groups --bootstrap-server localhost:9092 --delete-offsets --group billing --topic orders

--describe prints, per group, one line per partition:
  GROUP    TOPIC   PARTITION  CURRENT-OFFSET  LOG-END-OFFSET  LAG  CONSUMER-ID  HOST  CLIENT-ID
LAG is LOG-END-OFFSET (the high watermark) minus CURRENT-OFFSET (the committed offset); "-"
marks a missing value; partitions with a committed offset but no member show "-" as
consumer. --members prints GROUP CONSUMER-ID HOST CLIENT-ID #PARTITIONS (and ASSIGNMENT with
--verbose); --state prints GROUP COORDINATOR (ID) ASSIGNMENT-STRATEGY STATE #MEMBERS.

--reset-offsets is a dry run unless --execute is given; it prints GROUP TOPIC PARTITION
NEW-OFFSET and is refused while the group has active members. --to-offset, --shift-by and
--from-file offsets are clamped to the partition's log start and end offsets.
--to-datetime takes YYYY-MM-DDTHH:mm:SS.sss with an optional zone (Z, +hh, +hhmm, +hh:mm;
UTC when absent); --by-duration takes PnDTnHnMnS (ISO-8601, e.g. PT30M).
--topic takes a name, or name:p1,p2 to name partitions (repeatable).
--timeout is in milliseconds. Errors are one line on stderr with exit status 1.`

// The Kafka 2.4 behaviour `consumer-groups` follows (requests, tables, messages, reset rules)
// is restated in docs/consumer-groups-tool.md.

// cgTool builds the `consumer-groups` command; stderr receives Kafka's notes and warnings
// (stdout carries only the tables), dial opens the cluster connection.
type cgTool struct {
	stderr io.Writer
	dial   func(bootstrap string, timeout time.Duration) (groupsBackend, error)
	now    func() time.Time // nil: time.Now (the reference of --by-duration)
}

func consumerGroupsCommand() *cli.Command {
	return (&cgTool{stderr: os.Stderr, dial: dialGroupsBackend}).command()
}

var cgActions = []string{"list", "describe", "delete", "reset-offsets", "delete-offsets"}

var cgScenarios = []string{"to-offset", "shift-by", "to-datetime", "by-duration", "to-earliest", "to-latest", "to-current", "from-file"}

func (t *cgTool) command() *cli.Command {
	return &cli.Command{
		Name:        "consumer-groups",
		Usage:       "list, describe or delete consumer groups, reset or delete their offsets (kafka-consumer-groups.sh)",
		Description: consumerGroupsDescription,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "bootstrap-server", Usage: "REQUIRED: Kafka brokers host:port[,host:port]"},
			&cli.Int64Flag{Name: "timeout", Value: 30000, Usage: "give up on a request after this many milliseconds"},
			&cli.BoolFlag{Name: "list", Usage: "list all consumer groups"},
			&cli.BoolFlag{Name: "describe", Usage: "describe consumer groups and their offset lag"},
			&cli.BoolFlag{Name: "delete", Usage: "delete consumer groups (offsets and ownership)"},
			&cli.BoolFlag{Name: "reset-offsets", Usage: "reset the offsets of inactive consumer groups"},
			&cli.BoolFlag{Name: "delete-offsets", Usage: "delete the offsets of one consumer group for topics (KIP-496)"},
			&cli.StringSliceFlag{Name: "group", Usage: "consumer group to act on (repeatable)"},
			&cli.BoolFlag{Name: "all-groups", Usage: "act on all consumer groups"},
			&cli.StringSliceFlag{Name: "topic", Usage: "topic, or topic:p1,p2 (reset-offsets, delete-offsets; repeatable)"},
			&cli.BoolFlag{Name: "all-topics", Usage: "reset-offsets: all topics the group has offsets for"},
			&cli.BoolFlag{Name: "offsets", Usage: "describe: partitions with offsets and lag (the default)"},
			&cli.BoolFlag{Name: "members", Usage: "describe: the group's members"},
			&cli.BoolFlag{Name: "state", Usage: "describe: the group's state"},
			&cli.BoolFlag{Name: "verbose", Usage: "describe --members: also each member's assignment"},
			&cli.BoolFlag{Name: "dry-run", Usage: "reset-offsets: only show the new offsets (the default)"},
			&cli.BoolFlag{Name: "execute", Usage: "reset-offsets: commit the new offsets"},
			&cli.BoolFlag{Name: "export", Usage: "reset-offsets: print the new offsets as CSV (input of --from-file)"},
			&cli.Int64Flag{Name: "to-offset", Usage: "reset to this offset"},
			&cli.Int64Flag{Name: "shift-by", Usage: "reset to the committed offset plus n (n may be negative)"},
			&cli.StringFlag{Name: "to-datetime", Usage: "reset to the first offset at or after YYYY-MM-DDTHH:mm:SS.sss[zone]"},
			&cli.StringFlag{Name: "by-duration", Usage: "reset to the first offset at or after now minus PnDTnHnMnS"},
			&cli.BoolFlag{Name: "to-earliest", Usage: "reset to the log start offset"},
			&cli.BoolFlag{Name: "to-latest", Usage: "reset to the log end offset"},
			&cli.BoolFlag{Name: "to-current", Usage: "reset to the committed offset (the log end offset where none)"},
			&cli.StringFlag{Name: "from-file", Usage: "reset to the offsets of a CSV file: topic,partition,offset or group,topic,partition,offset"},
		},
		Action: t.action,
	}
}

func (t *cgTool) action(c *cli.Context) error {
	o, err := parseCGOptions(c)
	if err != nil {
		return err
	}
	if o.action == "reset-offsets" && !o.execute && !c.Bool("dry-run") {
		fmt.Fprintln(t.stderr, "WARN: No action will be performed as the --execute option is missing. "+
			"In a future major release, the default behavior of this command will be to prompt the user before "+
			"executing the reset rather than doing a dry run. You should add the --dry-run option explicitly "+
			"if you are scripting this command and want to keep the current default behavior without prompting.")
	}
	be, err := t.dial(o.bootstrap, o.timeout)
	if err != nil {
		return err
	}
	defer be.close()
	r := &cgRun{o: o, be: be, out: c.App.Writer, stderr: t.stderr, now: t.now}
	return r.run(c.Context)
}

// cgRun is one execution of `consumer-groups` against a backend.
type cgRun struct {
	o      *cgOptions
	be     groupsBackend
	out    io.Writer
	stderr io.Writer
	now    func() time.Time // nil: time.Now (--by-duration)
}

func (r *cgRun) run(ctx context.Context) error {
	switch r.o.action {
	case "list":
		gs, err := r.be.listGroups(ctx)
		if err != nil {
			return err
		}
		for _, g := range gs {
			fmt.Fprintln(r.out, g)
		}
		return nil
	case "describe":
		return r.describe(ctx)
	case "delete":
		return r.deleteGroups(ctx)
	case "reset-offsets":
		return r.resetOffsets(ctx)
	default:
		return r.deleteOffsets(ctx)
	}
}

// groupIDs returns the --group values, or all consumer groups with --all-groups.
func (r *cgRun) groupIDs(ctx context.Context) ([]string, error) {
	if r.o.allGroups {
		return r.be.listGroups(ctx)
	}
	return r.o.groups, nil
}

// describeAll describes the groups and rejects groups of another protocol type, as
// Kafka's AdminClient.describeConsumerGroups does.
func (r *cgRun) describeAll(ctx context.Context, groups []string) (map[string]groupDescription, error) {
	ds, err := r.be.describeGroups(ctx, groups)
	if err != nil {
		return nil, err
	}
	for _, g := range groups {
		d := ds[g]
		if d.ProtocolType != "consumer" && d.ProtocolType != "" {
			return nil, failf("Group '%s' is not a consumer group (protocol type %s).", g, d.ProtocolType)
		}
	}
	return ds, nil
}

// memberStateNote prints Kafka's note for the group state to stderr and reports whether
// the group's table is printed (rows > 0 and the group is not Dead). A Dead group is
// returned as missing.
func (r *cgRun) memberStateNote(group, state string, rows int) (show, missing bool, err error) {
	switch state {
	case "Dead":
		return false, true, nil
	case "Empty":
		fmt.Fprintf(r.stderr, "\nConsumer group '%s' has no active members.\n", group)
	case "PreparingRebalance", "CompletingRebalance":
		fmt.Fprintf(r.stderr, "\nWarning: Consumer group '%s' is rebalancing.\n", group)
	case "Stable":
	default:
		return false, false, failf("Expected a valid consumer group state, but found '%s'.", state)
	}
	return rows > 0, false, nil
}

func (r *cgRun) describe(ctx context.Context) error {
	groups, err := r.groupIDs(ctx)
	if err != nil || len(groups) == 0 {
		return err
	}
	ds, err := r.describeAll(ctx, groups)
	if err != nil {
		return err
	}
	var missing []string
	for _, g := range sortedUnique(groups) {
		d := ds[g]
		var rows int
		var offsets []offsetRow
		switch r.o.view {
		case "offsets":
			if d.State != "Dead" {
				if offsets, err = r.offsetRows(ctx, d); err != nil {
					return err
				}
			}
			rows = len(offsets)
		case "members":
			rows = len(d.Members)
		default:
			rows = 1
		}
		show, gone, err := r.memberStateNote(g, d.State, rows)
		if err != nil {
			return err
		}
		if gone {
			missing = append(missing, g)
			continue
		}
		if !show {
			continue
		}
		switch r.o.view {
		case "offsets":
			writeOffsetRows(r.out, offsets)
		case "members":
			writeMembers(r.out, d, r.o.verbose)
		default:
			writeState(r.out, d)
		}
	}
	return missingGroupsErr(missing)
}

func missingGroupsErr(missing []string) error {
	switch len(missing) {
	case 0:
		return nil
	case 1:
		return failf("Consumer group '%s' does not exist.", missing[0])
	default:
		return failf("Consumer groups '%s' do not exist.", strings.Join(missing, "', '"))
	}
}

func sortedUnique(ss []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range ss {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	sortStrings(out)
	return out
}

// offsetRows collects the --describe rows of one group: committed offsets, log end
// offsets and the members' assignments.
func (r *cgRun) offsetRows(ctx context.Context, d groupDescription) ([]offsetRow, error) {
	committed, err := r.be.committedOffsets(ctx, d.Group)
	if err != nil {
		return nil, err
	}
	var ps []topicPartition
	for p := range committed {
		ps = append(ps, p)
	}
	for _, m := range d.Members {
		ps = append(ps, m.Assignment...)
	}
	leo, err := r.be.endOffsets(ctx, ps)
	if err != nil {
		return nil, err
	}
	return describeOffsetRows(d, committed, leo), nil
}

func (r *cgRun) deleteGroups(ctx context.Context) error {
	groups, err := r.groupIDs(ctx)
	if err != nil || len(groups) == 0 {
		return err
	}
	groups = sortedUnique(groups)
	res, err := r.be.deleteGroups(ctx, groups)
	if err != nil {
		return err
	}
	var ok, failed []string
	for _, g := range groups {
		if res[g] == nil {
			ok = append(ok, g)
		} else {
			failed = append(failed, g)
		}
	}
	if len(failed) == 0 {
		fmt.Fprintf(r.out, "Deletion of requested consumer groups ('%s') was successful.\n", strings.Join(ok, "', '"))
		return nil
	}
	for _, g := range failed {
		fmt.Fprintf(r.out, "* Group '%s' could not be deleted due to: %s\n", g, groupErrText(res[g]))
	}
	if len(ok) > 0 {
		fmt.Fprintf(r.out, "\nThese consumer groups were deleted successfully: '%s'\n", strings.Join(ok, "', '"))
	}
	if len(failed) == 1 {
		return failf("Deletion of some consumer groups failed: group '%s': %s", failed[0], groupErrText(res[failed[0]]))
	}
	return failf("Deletion of some consumer groups failed: groups '%s'", strings.Join(failed, "', '"))
}

// groupErrText renders a Kafka error code as "NAME: description" (kerr's text).
func groupErrText(err error) string {
	if err == nil {
		return ""
	}
	return oneLine(err.Error())
}

func (r *cgRun) deleteOffsets(ctx context.Context) error {
	group := r.o.groups[0]
	args, _ := parseTopicArgs(r.o.topics)
	type row struct {
		tp  topicPartition // Partition -1: the topic's partitions could not be listed
		err error
	}
	var rows []row
	var ps []topicPartition
	seen := map[topicPartition]bool{}
	add := func(p topicPartition) {
		if !seen[p] {
			seen[p] = true
			ps = append(ps, p)
		}
	}
	for _, a := range args {
		if a.Partitions != nil {
			for _, p := range a.Partitions {
				add(topicPartition{a.Topic, p})
			}
			continue
		}
		ids, err := r.be.partitions(ctx, a.Topic)
		if err != nil {
			var ee *exitError
			if errors.As(err, &ee) {
				return err
			}
			rows = append(rows, row{topicPartition{a.Topic, -1}, err})
			continue
		}
		for _, p := range ids {
			add(topicPartition{a.Topic, p})
		}
	}
	var groupErr error
	if len(ps) > 0 {
		var perPartition map[topicPartition]error
		var err error
		groupErr, perPartition, err = r.be.deleteOffsets(ctx, group, ps)
		if err != nil {
			return err
		}
		for _, p := range ps {
			e, ok := perPartition[p]
			if groupErr != nil && !ok {
				e = groupErr
			}
			rows = append(rows, row{p, e})
		}
	}
	failed := 0
	for _, rw := range rows {
		if rw.err != nil {
			failed++
		}
	}
	if groupErr == nil && failed == 0 {
		fmt.Fprintf(r.out, "Request succeed for deleting offsets with topic %s group %s\n", strings.Join(r.o.topics, ", "), group)
	}
	fmt.Fprintf(r.out, "\n%-30s %-15s %-15s\n", "TOPIC", "PARTITION", "STATUS")
	sortRows := make([]topicPartition, len(rows))
	byTP := map[topicPartition]error{}
	for i, rw := range rows {
		sortRows[i] = rw.tp
		byTP[rw.tp] = rw.err
	}
	sortPartitions(sortRows)
	for _, p := range sortRows {
		part := strconv.Itoa(int(p.Partition))
		if p.Partition < 0 {
			part = "Not Provided"
		}
		status := "Successful"
		if e := byTP[p]; e != nil {
			status = "Error: " + groupErrText(e)
		}
		fmt.Fprintf(r.out, "%-30s %-15s %-15s\n", p.Topic, part, status)
	}
	if groupErr != nil {
		return failf("%s", deleteOffsetsGroupMessage(group, groupErr))
	}
	if failed > 0 {
		return failf("Encounter some partition level error, see the follow-up details: %d of %d partitions failed", failed, len(rows))
	}
	return nil
}
