package faults

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/isrbroker/isrbroker/tests/cluster"
)

// The full fault matrix of docs/reliability.md, network and coordination rows (6, 7, 8, 9, 10):
// a frozen controller, the Jepsen-2013 two-phase partition, an isolated follower, a leader cut
// from ZooKeeper only, and ZooKeeper frozen. iptables rules act on loopback between the brokers'
// own addresses 127.0.0.(10+id) and ZooKeeper's 127.0.0.1:<port>; every broker's ZooKeeper
// session and inter-broker connections leave from its own address (isrbroker.local.address).
// Gated by fullMatrix: only scripts/faults.sh (ISRBROKER_FAULTS_FULL=1) runs them.

// Row 6 (K3, KAFKA-6082): SIGSTOP the controller for 1.5 × the session timeout, then SIGCONT.
// Another broker is elected with a higher /controller_epoch; /controller_epoch only ever moves
// by one per write; every broker answers a LeaderAndIsr carrying the old controller epoch with
// STALE_CONTROLLER_EPOCH; the zombie resigns once it wakes; no partition state's
// controller_epoch or leader_epoch goes back (E); L, D, O, M, R, U.
func TestFault06_ZombieController(t *testing.T) {
	fullMatrix(t)
	s := startScenario(t, "06-zombie-controller", nil)
	s.all.waitAcks(t, -1, 1500, time.Minute, "before the fault")

	zombie, oldEpoch := s.c.ZK.WaitController(30 * time.Second)
	epochOffset := netControllerEpochOffset(t, s.c)
	regBefore := s.registration(zombie)
	outBefore := len(s.c.Broker(zombie).Output())
	frozen := sessionTimeout * 3 / 2
	s.fault(zombie, fmt.Sprintf("SIGSTOP the controller for %v (controller_epoch %d)", frozen, oldEpoch))
	s.c.Broker(zombie).Pause()
	t.Cleanup(func() { s.c.Broker(zombie).Resume() }) // never leave a stopped broker behind a failed check
	wake := time.NewTimer(frozen)                     // the fault's duration, not synchronisation
	defer wake.Stop()

	var newCtrl, newEpoch int32
	cluster.WaitFor(t, waitLong, func() (bool, string) {
		id, err := s.c.ZK.ControllerID()
		if err != nil {
			return false, err.Error()
		}
		e, err := s.c.ZK.ControllerEpoch()
		if err != nil {
			return false, err.Error()
		}
		newCtrl, newEpoch = id, e
		return id >= 0 && id != zombie && e > oldEpoch,
			fmt.Sprintf("/controller %d epoch %d; want another broker than the stopped %d with an epoch above %d", id, e, zombie, oldEpoch)
	})
	electedAfter := time.Since(s.faultAt)
	t.Logf("broker %d elected controller with controller_epoch %d %v after the zombie %d (epoch %d) stopped",
		newCtrl, newEpoch, electedAfter.Round(time.Millisecond), zombie, oldEpoch)
	if newEpoch != oldEpoch+1 {
		t.Errorf("E: controller_epoch went %d -> %d over one failover, want +1", oldEpoch, newEpoch)
	}
	<-wake.C
	s.c.Broker(zombie).Resume()
	s.heal(fmt.Sprintf("controller %d resumed (SIGCONT)", zombie))

	// The zombie learns its session expired and resigns (onControllerResignation).
	ok, _ := cluster.Poll(waitLong, func() (bool, string) {
		out := s.c.Broker(zombie).Output()
		return len(out) > outBefore && strings.Contains(out[outBefore:], "resigned as controller"), ""
	})
	if !ok {
		t.Errorf("the zombie controller %d never logged resigning after waking:\n%s", zombie, s.c.Broker(zombie).Tail(40))
	}
	s.extra = append(s.extra, fmt.Sprintf("zombie_resigned=%v", ok))
	s.waitReregistered(zombie, regBefore)

	// What the zombie's queued requests would meet: every broker, the zombie included once the
	// new controller has reached it, refuses a LeaderAndIsr of the old controller epoch.
	for _, id := range s.c.IDs() {
		var last string
		ok, _ := cluster.Poll(waitLong, func() (bool, string) {
			code, err := netStaleLeaderAndIsr(s.c, id, zombie, oldEpoch)
			switch {
			case err != nil:
				last = err.Error()
			case code == kerr.StaleControllerEpoch.Code:
				return true, ""
			default:
				last = fmt.Sprintf("error code %d (%v)", code, kerr.ErrorForCode(code))
			}
			return false, ""
		})
		if !ok {
			t.Errorf("K3: broker %d does not answer a LeaderAndIsr of the old controller epoch %d with STALE_CONTROLLER_EPOCH: %s", id, oldEpoch, last)
		}
	}

	s.waitFullISR(waitLong)
	s.all.waitAcks(t, -1, 500, waitLong, "after the zombie controller rejoined")
	finalCtrl, finalEpoch := s.c.ZK.WaitController(30 * time.Second)
	if off := netControllerEpochOffset(t, s.c); off != epochOffset {
		t.Errorf("E: /controller_epoch value minus its zkVersion went %d -> %d: it was written without a +1 step", epochOffset, off)
	}
	t.Logf("controller at the end: broker %d, controller_epoch %d", finalCtrl, finalEpoch)
	s.extra = append(s.extra, fmt.Sprintf("controller_epoch=%d->%d elected_after=%s", oldEpoch, finalEpoch, fmtDur(electedAfter)))
	s.finish()
}

// netControllerEpochOffset is /controller_epoch's value minus its zkVersion: constant as long
// as every election raises the epoch by exactly one in one write (KAFKA-6082's conditional
// multi).
func netControllerEpochOffset(t *testing.T, c *cluster.Cluster) int64 {
	t.Helper()
	data, stat, err := c.ZK.Get("/controller_epoch")
	if err != nil {
		t.Fatalf("/controller_epoch: %v", err)
	}
	e, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 32)
	if err != nil {
		t.Fatalf("/controller_epoch %q: %v", data, err)
	}
	return e - int64(stat.Version)
}

// netStaleLeaderAndIsr sends broker id a LeaderAndIsr without partitions from controller ctrl
// at controller epoch epoch and returns the top-level error code.
func netStaleLeaderAndIsr(c *cluster.Cluster, id, ctrl, epoch int32) (int16, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Broker(id).Addr), kgo.RequestRetries(0))
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	seeds := cl.SeedBrokers()
	if len(seeds) == 0 {
		return 0, fmt.Errorf("no seed broker for %s", c.Broker(id).Addr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req := kmsg.NewPtrLeaderAndISRRequest()
	req.ControllerID = ctrl
	req.ControllerEpoch = epoch
	resp, err := req.RequestWith(ctx, seeds[0])
	if err != nil {
		return 0, err
	}
	return resp.ErrorCode, nil
}

// Row 7, Jepsen 2013 (S14, K1): (a) drop the peers' traffic to the leader's broker port, ZooKeeper
// kept, longer than replica.lag.time.max.ms: the leader shrinks the ISR to itself and, with
// min.insync.replicas=2, answers acks=all with NOT_ENOUGH_REPLICAS and acknowledges nothing
// more; (b) isolate the leader fully, from ZooKeeper too, past its session: no other replica
// may be elected (unclean election is off). Heal: the leader comes back, everything
// acknowledged survives (L) and the replicas converge (R).
func TestFault07_JepsenTwoPhase(t *testing.T) {
	fullMatrix(t)
	f := requireFirewall(t)
	s := startScenario(t, "07-jepsen-two-phase", nil)
	s.all.waitAcks(t, -1, 1500, time.Minute, "before the fault")

	ctrl, _ := s.c.ZK.WaitController(30 * time.Second)
	p := s.partitionNotLedBy(ctrl)
	leader := s.leader(p)
	leaderIP, leaderPort := netHostPort(t, s.c.Broker(leader).Addr)
	peers := netPeers(s.c, leader)
	regBefore := s.registration(leader)

	// Phase a: the followers cannot reach the leader; the leader still reaches ZooKeeper.
	s.fault(leader, fmt.Sprintf("phase a: drop peers %v -> leader %d of partition %d (port %d); controller %d", peers, leader, p, leaderPort, ctrl))
	for _, peer := range peers {
		f.Drop(cluster.OwnAddress(peer), leaderIP, leaderPort)
	}
	st := s.c.ZK.WaitPartitionState(s.topic, p, waitLong, func(st cluster.PartitionState) (bool, string) {
		return st.Leader == leader && len(st.ISR) == 1 && st.ISR[0] == leader,
			fmt.Sprintf("want ISR [%d] led by %d", leader, leader)
	})
	shrunkAt := time.Now()
	shrinkTook := shrunkAt.Sub(s.faultAt)
	t.Logf("phase a: partition %d ISR shrank to %v after %v (leader_epoch %d)", p, st.ISR, shrinkTook.Round(time.Millisecond), st.LeaderEpoch)
	s.extra = append(s.extra, "isr_shrink="+fmtDur(shrinkTook))

	// acks=all below min.insync.replicas: NOT_ENOUGH_REPLICAS, never success.
	var answers []string
	ok, msg := cluster.Poll(waitLong, func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		off, err := s.c.Broker(leader).ProduceOnce(ctx, s.topic, p, -1, 2*time.Second, []byte(fmt.Sprintf("jepsen-probe-%d", len(answers))))
		if err == nil {
			t.Errorf("the leader %d acknowledged an acks=all write to partition %d at offset %d with ISR [%d] below min.insync.replicas=%s", leader, p, off, leader, minISR)
			answers = append(answers, "success")
			return false, "success"
		}
		answers = append(answers, err.Error())
		return errors.Is(err, kerr.NotEnoughReplicas), fmt.Sprintf("leader %d answered %v", leader, err)
	})
	if !ok {
		t.Errorf("phase a: the leader %d never answered acks=all with NOT_ENOUGH_REPLICAS: %s (answers %v)", leader, msg, answers)
	}
	t.Logf("phase a: leader %d's answers to acks=all for partition %d: %v", leader, p, answers)

	// Phase b: the leader loses ZooKeeper and every peer, past its session.
	zkIP, zkPort := netHostPort(t, s.c.ZK.Addr)
	t.Logf("phase b: isolating broker %d from its peers %v and from ZooKeeper %s", leader, peers, s.c.ZK.Addr)
	for _, peer := range peers {
		f.Cut(leaderIP, cluster.OwnAddress(peer))
	}
	f.Drop(leaderIP, zkIP, zkPort)
	s.c.WaitUnregistered(waitLong, leader)
	st = s.c.ZK.WaitPartitionState(s.topic, p, waitLong, func(st cluster.PartitionState) (bool, string) {
		return st.Leader != leader, fmt.Sprintf("want the isolated %d gone as leader", leader)
	})
	t.Logf("phase b: broker %d's session expired; partition %d: leader %d, ISR %v, leader_epoch %d", leader, p, st.Leader, st.ISR, st.LeaderEpoch)
	if st.Leader >= 0 {
		t.Errorf("phase b: broker %d outside the ISR [%d] was elected leader of partition %d with unclean.leader.election.enable=false", st.Leader, leader, p)
	}

	f.Heal()
	healAt := time.Now()
	s.heal(fmt.Sprintf("every rule around broker %d removed", leader))
	s.waitReregistered(leader, regBefore)
	s.waitFullISR(2 * waitLong)
	s.all.waitAcks(t, p, 300, waitLong, "on the partition after healing")

	// No acknowledgement on p between the ISR shrink and the heal, and no unclean election.
	if n := netAcksBetween(s.all, p, shrunkAt, healAt); n > 0 {
		t.Errorf("phase a/b: %d acks=all acknowledgements on partition %d while its ISR was [%d] (below min.insync.replicas)", n, p, leader)
	}
	for _, e := range netUncleanElections(s.watch, p) {
		t.Errorf("unclean election: %s", e)
	}
	s.finish()
}

// Row 8 (S14): isolate one follower (not the controller) from its peers for 60 s, ZooKeeper
// kept. The leaders drop it from the ISR within 15 s; after healing it is back in every ISR
// within 120 s; L and the other checkers hold; at least 25,000 acknowledged in all.
func TestFault08_FollowerPartition(t *testing.T) {
	fullMatrix(t)
	f := requireFirewall(t)
	s := startScenario(t, "08-follower-partition", nil)
	s.all.waitAcks(t, -1, 1500, time.Minute, "before the fault")

	ctrl, _ := s.c.ZK.WaitController(30 * time.Second)
	leader0 := s.leader(0)
	victim := int32(-1)
	for _, r := range s.assignment[0] {
		if r != leader0 && r != ctrl {
			victim = r
		}
	}
	if victim < 0 { // the controller leads partition 0: any other follower
		for _, r := range s.assignment[0] {
			if r != leader0 {
				victim = r
			}
		}
	}
	var follows, leads []int32
	for p := int32(0); p < topicPartitions; p++ {
		if s.leader(p) == victim {
			leads = append(leads, p)
		} else {
			follows = append(follows, p)
		}
	}
	const isolated = 60 * time.Second // docs/reliability.md, fault matrix row 8
	peers := netPeers(s.c, victim)
	s.fault(victim, fmt.Sprintf("isolate follower %d from peers %v for %v (it follows %v, leads %v; controller %d)", victim, peers, isolated, follows, leads, ctrl))
	for _, peer := range peers {
		f.Cut(cluster.OwnAddress(victim), cluster.OwnAddress(peer))
	}
	healTimer := time.NewTimer(isolated) // the fault's duration, not synchronisation
	defer healTimer.Stop()

	ok, msg := cluster.Poll(waitLong, func() (bool, string) {
		for _, p := range follows {
			st, err := s.c.ZK.PartitionState(s.topic, p)
			if err != nil {
				return false, err.Error()
			}
			if netContainsID(st.ISR, victim) {
				return false, fmt.Sprintf("partition %d ISR %v still holds %d", p, st.ISR, victim)
			}
		}
		return true, ""
	})
	shrinkTook := time.Since(s.faultAt)
	if !ok {
		t.Fatalf("the isolated follower %d never left the ISR: %s", victim, msg)
	}
	t.Logf("follower %d left the ISR of partitions %v after %v", victim, follows, shrinkTook.Round(time.Millisecond))
	if shrinkTook > 15*time.Second {
		t.Errorf("ISR shrink took %v, want ≤ 15 s (replica.lag.time.max.ms %v)", shrinkTook, replicaLagMax)
	}
	s.extra = append(s.extra, "isolated="+fmtDur(isolated), "isr_shrink="+fmtDur(shrinkTook))
	for _, p := range follows {
		s.all.waitAcks(t, p, 200, waitLong, "on a partition the isolated follower follows")
	}
	for _, p := range leads {
		st, err := s.c.ZK.PartitionState(s.topic, p)
		if err == nil {
			t.Logf("partition %d led by the isolated %d: ISR %v", p, victim, st.ISR)
		}
	}
	<-healTimer.C

	f.Heal()
	s.heal(fmt.Sprintf("follower %d reconnected", victim))
	ok, msg = cluster.Poll(2*time.Minute, func() (bool, string) {
		for p, replicas := range s.assignment {
			st, err := s.c.ZK.PartitionState(s.topic, p)
			if err != nil {
				return false, err.Error()
			}
			if st.Leader < 0 || !cluster.SameMembers(st.ISR, replicas) {
				return false, fmt.Sprintf("partition %d: leader %d ISR %v, replicas %v", p, st.Leader, st.ISR, replicas)
			}
		}
		return true, ""
	})
	expandTook := time.Since(s.healAt)
	if !ok {
		t.Fatalf("ISR not re-expanded within 120 s of healing: %s", msg)
	}
	t.Logf("every ISR full again %v after healing", expandTook.Round(time.Millisecond))
	s.extra = append(s.extra, "isr_expand="+fmtDur(expandTook))
	cluster.WaitFor(t, 2*time.Minute, func() (bool, string) {
		n := s.all.count(-1)
		return n >= 25000, fmt.Sprintf("%d acknowledged, want 25000", n)
	})
	s.victim = -1 // no leader is meant to move: report new_leader only if one did
	s.finish()
}

// Row 9 (S14, "lost session, still leader"): drop one leader's (not the controller's) traffic
// to ZooKeeper past its session; its brokers and clients still reach it. Its session expires,
// the controller moves its leaderships to other ISR members; the cut-off leader must not
// acknowledge an acks=all write meanwhile. Heal: it re-registers and follows; L, R.
func TestFault09_BrokerZooKeeperCut(t *testing.T) {
	fullMatrix(t)
	f := requireFirewall(t)
	s := startScenario(t, "09-broker-zk-cut", nil)
	s.all.waitAcks(t, -1, 1500, time.Minute, "before the fault")

	ctrl, _ := s.c.ZK.WaitController(30 * time.Second)
	p := s.partitionNotLedBy(ctrl)
	victim := s.leader(p)
	regBefore := s.registration(victim)
	zkIP, zkPort := netHostPort(t, s.c.ZK.Addr)
	s.fault(victim, fmt.Sprintf("drop leader %d (partition %d) -> ZooKeeper %s; controller %d", victim, p, s.c.ZK.Addr, ctrl))
	f.Drop(cluster.OwnAddress(victim), zkIP, zkPort)

	st := s.c.ZK.WaitPartitionState(s.topic, p, waitLong, func(st cluster.PartitionState) (bool, string) {
		return st.Leader >= 0 && st.Leader != victim, fmt.Sprintf("want a leader other than %d, cut from ZooKeeper", victim)
	})
	t.Logf("partition %d: broker %d leads with leader_epoch %d, ISR %v, %v after the cut",
		p, st.Leader, st.LeaderEpoch, st.ISR, time.Since(s.faultAt).Round(time.Millisecond))
	if _, _, err := s.c.ZK.Get("/brokers/ids/" + cluster.Itoa32(victim)); err == nil {
		t.Logf("broker %d still registered when its leadership moved", victim)
	}
	s.all.waitAcks(t, p, 300, waitLong, "on the partition after its leadership moved")

	// The cut-off broker may still believe it leads; it must not complete an acks=all write.
	// While its ISR-shrink write to ZooKeeper is pending it may not answer at all (it holds the
	// partition's lock across that write, as Kafka 2.4 holds leaderIsrUpdateLock): a timeout
	// counts as a refusal.
	var answers []string
	for i := 0; i < 2; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		off, err := s.c.Broker(victim).ProduceOnce(ctx, s.topic, p, -1, 2*time.Second, []byte(fmt.Sprintf("zk-cut-probe-%d", i)))
		cancel()
		if err == nil {
			t.Errorf("broker %d, cut from ZooKeeper and no longer leader, acknowledged an acks=all write to partition %d at offset %d", victim, p, off)
			answers = append(answers, "success")
			continue
		}
		answers = append(answers, err.Error())
	}
	t.Logf("broker %d's answers to acks=all for partition %d while cut from ZooKeeper: %v", victim, p, answers)

	f.Heal()
	s.heal(fmt.Sprintf("broker %d reaches ZooKeeper again", victim))
	s.waitReregistered(victim, regBefore)
	s.waitFullISR(waitLong)
	s.all.waitAcks(t, -1, 500, waitLong, "after the broker rejoined")
	s.finish()
}

// Row 10 (S13): freeze ZooKeeper (SIGSTOP) for 30 s. The brokers keep serving with the leaders
// they have: every partition keeps acknowledging acks=all writes during the freeze. After
// SIGCONT every broker is registered again (its session resumed or it re-registered), there is
// a controller and every ISR is full; nothing is lost.
func TestFault10_ZooKeeperDown(t *testing.T) {
	fullMatrix(t)
	s := startScenario(t, "10-zk-down", nil)
	s.all.waitAcks(t, -1, 1500, time.Minute, "before the fault")

	ids := s.c.IDs()
	czxid := map[int32]int64{}
	for _, id := range ids {
		_, reg, err := s.c.ZK.Get("/brokers/ids/" + cluster.Itoa32(id))
		if err != nil {
			t.Fatal(err)
		}
		czxid[id] = reg.Czxid
	}
	ctrl, epoch := s.c.ZK.WaitController(30 * time.Second)
	const frozen = 30 * time.Second
	s.fault(-1, fmt.Sprintf("SIGSTOP ZooKeeper for %v (controller %d, epoch %d)", frozen, ctrl, epoch))
	t.Cleanup(s.c.ZK.Resume) // never leave ZooKeeper stopped behind a failed check
	s.c.ZK.Pause()
	pausedAt := time.Now()
	wake := time.NewTimer(frozen) // the fault's duration, not synchronisation
	defer wake.Stop()
	// No ZooKeeper reads while it is frozen: only the Kafka side is watched.
	for p := int32(0); p < topicPartitions; p++ {
		s.all.waitAcks(t, p, 300, frozen, "while ZooKeeper is frozen")
	}
	<-wake.C
	s.c.ZK.Resume()
	resumedAt := time.Now()
	for p := int32(0); p < topicPartitions; p++ {
		if n := netAcksBetween(s.all, p, pausedAt.Add(sessionTimeout), resumedAt); n == 0 {
			t.Errorf("partition %d acknowledged nothing from %v into the ZooKeeper freeze until its end", p, sessionTimeout)
		}
	}
	s.heal("ZooKeeper resumed (SIGCONT)")

	s.c.WaitRegistered()
	resumed, reregistered := 0, 0
	for _, id := range ids {
		_, reg, err := s.c.ZK.Get("/brokers/ids/" + cluster.Itoa32(id))
		if err != nil {
			t.Fatal(err)
		}
		if reg.Czxid == czxid[id] {
			resumed++
		} else {
			reregistered++
		}
	}
	newCtrl, newEpoch := s.c.ZK.WaitController(waitLong)
	t.Logf("after the freeze: %d sessions resumed, %d brokers re-registered; controller %d epoch %d (was %d epoch %d)",
		resumed, reregistered, newCtrl, newEpoch, ctrl, epoch)
	s.extra = append(s.extra, fmt.Sprintf("sessions_resumed=%d reregistered=%d controller_epoch=%d->%d", resumed, reregistered, epoch, newEpoch))
	s.waitFullISR(2 * waitLong)
	s.all.waitAcks(t, -1, 500, waitLong, "after ZooKeeper resumed")
	s.finish()
}

// Row 13 (all checkers; Jepsen's nemesis as the fault matrix of docs/reliability.md scales it): every 15 s for 300 s
// one random fault on one random broker: SIGKILL then restart, SIGSTOP then SIGCONT, cut from its
// peers, or cut from ZooKeeper, held 4–11 s, then healed, one fault at a time. A final heal;
// everything readable within 60 s (U); L, D, O, M, R, E. ISRBROKER_FAULTS_SEED replays a run.
func TestFault13_RandomMix(t *testing.T) {
	fullMatrix(t)
	f := requireFirewall(t)
	s := startScenario(t, "13-random-mix", nil)
	s.all.waitAcks(t, -1, 1500, time.Minute, "before the faults")

	seed := time.Now().UnixNano()
	if v, err := strconv.ParseInt(os.Getenv("ISRBROKER_FAULTS_SEED"), 10, 64); err == nil {
		seed = v
	}
	rng := rand.New(rand.NewSource(seed))
	t.Logf("random mix seed %d (ISRBROKER_FAULTS_SEED replays it)", seed)
	s.extra = append(s.extra, fmt.Sprintf("seed=%d", seed))
	ids := s.c.IDs()
	zkIP, zkPort := netHostPort(t, s.c.ZK.Addr)
	t.Cleanup(func() { // never leave a broker stopped or dead behind a failed check
		for _, id := range ids {
			s.c.Broker(id).Resume()
		}
	})

	const (
		rounds = 20 // docs/reliability.md, fault matrix row 13: a fault every 15 s for 300 s
		period = 15 * time.Second
	)
	kinds := []string{"kill", "pause", "partition", "zk-cut"}
	var done []string
	tick := time.NewTicker(period) // the nemesis's schedule, not synchronisation
	defer tick.Stop()
	for round := 0; round < rounds; round++ {
		kind := kinds[rng.Intn(len(kinds))]
		victim := ids[rng.Intn(len(ids))]
		hold := 4*time.Second + time.Duration(rng.Int63n(int64(7*time.Second)))
		s.fault(victim, fmt.Sprintf("round %d: %s for %v", round+1, kind, hold.Round(time.Millisecond)))
		done = append(done, fmt.Sprintf("%s:%d", kind, victim))
		switch kind {
		case "kill":
			s.c.Broker(victim).Kill()
		case "pause":
			s.c.Broker(victim).Pause()
		case "partition":
			for _, peer := range netPeers(s.c, victim) {
				f.Cut(cluster.OwnAddress(victim), cluster.OwnAddress(peer))
			}
		case "zk-cut":
			f.Drop(cluster.OwnAddress(victim), zkIP, zkPort)
		}
		holdTimer := time.NewTimer(hold) // the fault's duration, not synchronisation
		<-holdTimer.C
		switch kind {
		case "kill":
			s.c.Broker(victim).Start()
		case "pause":
			s.c.Broker(victim).Resume()
		default:
			f.Heal()
		}
		t.Logf("round %d: %s of broker %d healed", round+1, kind, victim)
		<-tick.C
	}
	f.Heal()
	s.heal(fmt.Sprintf("final heal after %d rounds: %v", rounds, done))
	s.c.WaitRegistered()
	s.waitFullISR(2 * waitLong)
	s.all.waitAcks(t, -1, 500, waitLong, "after the final heal")
	s.victim = -1 // many faults: new_leader would describe only the last one
	s.extra = append(s.extra, fmt.Sprintf("rounds=%d", rounds), "faults="+strings.Join(done, ","))
	s.finish()
}

// netHostPort splits a "host:port" address of this machine.
func netHostPort(t *testing.T, addr string) (string, int) {
	t.Helper()
	host, portText, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatalf("address %q: %v", addr, err)
	}
	port, err := strconv.Atoi(portText)
	if err != nil {
		t.Fatalf("address %q: %v", addr, err)
	}
	return host, port
}

// netPeers returns every broker of the cluster but id.
func netPeers(c *cluster.Cluster, id int32) []int32 {
	var out []int32
	for _, b := range c.IDs() {
		if b != id {
			out = append(out, b)
		}
	}
	return out
}

func netContainsID(s []int32, v int32) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// netAcksBetween counts a producer's acknowledgements on partition p that arrived within
// (from, to].
func netAcksBetween(p *producer, part int32, from, to time.Time) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, a := range p.acks {
		if a.Partition == part && a.At.After(from) && !a.At.After(to) {
			n++
		}
	}
	return n
}

// netUncleanElections lists the observed state changes of partition p that made a broker
// leader although the previous state's ISR did not hold it (unclean.leader.election.enable is
// false in every scenario).
func netUncleanElections(w *epochWatch, p int32) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var bad []string
	obs := w.states[p]
	for i := 1; i < len(obs); i++ {
		a, b := obs[i-1].State, obs[i].State
		if b.Leader >= 0 && b.Leader != a.Leader && !netContainsID(a.ISR, b.Leader) {
			bad = append(bad, fmt.Sprintf("partition %d: %+v -> %+v", p, a, b))
		}
	}
	return bad
}
