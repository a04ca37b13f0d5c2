package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/isrbroker/isrbroker/tests/cluster"
)

// observedState is one partition state znode read by the watcher, with the zxid of the
// write that produced it.
type observedState struct {
	st    cluster.PartitionState
	mzxid int64
	at    time.Time
}

// watchPartitionState follows path with ZooKeeper data watches until stop is closed and
// records every state it reads.
func watchPartitionState(zkc *zk.Conn, path string, stop <-chan struct{}) <-chan []observedState {
	out := make(chan []observedState, 1)
	go func() {
		var seen []observedState
		defer func() { out <- seen }()
		for {
			data, stat, ch, err := zkc.GetW(path)
			if err != nil {
				select {
				case <-stop:
					return
				case <-time.After(20 * time.Millisecond): // ZooKeeper hiccup: poll again
					continue
				}
			}
			var st cluster.PartitionState
			if json.Unmarshal(data, &st) == nil {
				st.ZkVersion = stat.Version
				seen = append(seen, observedState{st: st, mzxid: stat.Mzxid, at: time.Now()})
			}
			select {
			case <-stop:
				return
			case <-ch:
			}
		}
	}()
	return out
}

// K7 (docs/reliability.md, fault matrix row 3, "clean bounce"): SIGTERM the leader of a partition with RF=3
// and min.insync.replicas=2 while a default franz-go producer (acks=all) writes. The broker's
// controlled shutdown moves the leadership before it exits (the state znode shows another
// leader with leader_epoch+1 while the broker is still registered), it exits 0 in bounded
// time, the producer never waits 5 s or more between two acknowledgements, and every
// acknowledged value is in the topic exactly once.
func TestK7_ControlledShutdownMovesLeadership(t *testing.T) {
	c := cluster.Start(t, cluster.Options{Brokers: 3})
	const topic = "k7"
	ctx := context.Background()
	minISR := "2"
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	resp, err := c.Admin().CreateTopic(cctx, 1, 3, map[string]*string{"min.insync.replicas": &minISR}, topic)
	cancel()
	if err != nil || resp.Err != nil {
		t.Fatalf("create topic %s: %v %v", topic, err, resp.Err)
	}
	assignment := c.ZK.WaitTopicOnline(topic, 30*time.Second)
	c.WaitMetadataLeaders(topic, 1, 30*time.Second)
	waitFullISR(t, c, topic, assignment, failoverTimeout)
	st0, err := c.ZK.PartitionState(topic, 0)
	if err != nil {
		t.Fatal(err)
	}
	victim := st0.Leader

	cl := c.Client() // defaults: acks=all, retries
	created := time.Now()
	w := startAckProducer(t, cl, topic, ackProducerOptions{}) // about 2500 records/s
	// kgo refreshes metadata after NOT_LEADER_FOR_PARTITION at most every 5 s
	// (MetadataMinAge): produce for longer than that before the leader goes, so the
	// measured gap is the broker's unavailability, not the client's refresh limit.
	cluster.WaitFor(t, time.Minute, func() (bool, string) {
		n := w.count()
		return n >= 2000 && time.Since(created) > 6*time.Second, fmt.Sprintf("%d acknowledged", n)
	})

	stopWatch := make(chan struct{})
	watched := watchPartitionState(c.ZK.Conn(), cluster.PartitionStatePath(topic, 0), stopWatch)
	atTerm := w.count()
	termStart := time.Now()
	code := c.Broker(victim).Terminate() // SIGTERM; fails the test after 30 s
	took := time.Since(termStart)
	close(stopWatch)
	seen := <-watched
	if code != 0 {
		t.Errorf("broker %d exited %d after SIGTERM, want 0", victim, code)
	}
	if took > 20*time.Second {
		t.Errorf("broker %d took %v to exit after SIGTERM", victim, took)
	}
	t.Logf("broker %d (leader of %s-0 at leader epoch %d) exited %d after %v", victim, topic, st0.LeaderEpoch, code, took)

	// The broker's registration went away when it closed its session; nothing else changed
	// /brokers/ids since, so its pzxid is the zxid of that deletion.
	_, ids, err := c.ZK.Conn().Get("/brokers/ids")
	if err != nil {
		t.Fatal(err)
	}
	if reg, _, _ := c.ZK.Conn().Exists("/brokers/ids/" + strconv.Itoa(int(victim))); reg {
		t.Fatalf("broker %d still registered after it exited", victim)
	}
	// The first state the watcher saw with another leader is the controlled-shutdown
	// election: leader_epoch+1, written (mzxid) before the registration was deleted.
	moved := false
	for _, o := range seen {
		if o.st.Leader == victim {
			continue
		}
		before := o.mzxid < ids.Pzxid
		t.Logf("state after SIGTERM (+%v): %+v, written before broker %d deregistered: %v", o.at.Sub(termStart), o.st, victim, before)
		if o.st.Leader < 0 || o.st.LeaderEpoch != st0.LeaderEpoch+1 || !before {
			t.Errorf("leadership did not move before exit: first new state %+v (epoch before %d), mzxid %d, deregistration zxid %d",
				o.st, st0.LeaderEpoch, o.mzxid, ids.Pzxid)
		}
		if slices.Contains(o.st.ISR, victim) {
			t.Errorf("the shutting-down broker stayed in the ISR: %+v", o.st)
		}
		moved = true
		break
	}
	if !moved {
		t.Errorf("the state znode never named a leader other than %d: %+v", victim, seen)
	}

	cluster.WaitFor(t, failoverTimeout, func() (bool, string) {
		n := w.count()
		return n >= atTerm+2000, fmt.Sprintf("%d acknowledged since SIGTERM", n-atTerm)
	})
	want, _ := w.stop(t)
	times := w.ackTimes()
	var gap time.Duration
	var gapAt time.Time
	for i := 1; i < len(times); i++ {
		if d := times[i].Sub(times[i-1]); d > gap {
			gap, gapAt = d, times[i-1]
		}
	}
	t.Logf("longest gap between acks %v (starting %v after SIGTERM)", gap, gapAt.Sub(termStart))
	// "A few seconds": typically well under 1 s. kgo re-reads metadata at most every 5 s
	// (MetadataMinAge), so one refresh that still sees the old leader (a broker whose metadata
	// cache had not yet applied the controller's UpdateMetadata) costs a full 5 s; two would
	// mean the leadership move itself is slow.
	if gap >= 8*time.Second {
		t.Errorf("producer waited %v between two acknowledgements (limit 8 s)", gap)
	}

	got := readAll(t, c, topic, 1)
	occurrences := map[string]int{}
	for _, r := range got[0] {
		occurrences[string(r.Value)]++
	}
	bad := 0
	for _, a := range want {
		if n := occurrences[string(a.Value)]; n != 1 {
			if bad < 10 {
				t.Errorf("acknowledged value %s (offset %d) is in the topic %d times", a.Value, a.Offset, n)
			}
			bad++
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d acknowledged values not present exactly once", bad, len(want))
	}
}
