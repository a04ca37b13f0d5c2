package admintool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/isrbroker/isrbroker/zkcoord/admin"
)

// `isrbroker leader-election` (K7, issue 4 item 3): Kafka's preferred replica election
// through ZooKeeper (kafka-preferred-replica-election.sh --zookeeper, with the flags and
// output of 2.4's kafka-leader-election.sh). It writes /admin/preferred_replica_election,
// waits until the controller has deleted it, and reports per partition from the state
// znodes what happened.

const electionDescription = `Move the leadership of partitions back to their preferred replica (the first replica
of the assignment), like Kafka 2.4's kafka-leader-election.sh --election-type preferred.
The request is written to ZooKeeper for the controller, which elects the preferred
replica only when it is live and in the ISR (leader_epoch+1). The command waits until
the controller has processed the request (--timeout) and prints the outcome.

Exactly one of --topic with --partition, --all-topic-partitions or --path-to-json-file
selects the partitions. The JSON file has Kafka's format:
  {"partitions": [{"topic": "orders", "partition": 0}, {"topic": "orders", "partition": 1}]}

With --bootstrap-server instead of --zookeeper the election goes through the Kafka
protocol (ElectLeaders, KIP-460) to the controller, which also serves
--election-type unclean: a live replica outside the ISR is elected for partitions
without a live leader (possible data loss), whatever unclean.leader.election.enable says.

Examples:
  isrbroker leader-election --zookeeper localhost:2181 --election-type preferred --topic orders --partition 0
  isrbroker leader-election --bootstrap-server localhost:9092 --election-type unclean --topic orders --partition 0
  isrbroker leader-election --zookeeper localhost:2181 --election-type preferred --all-topic-partitions
  isrbroker leader-election --zookeeper localhost:2181 --election-type preferred --path-to-json-file elect.json

Output:
  Successfully completed leader election (PREFERRED) for partitions orders-0, orders-2
  Valid replica already elected for partitions orders-1
  Preferred replica not available for partition orders-3: preferred replica 3 is not in the ISR [1,2]

Exit status 1 when a preferred replica could not be elected, a partition does not exist,
another preferred replica election is still pending, or the controller did not finish
within --timeout.`

func electionCommand() *cli.Command {
	flags := zkFlags()
	flags = append(flags,
		&cli.StringFlag{Name: "bootstrap-server", Usage: "Kafka brokers host:port[,host:port]: elect through ElectLeaders (KIP-460) instead of ZooKeeper"},
		&cli.StringFlag{Name: "election-type", Usage: "type of election: preferred, or unclean (--bootstrap-server only)"},
		&cli.StringFlag{Name: "topic", Usage: "topic of the partition to elect (with --partition)"},
		&cli.IntFlag{Name: "partition", Usage: "partition to elect (with --topic)"},
		&cli.BoolFlag{Name: "all-topic-partitions", Usage: "elect every partition of every topic"},
		&cli.StringFlag{Name: "path-to-json-file", Usage: `JSON file listing the partitions: {"partitions":[{"topic":"t","partition":0}]}`},
		&cli.DurationFlag{Name: "timeout", Value: 30 * time.Second, Usage: "how long to wait for the controller to complete the election"},
	)
	return &cli.Command{
		Name:        "leader-election",
		Usage:       "elect the preferred (or, with --bootstrap-server, any live) replicas of partitions as leaders",
		Description: electionDescription,
		Flags:       flags,
		Action:      electionAction,
	}
}

// electionTarget is one partition with its preferred replica and its state before the
// request.
type electionTarget struct {
	tp        admin.TopicPartition
	preferred int32
	before    int32 // leader before the request, -1 when none
}

func tpName(tp admin.TopicPartition) string { return fmt.Sprintf("%s-%d", tp.Topic, tp.Partition) }

func electionAction(c *cli.Context) error {
	if c.NArg() > 0 {
		return failf("unexpected argument %q (flags only; see isrbroker leader-election --help)", c.Args().First())
	}
	useKafka := strings.TrimSpace(c.String("bootstrap-server")) != ""
	if (strings.TrimSpace(c.String("zookeeper")) == "") == !useKafka {
		return failf("exactly one of --zookeeper or --bootstrap-server is required")
	}
	switch et := strings.TrimSpace(c.String("election-type")); strings.ToLower(et) {
	case "preferred":
	case "":
		return failf("--election-type is required (preferred or unclean)")
	case "unclean":
		if !useKafka {
			return failf("--election-type unclean needs --bootstrap-server (ElectLeaders); through ZooKeeper only preferred elections exist")
		}
	default:
		return failf("invalid --election-type %q: want preferred or unclean", et)
	}
	modes := 0
	for _, set := range []bool{c.IsSet("topic") || c.IsSet("partition"), c.Bool("all-topic-partitions"), c.IsSet("path-to-json-file")} {
		if set {
			modes++
		}
	}
	if modes != 1 {
		return failf("exactly one of --topic with --partition, --all-topic-partitions or --path-to-json-file is required")
	}
	if c.IsSet("topic") != c.IsSet("partition") {
		return failf("--topic and --partition must be given together")
	}
	if c.IsSet("partition") && c.Int("partition") < 0 {
		return failf("invalid --partition %d", c.Int("partition"))
	}
	var fromFile []admin.TopicPartition
	if path := c.String("path-to-json-file"); c.IsSet("path-to-json-file") {
		data, err := os.ReadFile(path)
		if err != nil {
			return failf("cannot read --path-to-json-file: %s", err)
		}
		if fromFile, err = parseElectionJSON(data); err != nil {
			return failf("invalid --path-to-json-file %s: %s", path, err)
		}
	}
	if useKafka {
		return electionKafka(c, fromFile)
	}
	coord, err := connectZK(c)
	if err != nil {
		return err
	}
	defer coord.Close()

	var tps []admin.TopicPartition
	switch {
	case c.Bool("all-topic-partitions"):
		topics, err := coord.Reader.Topics()
		if err != nil {
			return zkErr(c, err)
		}
		marked, err := coord.Reader.TopicsMarkedForDeletion()
		if err != nil {
			return zkErr(c, err)
		}
		for _, t := range topics {
			if slices.Contains(marked, t) {
				continue // the controller leaves topics being deleted alone
			}
			a, err := coord.Reader.TopicAssignment(t)
			if errors.Is(err, admin.ErrUnknownTopic) {
				continue // deleted since it was listed
			}
			if err != nil {
				return zkErr(c, err)
			}
			for p := range a {
				tps = append(tps, admin.TopicPartition{Topic: t, Partition: p})
			}
		}
	case fromFile != nil:
		tps = fromFile
	default:
		tps = []admin.TopicPartition{{Topic: c.String("topic"), Partition: int32(c.Int("partition"))}}
	}
	sortTPs(tps)
	targets, err := electionTargets(c, coord, tps)
	if err != nil {
		return err
	}
	if len(targets) == 0 {
		fmt.Fprintln(c.App.Writer, "No partitions to elect")
		return nil
	}
	if err := coord.Admin.RequestPreferredElection(c.Context, tps); err != nil {
		if errors.Is(err, admin.ErrPreferredElectionInProgress) {
			return failf("There is an existing preferred replica election in progress; wait for it to complete")
		}
		return zkErr(c, err)
	}
	timeout := c.Duration("timeout")
	wctx, cancel := context.WithTimeout(c.Context, timeout)
	defer cancel()
	if err := coord.Reader.WaitPreferredElectionDone(wctx); err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return failf("the controller did not complete the preferred replica election within %v (the request stays pending; is a controller running?)", timeout)
		}
		return zkErr(c, err)
	}
	return reportElection(c, c.App.Writer, coord, targets)
}

// electionTargets checks that every partition exists and records its preferred replica and
// current leader. An unknown topic or partition is a one-line error.
func electionTargets(c *cli.Context, coord *admin.Session, tps []admin.TopicPartition) ([]electionTarget, error) {
	assignments := map[string]map[int32][]int32{}
	out := make([]electionTarget, 0, len(tps))
	for _, tp := range tps {
		a, ok := assignments[tp.Topic]
		if !ok {
			var err error
			a, err = coord.Reader.TopicAssignment(tp.Topic)
			if errors.Is(err, admin.ErrUnknownTopic) {
				return nil, failf("topic %q does not exist", tp.Topic)
			}
			if err != nil {
				return nil, zkErr(c, err)
			}
			assignments[tp.Topic] = a
		}
		reps, ok := a[tp.Partition]
		if !ok {
			return nil, failf("partition %s does not exist (topic %q has %d partitions)", tpName(tp), tp.Topic, len(a))
		}
		if len(reps) == 0 {
			return nil, failf("partition %s has no replicas", tpName(tp))
		}
		t := electionTarget{tp: tp, preferred: reps[0], before: -1}
		st, err := coord.Reader.PartitionState(tp.Topic, tp.Partition)
		switch {
		case err == nil:
			t.before = st.Leader
		case errors.Is(err, admin.ErrUnknownTopic): // no state yet: not online
		default:
			return nil, zkErr(c, err)
		}
		out = append(out, t)
	}
	return out, nil
}

// reportElection reads the state znodes after the controller finished and prints Kafka's
// summary lines; partitions whose preferred replica could not be elected get one line each
// with the reason, and make the command fail.
func reportElection(c *cli.Context, w io.Writer, coord *admin.Session, targets []electionTarget) error {
	live, _, err := liveSet(coord)
	if err != nil {
		return zkErr(c, err)
	}
	var succeeded, noop, failed []string
	for _, t := range targets {
		st, err := coord.Reader.PartitionState(t.tp.Topic, t.tp.Partition)
		if err != nil && !errors.Is(err, admin.ErrUnknownTopic) {
			return zkErr(c, err)
		}
		exists := err == nil
		switch {
		case exists && st.Leader == t.preferred && t.before == t.preferred:
			noop = append(noop, tpName(t.tp))
		case exists && st.Leader == t.preferred:
			succeeded = append(succeeded, tpName(t.tp))
		default:
			var why string
			switch {
			case !exists:
				why = "the partition has no state (not online, or deleted)"
			case !live[t.preferred]:
				why = fmt.Sprintf("preferred replica %d is not live", t.preferred)
			case !slices.Contains(st.ISR, t.preferred):
				why = fmt.Sprintf("preferred replica %d is not in the ISR [%s]", t.preferred, joinIDs(st.ISR))
			default:
				why = fmt.Sprintf("the controller did not elect preferred replica %d (leader %d; topic being deleted or partition being reassigned?)", t.preferred, st.Leader)
			}
			failed = append(failed, fmt.Sprintf("Preferred replica not available for partition %s: %s", tpName(t.tp), why))
		}
	}
	if len(succeeded) > 0 {
		fmt.Fprintf(w, "Successfully completed leader election (PREFERRED) for partitions %s\n", strings.Join(succeeded, ", "))
	}
	if len(noop) > 0 {
		fmt.Fprintf(w, "Valid replica already elected for partitions %s\n", strings.Join(noop, ", "))
	}
	for _, f := range failed {
		fmt.Fprintln(w, f)
	}
	if len(failed) > 0 {
		return failf("%d preferred replica(s) could not be elected", len(failed))
	}
	return nil
}

// parseElectionJSON parses Kafka's election JSON ({"partitions":[{"topic":..,"partition":..}]});
// duplicates, missing fields and negative partitions are errors.
func parseElectionJSON(data []byte) ([]admin.TopicPartition, error) {
	var z struct {
		Partitions *[]struct {
			Topic     *string `json:"topic"`
			Partition *int32  `json:"partition"`
		} `json:"partitions"`
	}
	if err := json.Unmarshal(data, &z); err != nil {
		return nil, err
	}
	if z.Partitions == nil {
		return nil, errors.New(`no "partitions" list`)
	}
	if len(*z.Partitions) == 0 {
		return nil, errors.New(`empty "partitions" list`)
	}
	seen := map[admin.TopicPartition]bool{}
	var dups []string
	out := make([]admin.TopicPartition, 0, len(*z.Partitions))
	for i, p := range *z.Partitions {
		switch {
		case p.Topic == nil || *p.Topic == "":
			return nil, fmt.Errorf("partitions[%d]: missing topic", i)
		case p.Partition == nil:
			return nil, fmt.Errorf("partitions[%d]: missing partition", i)
		case *p.Partition < 0:
			return nil, fmt.Errorf("partitions[%d]: negative partition %d", i, *p.Partition)
		}
		tp := admin.TopicPartition{Topic: *p.Topic, Partition: *p.Partition}
		if seen[tp] {
			dups = append(dups, tpName(tp))
			continue
		}
		seen[tp] = true
		out = append(out, tp)
	}
	if len(dups) > 0 {
		return nil, fmt.Errorf("duplicate partitions: %s", strings.Join(dups, ", "))
	}
	return out, nil
}

func sortTPs(s []admin.TopicPartition) {
	sort.Slice(s, func(i, j int) bool {
		if s[i].Topic != s[j].Topic {
			return s[i].Topic < s[j].Topic
		}
		return s[i].Partition < s[j].Partition
	})
}
