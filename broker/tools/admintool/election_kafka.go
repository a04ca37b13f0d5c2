package admintool

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/urfave/cli/v2"

	"github.com/isrbroker/isrbroker/zkcoord/admin"
)

// `isrbroker leader-election --bootstrap-server` (KIP-460): Kafka 2.4.1's
// kafka-leader-election.sh through ElectLeaders, which the client sends to the controller.
// --all-topic-partitions sends a null partition list (the controller elects every partition
// that needs it and leaves the others out of its answer). Output, as LeaderElectionCommand:
//
//	Successfully completed leader election (UNCLEAN) for partitions t-0, t-1
//	Valid replica already elected for partitions t-2
//	Error completing leader election (UNCLEAN) for partition: t-3: ELIGIBLE_LEADERS_NOT_AVAILABLE: ...
//
// and exit status 1 when any partition failed. (Kafka 2.4.1 prints the succeeded partitions
// on the "Valid replica already elected" line, a bug; this lists the partitions that needed
// no election.)

func electionKafka(c *cli.Context, fromFile []admin.TopicPartition) error {
	how, kind := kadm.ElectPreferredReplica, "PREFERRED"
	if strings.EqualFold(strings.TrimSpace(c.String("election-type")), "unclean") {
		how, kind = kadm.ElectLiveReplica, "UNCLEAN"
	}
	var set kadm.TopicsSet // nil: every partition (--all-topic-partitions)
	switch {
	case fromFile != nil:
		set = kadm.TopicsSet{}
		for _, tp := range fromFile {
			set.Add(tp.Topic, tp.Partition)
		}
	case !c.Bool("all-topic-partitions"):
		set = kadm.TopicsSet{}
		set.Add(c.String("topic"), int32(c.Int("partition")))
	}
	bootstrap := c.String("bootstrap-server")
	cl, err := dialKafka(bootstrap, c.Duration("timeout"), "isrbroker-leader-election")
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	adm.SetTimeoutMillis(int32(c.Duration("timeout").Milliseconds()))
	be := &kafkaBackend{c: c, addr: bootstrap, cl: cl, adm: adm}
	ctx, cancel := be.ctx(c.Context)
	defer cancel()
	res, err := adm.ElectLeaders(ctx, how, set)
	if err != nil {
		if errors.Is(err, kerr.RequestTimedOut) || errors.Is(err, context.DeadlineExceeded) {
			fmt.Fprintln(c.App.Writer, "Timeout waiting for election results")
			return failf("Timeout waiting for election results")
		}
		return be.reqErr(err)
	}
	var succeeded, noop []admin.TopicPartition
	type failure struct {
		tp  admin.TopicPartition
		err string
	}
	var failed []failure
	for topic, ps := range res {
		for p, r := range ps {
			tp := admin.TopicPartition{Topic: topic, Partition: p}
			switch {
			case r.Err == nil:
				succeeded = append(succeeded, tp)
			case errors.Is(r.Err, kerr.ElectionNotNeeded):
				noop = append(noop, tp)
			default:
				msg := r.Err.Error()
				if r.ErrMessage != "" && !strings.Contains(msg, r.ErrMessage) {
					msg += ": " + r.ErrMessage
				}
				failed = append(failed, failure{tp, oneLine(msg)})
			}
		}
	}
	sortTPs(succeeded)
	sortTPs(noop)
	sort.Slice(failed, func(i, j int) bool {
		a, b := failed[i].tp, failed[j].tp
		return a.Topic < b.Topic || a.Topic == b.Topic && a.Partition < b.Partition
	})
	names := func(tps []admin.TopicPartition) string {
		out := make([]string, len(tps))
		for i, tp := range tps {
			out[i] = tpName(tp)
		}
		return strings.Join(out, ", ")
	}
	w := c.App.Writer
	if len(succeeded) > 0 {
		fmt.Fprintf(w, "Successfully completed leader election (%s) for partitions %s\n", kind, names(succeeded))
	}
	if len(noop) > 0 {
		fmt.Fprintf(w, "Valid replica already elected for partitions %s\n", names(noop))
	}
	if len(failed) == 0 {
		return nil
	}
	for _, f := range failed {
		fmt.Fprintf(w, "Error completing leader election (%s) for partition: %s: %s\n", kind, tpName(f.tp), f.err)
	}
	return failf("%d replica(s) could not be elected", len(failed))
}
