package integration

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/isrbroker/isrbroker/tests/cluster"
)

// preferredImbalance is kafka.controller:type=KafkaController,name=PreferredReplicaImbalanceCount
// in the metrics endpoint's Prometheus naming.
const preferredImbalance = "kafka_controller_kafkacontroller_preferredreplicaimbalancecount"

// steadyProducer produces to topic with a default franz-go client (acks=all, retries) until
// stop is called, and records every acknowledged record.
type steadyProducer struct {
	mu    sync.Mutex
	acks  []acked
	fails []string
	stop  func()
	done  chan struct{}
	wg    sync.WaitGroup
}

func startSteadyProducer(c *cluster.Cluster, topic string) *steadyProducer {
	p := &steadyProducer{done: make(chan struct{})}
	cl := c.Client()
	ctx, cancel := context.WithCancel(context.Background())
	p.stop = func() { cancel(); <-p.done; p.wg.Wait() }
	go func() {
		defer close(p.done)
		tick := time.NewTicker(2 * time.Millisecond) // about 500 records/s: light load for a 2-core machine
		defer tick.Stop()
		for seq := 0; ; seq++ {
			select {
			case <-tick.C:
			case <-ctx.Done():
				return
			}
			p.wg.Add(1)
			s := seq
			cl.Produce(ctx, &kgo.Record{Topic: topic, Value: []byte(fmt.Sprintf("v-%07d", s))}, func(r *kgo.Record, err error) {
				defer p.wg.Done()
				p.mu.Lock()
				defer p.mu.Unlock()
				if err != nil {
					if ctx.Err() == nil {
						p.fails = append(p.fails, fmt.Sprintf("seq %d: %v", s, err))
					}
					return
				}
				p.acks = append(p.acks, acked{Seq: s, Value: r.Value, Partition: r.Partition, Offset: r.Offset})
			})
		}
	}()
	return p
}

func (p *steadyProducer) counts() (acks, fails int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.acks), len(p.fails)
}

// waitProgress waits until n more records than at the call are acknowledged.
func (p *steadyProducer) waitProgress(t *testing.T, n int, what string) {
	t.Helper()
	from, _ := p.counts()
	cluster.WaitFor(t, failoverTimeout, func() (bool, string) {
		a, f := p.counts()
		return a >= from+n, fmt.Sprintf("%s: %d acknowledged since, %d failed in all", what, a-from, f)
	})
}

// failLeaderAndReturn is the common start of the K7 tests: an RF=3 topic whose preferred
// replica (broker 2) leads and is killed with SIGKILL while a producer writes; another ISR
// member takes over; broker 2 is restarted and caught up into the ISR. It returns the
// partition state right after the failover and once broker 2 is back in the ISR.
func failLeaderAndReturn(t *testing.T, c *cluster.Cluster, topic string, p *steadyProducer) (failed, back cluster.PartitionState) {
	t.Helper()
	const preferred = 2
	p.waitProgress(t, 300, "before the kill")
	c.Kill(preferred)
	failed = c.WaitPartitionState(topic, 0, failoverTimeout, func(st cluster.PartitionState) (bool, string) {
		return st.Leader != preferred && st.Leader >= 0, "waiting for the failover away from broker 2"
	})
	t.Logf("broker %d killed; %s-0 failed over to broker %d (leader epoch %d)", preferred, topic, failed.Leader, failed.LeaderEpoch)
	p.waitProgress(t, 300, "after the failover")
	c.StartBroker(preferred)
	c.WaitRegistered(preferred)
	back = c.WaitPartitionState(topic, 0, failoverTimeout, func(st cluster.PartitionState) (bool, string) {
		return slices.Contains(st.ISR, preferred), "waiting for broker 2 to rejoin the ISR"
	})
	t.Logf("broker %d back in the ISR of %s-0: %+v", preferred, topic, back)
	return failed, back
}

// controllerMetric reads PreferredReplicaImbalanceCount from the current controller.
func controllerMetric(c *cluster.Cluster) (float64, string) {
	id, err := c.ControllerID()
	if err != nil || id < 0 {
		return -1, fmt.Sprintf("no controller (%v)", err)
	}
	v, err := c.MetricSum(id, preferredImbalance)
	if err != nil {
		return -1, err.Error()
	}
	return v, fmt.Sprintf("controller %d: %s = %v", id, preferredImbalance, v)
}

func checkProducedLogs(t *testing.T, c *cluster.Cluster, topic string, p *steadyProducer) {
	t.Helper()
	p.stop()
	p.mu.Lock()
	acks, fails := append([]acked(nil), p.acks...), append([]string(nil), p.fails...)
	p.mu.Unlock()
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
	p := startSteadyProducer(c, topic)
	defer p.stop()
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
	st, err := c.PartitionState(topic, 0)
	if err != nil {
		t.Fatal(err)
	}
	if st.Leader != 2 || st.LeaderEpoch != before.LeaderEpoch+1 || !cluster.SameMembers(st.ISR, before.ISR) {
		t.Fatalf("after the preferred election: %+v (before %+v)", st, before)
	}
	p.waitProgress(t, 500, "after the preferred election")
	cluster.WaitFor(t, failoverTimeout, func() (bool, string) {
		v, msg := controllerMetric(c)
		return v == 0, msg
	})
	// Running it again is a no-op.
	r = cluster.RunBinary(t, "", adminRunTimeout, "leader-election", zkArg, "--election-type", "preferred", "--all-topic-partitions")
	if r.ExitCode != 0 || !strings.Contains(r.Stdout, "Valid replica already elected for partitions pref-0") {
		t.Fatalf("second leader-election: exit %d\nstdout: %s\nstderr: %s", r.ExitCode, r.Stdout, r.Stderr)
	}
	if again, _ := c.PartitionState(topic, 0); again.LeaderEpoch != st.LeaderEpoch {
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
	p := startSteadyProducer(c, topic)
	defer p.stop()
	failed, _ := failLeaderAndReturn(t, c, topic, p)
	st := c.WaitPartitionState(topic, 0, failoverTimeout, func(st cluster.PartitionState) (bool, string) {
		return st.Leader == 2, "waiting for the automatic leader rebalance"
	})
	// The leader's own ISR changes keep the leader epoch: the rebalance is the one bump.
	if st.LeaderEpoch != failed.LeaderEpoch+1 {
		t.Fatalf("after the rebalance: %+v (after the failover %+v): want exactly one leader epoch bump", st, failed)
	}
	p.waitProgress(t, 500, "after the rebalance")
	cluster.WaitFor(t, failoverTimeout, func() (bool, string) {
		v, msg := controllerMetric(c)
		return v == 0, msg
	})
	checkProducedLogs(t, c, topic, p)
}
