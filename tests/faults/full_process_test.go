package faults

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/isrbroker/isrbroker/tests/cluster"
)

// Process faults of the full matrix (docs/reliability.md, fault matrix rows 2, 3, 4 and 11): repeated SIGKILL and
// SIGTERM bounces of leaders and of the controller. They run only with ISRBROKER_FAULTS_FULL=1
// (scripts/faults.sh), see fullMatrix.

// processBounces is the number of bounces of rows 2, 3 and 4 (the matrix says ×5).
const processBounces = 5

// processDoubleFailovers is N of row 11 (docs/reliability.md, fault matrix: ×20).
const processDoubleFailovers = 20

// processCleanBounceLimit is row 3's bound on the unavailability one controlled shutdown may
// cause (K7: leadership moves before the broker stops serving).
const processCleanBounceLimit = 5 * time.Second

// Row 2, S3/S4/K1: hard bounce ×5. SIGKILL the current leader of partition 0, wait until its
// /brokers/ids znode is gone (within session timeout + 5 s), restart it, wait for the full ISR;
// repeat, chasing the current leader. L, D, R (and O, M, E, U from finish).
func TestFault02_HardBounce(t *testing.T) {
	fullMatrix(t)
	s := startScenario(t, "02-hard-bounce", nil)
	processKeepOutputs(s)
	s.all.waitAcks(t, -1, 1500, time.Minute, "before the first bounce")

	var worstGone, worstLeader time.Duration
	for i := 1; i <= processBounces; i++ {
		victim := s.leader(0)
		s.fault(victim, fmt.Sprintf("hard bounce %d/%d: SIGKILL the leader of partition 0", i, processBounces))
		s.c.Broker(victim).Kill()
		killedAt := time.Now()
		st := s.c.ZK.WaitPartitionState(s.topic, 0, waitLong, func(st cluster.PartitionState) (bool, string) {
			return st.Leader >= 0 && st.Leader != victim, fmt.Sprintf("want a leader other than the killed %d", victim)
		})
		worstLeader = max(worstLeader, time.Since(killedAt))
		gone := processWaitUnregistered(s, victim, killedAt)
		worstGone = max(worstGone, gone)
		t.Logf("bounce %d: broker %d's znode gone %v after SIGKILL; partition 0 led by %d (leader_epoch %d, ISR %v)",
			i, victim, gone.Round(time.Millisecond), st.Leader, st.LeaderEpoch, st.ISR)

		s.c.Broker(victim).Start()
		s.c.WaitRegistered(victim)
		s.waitFullISR(waitLong)
		processWaitProgress(s, 0, 200, fmt.Sprintf("on partition 0 after hard bounce %d", i))
	}
	s.heal(fmt.Sprintf("%d hard bounces done", processBounces))
	s.extra = append(s.extra, "bounces="+fmt.Sprint(processBounces), "worst_unregistered="+fmtDur(worstGone), "worst_new_leader="+fmtDur(worstLeader))
	s.finish()
}

// Row 3, K7: clean bounce ×5. SIGTERM the current leader of partition 0 (controlled shutdown:
// the controller moves its leaderships before it exits), restart it, wait for the full ISR;
// repeat. L, D; each bounce makes no partition unavailable for 5 s or more.
func TestFault03_CleanBounce(t *testing.T) {
	fullMatrix(t)
	s := startScenario(t, "03-clean-bounce", nil)
	processKeepOutputs(s)
	s.all.waitAcks(t, -1, 1500, time.Minute, "before the first bounce")

	var worstGap time.Duration
	for i := 1; i <= processBounces; i++ {
		victim := s.leader(0)
		s.fault(victim, fmt.Sprintf("clean bounce %d/%d: SIGTERM (controlled shutdown) the leader of partition 0", i, processBounces))
		start := time.Now()
		code := s.c.Broker(victim).Terminate()
		stopped := time.Since(start)
		if code != 0 {
			t.Errorf("bounce %d: broker %d exited with code %d after SIGTERM, want 0:\n%s", i, victim, code, s.c.Broker(victim).Tail(30))
		}
		// K7: a controlled shutdown hands every leadership over before the process exits.
		for p := int32(0); p < topicPartitions; p++ {
			st, err := s.c.ZK.PartitionState(s.topic, p)
			if err != nil {
				t.Fatal(err)
			}
			if st.Leader == victim {
				t.Errorf("bounce %d: broker %d exited %v after SIGTERM still the leader of partition %d in ZooKeeper (%+v): controlled shutdown did not move it",
					i, victim, stopped.Round(time.Millisecond), p, st)
			}
			// docs/kafka-facts.md §2: partitions it follows go OfflineReplica, leaving the ISR. For
			// partitions it led, Kafka 2.4 makes it a follower of the new leader, which may add it
			// back to the ISR before it exits (no shutting-down check in maybeExpandIsr before
			// KIP-841); the controller removes it when its registration goes. So this is logged,
			// not failed; leadership (above) and the ack gap (below) are the K7 checks.
			for _, r := range st.ISR {
				if r == victim {
					t.Logf("bounce %d: broker %d exited %v after SIGTERM while in the ISR of partition %d (%+v): re-added as a follower of the new leader, as in Kafka 2.4",
						i, victim, stopped.Round(time.Millisecond), p, st)
				}
			}
		}
		t.Logf("bounce %d: broker %d stopped %v after SIGTERM (exit code %d); partition 0 now led by %d",
			i, victim, stopped.Round(time.Millisecond), code, s.leader(0))

		s.c.Broker(victim).Start()
		s.c.WaitRegistered(victim)
		s.waitFullISR(waitLong)
		processWaitProgress(s, -1, 1000, fmt.Sprintf("after clean bounce %d", i))
		gap, part := processLongestGap(s.all, start, time.Now())
		t.Logf("bounce %d: longest gap between acknowledgements %v (partition %d)", i, gap.Round(time.Millisecond), part)
		if gap >= processCleanBounceLimit {
			t.Errorf("bounce %d of broker %d: partition %d had no acknowledgement for %v, want < %v",
				i, victim, part, gap.Round(time.Millisecond), processCleanBounceLimit)
		}
		worstGap = max(worstGap, gap)
	}
	s.heal(fmt.Sprintf("%d clean bounces done", processBounces))
	s.extra = append(s.extra, "bounces="+fmt.Sprint(processBounces), "worst_bounce_unavailable="+fmtDur(worstGap))
	s.finish()
}

// Row 4, S13/S14: controller kill ×5. SIGKILL the controller; another broker must win the
// election with /controller_epoch exactly one higher (one failover, one increment: E); restart
// the killed broker, which must not take the controller over; wait for the full ISR; repeat. L.
func TestFault04_ControllerKill(t *testing.T) {
	fullMatrix(t)
	s := startScenario(t, "04-controller-kill", nil)
	processKeepOutputs(s)
	s.all.waitAcks(t, -1, 1500, time.Minute, "before the first controller kill")

	_, firstEpoch := s.c.ZK.WaitController(30 * time.Second)
	var worstElection time.Duration
	for i := 1; i <= processBounces; i++ {
		ctrl, epoch := s.c.ZK.WaitController(30 * time.Second)
		s.fault(ctrl, fmt.Sprintf("controller kill %d/%d: SIGKILL the controller (controller_epoch %d)", i, processBounces, epoch))
		s.c.Broker(ctrl).Kill()
		killedAt := time.Now()
		var newCtrl, newEpoch int32
		cluster.WaitFor(t, waitLong, func() (bool, string) {
			id, err := s.c.ZK.ControllerID()
			if err != nil {
				return false, err.Error()
			}
			if id < 0 || id == ctrl {
				return false, fmt.Sprintf("/controller names %d; want a broker other than the killed %d", id, ctrl)
			}
			e, err := s.c.ZK.ControllerEpoch()
			if err != nil {
				return false, err.Error()
			}
			newCtrl, newEpoch = id, e
			return true, ""
		})
		took := time.Since(killedAt)
		worstElection = max(worstElection, took)
		t.Logf("failover %d: broker %d became controller with controller_epoch %d, %v after SIGKILL of %d",
			i, newCtrl, newEpoch, took.Round(time.Millisecond), ctrl)
		if newEpoch != epoch+1 {
			t.Errorf("E: failover %d (%d -> %d) moved controller_epoch %d -> %d, want exactly +1", i, ctrl, newCtrl, epoch, newEpoch)
		}

		s.c.Broker(ctrl).Start()
		s.c.WaitRegistered(ctrl)
		s.waitFullISR(waitLong)
		processWaitProgress(s, -1, 300, fmt.Sprintf("after controller kill %d", i))
		if id, e := s.c.ZK.WaitController(30 * time.Second); id != newCtrl || e != newEpoch {
			t.Errorf("E: after broker %d restarted the controller is %d (controller_epoch %d), want %d (%d) unchanged", ctrl, id, e, newCtrl, newEpoch)
		}
	}
	s.heal(fmt.Sprintf("%d controller kills done", processBounces))
	_, lastEpoch := s.c.ZK.WaitController(30 * time.Second)
	if lastEpoch != firstEpoch+processBounces {
		t.Errorf("E: controller_epoch went %d -> %d over %d failovers, want +%d", firstEpoch, lastEpoch, processBounces, processBounces)
	}
	seen := processControllerEpochs(s.watch)
	t.Logf("E: /controller_epoch observed by the watch: %v", seen)
	// Failovers are seconds apart, so the watch sees every value: a step of more than one is
	// an election that incremented the epoch twice (or a zombie controller's write).
	for j := 1; j < len(seen); j++ {
		if seen[j] > seen[j-1]+1 {
			t.Errorf("E: the watch saw /controller_epoch jump %d -> %d", seen[j-1], seen[j])
		}
	}
	s.extra = append(s.extra, "failovers="+fmt.Sprint(processBounces),
		fmt.Sprintf("controller_epoch=%d->%d", firstEpoch, lastEpoch), "worst_election="+fmtDur(worstElection))
	s.finish()
}

// Row 11, KIP-101/KIP-279 regression (S9, S10): double failover ×N. SIGKILL the leader A of
// partition 0; once a new leader B is elected, SIGKILL it too; about 2 s later restart both
// (the last ISR member leads alone meanwhile, so acks=all waits: NOT_ENOUGH_REPLICAS). A and B
// come back as followers whose tails the leaders of later epochs never saw: epoch-based
// truncation must make every replica identical below the HW (R) and lose nothing acked (L).
func TestFault11_DoubleFailover(t *testing.T) {
	fullMatrix(t)
	s := startScenario(t, "11-double-failover", nil)
	processKeepOutputs(s)
	s.all.waitAcks(t, -1, 1500, time.Minute, "before the first double failover")

	for i := 1; i <= processDoubleFailovers; i++ {
		a := s.leader(0)
		s.fault(a, fmt.Sprintf("double failover %d/%d: SIGKILL the leader of partition 0", i, processDoubleFailovers))
		s.c.Broker(a).Kill()
		st := s.c.ZK.WaitPartitionState(s.topic, 0, waitLong, func(st cluster.PartitionState) (bool, string) {
			return st.Leader >= 0 && st.Leader != a, fmt.Sprintf("want a leader other than the killed %d", a)
		})
		b := st.Leader
		t.Logf("round %d: partition 0 led by %d (leader_epoch %d, ISR %v) after killing %d; killing it too", i, b, st.LeaderEpoch, st.ISR, a)
		s.c.Broker(b).Kill()
		down := time.NewTimer(2 * time.Second) // the fault's duration, not synchronisation
		<-down.C
		if st, err := s.c.ZK.PartitionState(s.topic, 0); err == nil {
			t.Logf("round %d: 2 s after killing %d partition 0 is %+v; restarting %d and %d", i, b, st, a, b)
		}
		s.c.Broker(a).Start()
		s.c.Broker(b).Start()
		s.c.WaitRegistered(a, b)
		s.waitFullISR(waitLong)
		processWaitProgress(s, 0, 200, fmt.Sprintf("on partition 0 after double failover %d", i))
	}
	s.heal(fmt.Sprintf("%d double failovers done", processDoubleFailovers))
	s.extra = append(s.extra, "rounds="+fmt.Sprint(processDoubleFailovers))
	s.finish()
}

// processWaitUnregistered waits until broker id's /brokers/ids znode is gone and returns how
// long after killedAt that was. Row 2 bounds it by the session timeout + 5 s; a slower expiry
// is reported and waited for up to waitLong.
func processWaitUnregistered(s *scenario, id int32, killedAt time.Time) time.Duration {
	s.t.Helper()
	limit := sessionTimeout + 5*time.Second
	gone := func() (bool, string) {
		ids, err := s.c.ZK.RegisteredBrokers()
		if err != nil {
			return false, err.Error()
		}
		for _, r := range ids {
			if r == id {
				return false, fmt.Sprintf("broker %d still registered; /brokers/ids = %v", id, ids)
			}
		}
		return true, ""
	}
	if ok, msg := cluster.Poll(limit-time.Since(killedAt), gone); !ok {
		s.t.Errorf("broker %d's /brokers/ids znode outlived its SIGKILL by more than session timeout + 5 s = %v: %s", id, limit, msg)
		cluster.WaitFor(s.t, waitLong, gone)
	}
	return time.Since(killedAt)
}

// processLongestGap is the longest time any partition went without an acknowledgement between
// from and to, counting from the partition's last acknowledgement before from; it returns the
// gap and the partition.
func processLongestGap(p *producer, from, to time.Time) (time.Duration, int32) {
	p.mu.Lock()
	byPart := map[int32][]time.Time{}
	for _, a := range p.acks {
		byPart[a.Partition] = append(byPart[a.Partition], a.At)
	}
	p.mu.Unlock()
	var longest time.Duration
	part := int32(-1)
	for pt, ts := range byPart {
		sort.Slice(ts, func(i, j int) bool { return ts[i].Before(ts[j]) })
		prev := time.Time{}
		for _, at := range ts {
			if at.After(to) {
				break
			}
			if !at.After(from) {
				prev = at
				continue
			}
			if !prev.IsZero() {
				if d := at.Sub(prev); d > longest {
					longest, part = d, pt
				}
			}
			prev = at
		}
		// Still nothing acknowledged on this partition by `to`.
		if !prev.IsZero() && to.Sub(prev) > longest {
			longest, part = to.Sub(prev), pt
		}
	}
	return longest, part
}

// processControllerEpochs lists the /controller_epoch values the watch observed, in order.
func processControllerEpochs(w *epochWatch) []int32 {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]int32, 0, len(w.controller))
	for _, o := range w.controller {
		out = append(out, o.Epoch)
	}
	return out
}

// processKeepOutputs copies every broker's whole output into the acknowledgement log directory
// ($ISRBROKER_FAULTS_DIR when set) when the scenario fails: the cluster's own report keeps only
// the last lines, and the cluster's directory is removed. Registered after the cluster's
// cleanup, it runs before the brokers are killed.
func processKeepOutputs(s *scenario) {
	s.t.Cleanup(func() {
		if !s.t.Failed() {
			return
		}
		dir := ackLogDir(s.t)
		for _, id := range s.c.IDs() {
			dst := filepath.Join(dir, fmt.Sprintf("%s-broker-%d.log", s.name, id))
			if err := os.WriteFile(dst, []byte(s.c.Broker(id).Output()), 0o644); err != nil {
				s.t.Logf("keeping broker %d's output: %v", id, err)
				continue
			}
			s.t.Logf("broker %d's whole output kept in %s", id, dst)
		}
		// The partition state znodes as the watch saw them change: the controller's and the
		// leaders' view of leader, leader_epoch and ISR over the run.
		s.watch.mu.Lock()
		defer s.watch.mu.Unlock()
		for p := int32(0); p < topicPartitions; p++ {
			for _, o := range s.watch.states[p] {
				s.t.Logf("state %s-%d at %s: %+v", s.topic, p, o.At.Format("15:04:05.000"), o.State)
			}
		}
	})
}

// processWaitProgress waits up to waitLong for n more acknowledgements (on partition part, or any
// when part < 0). When the workload is stuck it fails the test with what each broker's Metadata
// answers and what ZooKeeper holds for the partition(s), to tell a broker that serves stale
// metadata from a client that stopped refreshing it.
func processWaitProgress(s *scenario, part int32, n int, why string) {
	s.t.Helper()
	start := s.all.count(part)
	ok, msg := cluster.Poll(waitLong, func() (bool, string) {
		got := s.all.count(part) - start
		return got >= n, fmt.Sprintf("producer %s: %d of %d acknowledgements %s (partition %d); failures %v", s.all.name, got, n, why, part, s.all.failures())
	})
	if ok {
		return
	}
	for p := int32(0); p < topicPartitions; p++ {
		if part >= 0 && p != part {
			continue
		}
		st, err := s.c.ZK.PartitionState(s.topic, p)
		s.t.Logf("stuck: ZooKeeper state of %s-%d: %+v (err %v)", s.topic, p, st, err)
	}
	for _, id := range s.c.IDs() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		mp, err := cluster.MetadataPartitions(ctx, s.c.Broker(id).Addr, s.topic)
		cancel()
		s.t.Logf("stuck: broker %d answers Metadata %+v (err %v)", id, mp, err)
	}
	s.t.Fatalf("timed out after %v: %s", waitLong, msg)
}
