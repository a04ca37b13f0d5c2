package admintool

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/urfave/cli/v2"
)

// partitionInfo is one partition as --describe prints it.
type partitionInfo struct {
	ID       int32
	Leader   int32 // -1: none
	Replicas []int32
	ISR      []int32
}

// topicInfo is one topic as --describe prints it.
type topicInfo struct {
	Name              string
	Partitions        []partitionInfo // sorted by id
	Configs           map[string]string
	MarkedForDeletion bool
	Internal          bool
}

func (t topicInfo) replicationFactor() int {
	if len(t.Partitions) == 0 {
		return 0
	}
	return len(t.Partitions[0].Replicas)
}

// topicBackend is what the topics verbs need from ZooKeeper or from the Kafka protocol.
type topicBackend interface {
	// names returns all topic names with their marked-for-deletion and internal flags.
	names(ctx context.Context) ([]topicInfo, error)
	// describe fills the partitions and configs of the named (existing) topics and returns
	// the live broker ids.
	describe(ctx context.Context, topics []string) ([]topicInfo, map[int32]bool, error)
	create(ctx context.Context, name string, partitions int32, rf int16, assignment map[int32][]int32, configs map[string]string) error
	delete(ctx context.Context, name string) error
	addPartitions(ctx context.Context, name string, n int32, assignment map[int32][]int32) error
	close()
}

const topicsDescription = `Create, delete, describe, change or list topics, like Kafka 2.4's kafka-topics.sh.
Exactly one of --create, --list, --describe, --delete or --alter is required, and either
--zookeeper (reads and writes the znodes, like kafka-topics.sh --zookeeper) or
--bootstrap-server (through the Kafka protocol).

Examples:
  isrbroker topics --zookeeper localhost:2181 --create --topic orders --partitions 6 --replication-factor 3 --config min.insync.replicas=2
  isrbroker topics --zookeeper localhost:2181 --create --topic pinned --replica-assignment 1:2:3,2:3:1,3:1:2
  isrbroker topics --zookeeper localhost:2181 --create --topic norack --partitions 6 --replication-factor 3 --disable-rack-aware
  isrbroker topics --zookeeper localhost:2181 --list
  isrbroker topics --zookeeper localhost:2181 --describe --topic orders
  isrbroker topics --zookeeper localhost:2181 --describe --under-replicated-partitions
  isrbroker topics --zookeeper localhost:2181 --describe --under-min-isr-partitions
  isrbroker topics --zookeeper localhost:2181 --describe --unavailable-partitions
  isrbroker topics --zookeeper localhost:2181 --alter --topic orders --partitions 12
  isrbroker topics --zookeeper localhost:2181 --delete --topic orders
  isrbroker topics --bootstrap-server localhost:9092 --describe --topic orders

--describe prints, per topic, a header line and one line per partition:
  Topic: orders	PartitionCount: 2	ReplicationFactor: 3	Configs: min.insync.replicas=2
  	Topic: orders	Partition: 0	Leader: 1	Replicas: 1,2,3	Isr: 1,2,3
  	Topic: orders	Partition: 1	Leader: none	Replicas: 2,3,1	Isr: 2
With --under-replicated-partitions (ISR smaller than the replicas), --under-min-isr-partitions
(ISR smaller than the topic's min.insync.replicas, default 1; partitions without a live
leader count too), --at-min-isr-partitions or --unavailable-partitions (no leader, or the
leader is not a live broker) only matching partition lines are printed.

--topic takes a topic name or a regular expression matching whole names.
Errors are one line on stderr with exit status 1.`

func topicsCommand() *cli.Command {
	flags := zkFlags()
	flags = append(flags,
		&cli.StringFlag{Name: "bootstrap-server", Usage: "Kafka brokers host:port[,host:port] to talk to instead of ZooKeeper"},
		&cli.DurationFlag{Name: "timeout", Value: 30 * time.Second, Usage: "with --bootstrap-server: give up after this time"},
		&cli.BoolFlag{Name: "create", Usage: "create a topic"},
		&cli.BoolFlag{Name: "list", Usage: "list topics"},
		&cli.BoolFlag{Name: "describe", Usage: "describe topics"},
		&cli.BoolFlag{Name: "delete", Usage: "mark a topic for deletion"},
		&cli.BoolFlag{Name: "alter", Usage: "add partitions to a topic (with --partitions)"},
		&cli.StringFlag{Name: "topic", Usage: "topic name, or a regular expression (describe, delete, alter, list)"},
		&cli.IntFlag{Name: "partitions", Usage: "number of partitions (create; alter: the new, larger count)"},
		&cli.IntFlag{Name: "replication-factor", Usage: "replication factor of a new topic"},
		&cli.StringFlag{Name: "replica-assignment", Usage: "explicit assignment: broker lists per partition, e.g. 1:2:3,2:3:1 (create, alter)"},
		&cli.StringSliceFlag{Name: "config", Usage: "topic config override key=value for --create (repeatable)"},
		&cli.BoolFlag{Name: "disable-rack-aware", Usage: "create/alter with --zookeeper: assign replicas without the brokers' racks (rack-aware by default, KIP-36)"},
		&cli.BoolFlag{Name: "if-exists", Usage: "alter/delete/describe: do nothing when the topic does not exist"},
		&cli.BoolFlag{Name: "if-not-exists", Usage: "create: do nothing when the topic exists"},
		&cli.BoolFlag{Name: "exclude-internal", Usage: "list/describe: leave out internal topics"},
		&cli.BoolFlag{Name: "under-replicated-partitions", Usage: "describe: only partitions whose ISR is smaller than their replicas"},
		&cli.BoolFlag{Name: "under-min-isr-partitions", Usage: "describe: only partitions whose ISR is smaller than min.insync.replicas"},
		&cli.BoolFlag{Name: "at-min-isr-partitions", Usage: "describe: only partitions whose ISR size equals min.insync.replicas"},
		&cli.BoolFlag{Name: "unavailable-partitions", Usage: "describe: only partitions without a live leader"},
		&cli.BoolFlag{Name: "topics-with-overrides", Usage: "describe: only topics with config overrides, header lines only"},
	)
	return &cli.Command{
		Name:        "topics",
		Usage:       "create, delete, describe, alter or list topics (kafka-topics.sh)",
		Description: topicsDescription,
		Flags:       flags,
		Action:      topicsAction,
	}
}

func topicsAction(c *cli.Context) error {
	if c.NArg() > 0 {
		return failf("unexpected argument %q (flags only; see isrbroker topics --help)", c.Args().First())
	}
	var verbs []string
	for _, v := range []string{"create", "list", "describe", "delete", "alter"} {
		if c.Bool(v) {
			verbs = append(verbs, v)
		}
	}
	if len(verbs) != 1 {
		return failf("exactly one of --create, --list, --describe, --delete or --alter is required")
	}
	verb := verbs[0]
	zkc, bs := strings.TrimSpace(c.String("zookeeper")), strings.TrimSpace(c.String("bootstrap-server"))
	if (zkc == "") == (bs == "") {
		return failf("exactly one of --zookeeper or --bootstrap-server is required")
	}
	if (verb == "create" || verb == "delete" || verb == "alter") && c.String("topic") == "" {
		return failf("--%s needs --topic", verb)
	}
	var assignment map[int32][]int32
	if s := c.String("replica-assignment"); c.IsSet("replica-assignment") {
		if verb != "create" && verb != "alter" {
			return failf("--replica-assignment is only valid with --create or --alter")
		}
		a, err := parseReplicaAssignment(s)
		if err != nil {
			return failf("%s", err)
		}
		assignment = a
	}
	if verb == "create" && assignment == nil && zkc != "" && (!c.IsSet("partitions") || !c.IsSet("replication-factor")) {
		return failf("--create needs --partitions and --replication-factor, or --replica-assignment")
	}
	if verb == "create" && assignment != nil && (c.IsSet("partitions") || c.IsSet("replication-factor")) {
		return failf("--replica-assignment cannot be combined with --partitions or --replication-factor on --create")
	}
	if verb == "alter" && !c.IsSet("partitions") {
		return failf("--alter needs --partitions N (isrbroker changes topic configs only at --create)")
	}
	if c.Bool("disable-rack-aware") && (verb != "create" && verb != "alter" || zkc == "") {
		return failf("--disable-rack-aware is only valid with --create or --alter and --zookeeper")
	}
	if c.IsSet("config") && verb != "create" {
		return failf("--config is only valid with --create (alter topic configs is not supported)")
	}
	configs, err := parseConfigs(c.StringSlice("config"))
	if err != nil {
		return failf("%s", err)
	}

	var be topicBackend
	if zkc != "" {
		coord, err := connectZK(c)
		if err != nil {
			return err
		}
		be = &zkBackend{c: c, coord: coord}
	} else {
		kb, err := newKafkaBackend(c, bs)
		if err != nil {
			return err
		}
		be = kb
	}
	defer be.close()
	ctx := c.Context
	out := c.App.Writer

	switch verb {
	case "create":
		return doCreate(ctx, c, be, out, assignment, configs)
	case "list":
		return doList(ctx, c, be, out)
	case "describe":
		return doDescribe(ctx, c, be, out)
	case "delete":
		return doDelete(ctx, c, be, out)
	default:
		return doAlter(ctx, c, be, out, assignment)
	}
}

// selectTopics returns the existing topics --topic selects (all when it is unset). An
// explicit --topic that selects nothing is an error unless --if-exists.
func selectTopics(ctx context.Context, c *cli.Context, be topicBackend) ([]topicInfo, error) {
	all, err := be.names(ctx)
	if err != nil {
		return nil, err
	}
	spec := c.String("topic")
	match, _ := topicMatcher(spec)
	var out []topicInfo
	for _, t := range all {
		if !match(t.Name) || (c.Bool("exclude-internal") && t.Internal) {
			continue
		}
		out = append(out, t)
	}
	if spec != "" && len(out) == 0 && !c.Bool("if-exists") {
		return nil, failf("topic %q does not exist", spec)
	}
	return out, nil
}

func doCreate(ctx context.Context, c *cli.Context, be topicBackend, out io.Writer, assignment map[int32][]int32, configs map[string]string) error {
	name := c.String("topic")
	if c.Bool("if-not-exists") {
		all, err := be.names(ctx)
		if err != nil {
			return err
		}
		for _, t := range all {
			if t.Name == name {
				return nil
			}
		}
	}
	if strings.ContainsAny(name, "._") {
		fmt.Fprintln(out, "WARNING: Due to limitations in metric names, topics with a period ('.') or underscore ('_') could collide. To avoid issues it is best to use either, but not both.")
	}
	p, rf := int32(-1), int16(-1)
	if c.IsSet("partitions") {
		if c.Int("partitions") <= 0 || c.Int("partitions") > 1<<31-1 {
			return failf("--partitions must be larger than 0")
		}
		p = int32(c.Int("partitions"))
	}
	if c.IsSet("replication-factor") {
		if c.Int("replication-factor") <= 0 || c.Int("replication-factor") > 1<<15-1 {
			return failf("--replication-factor must be between 1 and 32767")
		}
		rf = int16(c.Int("replication-factor"))
	}
	if err := be.create(ctx, name, p, rf, assignment, configs); err != nil {
		return err
	}
	fmt.Fprintf(out, "Created topic %s.\n", name)
	return nil
}

func doList(ctx context.Context, c *cli.Context, be topicBackend, out io.Writer) error {
	ts, err := selectTopics(ctx, c, be)
	if err != nil {
		return err
	}
	for _, t := range ts {
		if t.MarkedForDeletion {
			fmt.Fprintf(out, "%s - marked for deletion\n", t.Name)
		} else {
			fmt.Fprintln(out, t.Name)
		}
	}
	return nil
}

func doDelete(ctx context.Context, c *cli.Context, be topicBackend, out io.Writer) error {
	ts, err := selectTopics(ctx, c, be)
	if err != nil {
		return err
	}
	for _, t := range ts {
		if t.Internal {
			return failf("topic %s is an internal topic and cannot be deleted", t.Name)
		}
		if err := be.delete(ctx, t.Name); err != nil {
			return err
		}
		fmt.Fprintf(out, "Topic %s is marked for deletion.\n", t.Name)
		fmt.Fprintln(out, "Note: This will have no impact if delete.topic.enable is not set to true.")
	}
	return nil
}

func doAlter(ctx context.Context, c *cli.Context, be topicBackend, out io.Writer, assignment map[int32][]int32) error {
	n := c.Int("partitions")
	if n <= 0 || n > 1<<31-1 {
		return failf("--partitions must be larger than 0")
	}
	ts, err := selectTopics(ctx, c, be)
	if err != nil {
		return err
	}
	for _, t := range ts {
		fmt.Fprintln(out, "WARNING: If partitions are increased for a topic that has a key, the partition logic or ordering of the messages will be affected")
		if err := be.addPartitions(ctx, t.Name, int32(n), assignment); err != nil {
			return err
		}
		fmt.Fprintln(out, "Adding partitions succeeded!")
	}
	return nil
}

// describeFilter holds the --describe report options.
type describeFilter struct {
	underReplicated, underMinISR, atMinISR, unavailable, overrides bool
}

func (f describeFilter) any() bool {
	return f.underReplicated || f.underMinISR || f.atMinISR || f.unavailable
}

// partitionHealth classifies one partition like Kafka 2.4's PartitionDescription.
type partitionHealth struct {
	hasLeader, underReplicated, underMinISR, atMinISR bool
}

func health(p partitionInfo, configs map[string]string, live map[int32]bool) partitionHealth {
	h := partitionHealth{hasLeader: p.Leader >= 0 && live[p.Leader]}
	h.underReplicated = len(p.ISR) < len(p.Replicas)
	m := minISR(configs)
	h.underMinISR = !h.hasLeader || len(p.ISR) < m
	h.atMinISR = len(p.ISR) == m
	return h
}

func (f describeFilter) show(h partitionHealth) bool {
	if !f.any() {
		return true
	}
	return f.underReplicated && h.underReplicated ||
		f.underMinISR && h.underMinISR ||
		f.atMinISR && h.atMinISR ||
		f.unavailable && !h.hasLeader
}

func doDescribe(ctx context.Context, c *cli.Context, be topicBackend, out io.Writer) error {
	sel, err := selectTopics(ctx, c, be)
	if err != nil {
		return err
	}
	if len(sel) == 0 {
		return nil
	}
	names := make([]string, len(sel))
	for i, t := range sel {
		names[i] = t.Name
	}
	ts, live, err := be.describe(ctx, names)
	if err != nil {
		return err
	}
	f := describeFilter{
		underReplicated: c.Bool("under-replicated-partitions"),
		underMinISR:     c.Bool("under-min-isr-partitions"),
		atMinISR:        c.Bool("at-min-isr-partitions"),
		unavailable:     c.Bool("unavailable-partitions"),
		overrides:       c.Bool("topics-with-overrides"),
	}
	writeDescribe(out, ts, live, f)
	return nil
}

// writeDescribe prints Kafka 2.4's --describe output. With a report filter only matching
// partition lines are printed (no header); with --topics-with-overrides only the headers
// of topics that have config overrides.
func writeDescribe(out io.Writer, ts []topicInfo, live map[int32]bool, f describeFilter) {
	sort.Slice(ts, func(i, j int) bool { return ts[i].Name < ts[j].Name })
	for _, t := range ts {
		del := ""
		if t.MarkedForDeletion {
			del = "\tMarkedForDeletion: true"
		}
		if !f.any() && (!f.overrides || len(t.Configs) > 0) {
			cfg := make([]string, 0, len(t.Configs))
			for _, k := range sortedKeys(t.Configs) {
				cfg = append(cfg, k+"="+t.Configs[k])
			}
			fmt.Fprintf(out, "Topic: %s\tPartitionCount: %d\tReplicationFactor: %d\tConfigs: %s%s\n",
				t.Name, len(t.Partitions), t.replicationFactor(), strings.Join(cfg, ","), del)
		}
		if f.overrides {
			continue
		}
		for _, p := range t.Partitions {
			h := health(p, t.Configs, live)
			if !f.show(h) {
				continue
			}
			leader := "none"
			if p.Leader >= 0 {
				leader = fmt.Sprint(p.Leader)
			}
			fmt.Fprintf(out, "\tTopic: %s\tPartition: %d\tLeader: %s\tReplicas: %s\tIsr: %s%s\n",
				t.Name, p.ID, leader, joinIDs(p.Replicas), joinIDs(p.ISR), del)
		}
	}
}
