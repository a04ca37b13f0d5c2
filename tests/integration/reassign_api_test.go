package integration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/isrbroker/isrbroker/tests/cluster"
	zkadmin "github.com/isrbroker/isrbroker/zkcoord/admin"
)

// KIP-455 reassignments over the protocol: AlterPartitionReassignments (key 45) and
// ListPartitionReassignments (key 46) through kadm, against 3 brokers and real ZooKeeper.

// throttleReplication sets leader/follower.replication.throttled.rate on every broker and
// throttles every replica of topic (only replicas outside the ISR are throttled: the
// adding ones), through zkcoord's one config write path, so that a copy takes seconds.
func throttleReplication(t *testing.T, c *cluster.Cluster, topic string, rate int64) {
	t.Helper()
	log := logrus.New()
	log.SetOutput(io.Discard)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	coord, err := zkadmin.Connect(ctx, c.ZK.Addr, 10*time.Second, log)
	if err != nil {
		t.Fatal(err)
	}
	defer coord.Close()
	for _, id := range c.IDs() {
		if err := coord.Admin.AlterBrokerConfig(cluster.Itoa32(id), func(cfg map[string]string) {
			cfg["leader.replication.throttled.rate"] = fmt.Sprint(rate)
			cfg["follower.replication.throttled.rate"] = fmt.Sprint(rate)
		}); err != nil {
			t.Fatal(err)
		}
	}
	if err := coord.Admin.AlterTopicConfig(topic, func(cfg map[string]string) {
		cfg["leader.replication.throttled.replicas"] = "*"
		cfg["follower.replication.throttled.replicas"] = "*"
	}); err != nil {
		t.Fatal(err)
	}
}

// topicZNodeMoves reads the KIP-455 maps of /brokers/topics/<t>.
func topicZNodeMoves(t *testing.T, c *cluster.Cluster, topic string) (adding, removing map[string][]int32) {
	t.Helper()
	data, _, err := c.ZK.Get("/brokers/topics/" + topic)
	if err != nil {
		t.Fatal(err)
	}
	var z struct {
		Version  int                `json:"version"`
		Adding   map[string][]int32 `json:"adding_replicas"`
		Removing map[string][]int32 `json:"removing_replicas"`
	}
	if err := json.Unmarshal(data, &z); err != nil || z.Version != 2 {
		t.Fatalf("topic znode %s: %v", data, err)
	}
	return z.Adding, z.Removing
}

// listAll is ListPartitionReassignments with topics null (every partition being moved).
func listAll(t *testing.T, c *cluster.Cluster) map[string]map[int32]kmsg.ListPartitionReassignmentsResponseTopicPartition {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	req := kmsg.NewPtrListPartitionReassignmentsRequest()
	req.TimeoutMillis = 10000
	resp, err := req.RequestWith(ctx, c.Client())
	if err == nil {
		err = kerr.ErrorForCode(resp.ErrorCode)
	}
	if err != nil {
		t.Fatalf("ListPartitionReassignments: %v", err)
	}
	out := map[string]map[int32]kmsg.ListPartitionReassignmentsResponseTopicPartition{}
	for _, tt := range resp.Topics {
		out[tt.Topic] = map[int32]kmsg.ListPartitionReassignmentsResponseTopicPartition{}
		for _, p := range tt.Partitions {
			out[tt.Topic][p.Partition] = p
		}
	}
	return out
}

func alterAssignments(t *testing.T, adm *kadm.Client, req kadm.AlterPartitionAssignmentsReq) kadm.AlterPartitionAssignmentsResponses {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := adm.AlterPartitionAssignments(ctx, req)
	if err != nil {
		t.Fatalf("AlterPartitionAssignments: %v", err)
	}
	return res
}

// waitReassignmentDone waits until no partition is listed as moving and the topic znode has
// no adding/removing replicas left.
func waitReassignmentDone(t *testing.T, c *cluster.Cluster, topic string, timeout time.Duration) {
	t.Helper()
	cluster.WaitFor(t, timeout, func() (bool, string) {
		if l := listAll(t, c); len(l) != 0 {
			return false, fmt.Sprintf("still listed: %+v", l)
		}
		adding, removing := topicZNodeMoves(t, c, topic)
		return len(adding) == 0 && len(removing) == 0, fmt.Sprintf("topic znode adding %v removing %v", adding, removing)
	})
}

// TestAlterPartitionReassignmentsUnderLoad: [1,2] → [2,3] through kadm while an acks=all
// producer writes; the throttled copy keeps it in progress long enough for
// ListPartitionReassignments and the topic znode to show RS [2,3,1], adding [3], removing
// [1]; it completes, broker 1's log is deleted, and no acknowledged record is lost.
func TestAlterPartitionReassignmentsUnderLoad(t *testing.T) {
	c := cluster.Start(t, cluster.Options{Brokers: 3})
	const topic = "apimove"
	c.CreateTopicWithAssignment(topic, map[int32][]int32{0: {1, 2}}, map[string]string{"min.insync.replicas": "1"})
	waitFullISR(t, c, topic, map[int32][]int32{0: {1, 2}}, 30*time.Second)
	produceRandom(t, c, topic, 1500, 1000, 7) // 1.5 MB for the new replica to copy
	throttleReplication(t, c, topic, 300_000)
	w := startAckProducer(t, c.Client(), topic, ackProducerOptions{})
	w.waitProgress(t, 500, time.Minute, "acks before the reassignment")

	adm := c.Admin()
	var req kadm.AlterPartitionAssignmentsReq
	req.Assign(topic, 0, []int32{2, 3})
	if err := alterAssignments(t, adm, req).Error(); err != nil {
		t.Fatalf("alter: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	listed, err := adm.ListPartitionReassignments(ctx, kadm.TopicsSet{topic: {0: {}}})
	if err != nil {
		t.Fatal(err)
	}
	p, ok := listed[topic][0]
	if !ok || !reflect.DeepEqual(p.Replicas, []int32{2, 3, 1}) || !reflect.DeepEqual(p.AddingReplicas, []int32{3}) || !reflect.DeepEqual(p.RemovingReplicas, []int32{1}) {
		t.Fatalf("in progress: listed %+v", listed)
	}
	if all := listAll(t, c); len(all) != 1 || len(all[topic]) != 1 {
		t.Fatalf("list of all reassignments: %+v", all)
	}
	adding, removing := topicZNodeMoves(t, c, topic)
	if !reflect.DeepEqual(adding, map[string][]int32{"0": {3}}) || !reflect.DeepEqual(removing, map[string][]int32{"0": {1}}) {
		t.Fatalf("topic znode while moving: adding %v removing %v", adding, removing)
	}
	if a, _ := c.ZK.TopicAssignment(topic); !reflect.DeepEqual(a[0], []int32{2, 3, 1}) {
		t.Fatalf("RS while moving %v", a[0])
	}

	waitReassignmentDone(t, c, topic, 90*time.Second)
	if a, err := c.ZK.TopicAssignment(topic); err != nil || !reflect.DeepEqual(a[0], []int32{2, 3}) {
		t.Fatalf("assignment after: %v %v", a, err)
	}
	st, err := c.ZK.PartitionState(topic, 0)
	if err != nil || !cluster.SameMembers(st.ISR, []int32{2, 3}) || st.Leader == 1 {
		t.Fatalf("state after: %+v %v", st, err)
	}
	c.Broker(1).WaitPartitionDirGone(topic, 0, 30*time.Second)
	atDone := w.count()
	w.waitProgress(t, atDone+500, time.Minute, "acks after the reassignment")
	want, _ := w.stop(t)
	checkAcksPresent(t, readAll(t, c, topic, 1), want)
}

// TestCancelPartitionReassignment: a throttled [1,2] → [2,3] is cancelled (replicas null)
// while broker 3 copies: the replica set is {1,2} again, broker 3's log is deleted, nothing
// is listed; a second cancel is NO_REASSIGNMENT_IN_PROGRESS; invalid targets and unknown
// partitions get Kafka's per-partition errors.
func TestCancelPartitionReassignment(t *testing.T) {
	c := cluster.Start(t, cluster.Options{Brokers: 3})
	const topic = "cancelme"
	c.CreateTopicWithAssignment(topic, map[int32][]int32{0: {1, 2}}, nil)
	waitFullISR(t, c, topic, map[int32][]int32{0: {1, 2}}, 30*time.Second)
	produceRandom(t, c, topic, 3000, 1000, 8) // 3 MB: 30 s at the throttle
	throttleReplication(t, c, topic, 100_000)
	adm := c.Admin()

	var bad kadm.AlterPartitionAssignmentsReq
	bad.Assign(topic, 0, []int32{2, 2})
	bad.Assign("nosuchtopic", 0, []int32{1, 2})
	for _, r := range alterAssignments(t, adm, bad).Sorted() {
		want := kerr.InvalidReplicaAssignment
		if r.Topic == "nosuchtopic" {
			want = kerr.UnknownTopicOrPartition
		}
		if !errors.Is(r.Err, want) {
			t.Fatalf("%s-%d: %v (%s), want %v", r.Topic, r.Partition, r.Err, r.ErrMessage, want)
		}
	}
	var dead kadm.AlterPartitionAssignmentsReq
	dead.Assign(topic, 0, []int32{1, 9})
	if r := alterAssignments(t, adm, dead)[topic][0]; !errors.Is(r.Err, kerr.InvalidReplicaAssignment) {
		t.Fatalf("unknown broker: %v", r.Err)
	}

	var req kadm.AlterPartitionAssignmentsReq
	req.Assign(topic, 0, []int32{2, 3})
	if err := alterAssignments(t, adm, req).Error(); err != nil {
		t.Fatal(err)
	}
	// Broker 3 has started copying.
	cluster.WaitFor(t, 30*time.Second, func() (bool, string) {
		leo, err := cluster.LogEndOffsetOnDisk(c.Broker(3).PartitionDir(topic, 0))
		return err == nil && leo > 0, fmt.Sprintf("broker 3 LEO %d (%v)", leo, err)
	})
	if st, _ := c.ZK.PartitionState(topic, 0); cluster.SameMembers(st.ISR, []int32{1, 2, 3}) {
		t.Fatal("broker 3 caught up before the cancel: the throttle is not in force")
	}
	var cancelReq kadm.AlterPartitionAssignmentsReq
	cancelReq.CancelAssign(topic, 0)
	if err := alterAssignments(t, adm, cancelReq).Error(); err != nil {
		t.Fatalf("cancel: %v", err)
	}
	waitReassignmentDone(t, c, topic, 30*time.Second)
	a, err := c.ZK.TopicAssignment(topic)
	if err != nil || !cluster.SameMembers(a[0], []int32{1, 2}) || len(a[0]) != 2 {
		t.Fatalf("assignment after cancel: %v %v", a, err)
	}
	st, err := c.ZK.PartitionState(topic, 0)
	if err != nil || !cluster.SameMembers(st.ISR, []int32{1, 2}) || (st.Leader != 1 && st.Leader != 2) {
		t.Fatalf("state after cancel: %+v %v", st, err)
	}
	c.Broker(3).WaitPartitionDirGone(topic, 0, 30*time.Second)
	if r := alterAssignments(t, adm, cancelReq)[topic][0]; !errors.Is(r.Err, kerr.NoReassignmentInProgress) {
		t.Fatalf("second cancel: %v", r.Err)
	}
}

// TestAPIReassignmentSurvivesControllerFailover: a throttled API move [A] → [B] is in progress
// when the controller (the third broker) is killed with SIGKILL; the new controller reads RS,
// adding and removing back from the topic znode and completes it: assignment [B], A's log
// deleted, nothing left in the topic znode or the list.
func TestAPIReassignmentSurvivesControllerFailover(t *testing.T) {
	c := cluster.Start(t, cluster.Options{Brokers: 3})
	ctl, _ := c.ZK.WaitController(30 * time.Second)
	var others []int32
	for _, id := range c.IDs() {
		if id != ctl {
			others = append(others, id)
		}
	}
	from, to := others[0], others[1]
	const topic = "failover-move"
	c.CreateTopicWithAssignment(topic, map[int32][]int32{0: {from}}, nil)
	c.ZK.WaitTopicOnline(topic, 30*time.Second)
	produceRandom(t, c, topic, 2000, 1000, 9) // 2 MB: 10 s at the throttle
	throttleReplication(t, c, topic, 200_000)

	var req kadm.AlterPartitionAssignmentsReq
	req.Assign(topic, 0, []int32{to})
	if err := alterAssignments(t, c.Admin(), req).Error(); err != nil {
		t.Fatal(err)
	}
	cluster.WaitFor(t, 30*time.Second, func() (bool, string) {
		leo, err := cluster.LogEndOffsetOnDisk(c.Broker(to).PartitionDir(topic, 0))
		return err == nil && leo > 0, fmt.Sprintf("broker %d LEO %d (%v)", to, leo, err)
	})
	if st, _ := c.ZK.PartitionState(topic, 0); cluster.SameMembers(st.ISR, []int32{from, to}) {
		t.Fatal("the copy finished before the failover: the throttle is not in force")
	}
	c.Broker(ctl).Kill()
	cluster.WaitFor(t, 30*time.Second, func() (bool, string) {
		id, err := c.ZK.ControllerID()
		return err == nil && id != ctl && id >= 0, fmt.Sprintf("controller %d (%v)", id, err)
	})
	// The list goes to the new controller; the move is still there until it completes.
	waitReassignmentDone(t, c, topic, 90*time.Second)
	if a, err := c.ZK.TopicAssignment(topic); err != nil || !reflect.DeepEqual(a[0], []int32{to}) {
		t.Fatalf("assignment after failover: %v %v", a, err)
	}
	if st, err := c.ZK.PartitionState(topic, 0); err != nil || st.Leader != to || !reflect.DeepEqual(st.ISR, []int32{to}) {
		t.Fatalf("state after failover: %+v %v", st, err)
	}
	c.Broker(from).WaitPartitionDirGone(topic, 0, 30*time.Second)
}

// znodeConfig reads a /config/topics or /config/brokers znode's "config" map (empty when absent).
func znodeConfig(t *testing.T, c *cluster.Cluster, path string) map[string]string {
	t.Helper()
	data, _, err := c.ZK.Get(path)
	if err != nil {
		return map[string]string{}
	}
	var z struct {
		Config map[string]string `json:"config"`
	}
	if err := json.Unmarshal(data, &z); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if z.Config == nil {
		z.Config = map[string]string{}
	}
	return z.Config
}

// TestReassignToolBootstrapServer: `reassign-partitions --bootstrap-server` executes a plan,
// --verify reports it in progress with the bytes the adding replica still has to copy
// (exit 1), --cancel cancels it and names the partition, --verify then removes the throttle
// --execute --throttle set, and an unthrottled plan verifies as complete (exit 0).
func TestReassignToolBootstrapServer(t *testing.T) {
	c := cluster.Start(t, cluster.Options{Brokers: 3})
	c.CreateTopicWithAssignment("tooled", map[int32][]int32{0: {1, 2}}, nil)
	c.CreateTopicWithAssignment("quick", map[int32][]int32{0: {1}}, nil)
	waitFullISR(t, c, "tooled", map[int32][]int32{0: {1, 2}}, 30*time.Second)
	produceRandom(t, c, "tooled", 3000, 1000, 10) // 3 MB: 30 s at the throttle
	produceRandom(t, c, "quick", 100, 1000, 11)
	boot := c.Broker(1).Addr

	// --throttle sets Kafka 2.6's throttle configs through IncrementalAlterConfigs: the rates on
	// every broker of the old and new replica sets, the moving replicas on the topic.
	plan := cluster.WriteReassignmentFile(t, "tooled", map[int32][]int32{0: {2, 3}})
	out := adminOK(t, "reassign-partitions", "--bootstrap-server", boot, "--execute", "--reassignment-json-file", plan, "--throttle", "100000")
	if !strings.Contains(out, `{"version":1,"partitions":[{"topic":"tooled","partition":0,"replicas":[1,2],"log_dirs":["any","any"]}]}`) ||
		!strings.Contains(out, "The inter-broker throttle limit was set to 100000 B/s") ||
		!strings.Contains(out, "Successfully started partition reassignment for tooled-0") {
		t.Fatalf("execute output:\n%s", out)
	}
	if cfg := znodeConfig(t, c, "/config/topics/tooled"); cfg["leader.replication.throttled.replicas"] != "0:1,0:2" || cfg["follower.replication.throttled.replicas"] != "0:3" {
		t.Fatalf("topic throttle config after --execute --throttle: %v", cfg)
	}
	for _, id := range c.IDs() {
		if cfg := znodeConfig(t, c, "/config/brokers/"+cluster.Itoa32(id)); cfg["leader.replication.throttled.rate"] != "100000" || cfg["follower.replication.throttled.rate"] != "100000" {
			t.Fatalf("broker %d throttle rates after --execute --throttle: %v", id, cfg)
		}
	}
	cluster.WaitFor(t, 30*time.Second, func() (bool, string) {
		leo, err := cluster.LogEndOffsetOnDisk(c.Broker(3).PartitionDir("tooled", 0))
		return err == nil && leo > 0, fmt.Sprintf("broker 3 LEO %d (%v)", leo, err)
	})
	r := admin(t, "reassign-partitions", "--bootstrap-server", boot, "--verify", "--reassignment-json-file", plan)
	if r.ExitCode != 1 || !strings.Contains(r.Stdout, "Reassignment of partition tooled-0 is still in progress.") ||
		!regexp.MustCompile(`Adding replica 3: \d+ of [1-9]\d+ bytes copied from leader [12], [1-9]\d* bytes and [1-9]\d* offsets left\.`).MatchString(r.Stdout) {
		t.Fatalf("verify in progress: exit %d\n%s%s", r.ExitCode, r.Stdout, r.Stderr)
	}
	out = adminOK(t, "reassign-partitions", "--bootstrap-server", boot, "--cancel", "--reassignment-json-file", plan)
	if !strings.Contains(out, "Successfully cancelled partition reassignment for: tooled-0") {
		t.Fatalf("cancel output:\n%s", out)
	}
	waitReassignmentDone(t, c, "tooled", 30*time.Second)
	c.Broker(3).WaitPartitionDirGone("tooled", 0, 30*time.Second)
	out = adminOK(t, "reassign-partitions", "--bootstrap-server", boot, "--cancel", "--reassignment-json-file", plan)
	if !strings.Contains(out, "None of the specified partition reassignments are active.") {
		t.Fatalf("second cancel output:\n%s", out)
	}
	r = admin(t, "reassign-partitions", "--bootstrap-server", boot, "--verify", "--reassignment-json-file", plan)
	if r.ExitCode != 1 || !strings.Contains(r.Stdout, "There is no active reassignment of partition tooled-0, but replica set is") ||
		!strings.Contains(r.Stdout, "Clearing broker-level throttles on brokers 1,2,3") || !strings.Contains(r.Stdout, "Clearing topic-level throttles on topic tooled") {
		t.Fatalf("verify after cancel: exit %d\n%s%s", r.ExitCode, r.Stdout, r.Stderr)
	}
	// Nothing moves any more: --verify removed the throttle.
	if cfg := znodeConfig(t, c, "/config/topics/tooled"); cfg["leader.replication.throttled.replicas"] != "" || cfg["follower.replication.throttled.replicas"] != "" {
		t.Fatalf("topic throttle config after --verify: %v", cfg)
	}
	for _, id := range c.IDs() {
		if cfg := znodeConfig(t, c, "/config/brokers/"+cluster.Itoa32(id)); cfg["leader.replication.throttled.rate"] != "" || cfg["follower.replication.throttled.rate"] != "" {
			t.Fatalf("broker %d throttle rates after --verify: %v", id, cfg)
		}
	}

	quick := cluster.WriteReassignmentFile(t, "quick", map[int32][]int32{0: {3}})
	adminOK(t, "reassign-partitions", "--bootstrap-server", boot, "--execute", "--reassignment-json-file", quick)
	cluster.WaitFor(t, 60*time.Second, func() (bool, string) {
		r = admin(t, "reassign-partitions", "--bootstrap-server", boot, "--verify", "--reassignment-json-file", quick)
		return r.ExitCode == 0, r.Stdout + r.Stderr
	})
	if !strings.Contains(r.Stdout, "Reassignment of partition quick-0 is complete.") {
		t.Fatalf("verify complete:\n%s", r.Stdout)
	}
	if a, err := c.ZK.TopicAssignment("quick"); err != nil || !reflect.DeepEqual(a[0], []int32{3}) {
		t.Fatalf("quick assignment %v %v", a, err)
	}
}
