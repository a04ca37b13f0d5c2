package integration

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/isrbroker/isrbroker/tests/cluster"
)

// preferredImbalance is kafka.controller:type=KafkaController,name=PreferredReplicaImbalanceCount
// in the metrics endpoint's Prometheus naming.
const preferredImbalance = "kafka_controller_kafkacontroller_preferredreplicaimbalancecount"

// preferredLoad is the K7 tests' producer on a default franz-go client (acks=all, retries):
// one record every 2 ms, about 500 records/s, a light load for a 2-core machine.
var preferredLoad = ackProducerOptions{every: 2 * time.Millisecond, perTick: 1}

// failLeaderAndReturn is the common start of the K7 tests: an RF=3 topic whose preferred
// replica (broker 2) leads and is killed with SIGKILL while a producer writes; another ISR
// member takes over; broker 2 is restarted and caught up into the ISR. It returns the
// partition state right after the failover and once broker 2 is back in the ISR.
func failLeaderAndReturn(t *testing.T, c *cluster.Cluster, topic string, p *ackProducer) (failed, back cluster.PartitionState) {
	t.Helper()
	const preferred = 2
	p.waitProgress(t, 300, failoverTimeout, "before the kill")
	c.Broker(preferred).Kill()
	failed = c.ZK.WaitPartitionState(topic, 0, failoverTimeout, func(st cluster.PartitionState) (bool, string) {
		return st.Leader != preferred && st.Leader >= 0, "waiting for the failover away from broker 2"
	})
	t.Logf("broker %d killed; %s-0 failed over to broker %d (leader epoch %d)", preferred, topic, failed.Leader, failed.LeaderEpoch)
	p.waitProgress(t, 300, failoverTimeout, "after the failover")
	c.Broker(preferred).Start()
	c.WaitRegistered(preferred)
	back = c.ZK.WaitPartitionState(topic, 0, failoverTimeout, func(st cluster.PartitionState) (bool, string) {
		return slices.Contains(st.ISR, preferred), "waiting for broker 2 to rejoin the ISR"
	})
	t.Logf("broker %d back in the ISR of %s-0: %+v", preferred, topic, back)
	return failed, back
}

// controllerMetric reads PreferredReplicaImbalanceCount from the current controller.
func controllerMetric(c *cluster.Cluster) (float64, string) {
	id, err := c.ZK.ControllerID()
	if err != nil || id < 0 {
		return -1, fmt.Sprintf("no controller (%v)", err)
	}
	v, err := c.Broker(id).MetricSum(preferredImbalance)
	if err != nil {
		return -1, err.Error()
	}
	return v, fmt.Sprintf("controller %d: %s = %v", id, preferredImbalance, v)
}

// checkProducedLogs stops p and checks that no produce failed while the brokers were moving
// leadership (records the stop cancels do not count) and that the log holds exactly the
// acknowledged records.
func checkProducedLogs(t *testing.T, c *cluster.Cluster, topic string, p *ackProducer) {
	t.Helper()
	acks, all := p.stop(t)
	var fails []string
	for _, f := range all {
		if !f.Stopping {
			fails = append(fails, fmt.Sprintf("seq %d: %v", f.Seq, f.Err))
		}
	}
	if len(fails) > 0 {
		t.Errorf("%d produce requests failed (default client, acks=all, retries): first %s", len(fails), fails[0])
	}
	checkPartitionLogs(t, readAll(t, c, topic, 1), acks)
}

// K7 and issue 4 item 3 (done when: after a leader failover and the old leader's return, a
// preferred election moves leadership back): with auto.leader.rebalance.enable=false, kill -9
// the leader of an RF=3 partition (its preferred replica), restart it, wait until it is back
// in the ISR, and run `isrbroker leader-election --election-type preferred` through the
// binary: the preferred replica leads again with leader_epoch+1, a default producer keeps
// working throughout, and every acknowledged record is in the log exactly once.
func TestK7_PreferredElectionMovesLeadershipBack(t *testing.T) {
	c := cluster.Start(t, cluster.Options{Brokers: 3, SessionTimeout: 4 * time.Second,
		Overrides: map[string]string{"auto.leader.rebalance.enable": "false"}})
	const topic = "pref"
	assignment := c.CreateTopicWithAssignment(topic, map[int32][]int32{0: {2, 3, 1}}, nil)
	waitFullISR(t, c, topic, assignment, failoverTimeout)
	p := startAckProducer(t, c.Client(), topic, preferredLoad)
	_, before := failLeaderAndReturn(t, c, topic, p)
	if before.Leader == 2 {
		t.Fatalf("leadership moved back to broker 2 without an election (auto rebalance is off): %+v", before)
	}
	cluster.WaitFor(t, failoverTimeout, func() (bool, string) {
		v, msg := controllerMetric(c)
		return v == 1, msg
	})

	zkArg := "--zookeeper=" + c.ZK.Addr
	r := cluster.RunBinary(t, "", adminRunTimeout, "leader-election", zkArg, "--election-type", "preferred", "--topic", topic, "--partition", "0")
	if r.ExitCode != 0 || r.Stdout != "Successfully completed leader election (PREFERRED) for partitions pref-0\n" {
		t.Fatalf("leader-election: exit %d\nstdout: %s\nstderr: %s", r.ExitCode, r.Stdout, r.Stderr)
	}
	st, err := c.ZK.PartitionState(topic, 0)
	if err != nil {
		t.Fatal(err)
	}
	if st.Leader != 2 || st.LeaderEpoch != before.LeaderEpoch+1 || !cluster.SameMembers(st.ISR, before.ISR) {
		t.Fatalf("after the preferred election: %+v (before %+v)", st, before)
	}
	p.waitProgress(t, 500, failoverTimeout, "after the preferred election")
	cluster.WaitFor(t, failoverTimeout, func() (bool, string) {
		v, msg := controllerMetric(c)
		return v == 0, msg
	})
	// Running it again is a no-op.
	r = cluster.RunBinary(t, "", adminRunTimeout, "leader-election", zkArg, "--election-type", "preferred", "--all-topic-partitions")
	if r.ExitCode != 0 || !strings.Contains(r.Stdout, "Valid replica already elected for partitions pref-0") {
		t.Fatalf("second leader-election: exit %d\nstdout: %s\nstderr: %s", r.ExitCode, r.Stdout, r.Stderr)
	}
	if again, _ := c.ZK.PartitionState(topic, 0); again.LeaderEpoch != st.LeaderEpoch {
		t.Fatalf("the no-op election changed the state: %+v (was %+v)", again, st)
	}
	checkProducedLogs(t, c, topic, p)
}

// K7: with auto.leader.rebalance.enable=true and leader.imbalance.check.interval.seconds=2,
// the same failure and return moves the leadership back to the preferred replica without
// the CLI (leader_epoch+1), while a default producer keeps working.
func TestK7_AutoLeaderRebalanceMovesLeadershipBack(t *testing.T) {
	c := cluster.Start(t, cluster.Options{Brokers: 3, SessionTimeout: 4 * time.Second,
		Overrides: map[string]string{"auto.leader.rebalance.enable": "true", "leader.imbalance.check.interval.seconds": "2"}})
	const topic = "rebal"
	assignment := c.CreateTopicWithAssignment(topic, map[int32][]int32{0: {2, 3, 1}}, nil)
	waitFullISR(t, c, topic, assignment, failoverTimeout)
	p := startAckProducer(t, c.Client(), topic, preferredLoad)
	failed, _ := failLeaderAndReturn(t, c, topic, p)
	st := c.ZK.WaitPartitionState(topic, 0, failoverTimeout, func(st cluster.PartitionState) (bool, string) {
		return st.Leader == 2, "waiting for the automatic leader rebalance"
	})
	// The leader's own ISR changes keep the leader epoch: the rebalance is the one bump.
	if st.LeaderEpoch != failed.LeaderEpoch+1 {
		t.Fatalf("after the rebalance: %+v (after the failover %+v): want exactly one leader epoch bump", st, failed)
	}
	p.waitProgress(t, 500, failoverTimeout, "after the rebalance")
	cluster.WaitFor(t, failoverTimeout, func() (bool, string) {
		v, msg := controllerMetric(c)
		return v == 0, msg
	})
	checkProducedLogs(t, c, topic, p)
}
