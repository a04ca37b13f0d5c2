package integration

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/isrbroker/isrbroker/tests/cluster"
	zkadmin "github.com/isrbroker/isrbroker/zkcoord/admin"
)

// uncleanElections is kafka.controller:type=ControllerStats,name=UncleanLeaderElectionsPerSec's
// event count in the metrics endpoint's Prometheus naming.
const uncleanElections = "kafka_controller_controllerstats_uncleanleaderelections_total"

// nonControllers returns the controller and the other brokers.
func nonControllers(t *testing.T, c *cluster.Cluster) (int32, []int32) {
	t.Helper()
	ctrl, _ := c.ZK.WaitController(20 * time.Second)
	var others []int32
	for _, id := range c.IDs() {
		if id != ctrl {
			others = append(others, id)
		}
	}
	return ctrl, others
}

// rawElectLeaders sends ElectLeaders v2 to broker id only.
func rawElectLeaders(t *testing.T, c *cluster.Cluster, id int32, topic string, partitions ...int32) *kmsg.ElectLeadersResponse {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Broker(id).Addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	req := kmsg.NewPtrElectLeadersRequest()
	rt := kmsg.NewElectLeadersRequestTopic()
	rt.Topic, rt.Partitions = topic, partitions
	req.Topics = append(req.Topics, rt)
	req.TimeoutMillis = 10000
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	resp, err := cl.SeedBrokers()[0].Request(ctx, req)
	if err != nil {
		t.Fatalf("ElectLeaders to broker %d: %v", id, err)
	}
	return resp.(*kmsg.ElectLeadersResponse)
}

// electLeaders runs kadm's ElectLeaders and returns topic's per-partition errors.
func electLeaders(t *testing.T, c *cluster.Cluster, how kadm.ElectLeadersHow, s kadm.TopicsSet, topic string) map[int32]error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := c.Admin().ElectLeaders(ctx, how, s)
	if err != nil {
		t.Fatalf("ElectLeaders: %v", err)
	}
	out := map[int32]error{}
	for p, r := range res[topic] {
		out[p] = r.Err
	}
	return out
}

// KIP-460 preferred: after a broker restart moved leaderships off their preferred replica
// (auto.leader.rebalance.enable=false), kadm ElectLeaders(preferred) brings them back
// (answered once the controller's metadata shows them), a second call answers
// ELECTION_NOT_NEEDED, a null-topics call leaves those out, and a non-controller broker
// answers NOT_CONTROLLER per partition without electing anything.
func TestKIP460_ElectLeadersPreferred(t *testing.T) {
	c := cluster.Start(t, cluster.Options{Brokers: 3, SessionTimeout: 4 * time.Second,
		Overrides: map[string]string{"auto.leader.rebalance.enable": "false"}})
	ctrl, others := nonControllers(t, c)
	b, x := others[0], others[1]
	const topic = "elect-pref"
	assignment := c.CreateTopicWithAssignment(topic, map[int32][]int32{0: {b, x, ctrl}, 1: {b, ctrl, x}, 2: {x, ctrl, b}}, nil)
	waitFullISR(t, c, topic, assignment, failoverTimeout)
	c.Broker(b).Kill()
	for _, p := range []int32{0, 1} {
		c.ZK.WaitPartitionState(topic, p, failoverTimeout, func(st cluster.PartitionState) (bool, string) {
			return st.Leader >= 0 && st.Leader != b, fmt.Sprintf("%s-%d state %+v: waiting for the failover away from broker %d", topic, p, st, b)
		})
	}
	c.Broker(b).Start()
	c.WaitRegistered(b)
	waitFullISR(t, c, topic, assignment, failoverTimeout)
	for _, p := range []int32{0, 1} {
		if st, _ := c.ZK.PartitionState(topic, p); st.Leader == b {
			t.Fatalf("%s-%d: broker %d leads again without an election: %+v", topic, p, b, st)
		}
	}
	before0, _ := c.ZK.PartitionState(topic, 0)

	// Not the controller: NOT_CONTROLLER for every partition, nothing elected.
	resp := rawElectLeaders(t, c, b, topic, 0, 1)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 2 {
		t.Fatalf("non-controller answer: %+v", resp)
	}
	for _, p := range resp.Topics[0].Partitions {
		if p.ErrorCode != kerr.NotController.Code {
			t.Fatalf("non-controller answered %v for partition %d", kerr.ErrorForCode(p.ErrorCode), p.Partition)
		}
	}
	if st, _ := c.ZK.PartitionState(topic, 0); st.LeaderEpoch != before0.LeaderEpoch {
		t.Fatalf("the refused request changed the state: %+v", st)
	}

	got := electLeaders(t, c, kadm.ElectPreferredReplica, kadm.TopicsSet{topic: {0: {}, 2: {}}}, topic)
	if got[0] != nil || !errors.Is(got[2], kerr.ElectionNotNeeded) || len(got) != 2 {
		t.Fatalf("preferred election results %v", got)
	}
	// The tool through --bootstrap-server (kafka-leader-election.sh's output).
	bs := "--bootstrap-server=" + strings.Join(c.BootstrapAddrs(), ",")
	out := adminOK(t, "leader-election", bs, "--election-type", "preferred", "--topic", topic, "--partition", "1")
	if out != "Successfully completed leader election (PREFERRED) for partitions "+topic+"-1\n" {
		t.Fatalf("leader-election output %q", out)
	}
	for _, p := range []int32{0, 1} {
		st, _ := c.ZK.PartitionState(topic, p)
		if st.Leader != b {
			t.Fatalf("%s-%d after the election: %+v", topic, p, st)
		}
	}
	// The answer came after the controller's own metadata showed the new leaders.
	leaders, err := cluster.MetadataLeaders(context.Background(), c.Broker(ctrl).Addr, topic)
	if err != nil || leaders[0] != b || leaders[1] != b {
		t.Fatalf("controller metadata right after the answer: %v %v", leaders, err)
	}

	got = electLeaders(t, c, kadm.ElectPreferredReplica, kadm.TopicsSet{topic: {0: {}, 1: {}, 2: {}}}, topic)
	for p := int32(0); p < 3; p++ {
		if !errors.Is(got[p], kerr.ElectionNotNeeded) {
			t.Fatalf("second election, partition %d: %v", p, got[p])
		}
	}
	// Null topics (every partition): partitions that need nothing are left out.
	if got := electLeaders(t, c, kadm.ElectPreferredReplica, nil, topic); len(got) != 0 {
		t.Fatalf("null-topics election answered %v", got)
	}
}

// KIP-460 unclean and unclean.leader.election.enable turned on dynamically (S14, K6): two
// RF=2 topics whose follower is SIGSTOPped until it leaves the ISR; more records are
// acknowledged by the leader alone; the leader is killed and the follower resumed, so no ISR
// member is alive and both partitions are offline (unclean elections disabled). kadm
// ElectLeaders(unclean) brings the first online from the out-of-sync replica; writing
// unclean.leader.election.enable=true for the second through ZooKeeper (as kafka-configs
// --zookeeper does) brings it online too. Each counts in UncleanLeaderElectionsPerSec on the
// controller and logs the possible data loss.
func TestKIP460_ElectLeadersUncleanAndConfigChange(t *testing.T) {
	const lag = time.Second
	c := cluster.Start(t, cluster.Options{Brokers: 3, SessionTimeout: 6 * time.Second,
		Overrides: map[string]string{"replica.lag.time.max.ms": fmt.Sprint(lag.Milliseconds()), "auto.leader.rebalance.enable": "false"}})
	ctrl, others := nonControllers(t, c)
	leader, follower := others[0], others[1]
	topics := []string{"unclean-api", "unclean-config", "unclean-tool"}
	for _, topic := range topics {
		a := c.CreateTopicWithAssignment(topic, map[int32][]int32{0: {leader, follower}}, nil)
		waitFullISR(t, c, topic, a, failoverTimeout)
	}
	cl := c.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produce := func(n int, what string) {
		t.Helper()
		for _, topic := range topics {
			for i := 0; i < n; i++ {
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(fmt.Sprintf("%s-%d", what, i))}).FirstErr()
				cancel()
				if err != nil {
					t.Fatalf("produce %s to %s: %v", what, topic, err)
				}
			}
		}
	}
	produce(10, "both")
	// The load client learns the leaders before the follower stops: a client bootstrapping
	// afterwards may ask the stopped broker for metadata and hang there, and without load the
	// follower stays caught up (S5b) and never leaves the ISR.
	ack1 := c.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	for _, topic := range topics {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		err := ack1.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("warm-up")}).FirstErr()
		cancel()
		if err != nil {
			t.Fatalf("warm-up produce to %s: %v", topic, err)
		}
	}

	c.Broker(follower).Pause()
	resumed := false
	defer func() {
		if !resumed {
			c.Broker(follower).Resume()
		}
	}()
	// The leader shrinks the ISR of a follower that does not keep up: keep records coming
	// (acks=1, so nothing waits for the stopped follower).
	stopLoad := make(chan struct{})
	loadDone := make(chan struct{})
	go func() {
		defer close(loadDone)
		for i := 0; ; i++ {
			select {
			case <-stopLoad:
				return
			case <-time.After(20 * time.Millisecond): // load pacing, not synchronisation
			}
			for _, topic := range topics {
				ack1.Produce(context.Background(), &kgo.Record{Topic: topic, Value: []byte(fmt.Sprintf("load-%d", i))}, nil)
			}
		}
	}()
	for _, topic := range topics {
		c.ZK.WaitPartitionState(topic, 0, lag*3/2+4*time.Second, func(st cluster.PartitionState) (bool, string) {
			return slices.Equal(st.ISR, []int32{leader}), fmt.Sprintf("%s ISR %v, want [%d]", topic, st.ISR, leader)
		})
	}
	close(stopLoad)
	<-loadDone
	produce(5, "leader-only")
	c.Broker(leader).Kill()
	c.Broker(follower).Resume()
	resumed = true
	for _, topic := range topics {
		c.ZK.WaitPartitionState(topic, 0, failoverTimeout, func(st cluster.PartitionState) (bool, string) {
			return st.Leader == -1 && slices.Equal(st.ISR, []int32{leader}), fmt.Sprintf("%s state %+v, want offline with ISR [%d]", topic, st, leader)
		})
	}
	unclean := func() float64 {
		v, err := c.Broker(ctrl).MetricSum(uncleanElections)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	if v := unclean(); v != 0 {
		t.Fatalf("%s = %v before any unclean election", uncleanElections, v)
	}

	// A preferred election cannot help; the unclean one elects the out-of-sync follower.
	api := kadm.TopicsSet{topics[0]: {0: {}}}
	if got := electLeaders(t, c, kadm.ElectPreferredReplica, api, topics[0]); !errors.Is(got[0], kerr.PreferredLeaderNotAvailable) {
		t.Fatalf("preferred election of an offline partition: %v", got)
	}
	if got := electLeaders(t, c, kadm.ElectLiveReplica, api, topics[0]); got[0] != nil || len(got) != 1 {
		t.Fatalf("unclean election: %v", got)
	}
	st, _ := c.ZK.PartitionState(topics[0], 0)
	if st.Leader != follower || !slices.Equal(st.ISR, []int32{follower}) {
		t.Fatalf("%s after the unclean election: %+v", topics[0], st)
	}
	if v := unclean(); v != 1 {
		t.Fatalf("%s = %v after one unclean election", uncleanElections, v)
	}
	if st, _ := c.ZK.PartitionState(topics[1], 0); st.Leader != -1 {
		t.Fatalf("%s elected although only %s was asked for: %+v", topics[1], topics[0], st)
	}
	if got := electLeaders(t, c, kadm.ElectLiveReplica, api, topics[0]); !errors.Is(got[0], kerr.ElectionNotNeeded) {
		t.Fatalf("second unclean election: %v", got)
	}

	// The tool through --bootstrap-server on the third topic.
	bs := "--bootstrap-server=" + strings.Join(c.BootstrapAddrs(), ",")
	tool := []string{"leader-election", bs, "--topic", topics[2], "--partition", "0", "--election-type"}
	r := admin(t, append(tool, "preferred")...)
	if r.ExitCode != 1 || !strings.Contains(r.Stdout, "Error completing leader election (PREFERRED) for partition: "+topics[2]+"-0: PREFERRED_LEADER_NOT_AVAILABLE") {
		t.Fatalf("preferred election tool on an offline partition: exit %d\nstdout: %s\nstderr: %s", r.ExitCode, r.Stdout, r.Stderr)
	}
	if out := adminOK(t, append(tool, "unclean")...); out != "Successfully completed leader election (UNCLEAN) for partitions "+topics[2]+"-0\n" {
		t.Fatalf("unclean election tool: %q", out)
	}
	if out := adminOK(t, append(tool, "unclean")...); out != "Valid replica already elected for partitions "+topics[2]+"-0\n" {
		t.Fatalf("second unclean election tool: %q", out)
	}
	if v := unclean(); v != 2 {
		t.Fatalf("%s = %v after two unclean elections", uncleanElections, v)
	}

	// The config path: unclean.leader.election.enable=true for the second topic.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	adm, err := zkadmin.Connect(ctx, c.ZK.Addr, 10*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	changed := time.Now()
	if err := adm.Admin.AlterTopicConfig(topics[1], func(m map[string]string) { m["unclean.leader.election.enable"] = "true" }); err != nil {
		t.Fatal(err)
	}
	c.ZK.WaitPartitionState(topics[1], 0, 10*time.Second, func(st cluster.PartitionState) (bool, string) {
		return st.Leader == follower && slices.Equal(st.ISR, []int32{follower}), fmt.Sprintf("%s state %+v", topics[1], st)
	})
	t.Logf("%s online %v after the config change", topics[1], time.Since(changed).Round(time.Millisecond))
	cluster.WaitFor(t, 10*time.Second, func() (bool, string) {
		v := unclean()
		return v == 3, fmt.Sprintf("%s = %v, want 3", uncleanElections, v)
	})

	out := c.Broker(ctrl).Output()
	for _, topic := range topics {
		found := false
		for _, line := range strings.Split(out, "\n") {
			if strings.Contains(line, "unclean leader election") && strings.Contains(line, "data loss is possible") &&
				strings.Contains(line, "topic="+topic) && strings.Contains(line, "previousIsr") && strings.Contains(line, fmt.Sprintf("leader=%d", follower)) {
				found = true
			}
		}
		if !found {
			t.Errorf("the controller's log has no data-loss warning for %s:\n%s", topic, c.Broker(ctrl).Tail(40))
		}
	}
	// Both partitions take writes again from the new leader.
	produce(3, "after")
}
