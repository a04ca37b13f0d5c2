package admintool

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/isrbroker/isrbroker/zkcoord/admin"
	"github.com/isrbroker/isrbroker/zkcoord/zkdata"
)

// `isrbroker reassign-partitions` is Kafka 2.4's kafka-reassign-partitions.sh --zookeeper
// (ReassignPartitionsCommand; docs/kafka-facts.md §8): --generate proposes a plan, --execute
// writes /admin/reassign_partitions (and the replication throttle) for the controller to
// carry out, --verify reports each partition and removes the throttle once nothing is left
// in progress (issue 4 item 2).

const reassignDescription = `Move partition replicas between brokers, like Kafka 2.4's kafka-reassign-partitions.sh
--zookeeper. Exactly one of --generate, --execute or --verify is required.

  --generate --topics-to-move-json-file F --broker-list "1,2,3" [--disable-rack-aware]
      F is {"version":1,"topics":[{"topic":"foo"}]}. Prints the current assignment of those
      topics and a proposed one spreading them over the listed brokers (Kafka's assignment
      algorithm, same replication factor). Nothing is changed.
  --execute --reassignment-json-file F [--throttle BYTES_PER_SEC]
      F is {"version":1,"partitions":[{"topic":"foo","partition":0,"replicas":[2,3,4]}]}.
      Prints the current assignment (save it to roll back) and starts the reassignment.
      Refused while another reassignment runs. Increasing the replication factor is a
      reassignment to a longer replica list. --throttle writes Kafka's throttle settings
      for the moving replicas (leader/follower.replication.throttled.*); the brokers limit
      the replication traffic of replicas outside the ISR to that rate.
  --verify --reassignment-json-file F
      Reports every partition of F: completed successfully, still in progress, or failed.
      Exit status 0 only when all completed. Once none is in progress, the throttle is
      removed.

The controller adds the new replicas, which join the ISR once caught up; only then does
leadership move and the old replicas are removed and their logs deleted.
With --bootstrap-server B instead of --zookeeper (Kafka 2.5's KIP-455 mode):
  --execute --reassignment-json-file F [--throttle BYTES_PER_SEC]
      Prints the current assignment and sends AlterPartitionReassignments to the controller.
      --throttle sets the same throttle configs as with --zookeeper, through
      IncrementalAlterConfigs.
  --verify --reassignment-json-file F
      "Reassignment of partition t-0 is complete." or "... is still in progress.", then for
      each adding replica the bytes and offsets copied so far and left (log sizes from
      DescribeLogDirs, LEOs from ListOffsets). Exit status 0 only when all completed. Once
      none is in progress, the throttle is removed.
  --cancel --reassignment-json-file F
      Cancels the plan's partitions still moving: the original replicas are restored and
      the adding replicas deleted.

Errors are one line on stderr with exit status 1.`

func reassignCommand() *cli.Command {
	flags := zkFlags()
	flags = append(flags,
		&cli.BoolFlag{Name: "generate", Usage: "propose a reassignment of --topics-to-move-json-file over --broker-list"},
		&cli.BoolFlag{Name: "execute", Usage: "start the reassignment of --reassignment-json-file"},
		&cli.BoolFlag{Name: "verify", Usage: "report the status of the reassignment of --reassignment-json-file"},
		&cli.StringFlag{Name: "topics-to-move-json-file", Usage: `--generate: JSON file {"version":1,"topics":[{"topic":"foo"}]}`},
		&cli.StringFlag{Name: "broker-list", Usage: `--generate: target broker ids, e.g. "1,2,3"`},
		&cli.BoolFlag{Name: "disable-rack-aware", Usage: "--generate: ignore the brokers' racks (broker.rack)"},
		&cli.StringFlag{Name: "reassignment-json-file", Usage: "--execute/--verify: the reassignment plan (Kafka's JSON)"},
		&cli.Int64Flag{Name: "throttle", Value: -1, Usage: "--execute: replication throttle in bytes/s for the moving replicas"},
		&cli.StringFlag{Name: "bootstrap-server", Usage: "use the Kafka protocol (KIP-455) instead of --zookeeper: host:port[,host:port]"},
		&cli.BoolFlag{Name: "cancel", Usage: "--bootstrap-server: cancel the reassignment of the partitions of --reassignment-json-file"},
		&cli.DurationFlag{Name: "timeout", Value: 30 * time.Second, Usage: "with --bootstrap-server: give up after this time"},
	)
	return &cli.Command{
		Name:        "reassign-partitions",
		Usage:       "move partition replicas between brokers (kafka-reassign-partitions.sh)",
		Description: reassignDescription,
		Flags:       flags,
		Action:      reassignAction,
	}
}

func reassignAction(c *cli.Context) error {
	if c.NArg() > 0 {
		return failf("unexpected argument %q (flags only; see isrbroker reassign-partitions --help)", c.Args().First())
	}
	var verbs []string
	for _, v := range []string{"generate", "execute", "verify", "cancel"} {
		if c.Bool(v) {
			verbs = append(verbs, v)
		}
	}
	if len(verbs) != 1 {
		return failf("exactly one of --generate, --execute, --verify or --cancel is required")
	}
	verb := verbs[0]
	kafka := strings.TrimSpace(c.String("bootstrap-server")) != ""
	switch {
	case kafka && strings.TrimSpace(c.String("zookeeper")) != "":
		return failf("only one of --zookeeper or --bootstrap-server may be given")
	case kafka && verb == "generate":
		return failf("--bootstrap-server supports --execute, --verify and --cancel; use --zookeeper for --generate")
	case !kafka && verb == "cancel":
		return failf("--cancel needs --bootstrap-server")
	case !kafka && strings.TrimSpace(c.String("zookeeper")) == "":
		return failf("--zookeeper or --bootstrap-server is required")
	}
	if c.IsSet("throttle") && verb != "execute" {
		return failf("--throttle is only valid with --execute")
	}
	if c.IsSet("throttle") && c.Int64("throttle") <= 0 {
		return failf("invalid --throttle %d: must be a positive number of bytes per second", c.Int64("throttle"))
	}
	var (
		plan     []admin.PartitionReassignment
		topics   []string
		brokers  []int32
		planFile = c.String("reassignment-json-file")
	)
	switch verb {
	case "generate":
		if c.String("topics-to-move-json-file") == "" || c.String("broker-list") == "" {
			return failf("--generate needs --topics-to-move-json-file and --broker-list")
		}
		var err error
		if topics, err = readTopicsToMove(c.String("topics-to-move-json-file")); err != nil {
			return err
		}
		if brokers, err = parseBrokerList(c.String("broker-list")); err != nil {
			return err
		}
	default:
		if planFile == "" {
			return failf("--%s needs --reassignment-json-file", verb)
		}
		var err error
		if plan, err = readReassignmentFile(planFile); err != nil {
			return err
		}
	}
	if kafka {
		return reassignKafka(c, verb, plan)
	}
	coord, err := connectZK(c)
	if err != nil {
		return err
	}
	defer coord.Close()
	out := c.App.Writer
	switch verb {
	case "generate":
		return doGenerate(c, coord, out, topics, brokers)
	case "execute":
		return doExecute(c, coord, out, plan)
	default:
		return doVerify(c, coord, out, plan)
	}
}

// readFile reads an operator's file with a one-line error.
func readFile(flag, path string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, failf("cannot read --%s %s: %v", flag, path, err)
	}
	return data, nil
}

// jsonError turns a JSON decoding error into one line naming the line and column (syntax
// and type errors) or the field (missing or invalid fields).
func jsonError(flag, path string, data []byte, err error) error {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	var fe *zkdata.ReassignmentFieldError
	switch {
	case errors.As(err, &se):
		line, col := lineCol(data, se.Offset)
		return failf("invalid JSON in --%s %s: line %d, column %d: %s", flag, path, line, col, se.Error())
	case errors.As(err, &te):
		line, col := lineCol(data, te.Offset)
		field := te.Field
		if field == "" {
			field = "(top level)"
		}
		return failf("invalid JSON in --%s %s: line %d, column %d: field %s: expected %s, got %s", flag, path, line, col, field, te.Type, te.Value)
	case errors.As(err, &fe):
		return failf("invalid --%s %s: %s", flag, path, fe.Error())
	default:
		return failf("invalid --%s %s: %v", flag, path, err)
	}
}

// lineCol converts a byte offset (json's "after the offending byte" for syntax errors) into
// a 1-based line and column.
func lineCol(data []byte, off int64) (line, col int) {
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	if off < 0 {
		off = 0
	}
	line, col = 1, 1
	for _, b := range data[:off] {
		if b == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	if col > 1 {
		col-- // the offset is just past the offending byte
	}
	return line, col
}

func readReassignmentFile(path string) ([]admin.PartitionReassignment, error) {
	const flag = "reassignment-json-file"
	data, err := readFile(flag, path)
	if err != nil {
		return nil, err
	}
	plan, err := zkdata.DecodeReassignment(data)
	if err != nil {
		return nil, jsonError(flag, path, data, err)
	}
	if len(plan) == 0 {
		return nil, failf("invalid --%s %s: the partition list is empty", flag, path)
	}
	return plan, nil
}

// readTopicsToMove parses {"version":1,"topics":[{"topic":"foo"}]}.
func readTopicsToMove(path string) ([]string, error) {
	const flag = "topics-to-move-json-file"
	data, err := readFile(flag, path)
	if err != nil {
		return nil, err
	}
	var doc struct {
		Version *int `json:"version"`
		Topics  *[]struct {
			Topic *string `json:"topic"`
		} `json:"topics"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, jsonError(flag, path, data, err)
	}
	if doc.Version != nil && *doc.Version != 1 {
		return nil, failf("invalid --%s %s: field version: unsupported version %d (want 1)", flag, path, *doc.Version)
	}
	if doc.Topics == nil || len(*doc.Topics) == 0 {
		return nil, failf("invalid --%s %s: field topics: missing or empty", flag, path)
	}
	var topics []string
	for i, t := range *doc.Topics {
		if t.Topic == nil || *t.Topic == "" {
			return nil, failf("invalid --%s %s: field topics[%d].topic: missing", flag, path, i)
		}
		if slices.Contains(topics, *t.Topic) {
			return nil, failf("invalid --%s %s: topic %q is listed twice", flag, path, *t.Topic)
		}
		topics = append(topics, *t.Topic)
	}
	sort.Strings(topics)
	return topics, nil
}

// parseBrokerList parses --broker-list "1,2,3".
func parseBrokerList(s string) ([]int32, error) {
	var out []int32
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		id, err := strconv.ParseInt(part, 10, 32)
		if err != nil || id < 0 {
			return nil, failf("invalid --broker-list %q: %q is not a broker id", s, part)
		}
		if slices.Contains(out, int32(id)) {
			return nil, failf("invalid --broker-list %q: broker %d is listed twice", s, id)
		}
		out = append(out, int32(id))
	}
	return out, nil
}

func doGenerate(c *cli.Context, coord *admin.Session, out io.Writer, topics []string, brokers []int32) error {
	live, registered, err := liveSet(coord)
	if err != nil {
		return zkErr(c, err)
	}
	for _, id := range brokers {
		if !live[id] {
			return failf("--broker-list names broker %d, which is not registered (dead or unknown)", id)
		}
	}
	// Kafka's generateAssignment: the listed brokers' racks, enforced unless --disable-rack-aware.
	mode := admin.RackAwareEnforced
	if c.Bool("disable-rack-aware") {
		mode = admin.RackAwareDisabled
	}
	racks, err := admin.BrokerRacks(registered, mode, brokers)
	if err != nil {
		return failf("%s", clean(err))
	}
	var current, proposed []admin.PartitionReassignment
	for _, t := range topics {
		a, err := coord.Reader.TopicAssignment(t)
		if errors.Is(err, admin.ErrUnknownTopic) {
			return failf("topic %q does not exist", t)
		}
		if err != nil {
			return zkErr(c, err)
		}
		if len(a) == 0 || len(a[0]) == 0 {
			return failf("topic %q has no partition 0 in its assignment", t)
		}
		rf := len(a[0])
		if rf > len(brokers) {
			return failf("topic %q has replication factor %d, larger than the %d brokers in --broker-list", t, rf, len(brokers))
		}
		next, err := admin.AssignReplicas(racks, int32(len(a)), rf, -1, 0)
		if err != nil {
			return failf("topic %q: %s", t, clean(err))
		}
		for p, r := range a {
			current = append(current, admin.PartitionReassignment{Topic: t, Partition: p, Replicas: r})
			proposed = append(proposed, admin.PartitionReassignment{Topic: t, Partition: p, Replicas: next[p]})
		}
	}
	fmt.Fprintf(out, "Current partition replica assignment\n%s\n\n", zkdata.EncodeReassignment(current))
	fmt.Fprintf(out, "Proposed partition reassignment configuration\n%s\n", zkdata.EncodeReassignment(proposed))
	return nil
}

func doExecute(c *cli.Context, coord *admin.Session, out io.Writer, plan []admin.PartitionReassignment) error {
	throttle := c.Int64("throttle")
	_, running, err := coord.Reader.ReassignmentInProgress()
	if err != nil && !running {
		return zkErr(c, err)
	}
	if running {
		// Like Kafka, a running reassignment still gets the new throttle rate.
		if throttle > 0 {
			current, err := coord.Admin.CurrentAssignment(plan)
			if err == nil {
				brokers, _, _ := throttleTargets(current, plan)
				if err := coord.Admin.SetBrokerThrottleRate(throttle, brokers); err != nil {
					return zkErr(c, err)
				}
				fmt.Fprintf(out, "The inter-broker throttle limit was set to %d B/s\n", throttle)
			}
		}
		return failf("There is an existing assignment running.")
	}
	if err := coord.Admin.ValidateReassignment(plan); err != nil {
		return reassignErr(c, err)
	}
	current, err := coord.Admin.CurrentAssignment(plan)
	if err != nil {
		return reassignErr(c, err)
	}
	fmt.Fprintf(out, "Current partition replica assignment\n\n%s\n\nSave this to use as the --reassignment-json-file option during rollback\n",
		zkdata.EncodeReassignment(current))
	if throttle > 0 {
		brokers, leaders, followers := throttleTargets(current, plan)
		if err := coord.Admin.SetReassignmentThrottle(throttle, brokers, leaders, followers); err != nil {
			return zkErr(c, err)
		}
		fmt.Fprintln(out, "Warning: You must run Verify periodically, until the reassignment completes, to ensure the throttle is removed. You can also alter the throttle by rerunning the Execute command passing a new value.")
		fmt.Fprintf(out, "The inter-broker throttle limit was set to %d B/s\n", throttle)
	}
	if err := coord.Admin.StartReassignment(c.Context, plan); err != nil {
		return reassignErr(c, err)
	}
	fmt.Fprintln(out, "Successfully started reassignment of partitions.")
	return nil
}

// throttleTargets computes Kafka's throttle scope: the brokers of the current and proposed
// replicas, per topic the pre-move replicas of the moving partitions (leader side) and the
// replicas they move to (follower side).
func throttleTargets(current, plan []admin.PartitionReassignment) (brokers []int32, leaders, followers map[string]map[int32][]int32) {
	leaders, followers = map[string]map[int32][]int32{}, map[string]map[int32][]int32{}
	cur := map[admin.TopicPartition][]int32{}
	for _, p := range current {
		cur[admin.TopicPartition{Topic: p.Topic, Partition: p.Partition}] = p.Replicas
	}
	add := func(id int32) {
		if !slices.Contains(brokers, id) {
			brokers = append(brokers, id)
		}
	}
	for _, p := range plan {
		old := cur[admin.TopicPartition{Topic: p.Topic, Partition: p.Partition}]
		for _, r := range old {
			add(r)
		}
		for _, r := range p.Replicas {
			add(r)
		}
		if slices.Equal(old, p.Replicas) {
			continue
		}
		if leaders[p.Topic] == nil {
			leaders[p.Topic], followers[p.Topic] = map[int32][]int32{}, map[int32][]int32{}
		}
		leaders[p.Topic][p.Partition] = slices.Clone(old)
		for _, r := range p.Replicas {
			if !slices.Contains(old, r) {
				followers[p.Topic][p.Partition] = append(followers[p.Topic][p.Partition], r)
			}
		}
	}
	slices.Sort(brokers)
	return brokers, leaders, followers
}

// reassignErr maps zkcoord's validation errors to one line.
func reassignErr(c *cli.Context, err error) error {
	switch {
	case errors.Is(err, admin.ErrReassignmentInProgress):
		return failf("There is an existing assignment running.")
	case errors.Is(err, admin.ErrInvalidReplicaAssignment), errors.Is(err, admin.ErrUnknownTopic):
		return failf("%s", clean(err))
	default:
		return zkErr(c, err)
	}
}

func doVerify(c *cli.Context, coord *admin.Session, out io.Writer, plan []admin.PartitionReassignment) error {
	running, _, err := coord.Reader.ReassignmentInProgress()
	if err != nil {
		return zkErr(c, err)
	}
	inProgress := map[admin.TopicPartition]bool{}
	for _, p := range running {
		inProgress[admin.TopicPartition{Topic: p.Topic, Partition: p.Partition}] = true
	}
	sorted := slices.Clone(plan)
	sort.Slice(sorted, func(i, j int) bool {
		if sorted[i].Topic != sorted[j].Topic {
			return sorted[i].Topic < sorted[j].Topic
		}
		return sorted[i].Partition < sorted[j].Partition
	})
	fmt.Fprintln(out, "Status of partition reassignment:")
	var nProgress, nFailed int
	var topics []string
	for _, p := range sorted {
		if !slices.Contains(topics, p.Topic) {
			topics = append(topics, p.Topic)
		}
		name := fmt.Sprintf("%s-%d", p.Topic, p.Partition)
		if inProgress[admin.TopicPartition{Topic: p.Topic, Partition: p.Partition}] {
			nProgress++
			fmt.Fprintf(out, "Reassignment of partition %s is still in progress\n", name)
			continue
		}
		a, err := coord.Reader.TopicAssignment(p.Topic)
		if err != nil && !errors.Is(err, admin.ErrUnknownTopic) {
			return zkErr(c, err)
		}
		if slices.Equal(a[p.Partition], p.Replicas) {
			fmt.Fprintf(out, "Reassignment of partition %s completed successfully\n", name)
		} else {
			nFailed++
			fmt.Fprintf(out, "Reassignment of partition %s failed\n", name)
		}
	}
	if nProgress == 0 {
		removed, err := coord.Admin.ClearReassignmentThrottle(topics)
		if err != nil {
			return zkErr(c, err)
		}
		if removed {
			fmt.Fprintln(out, "Throttle was removed.")
		}
	}
	switch {
	case nProgress > 0:
		return failf("reassignment of %d of %d partitions is still in progress", nProgress, len(plan))
	case nFailed > 0:
		return failf("reassignment of %d of %d partitions failed", nFailed, len(plan))
	}
	return nil
}
