package integration

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/isrbroker/isrbroker/tests/cluster"
)

// Issue 3 ("Done when"): replication under faults, proven against real ZooKeeper and real broker
// processes. The checkers follow the fault matrix of docs/reliability.md: L (every acknowledged record present), O (one
// value per partition and offset), R (replicas' batches below the HW identical), E (epochs only
// rise).

// replicationLoad is the replication tests' producer: about 1000 records/s (5 every 5 ms),
// round-robin over partitions; the client must use kgo.ManualPartitioner.
func replicationLoad(partitions int32) ackProducerOptions {
	return ackProducerOptions{every: 5 * time.Millisecond, perTick: 5, partitions: partitions}
}

// seenRecord is one record a consumer read.
type seenRecord struct {
	partition int32
	offset    int64
	value     string
}

// startCommittedReader consumes topic from the start with read_committed isolation (reads stop
// at the HW, S7) until the returned stop function is called, which returns everything read.
func startCommittedReader(c *cluster.Cluster, topic string) (stop func() []seenRecord) {
	cl := c.Client(kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.MetadataMinAge(500*time.Millisecond))
	ctx, cancel := context.WithCancel(context.Background())
	var seen []seenRecord
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			fs := cl.PollFetches(ctx)
			fs.EachRecord(func(r *kgo.Record) {
				seen = append(seen, seenRecord{r.Partition, r.Offset, string(r.Value)})
			})
		}
	}()
	return func() []seenRecord {
		cancel()
		<-done
		return seen
	}
}

// checkAckedExactlyOnce checks L and O: every acknowledged value is in the final log exactly
// once, at its acknowledged partition and offset, and every record a committed reader saw during
// the test is still there at the same offset.
func checkAckedExactlyOnce(t *testing.T, final map[int32][]*kgo.Record, acks []acked, seen []seenRecord) {
	t.Helper()
	type where struct {
		p   int32
		off int64
	}
	at := map[where]string{}
	places := map[string][]where{}
	for p, rs := range final {
		for _, r := range rs {
			w := where{p, r.Offset}
			if _, dup := at[w]; dup {
				t.Errorf("partition %d offset %d consumed twice", p, r.Offset)
			}
			at[w] = string(r.Value)
			places[string(r.Value)] = append(places[string(r.Value)], w)
		}
	}
	bad := 0
	for _, a := range acks {
		ws := places[string(a.Value)]
		if len(ws) != 1 || ws[0] != (where{a.Partition, a.Offset}) {
			if bad < 10 {
				t.Errorf("acknowledged %s at partition %d offset %d; in the final log at %v", a.Value, a.Partition, a.Offset, ws)
			}
			bad++
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d acknowledged records missing, duplicated or moved", bad, len(acks))
	}
	vanished := 0
	for _, s := range seen {
		if v, ok := at[where{s.partition, s.offset}]; !ok || v != s.value {
			if vanished < 10 {
				t.Errorf("a committed read saw %q at partition %d offset %d; the final log has %q (present %v)", s.value, s.partition, s.offset, v, ok)
			}
			vanished++
		}
	}
	if vanished > 0 {
		t.Errorf("%d of %d records read during the test are gone", vanished, len(seen))
	}
	t.Logf("checked %d acknowledged records and %d records read during the test", len(acks), len(seen))
}

// leaderLEO asks topic-p's current leader (from ZooKeeper) for its LEO (ListOffsets latest as a
// replica) and its HW (as a consumer).
func leaderLEO(c *cluster.Cluster, topic string, p int32, asReplica int32) (leader int32, leo, hw int64, err error) {
	st, err := c.ZK.PartitionState(topic, p)
	if err != nil {
		return -1, -1, -1, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if leo, err = c.Broker(st.Leader).ListOffset(ctx, topic, p, -1, asReplica); err != nil {
		return st.Leader, -1, -1, fmt.Errorf("ListOffsets(latest, replica %d) to leader %d: %w", asReplica, st.Leader, err)
	}
	if hw, err = c.Broker(st.Leader).ListOffset(ctx, topic, p, -1, -1); err != nil {
		return st.Leader, -1, -1, fmt.Errorf("ListOffsets(latest) to leader %d: %w", st.Leader, err)
	}
	return st.Leader, leo, hw, nil
}

// waitReplicasIdentical waits until, for every partition, every replica's log on disk ends at
// the leader's LEO and the leader's HW equals it (writes have stopped), then compares the
// replicas' batches below the HW (checker R). It returns the HW per partition.
func waitReplicasIdentical(t *testing.T, c *cluster.Cluster, topic string, assignment map[int32][]int32, timeout time.Duration) map[int32]int64 {
	t.Helper()
	hws := map[int32]int64{}
	for p, replicas := range assignment {
		var logs map[int32][]cluster.SegmentBatch
		var starts map[int32]int64
		var hw int64
		cluster.WaitFor(t, timeout, func() (bool, string) {
			leader, leo, h, err := leaderLEO(c, topic, p, replicas[len(replicas)-1])
			if err != nil {
				return false, err.Error()
			}
			if h != leo {
				return false, fmt.Sprintf("%s-%d: leader %d HW %d, LEO %d", topic, p, leader, h, leo)
			}
			logs = map[int32][]cluster.SegmentBatch{}
			for _, id := range replicas {
				dir := c.Broker(id).PartitionDir(topic, p)
				bs, err := cluster.ReadPartitionBatches(dir)
				if err != nil {
					return false, fmt.Sprintf("broker %d: %v", id, err)
				}
				end := int64(0)
				if len(bs) > 0 {
					end = bs[len(bs)-1].LastOffset() + 1
				}
				if end != leo {
					return false, fmt.Sprintf("%s-%d: broker %d's log ends at %d on disk, leader %d's LEO is %d", topic, p, id, end, leader, leo)
				}
				logs[id] = bs
			}
			var why string
			if starts, why = c.AgreedLogStarts(topic, p, replicas); why != "" {
				return false, why
			}
			hw = h
			return true, ""
		})
		if diff := cluster.CompareReplicas(hw, starts, logs); diff != "" {
			t.Errorf("%s-%d replicas differ: %s", topic, p, diff)
		} else {
			t.Logf("%s-%d: %d batches below HW %d identical on brokers %v", topic, p, len(logs[replicas[0]]), hw, replicas)
		}
		hws[p] = hw
	}
	return hws
}

// epochsNeverGoBack checks checker E on the states a watcher saw: leader_epoch and
// controller_epoch never decrease.
func epochsNeverGoBack(t *testing.T, path string, seen []observedState) {
	t.Helper()
	for i := 1; i < len(seen); i++ {
		a, b := seen[i-1].st, seen[i].st
		if b.LeaderEpoch < a.LeaderEpoch || b.ControllerEpoch < a.ControllerEpoch {
			t.Errorf("%s went back: %+v -> %+v", path, a, b)
		}
	}
}

// S3, S4, S7, K1 (docs/reliability.md, fault matrix row 1): with RF=3, min.insync.replicas=2 and an acks=all
// producer writing continuously, kill -9 the leader of partition 0. A new leader from the ISR
// takes writes within zookeeper.session.timeout.ms + 5 s with leader_epoch+1; the old leader
// restarts, rejoins the ISR and catches up; then every acknowledged record is there exactly once
// at its offset, nothing a committed reader saw is gone, and the three replicas' logs are
// identical batch by batch below the HW.
func TestS3_KillLeaderUnderAcksAllNoLoss(t *testing.T) {
	const session = 4 * time.Second
	c := cluster.Start(t, cluster.Options{Brokers: 3, SessionTimeout: session,
		Overrides: map[string]string{"replica.lag.time.max.ms": "3000"}})
	const topic, partitions = "s3", 3
	assignment := c.CreateTopicWithConfigs(topic, partitions, 3, map[string]string{"min.insync.replicas": "2"})
	waitFullISR(t, c, topic, assignment, failoverTimeout)
	st0, err := c.ZK.PartitionState(topic, 0)
	if err != nil {
		t.Fatal(err)
	}
	victim := st0.Leader

	stopWatch := make(chan struct{})
	watched := watchPartitionState(c.ZK.Conn(), cluster.PartitionStatePath(topic, 0), stopWatch)
	stopReader := startCommittedReader(c, topic)
	// acks=all and idempotence are kgo's defaults; a short metadata min age only makes the client
	// find the new leader sooner, so the measured time is the broker's.
	w := startAckProducer(t, c.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.MetadataMinAge(250*time.Millisecond)), topic,
		replicationLoad(partitions))
	cluster.WaitFor(t, time.Minute, func() (bool, string) {
		n := w.countWhere(func(a acked) bool { return a.Partition == 0 })
		return n >= 1000, fmt.Sprintf("%d acknowledged on %s-0", n, topic)
	})

	killedAt := time.Now()
	c.Broker(victim).Kill()
	var recovered time.Time
	cluster.WaitFor(t, failoverTimeout, func() (bool, string) {
		recovered = w.firstAckAfter(0, killedAt)
		st, _ := c.ZK.PartitionState(topic, 0)
		return !recovered.IsZero(), fmt.Sprintf("no produce to %s-0 acked since broker %d was killed; state %+v", topic, victim, st)
	})
	took := recovered.Sub(killedAt)
	t.Logf("%s-0 took writes again %v after its leader %d was killed", topic, took.Round(time.Millisecond), victim)
	if limit := session + 5*time.Second; took > limit {
		t.Errorf("%s-0 unavailable for %v after its leader was killed, want <= session timeout + 5 s = %v", topic, took, limit)
	}
	st1, err := c.ZK.PartitionState(topic, 0)
	if err != nil {
		t.Fatal(err)
	}
	if st1.Leader == victim || st1.Leader < 0 || !containsID(st0.ISR, st1.Leader) {
		t.Errorf("%s-0 leader after the kill: %+v, want a member of the ISR %v other than %d", topic, st1, st0.ISR, victim)
	}

	// Keep writing through the new leader, then bring the old one back.
	w.waitProgress(t, 1000, failoverTimeout, "after the failover")
	c.Broker(victim).Start()
	c.WaitRegistered(victim)
	waitFullISR(t, c, topic, assignment, failoverTimeout)
	w.waitProgress(t, 500, failoverTimeout, fmt.Sprintf("after broker %d rejoined", victim))
	acks, _ := w.stop(t)

	// Caught up: every replica's log ends at the leader's LEO; then checker R.
	waitReplicasIdentical(t, c, topic, assignment, failoverTimeout)
	seen := stopReader()
	close(stopWatch)
	states := <-watched
	epochsNeverGoBack(t, cluster.PartitionStatePath(topic, 0), states)
	elected := false
	for _, o := range states {
		if o.st.Leader != victim && o.st.Leader >= 0 && o.st.LeaderEpoch > st0.LeaderEpoch {
			if o.st.LeaderEpoch != st0.LeaderEpoch+1 {
				t.Errorf("first state of %s-0 without leader %d: %+v, want leader_epoch %d", topic, victim, o.st, st0.LeaderEpoch+1)
			}
			elected = true
			break
		}
	}
	if !elected {
		t.Errorf("the ZooKeeper watcher saw no state of %s-0 with a leader other than %d: %v", topic, victim, states)
	}
	checkAckedExactlyOnce(t, readAll(t, c, topic, partitions), acks, seen)
}

// S10, S11, S12, S5b: SIGSTOP a follower while an acks=all producer writes. The leader drops it
// from the ISR in ZooKeeper within 1.5 × replica.lag.time.max.ms (plus slack), writes go on, and
// the leader's UnderReplicatedPartitions reads 1; after SIGCONT the follower (whose ZooKeeper
// session never expired) rejoins the ISR and the metric returns to 0.
func TestS10_StoppedFollowerShrinksISRThenRejoins(t *testing.T) {
	const lag = 2 * time.Second
	// The follower stays stopped for about 1.5 × lag: well inside the session timeout, so only the
	// leader's ISR-shrink task (not the controller) can remove it.
	c := cluster.Start(t, cluster.Options{Brokers: 3, SessionTimeout: 12 * time.Second,
		Overrides: map[string]string{"replica.lag.time.max.ms": fmt.Sprint(lag.Milliseconds())}})
	const topic = "s10"
	assignment := c.CreateTopic(topic, 1, 3)
	waitFullISR(t, c, topic, assignment, failoverTimeout)
	st0, err := c.ZK.PartitionState(topic, 0)
	if err != nil {
		t.Fatal(err)
	}
	leader := st0.Leader
	var follower int32 = -1
	for _, r := range assignment[0] {
		if r != leader {
			follower = r
			break
		}
	}
	const urp = "kafka_server_replicamanager_underreplicatedpartitions"
	waitMetric := func(id int32, name string, want float64, timeout time.Duration) {
		t.Helper()
		cluster.WaitFor(t, timeout, func() (bool, string) {
			v, err := c.Broker(id).MetricSum(name)
			if err != nil {
				return false, err.Error()
			}
			st, _ := c.ZK.PartitionState(topic, 0)
			return v == want, fmt.Sprintf("broker %d: %s = %v, want %v (state %+v)", id, name, v, want, st)
		})
	}
	waitMetric(leader, urp, 0, 30*time.Second)
	_, regBefore, err := c.ZK.Get("/brokers/ids/" + cluster.Itoa32(follower))
	if err != nil {
		t.Fatal(err)
	}

	w := startAckProducer(t, c.Client(kgo.RecordPartitioner(kgo.ManualPartitioner())), topic, replicationLoad(1))
	cluster.WaitFor(t, time.Minute, func() (bool, string) { n := w.count(); return n >= 500, fmt.Sprintf("%d acknowledged", n) })

	stoppedAt := time.Now()
	c.Broker(follower).Pause()
	want := []int32{}
	for _, r := range assignment[0] {
		if r != follower {
			want = append(want, r)
		}
	}
	shrinkLimit := lag*3/2 + 3*time.Second
	st := c.ZK.WaitPartitionState(topic, 0, shrinkLimit, func(st cluster.PartitionState) (bool, string) {
		return cluster.SameMembers(st.ISR, want), fmt.Sprintf("ISR %v, want %v after SIGSTOP of broker %d", st.ISR, want, follower)
	})
	t.Logf("ISR shrank to %v %v after SIGSTOP of follower %d (leader_epoch %d -> %d)",
		st.ISR, time.Since(stoppedAt).Round(time.Millisecond), follower, st0.LeaderEpoch, st.LeaderEpoch)
	if st.Leader != leader {
		t.Errorf("leader changed from %d to %d when a follower stopped", leader, st.Leader)
	}
	w.waitProgress(t, 200, 10*time.Second, "after the ISR shrank")
	waitMetric(leader, urp, 1, 5*time.Second)
	if d := time.Since(stoppedAt); d > 10*time.Second {
		t.Fatalf("follower was stopped %v: the checks took too long, its session may expire", d)
	}

	c.Broker(follower).Resume()
	waitFullISR(t, c, topic, assignment, failoverTimeout)
	waitMetric(leader, urp, 0, 30*time.Second)
	_, regAfter, err := c.ZK.Get("/brokers/ids/" + cluster.Itoa32(follower))
	if err != nil {
		t.Fatal(err)
	}
	if regAfter.Czxid != regBefore.Czxid {
		t.Errorf("broker %d re-registered while stopped (session expired): the test did not isolate the ISR-shrink task", follower)
	}
	acks, _ := w.stop(t)
	waitReplicasIdentical(t, c, topic, assignment, failoverTimeout)
	checkAckedExactlyOnce(t, readAll(t, c, topic, 1), acks, nil)
}

// K2: acks=all to a partition whose ISR is below min.insync.replicas (both followers killed, the
// ISR shrunk to {leader}) fails with NOT_ENOUGH_REPLICAS and appends nothing: the leader's LEO
// and its segment files do not change. With one follower back, acks=all succeeds again.
func TestK2_AcksAllBelowMinInsyncReplicasAppendsNothing(t *testing.T) {
	c := cluster.Start(t, cluster.Options{Brokers: 3, SessionTimeout: faultSession})
	const topic = "k2"
	assignment := c.CreateTopicWithConfigs(topic, 1, 3, map[string]string{"min.insync.replicas": "2"})
	waitFullISR(t, c, topic, assignment, failoverTimeout)
	st0, err := c.ZK.PartitionState(topic, 0)
	if err != nil {
		t.Fatal(err)
	}
	leader := st0.Leader
	var followers []int32
	for _, r := range assignment[0] {
		if r != leader {
			followers = append(followers, r)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// Raw ProduceRequests (acks=-1, no client retries) to the leader, so the broker's own answer
	// is what the test sees.
	produce := func(v string) (int64, error) {
		pctx, pcancel := context.WithTimeout(ctx, 10*time.Second)
		defer pcancel()
		return c.Broker(leader).ProduceOnce(pctx, topic, 0, -1, 2*time.Second, []byte(v))
	}
	for i := 0; i < 10; i++ {
		off, err := produce(fmt.Sprintf("before-%d", i))
		if err != nil || off != int64(i) {
			t.Fatalf("acks=all produce %d with the full ISR: offset %d, %v", i, off, err)
		}
	}

	for _, f := range followers {
		c.Broker(f).Kill()
	}
	c.ZK.WaitPartitionState(topic, 0, failoverTimeout, func(st cluster.PartitionState) (bool, string) {
		return st.Leader == leader && cluster.SameMembers(st.ISR, []int32{leader}), fmt.Sprintf("want leader %d, ISR [%d]", leader, leader)
	})
	dir := c.Broker(leader).PartitionDir(topic, 0)
	cluster.WaitFor(t, failoverTimeout, func() (bool, string) {
		// The leader may not have applied the shrunk ISR yet: then the produce waits and times
		// out (or fails after append); try again until the answer is NOT_ENOUGH_REPLICAS.
		_, leoBefore, _, err := leaderLEO(c, topic, 0, followers[0])
		if err != nil {
			return false, err.Error()
		}
		diskBefore, err := cluster.LogEndOffsetOnDisk(dir)
		if err != nil {
			return false, err.Error()
		}
		bytesBefore := segmentBytes(t, dir)
		off, perr := produce("below-min-isr")
		if perr == nil {
			t.Fatalf("acks=all produce to %s-0 succeeded (offset %d) with ISR [%d] below min.insync.replicas=2", topic, off, leader)
		}
		if !errors.Is(perr, kerr.NotEnoughReplicas) {
			return false, fmt.Sprintf("produce error %v, want NOT_ENOUGH_REPLICAS", perr)
		}
		_, leoAfter, _, err := leaderLEO(c, topic, 0, followers[0])
		if err != nil {
			return false, err.Error()
		}
		diskAfter, err := cluster.LogEndOffsetOnDisk(dir)
		if err != nil {
			return false, err.Error()
		}
		if bytesAfter := segmentBytes(t, dir); leoAfter != leoBefore || diskAfter != diskBefore || bytesAfter != bytesBefore {
			t.Fatalf("NOT_ENOUGH_REPLICAS, but the leader appended: LEO %d -> %d, on disk %d -> %d, segment bytes %d -> %d",
				leoBefore, leoAfter, diskBefore, diskAfter, bytesBefore, bytesAfter)
		}
		t.Logf("acks=all with ISR [%d]: %v; LEO stays %d", leader, perr, leoAfter)
		return true, ""
	})

	// K2: min.insync.replicas only applies to acks=all; acks=1 is still accepted with ISR {leader}.
	{
		pctx, pcancel := context.WithTimeout(ctx, 10*time.Second)
		off, err := c.Broker(leader).ProduceOnce(pctx, topic, 0, 1, 2*time.Second, []byte("acks-1-below-min-isr"))
		pcancel()
		if err != nil {
			t.Fatalf("acks=1 produce with ISR [%d]: %v (min.insync.replicas must not apply)", leader, err)
		}
		t.Logf("acks=1 with ISR [%d]: appended at offset %d", leader, off)
	}

	// One follower back: the ISR reaches min.insync.replicas and acks=all succeeds again.
	c.Broker(followers[0]).Start()
	c.WaitRegistered(followers[0])
	c.ZK.WaitPartitionState(topic, 0, failoverTimeout, func(st cluster.PartitionState) (bool, string) {
		return len(st.ISR) >= 2, "want 2 replicas in the ISR"
	})
	cluster.WaitFor(t, failoverTimeout, func() (bool, string) {
		_, err := produce("min-isr-again")
		return err == nil, fmt.Sprintf("acks=all produce with 2 in-sync replicas: %v", err)
	})
}

// segmentBytes is the total size of a partition directory's .log files.
func segmentBytes(t *testing.T, dir string) int64 {
	t.Helper()
	bases, err := cluster.SegmentBaseOffsets(dir)
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, b := range bases {
		fi, err := os.Stat(filepath.Join(dir, fmt.Sprintf("%020d.log", b)))
		if err != nil {
			t.Fatal(err)
		}
		n += fi.Size()
	}
	return n
}

// S9, K3 (docs/reliability.md, fault matrix rows 4 and 6): kill -9 a partition's leader and, at once, the controller
// (another broker). The remaining broker becomes controller with controller_epoch+1 and finishes
// the failover: the partition gets a live leader from the ISR that takes writes. Then a zombie
// controller: SIGSTOP the new controller past its session timeout; another broker takes over with
// controller_epoch+1; after SIGCONT the old one changes nothing (no state znode's
// controller_epoch or leader_epoch goes back, /controller stays), re-registers, serves as a
// follower, and exactly one broker reports ActiveControllerCount 1.
func TestS9_ControllerKilledDuringFailoverThenZombieControllerFenced(t *testing.T) {
	c := cluster.Start(t, cluster.Options{Brokers: 3, SessionTimeout: faultSession,
		Overrides: map[string]string{"auto.leader.rebalance.enable": "false"}})
	const topic, partitions = "s9", 3
	assignment := c.CreateTopic(topic, partitions, 3)
	waitFullISR(t, c, topic, assignment, failoverTimeout)
	ctrl, epoch := c.ZK.WaitController(30 * time.Second)

	before := map[int32]cluster.PartitionState{}
	part := int32(-1)
	for p := int32(0); p < partitions; p++ {
		st, err := c.ZK.PartitionState(topic, p)
		if err != nil {
			t.Fatal(err)
		}
		before[p] = st
		if part < 0 && st.Leader != ctrl {
			part = p
		}
	}
	if part < 0 {
		t.Fatalf("controller %d leads every partition of %s: %v", ctrl, topic, before)
	}
	leader := before[part].Leader
	var rest int32 = -1
	for _, id := range c.IDs() {
		if id != ctrl && id != leader {
			rest = id
		}
	}
	stopWatch := make(chan struct{})
	watched := map[int32]<-chan []observedState{}
	for p := int32(0); p < partitions; p++ {
		watched[p] = watchPartitionState(c.ZK.Conn(), cluster.PartitionStatePath(topic, p), stopWatch)
	}

	c.Broker(leader).Kill()
	c.Broker(ctrl).Kill()
	t.Logf("killed leader %d of %s-%d, then controller %d (epoch %d)", leader, topic, part, ctrl, epoch)
	cluster.WaitFor(t, failoverTimeout, func() (bool, string) {
		id, err := c.ZK.ControllerID()
		if err != nil {
			return false, err.Error()
		}
		e, err := c.ZK.ControllerEpoch()
		if err != nil {
			return false, err.Error()
		}
		return id == rest, fmt.Sprintf("/controller %d epoch %d, want broker %d", id, e, rest)
	})
	if e, _ := c.ZK.ControllerEpoch(); e != epoch+1 {
		t.Errorf("/controller_epoch %d after controller %d died, want %d", e, ctrl, epoch+1)
	}
	epoch++
	t.Logf("broker %d is controller (epoch %d)", rest, epoch)
	for p := int32(0); p < partitions; p++ {
		c.ZK.WaitPartitionState(topic, p, failoverTimeout, func(st cluster.PartitionState) (bool, string) {
			ok := st.Leader == rest && containsID(before[p].ISR, rest) && st.LeaderEpoch > before[p].LeaderEpoch && st.ControllerEpoch == epoch
			return ok, fmt.Sprintf("want leader %d (the only live ISR member), leader_epoch > %d, controller_epoch %d", rest, before[p].LeaderEpoch, epoch)
		})
	}
	cl := c.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.MetadataMinAge(250*time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: part, Value: []byte("after-failover")}).FirstErr(); err != nil {
		t.Fatalf("produce to %s-%d after the new controller's failover: %v", topic, part, err)
	}

	// Zombie controller: bring the dead brokers back, then freeze the controller (rest).
	c.Broker(leader).Start()
	c.Broker(ctrl).Start()
	c.WaitRegistered(leader, ctrl)
	waitFullISR(t, c, topic, assignment, failoverTimeout)
	zombie := rest
	_, regBefore, err := c.ZK.Get("/brokers/ids/" + cluster.Itoa32(zombie))
	if err != nil {
		t.Fatal(err)
	}
	c.Broker(zombie).Pause()
	var next int32
	cluster.WaitFor(t, failoverTimeout, func() (bool, string) {
		id, err := c.ZK.ControllerID()
		if err != nil {
			return false, err.Error()
		}
		next = id
		return id >= 0 && id != zombie, fmt.Sprintf("/controller %d while broker %d is stopped", id, zombie)
	})
	if e, _ := c.ZK.ControllerEpoch(); e != epoch+1 {
		t.Errorf("/controller_epoch %d after controller %d froze, want %d", e, zombie, epoch+1)
	}
	epoch++
	t.Logf("controller %d stopped (SIGSTOP); broker %d took over with epoch %d", zombie, next, epoch)
	for p := int32(0); p < partitions; p++ {
		c.ZK.WaitPartitionState(topic, p, failoverTimeout, func(st cluster.PartitionState) (bool, string) {
			return st.Leader >= 0 && st.Leader != zombie && !containsID(st.ISR, zombie),
				fmt.Sprintf("want a leader other than the stopped broker %d, and %d out of the ISR", zombie, zombie)
		})
	}
	c.Broker(zombie).Resume()
	t.Logf("every partition moved off broker %d; resumed it (SIGCONT)", zombie)

	// The resumed broker finds its session expired, re-registers and follows.
	cluster.WaitFor(t, failoverTimeout, func() (bool, string) {
		_, st, err := c.ZK.Get("/brokers/ids/" + cluster.Itoa32(zombie))
		if err != nil {
			return false, fmt.Sprintf("broker %d not re-registered: %v", zombie, err)
		}
		return st.Czxid != regBefore.Czxid, fmt.Sprintf("broker %d still has its old registration", zombie)
	})
	waitFullISR(t, c, topic, assignment, failoverTimeout)
	cluster.WaitFor(t, failoverTimeout, func() (bool, string) {
		sum := 0.0
		var per []string
		for _, id := range c.IDs() {
			v, err := c.Broker(id).MetricSum(activeControllerCount)
			if err != nil {
				return false, err.Error()
			}
			sum += v
			per = append(per, fmt.Sprintf("%d:%v", id, v))
		}
		return sum == 1, fmt.Sprintf("%s per broker %s, sum %v", activeControllerCount, strings.Join(per, " "), sum)
	})
	if v, err := c.Broker(next).MetricSum(activeControllerCount); err != nil || v != 1 {
		t.Errorf("controller %d reports %s = %v (%v), want 1", next, activeControllerCount, v, err)
	}
	if id, _ := c.ZK.ControllerID(); id != next {
		t.Errorf("/controller is %d after the zombie %d resumed, want %d", id, zombie, next)
	}
	if e, _ := c.ZK.ControllerEpoch(); e != epoch {
		t.Errorf("/controller_epoch is %d after the zombie %d resumed, want %d", e, zombie, epoch)
	}
	// Serves as a follower: leads nothing (automatic rebalance is off), and its metadata agrees
	// with ZooKeeper.
	cluster.WaitFor(t, failoverTimeout, func() (bool, string) {
		mctx, mcancel := context.WithTimeout(ctx, 5*time.Second)
		defer mcancel()
		leaders, err := cluster.MetadataLeaders(mctx, c.Broker(zombie).Addr, topic)
		if err != nil {
			return false, err.Error()
		}
		for p := int32(0); p < partitions; p++ {
			st, err := c.ZK.PartitionState(topic, p)
			if err != nil {
				return false, err.Error()
			}
			if st.Leader == zombie {
				t.Fatalf("%s-%d: resumed broker %d leads again: %+v", topic, p, zombie, st)
			}
			if leaders[p] != st.Leader {
				return false, fmt.Sprintf("broker %d metadata: %s-%d leader %d, ZooKeeper %d", zombie, topic, p, leaders[p], st.Leader)
			}
		}
		return true, ""
	})
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: part, Value: []byte("after-zombie")}).FirstErr(); err != nil {
		t.Errorf("produce to %s-%d after the zombie resumed: %v", topic, part, err)
	}
	close(stopWatch)
	for p := int32(0); p < partitions; p++ {
		seen := <-watched[p]
		epochsNeverGoBack(t, cluster.PartitionStatePath(topic, p), seen)
		for _, o := range seen {
			if o.st.ControllerEpoch > epoch {
				t.Errorf("%s-%d state %+v written with controller_epoch above /controller_epoch %d", topic, p, o.st, epoch)
			}
		}
	}
}

// S20: a follower that was down while the leader's retention deleted the segments it would fetch
// next (its fetch offset is below the leader's log start offset) empties its log, starts at the
// leader's log start offset and rejoins the ISR.
func TestS20_FollowerBehindLeaderLogStartRestartsFromIt(t *testing.T) {
	c := cluster.Start(t, cluster.Options{Brokers: 2,
		Overrides: map[string]string{"log.retention.check.interval.ms": "500"}})
	const topic = "s20"
	assignment := c.CreateTopicWithConfigs(topic, 1, 2, map[string]string{"segment.bytes": "4096", "retention.bytes": "8192"})
	waitFullISR(t, c, topic, assignment, failoverTimeout)
	st0, err := c.ZK.PartitionState(topic, 0)
	if err != nil {
		t.Fatal(err)
	}
	leader := st0.Leader
	follower := assignment[0][0]
	if follower == leader {
		follower = assignment[0][1]
	}
	cl := c.Client(kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	value := strings.Repeat("x", 200)
	produce := func(n int) {
		t.Helper()
		recs := make([]*kgo.Record, n)
		for i := range recs {
			recs[i] = &kgo.Record{Topic: topic, Value: []byte(value)}
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatalf("produce (acks=1): %v", err)
		}
	}
	produce(20)
	waitReplicasIdentical(t, c, topic, assignment, failoverTimeout)
	followerLEO, err := cluster.LogEndOffsetOnDisk(c.Broker(follower).PartitionDir(topic, 0))
	if err != nil {
		t.Fatal(err)
	}

	if code := c.Broker(follower).Terminate(); code != 0 {
		t.Errorf("follower %d exited with %d after SIGTERM", follower, code)
	}
	var leaderStart int64
	cluster.WaitFor(t, time.Minute, func() (bool, string) {
		produce(20)
		lctx, lcancel := context.WithTimeout(ctx, 5*time.Second)
		defer lcancel()
		var err error
		if leaderStart, err = c.Broker(leader).ListOffset(lctx, topic, 0, -2, -1); err != nil {
			return false, err.Error()
		}
		return leaderStart > followerLEO, fmt.Sprintf("leader %d's log start offset %d, follower %d's LEO %d", leader, leaderStart, follower, followerLEO)
	})
	t.Logf("leader %d's log start offset %d passed follower %d's LEO %d", leader, leaderStart, follower, followerLEO)

	c.Broker(follower).Start()
	c.WaitRegistered(follower)
	waitFullISR(t, c, topic, assignment, failoverTimeout)
	cluster.WaitFor(t, failoverTimeout, func() (bool, string) {
		bases, err := cluster.SegmentBaseOffsets(c.Broker(follower).PartitionDir(topic, 0))
		if err != nil {
			return false, err.Error()
		}
		if len(bases) == 0 || bases[0] < leaderStart {
			return false, fmt.Sprintf("follower %d's segments start at %v, want >= the leader's log start offset %d", follower, bases, leaderStart)
		}
		return true, ""
	})
	hws := waitReplicasIdentical(t, c, topic, assignment, failoverTimeout)
	bs, err := cluster.ReadPartitionBatches(c.Broker(follower).PartitionDir(topic, 0))
	if err != nil {
		t.Fatal(err)
	}
	if len(bs) == 0 || bs[0].BaseOffset < leaderStart || bs[len(bs)-1].LastOffset()+1 != hws[0] {
		t.Errorf("follower %d holds %d batches for [%d, %d)", follower, len(bs), leaderStart, hws[0])
	}
}

// containsID reports whether ids holds id.
func containsID(ids []int32, id int32) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}
