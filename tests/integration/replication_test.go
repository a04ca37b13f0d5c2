package integration

import (
	"context"
	"fmt"
	"reflect"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/isrbroker/isrbroker/tests/cluster"
)

// sortedCopy returns ids sorted ascending.
func sortedCopy(ids []int32) []int32 {
	out := append([]int32(nil), ids...)
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// waitFullISR waits until every partition of topic has all its replicas in the ISR (state znode).
func waitFullISR(t *testing.T, c *cluster.Cluster, topic string, assignment map[int32][]int32, timeout time.Duration) {
	t.Helper()
	cluster.WaitFor(t, timeout, func() (bool, string) {
		for p, replicas := range assignment {
			st, err := c.PartitionState(topic, p)
			if err != nil {
				return false, err.Error()
			}
			if !reflect.DeepEqual(sortedCopy(st.ISR), sortedCopy(replicas)) {
				return false, fmt.Sprintf("%s-%d isr %v, replicas %v", topic, p, st.ISR, replicas)
			}
		}
		return true, ""
	})
}

// reliability.md fault row 1 (S3, S4, S7, K1): with RF=3 and acks=all, SIGKILL the leader of a
// partition while a default kgo producer writes; a new leader is elected from the ISR with
// leader_epoch+1, writes go on, the killed broker returns and rejoins the ISR, and every
// acknowledged record is readable at its offset.
func TestRF3KillLeaderUnderAcksAll_EveryAckedRecordSurvives(t *testing.T) {
	c := cluster.Start(t, cluster.Options{Brokers: 3, SessionTimeout: faultSession})
	const topic, partitions = "rf3", 3
	assignment := c.CreateTopic(topic, partitions, 3)
	waitFullISR(t, c, topic, assignment, failoverTimeout)
	st0, err := c.PartitionState(topic, 0)
	if err != nil {
		t.Fatal(err)
	}
	victim := st0.Leader

	cl := c.Client() // defaults: acks=all
	var (
		mu    sync.Mutex
		acks  []acked
		fails int
		wg    sync.WaitGroup
	)
	count := func() int { mu.Lock(); defer mu.Unlock(); return len(acks) }
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	producerDone := make(chan struct{})
	go func() {
		defer close(producerDone)
		for seq := 0; ctx.Err() == nil; seq++ {
			wg.Add(1)
			s := seq
			cl.Produce(ctx, &kgo.Record{Topic: topic, Key: []byte(fmt.Sprintf("k%d", seq%31)), Value: []byte(fmt.Sprintf("seq-%07d", seq))},
				func(r *kgo.Record, err error) {
					defer wg.Done()
					mu.Lock()
					defer mu.Unlock()
					if err != nil {
						fails++
						return
					}
					acks = append(acks, acked{Seq: s, Key: r.Key, Value: r.Value, Partition: r.Partition, Offset: r.Offset})
				})
		}
	}()

	cluster.WaitFor(t, time.Minute, func() (bool, string) { n := count(); return n >= 3000, fmt.Sprintf("%d acknowledged", n) })
	c.Kill(victim)
	cluster.WaitFor(t, failoverTimeout, func() (bool, string) {
		st, err := c.PartitionState(topic, 0)
		if err != nil {
			return false, err.Error()
		}
		if st.Leader < 0 || st.Leader == victim || st.LeaderEpoch <= st0.LeaderEpoch {
			return false, fmt.Sprintf("%s-0 state %+v after killing leader %d (epoch was %d)", topic, st, victim, st0.LeaderEpoch)
		}
		return true, ""
	})
	atFailover := count()
	cluster.WaitFor(t, failoverTimeout, func() (bool, string) {
		n := count()
		return n >= atFailover+2000, fmt.Sprintf("%d acknowledged since the failover", n-atFailover)
	})

	c.StartBroker(victim)
	c.WaitRegistered(victim)
	waitFullISR(t, c, topic, assignment, failoverTimeout)
	atRejoin := count()
	cluster.WaitFor(t, failoverTimeout, func() (bool, string) {
		n := count()
		return n >= atRejoin+1000, fmt.Sprintf("%d acknowledged since broker %d rejoined", n-atRejoin, victim)
	})
	stop()
	<-producerDone
	flushCtx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := cl.Flush(flushCtx); err != nil {
		t.Fatalf("flush: %v", err)
	}
	promisesDone := make(chan struct{})
	go func() { wg.Wait(); close(promisesDone) }()
	select {
	case <-promisesDone:
	case <-flushCtx.Done():
		t.Fatal("produce promises still outstanding after flush")
	}

	mu.Lock()
	want := append([]acked(nil), acks...)
	mu.Unlock()
	t.Logf("%d records acknowledged, %d produces failed", len(want), fails)
	got := readAll(t, c, topic, partitions)
	at := map[int32]map[int64]string{}
	for p, rs := range got {
		at[p] = map[int64]string{}
		for _, r := range rs {
			at[p][r.Offset] = string(r.Value)
		}
	}
	lost := 0
	for _, a := range want {
		if v, ok := at[a.Partition][a.Offset]; !ok || v != string(a.Value) {
			if lost < 10 {
				t.Errorf("acknowledged %s at %s-%d offset %d: consumed %q (present %v)", a.Value, topic, a.Partition, a.Offset, v, ok)
			}
			lost++
		}
	}
	if lost > 0 {
		t.Errorf("%d of %d acknowledged records lost", lost, len(want))
	}
}
