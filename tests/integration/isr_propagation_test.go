package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/isrbroker/isrbroker/tests/cluster"
)

// K5: a leader's own ISR change (written to ZooKeeper by the leader, S10) reaches every broker's
// metadata through /isr_change_notification: the controller re-reads the state and sends
// UpdateMetadata to all brokers, so clients asking any broker see the new ISR.
func TestK5_IsrChangeReachesEveryBrokersMetadata(t *testing.T) {
	const lag = 2 * time.Second
	// The follower stays stopped for the shrink (≤ 1.5 × lag) plus the propagation (5 s black-out,
	// checked every 2.5 s): keep the session far longer so only the leader changes the ISR.
	c := cluster.Start(t, cluster.Options{Brokers: 3, SessionTimeout: 18 * time.Second,
		Overrides: map[string]string{"replica.lag.time.max.ms": fmt.Sprint(lag.Milliseconds())}})
	const topic = "k5"
	assignment := c.CreateTopic(topic, 1, 3)
	waitFullISR(t, c, topic, assignment, failoverTimeout)
	st0, err := c.ZK.PartitionState(topic, 0)
	if err != nil {
		t.Fatal(err)
	}
	// Stop a follower that is not the controller: the controller turns the leader's
	// /isr_change_notification into UpdateMetadata, and a stopped controller cannot.
	ctrl, _ := c.ZK.WaitController(10 * time.Second)
	var follower int32 = -1
	for _, r := range assignment[0] {
		if r != st0.Leader && r != ctrl {
			follower = r
			break
		}
	}
	// Metadata as each running broker's cache reports it.
	metadataISR := func(want []int32) func() (bool, string) {
		return func() (bool, string) {
			for _, id := range c.IDs() {
				if id == follower {
					continue
				}
				ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
				parts, err := cluster.MetadataPartitions(ctx, c.Broker(id).Addr, topic)
				cancel()
				if err != nil {
					return false, fmt.Sprintf("broker %d: %v", id, err)
				}
				if p := parts[0]; !cluster.SameMembers(p.ISR, want) || p.Leader != st0.Leader {
					return false, fmt.Sprintf("broker %d metadata: leader %d ISR %v, want leader %d ISR %v", id, p.Leader, p.ISR, st0.Leader, want)
				}
			}
			return true, ""
		}
	}
	cluster.WaitFor(t, 30*time.Second, metadataISR(assignment[0]))

	w := startAckProducer(t, c.Client(kgo.RecordPartitioner(kgo.ManualPartitioner())), topic, replicationLoad(1))
	cluster.WaitFor(t, time.Minute, func() (bool, string) { n := w.count(); return n >= 200, fmt.Sprintf("%d acknowledged", n) })
	stoppedAt := time.Now()
	c.Broker(follower).Pause()
	var shrunk []int32
	for _, r := range assignment[0] {
		if r != follower {
			shrunk = append(shrunk, r)
		}
	}
	c.ZK.WaitPartitionState(topic, 0, lag*3/2+3*time.Second, func(st cluster.PartitionState) (bool, string) {
		return cluster.SameMembers(st.ISR, shrunk), fmt.Sprintf("ZooKeeper ISR %v, want %v", st.ISR, shrunk)
	})
	inZK := time.Now()
	// Kafka's propagation: at most one notification per 2.5 s check, after 5 s without changes.
	cluster.WaitFor(t, 12*time.Second, metadataISR(shrunk))
	t.Logf("ISR change reached every broker's metadata %v after the ZooKeeper write (%v after SIGSTOP)",
		time.Since(inZK).Round(time.Millisecond), time.Since(stoppedAt).Round(time.Millisecond))
	c.Broker(follower).Resume()
	waitFullISR(t, c, topic, assignment, failoverTimeout)
	cluster.WaitFor(t, 20*time.Second, metadataISR(assignment[0]))
	acks, _ := w.stop(t)
	checkAckedExactlyOnce(t, readAll(t, c, topic, 1), acks, nil)
}
