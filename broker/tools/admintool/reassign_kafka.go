package admintool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/urfave/cli/v2"

	"github.com/isrbroker/isrbroker/zkcoord/admin"
)

// `isrbroker reassign-partitions --bootstrap-server` is Kafka 2.5/2.6's
// ReassignPartitionsCommand in its AdminClient mode (KIP-455): --execute sends
// AlterPartitionReassignments, --verify lists the reassignments in progress
// (ListPartitionReassignments) and reports each partition of the plan, with the bytes each
// adding replica still has to copy, and --cancel cancels the plan's partitions that are still
// moving (replicas null). --throttle sets the replication throttle through
// IncrementalAlterConfigs; --verify removes it once nothing moves (reassign_kafka_throttle.go). docs/kafka-facts.md, "KIP-455 reassignments".

// reassignKafka runs verb over --bootstrap-server.
func reassignKafka(c *cli.Context, verb string, plan []admin.PartitionReassignment) error {
	bootstrap := strings.TrimSpace(c.String("bootstrap-server"))
	timeout := c.Duration("timeout")
	cl, err := dialKafka(bootstrap, timeout, "reassign-partitions")
	if err != nil {
		return err
	}
	defer cl.Close()
	k := &reassignKafkaRun{cl: cl, adm: kadm.NewClient(cl), out: c.App.Writer, addr: bootstrap, timeout: timeout, throttle: c.Int64("throttle")}
	ctx, cancel := context.WithTimeout(c.Context, timeout)
	defer cancel()
	switch verb {
	case "execute":
		return k.execute(ctx, plan)
	case "cancel":
		return k.cancel(ctx, plan)
	default:
		return k.verify(ctx, plan)
	}
}

type reassignKafkaRun struct {
	cl       *kgo.Client
	adm      *kadm.Client
	out      io.Writer
	addr     string
	timeout  time.Duration
	throttle int64 // --throttle bytes/s for --execute, <= 0: none
}

func (k *reassignKafkaRun) reqErr(what string, err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return failf("%s: no answer from the Kafka brokers at %s within %v", what, k.addr, k.timeout)
	}
	return failf("%s: Kafka brokers at %s: %s", what, k.addr, oneLine(err.Error()))
}

func partName(topic string, p int32) string { return fmt.Sprintf("%s-%d", topic, p) }

func planSet(plan []admin.PartitionReassignment) kadm.TopicsSet {
	s := kadm.TopicsSet{}
	for _, p := range plan {
		s.Add(p.Topic, p.Partition)
	}
	return s
}

// current reads the plan's partitions' replicas from Metadata.
func (k *reassignKafkaRun) current(ctx context.Context, plan []admin.PartitionReassignment) (map[string]map[int32][]int32, error) {
	var topics []string
	for _, p := range plan {
		if !slices.Contains(topics, p.Topic) {
			topics = append(topics, p.Topic)
		}
	}
	m, err := k.adm.Metadata(ctx, topics...)
	if err != nil {
		return nil, k.reqErr("metadata", err)
	}
	out := map[string]map[int32][]int32{}
	for _, p := range plan {
		td, ok := m.Topics[p.Topic]
		if !ok || td.Err != nil {
			return nil, failf("topic %s does not exist", p.Topic)
		}
		pd, ok := td.Partitions[p.Partition]
		if !ok {
			return nil, failf("partition %s does not exist", partName(p.Topic, p.Partition))
		}
		if out[p.Topic] == nil {
			out[p.Topic] = map[int32][]int32{}
		}
		out[p.Topic][p.Partition] = pd.Replicas
	}
	return out, nil
}

// execute prints the current assignment (Kafka's rollback JSON) and starts the plan.
func (k *reassignKafkaRun) execute(ctx context.Context, plan []admin.PartitionReassignment) error {
	ongoing, err := k.adm.ListPartitionReassignments(ctx, planSet(plan))
	if err != nil {
		return k.reqErr("list reassignments", err)
	}
	if len(ongoing) > 0 {
		return failf("Cannot execute because there is an existing partition assignment.  Use --cancel to cancel it first, or --verify to check its progress")
	}
	cur, err := k.current(ctx, plan)
	if err != nil {
		return err
	}
	var rollback []admin.PartitionReassignment
	var req kadm.AlterPartitionAssignmentsReq
	for _, p := range plan {
		rollback = append(rollback, admin.PartitionReassignment{Topic: p.Topic, Partition: p.Partition, Replicas: cur[p.Topic][p.Partition]})
		req.Assign(p.Topic, p.Partition, p.Replicas)
	}
	doc, _ := json.Marshal(reassignmentJSON(rollback))
	fmt.Fprintf(k.out, "Current partition replica assignment\n\n%s\n\nSave this to use as the --reassignment-json-file option during rollback\n", doc)
	if k.throttle > 0 {
		if err := k.setThrottles(ctx, k.throttle, rollback, plan); err != nil {
			return err
		}
		fmt.Fprintln(k.out, "Warning: You must run --verify periodically, until the reassignment completes, to ensure the throttle is removed.")
		fmt.Fprintf(k.out, "The inter-broker throttle limit was set to %d B/s\n", k.throttle)
	}
	res, err := k.adm.AlterPartitionAssignments(ctx, req)
	if err != nil {
		return k.reqErr("alter partition reassignments", err)
	}
	var bad []string
	for _, r := range res.Sorted() {
		if r.Err != nil {
			bad = append(bad, fmt.Sprintf("%s: %v %s", partName(r.Topic, r.Partition), r.Err, r.ErrMessage))
		}
	}
	if len(bad) > 0 {
		return failf("Error reassigning partition(s): %s", strings.Join(bad, "; "))
	}
	fmt.Fprintf(k.out, "Successfully started partition reassignment%s for %s\n", plural(len(plan)), joinTPs(plan))
	return nil
}

// reassignmentJSON is Kafka's {"version":1,"partitions":[...]} with log_dirs "any".
func reassignmentJSON(parts []admin.PartitionReassignment) any {
	type part struct {
		Topic     string   `json:"topic"`
		Partition int32    `json:"partition"`
		Replicas  []int32  `json:"replicas"`
		LogDirs   []string `json:"log_dirs"`
	}
	doc := struct {
		Version    int    `json:"version"`
		Partitions []part `json:"partitions"`
	}{Version: 1, Partitions: []part{}}
	for _, p := range parts {
		dirs := make([]string, len(p.Replicas))
		for i := range dirs {
			dirs[i] = "any"
		}
		doc.Partitions = append(doc.Partitions, part{Topic: p.Topic, Partition: p.Partition, Replicas: p.Replicas, LogDirs: dirs})
	}
	return doc
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func sortedReassignPlan(plan []admin.PartitionReassignment) []admin.PartitionReassignment {
	s := slices.Clone(plan)
	sort.Slice(s, func(i, j int) bool {
		if s[i].Topic != s[j].Topic {
			return s[i].Topic < s[j].Topic
		}
		return s[i].Partition < s[j].Partition
	})
	return s
}

func joinTPs(plan []admin.PartitionReassignment) string {
	var names []string
	for _, p := range sortedReassignPlan(plan) {
		names = append(names, partName(p.Topic, p.Partition))
	}
	return strings.Join(names, ",")
}

// verify prints Kafka's status lines; under a partition still moving, one line per adding
// replica with the bytes and offsets it still has to copy: the leader's log size minus the
// replica's (DescribeLogDirs sizes; 0 once the replica holds as many bytes) and the leader's
// LEO minus the replica's (ListOffsets latest with the debugging replica id -2, which any
// replica answers with its own LEO; "?" when a broker does not answer). Exit status 0 only
// when every partition of the plan is complete.
func (k *reassignKafkaRun) verify(ctx context.Context, plan []admin.PartitionReassignment) error {
	ongoing, err := k.adm.ListPartitionReassignments(ctx, planSet(plan))
	if err != nil {
		return k.reqErr("list reassignments", err)
	}
	cur, err := k.current(ctx, plan)
	if err != nil {
		return err
	}
	var sizes kadm.DescribedAllLogDirs
	if len(ongoing) > 0 {
		if sizes, err = k.adm.DescribeAllLogDirs(ctx, planSet(plan)); err != nil {
			return k.reqErr("describe log dirs", err)
		}
	}
	m, err := k.adm.Metadata(ctx, planTopics(plan)...)
	if err != nil {
		return k.reqErr("metadata", err)
	}
	fmt.Fprintln(k.out, "Status of partition reassignment:")
	var inProgress, wrong int
	for _, p := range sortedReassignPlan(plan) {
		name := partName(p.Topic, p.Partition)
		if o, ok := ongoing[p.Topic][p.Partition]; ok {
			inProgress++
			fmt.Fprintf(k.out, "Reassignment of partition %s is still in progress.\n", name)
			leader := m.Topics[p.Topic].Partitions[p.Partition].Leader
			leaderSize, _ := replicaSize(sizes, leader, p.Topic, p.Partition)
			leaderLEO, leaderOK := k.replicaLEO(ctx, leader, p.Topic, p.Partition)
			for _, id := range o.AddingReplicas {
				offsetsLeft := "?"
				if leo, ok := k.replicaLEO(ctx, id, p.Topic, p.Partition); ok && leaderOK {
					offsetsLeft = strconv.FormatInt(max(leaderLEO-leo, 0), 10)
				}
				size, ok := replicaSize(sizes, id, p.Topic, p.Partition)
				if !ok {
					fmt.Fprintf(k.out, "  Adding replica %d: no log yet; %d bytes and %s offsets to copy from leader %d.\n", id, leaderSize, offsetsLeft, leader)
					continue
				}
				fmt.Fprintf(k.out, "  Adding replica %d: %d of %d bytes copied from leader %d, %d bytes and %s offsets left.\n",
					id, min(size, leaderSize), leaderSize, leader, max(leaderSize-size, 0), offsetsLeft)
			}
			continue
		}
		if slices.Equal(cur[p.Topic][p.Partition], p.Replicas) {
			fmt.Fprintf(k.out, "Reassignment of partition %s is complete.\n", name)
		} else {
			wrong++
			fmt.Fprintf(k.out, "There is no active reassignment of partition %s, but replica set is %s rather than %s.\n",
				name, joinIDs(cur[p.Topic][p.Partition]), joinIDs(p.Replicas))
		}
	}
	if inProgress > 0 {
		return failf("reassignment of %d of %d partitions is still in progress", inProgress, len(plan))
	}
	// Nothing of the plan moves any more: the replication throttle goes (Kafka 2.6's verify).
	if err := k.clearThrottles(ctx, plan); err != nil {
		return err
	}
	if wrong > 0 {
		return failf("%d of %d partitions do not have the planned replicas", wrong, len(plan))
	}
	return nil
}

// replicaLEO asks broker for its replica's log end offset of topic-p: ListOffsets latest with
// the debugging replica id (-2), which a follower answers too (broker/02_list_offsets.go).
func (k *reassignKafkaRun) replicaLEO(ctx context.Context, broker int32, topic string, p int32) (int64, bool) {
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = -2
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition, rp.Timestamp = p, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, k.cl.Broker(int(broker)))
	if err != nil || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return 0, false
	}
	got := resp.Topics[0].Partitions[0]
	if got.ErrorCode != 0 || got.Offset < 0 {
		return 0, false
	}
	return got.Offset, true
}

func planTopics(plan []admin.PartitionReassignment) []string {
	var topics []string
	for _, p := range plan {
		if !slices.Contains(topics, p.Topic) {
			topics = append(topics, p.Topic)
		}
	}
	return topics
}

func replicaSize(all kadm.DescribedAllLogDirs, broker int32, topic string, p int32) (int64, bool) {
	for _, d := range all[broker] {
		if r, ok := d.Topics.Lookup(topic, p); ok {
			return r.Size, true
		}
	}
	return 0, false
}

// cancel cancels the plan's partitions that are still being reassigned.
func (k *reassignKafkaRun) cancel(ctx context.Context, plan []admin.PartitionReassignment) error {
	ongoing, err := k.adm.ListPartitionReassignments(ctx, planSet(plan))
	if err != nil {
		return k.reqErr("list reassignments", err)
	}
	var moving []admin.PartitionReassignment
	var req kadm.AlterPartitionAssignmentsReq
	for _, p := range sortedReassignPlan(plan) {
		if o, ok := ongoing[p.Topic][p.Partition]; ok && (len(o.AddingReplicas) > 0 || len(o.RemovingReplicas) > 0) {
			moving = append(moving, p)
			req.CancelAssign(p.Topic, p.Partition)
		}
	}
	if len(moving) == 0 {
		fmt.Fprintln(k.out, "None of the specified partition reassignments are active.")
		return nil
	}
	res, err := k.adm.AlterPartitionAssignments(ctx, req)
	if err != nil {
		return k.reqErr("cancel partition reassignments", err)
	}
	var bad []string
	for _, r := range res.Sorted() {
		if r.Err != nil {
			bad = append(bad, fmt.Sprintf("%s: %v %s", partName(r.Topic, r.Partition), r.Err, r.ErrMessage))
		}
	}
	if len(bad) > 0 {
		return failf("Error cancelling partition reassignment%s for: %s", plural(len(bad)), strings.Join(bad, "; "))
	}
	fmt.Fprintf(k.out, "Successfully cancelled partition reassignment%s for: %s\n", plural(len(moving)), joinTPs(moving))
	return nil
}
