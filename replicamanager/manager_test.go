package replicamanager

import (
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

func TestRF1LeaderProduceFetchHWIsLEO(t *testing.T) {
	e := newEnv(t, 1, 1)
	if res := e.leaderAndIsr(t, 1, 0, []int32{1}, []int32{1}); res.ErrorCode != 0 || res.Partitions[tp0()] != 0 {
		t.Fatalf("LeaderAndIsr: %+v", res)
	}
	r := waitResult(t, e.produce(t, 1, 5, time.Second), time.Second)
	if r.ErrorCode != 0 || r.BaseOffset != 0 {
		t.Fatalf("produce: %+v", r)
	}
	r = waitResult(t, e.produce(t, -1, 3, time.Second), time.Second)
	if r.ErrorCode != 0 || r.BaseOffset != 5 {
		t.Fatalf("produce acks=-1 at RF=1: %+v", r)
	}
	p := e.rm.getPartition(tp0())
	if hw := p.HighWatermark(); hw != 8 {
		t.Fatalf("HW = %d, want 8 (RF=1: HW = LEO)", hw)
	}
	ch := make(chan []FetchPartitionResult, 1)
	e.rm.Requests().FetchMessages(FetchParams{ReplicaID: -1, MaxBytes: 1 << 20, Partitions: []FetchPartition{{TopicPartition: tp0(), FetchOffset: 0, PartitionMaxBytes: 1 << 20, CurrentLeaderEpoch: -1}}}, func(r []FetchPartitionResult) { ch <- r })
	fr := waitResult(t, ch, time.Second)[0]
	if fr.ErrorCode != 0 || fr.HighWatermark != 8 || len(fr.Records) == 0 {
		t.Fatalf("fetch: code %d hw %d bytes %d", fr.ErrorCode, fr.HighWatermark, len(fr.Records))
	}
}

func TestProduceToUnknownAndNonLeader(t *testing.T) {
	e := newEnv(t, 1, 1)
	r := waitResult(t, e.produce(t, 1, 1, time.Second), time.Second)
	if r.ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("unknown partition: got %d", r.ErrorCode)
	}
	e.rm.SetKnownPartition(func(TopicPartition) bool { return true })
	r = waitResult(t, e.produce(t, 1, 1, time.Second), time.Second)
	if r.ErrorCode != kerr.NotLeaderForPartition.Code {
		t.Fatalf("partition known elsewhere: got %d", r.ErrorCode)
	}
	// S14.2: a follower rejects produce.
	e.leaderAndIsr(t, 2, 0, []int32{2, 1}, []int32{2, 1})
	r = waitResult(t, e.produce(t, 1, 1, time.Second), time.Second)
	if r.ErrorCode != kerr.NotLeaderForPartition.Code {
		t.Fatalf("follower: got %d", r.ErrorCode)
	}
}

func TestS7_ConsumersReadBelowHWFollowersToLEO(t *testing.T) {
	e := newEnv(t, 1, 1)
	e.leaderAndIsr(t, 1, 0, []int32{1, 2}, []int32{1, 2})
	waitResult(t, e.produce(t, 1, 4, time.Second), time.Second)
	p := e.rm.getPartition(tp0())
	if hw := p.HighWatermark(); hw != 0 {
		t.Fatalf("HW moved to %d before the follower fetched", hw)
	}
	ch := make(chan []FetchPartitionResult, 1)
	e.rm.Requests().FetchMessages(FetchParams{ReplicaID: -1, MaxBytes: 1 << 20, Partitions: []FetchPartition{{TopicPartition: tp0(), FetchOffset: 0, PartitionMaxBytes: 1 << 20, CurrentLeaderEpoch: -1}}}, func(r []FetchPartitionResult) { ch <- r })
	if fr := waitResult(t, ch, time.Second)[0]; len(fr.Records) != 0 {
		t.Fatalf("consumer saw %d bytes above the HW", len(fr.Records))
	}
	fr := e.followerFetch(t, 2, 0)
	if fr.ErrorCode != 0 || len(fr.Records) == 0 {
		t.Fatalf("follower fetch: %+v", fr)
	}
	// The follower's next fetch at 4 acknowledges everything: HW = 4.
	e.followerFetch(t, 2, 4)
	if hw := p.HighWatermark(); hw != 4 {
		t.Fatalf("HW = %d, want 4", hw)
	}
}

func TestS4_K2_AcksAllCommitsOnlyWhenEveryISRReplicaHasIt(t *testing.T) {
	e := newEnv(t, 1, 2)
	e.leaderAndIsr(t, 1, 0, []int32{1, 2, 3}, []int32{1, 2, 3})
	ch := e.produce(t, -1, 2, 5*time.Second)
	select {
	case r := <-ch:
		t.Fatalf("acks=-1 answered before the ISR had the data: %+v", r)
	default:
	}
	e.followerFetch(t, 2, 2)
	select {
	case r := <-ch:
		t.Fatalf("answered with one follower of two in the ISR: %+v", r)
	default:
	}
	e.followerFetch(t, 3, 2)
	if r := waitResult(t, ch, time.Second); r.ErrorCode != 0 || r.BaseOffset != 0 {
		t.Fatalf("produce: %+v", r)
	}
}

func TestK2_NotEnoughReplicasBeforeAppendWritesNothing(t *testing.T) {
	e := newEnv(t, 1, 2)
	e.leaderAndIsr(t, 1, 0, []int32{1, 2, 3}, []int32{1})
	r := waitResult(t, e.produce(t, -1, 2, time.Second), time.Second)
	if r.ErrorCode != kerr.NotEnoughReplicas.Code {
		t.Fatalf("got %d, want NOT_ENOUGH_REPLICAS", r.ErrorCode)
	}
	if leo := e.rm.getPartition(tp0()).log.LogEndOffset(); leo != 0 {
		t.Fatalf("LEO %d: something was appended", leo)
	}
	// acks=1 ignores min.insync.replicas.
	if r := waitResult(t, e.produce(t, 1, 1, time.Second), time.Second); r.ErrorCode != 0 {
		t.Fatalf("acks=1: %d", r.ErrorCode)
	}
}

func TestK2_NotEnoughReplicasAfterAppend(t *testing.T) {
	e := newEnv(t, 1, 2)
	e.leaderAndIsr(t, 1, 0, []int32{1, 2, 3}, []int32{1, 2, 3})
	ch := e.produce(t, -1, 1, 10*time.Second)
	// Follower 3 is stuck; follower 2 fetches up to the end. After the lag time the ISR shrinks
	// to {1,2}: still >= 2, so the produce succeeds once the HW passes it.
	e.followerFetch(t, 2, 1)
	e.clock.Advance(11 * time.Second)
	e.followerFetch(t, 2, 1)
	e.rm.tasks.maybeShrinkIsr()
	if r := waitResult(t, ch, time.Second); r.ErrorCode != 0 {
		t.Fatalf("got %d", r.ErrorCode)
	}
	// Now follower 2 also stops; a new write parks; the ISR shrinks to {1} < 2.
	ch = e.produce(t, -1, 1, 10*time.Second)
	e.clock.Advance(11 * time.Second)
	e.rm.tasks.maybeShrinkIsr()
	if r := waitResult(t, ch, time.Second); r.ErrorCode != kerr.NotEnoughReplicasAfterAppend.Code {
		t.Fatalf("got %d, want NOT_ENOUGH_REPLICAS_AFTER_APPEND", r.ErrorCode)
	}
	if leo := e.rm.getPartition(tp0()).log.LogEndOffset(); leo != 2 {
		t.Fatalf("LEO %d: the appended data must stay", leo)
	}
}

func TestAcksAllTimesOut(t *testing.T) {
	e := newEnv(t, 1, 1)
	e.leaderAndIsr(t, 1, 0, []int32{1, 2}, []int32{1, 2})
	r := waitResult(t, e.produce(t, -1, 1, 50*time.Millisecond), 5*time.Second)
	if r.ErrorCode != kerr.RequestTimedOut.Code {
		t.Fatalf("got %d, want REQUEST_TIMED_OUT", r.ErrorCode)
	}
}

func TestS10_S5_StuckFollowerLeavesISR(t *testing.T) {
	e := newEnv(t, 1, 1)
	e.leaderAndIsr(t, 1, 3, []int32{1, 2, 3}, []int32{1, 2, 3})
	waitResult(t, e.produce(t, 1, 1, time.Second), time.Second)
	e.followerFetch(t, 2, 1)
	e.followerFetch(t, 3, 1)
	if got := e.gauge("kafka.server:type=ReplicaManager,name=UnderReplicatedPartitions"); got != 0 {
		t.Fatalf("URP = %d", got)
	}
	waitResult(t, e.produce(t, 1, 1, time.Second), time.Second)
	e.clock.Advance(5 * time.Second)
	e.followerFetch(t, 2, 2) // 2 keeps up, 3 is stuck
	e.rm.tasks.maybeShrinkIsr()
	if isr := e.coord.isrOf(tp0()); isr != nil {
		t.Fatalf("ISR written before the lag time: %v", isr)
	}
	e.clock.Advance(6 * time.Second)
	e.followerFetch(t, 2, 2)
	e.rm.tasks.maybeShrinkIsr()
	if isr := e.coord.isrOf(tp0()); !slices.Equal(isr, []int32{1, 2}) {
		t.Fatalf("ISR in ZooKeeper = %v, want [1 2]", isr)
	}
	e.coord.mu.Lock()
	epoch := e.coord.epochs[tp0()]
	e.coord.mu.Unlock()
	if epoch != 3 {
		t.Fatalf("leader's ISR write changed the leader epoch to %d (must keep 3)", epoch)
	}
	if got := e.gauge("kafka.server:type=ReplicaManager,name=UnderReplicatedPartitions"); got != 1 {
		t.Fatalf("URP = %d, want 1", got)
	}
	// The HW no longer waits for the removed follower.
	if hw := e.rm.getPartition(tp0()).HighWatermark(); hw != 2 {
		t.Fatalf("HW = %d, want 2", hw)
	}
}

func TestS12_BurstDoesNotEvictAFollowerThatKeepsUp(t *testing.T) {
	e := newEnv(t, 1, 1)
	e.leaderAndIsr(t, 1, 0, []int32{1, 2}, []int32{1, 2})
	off := int64(0)
	// A burst: the leader's LEO is always ahead of every fetch, but each fetch reaches the LEO the
	// leader had at the previous fetch, so lastCaughtUpTime keeps moving.
	for i := 0; i < 30; i++ {
		waitResult(t, e.produce(t, 1, 50, time.Second), time.Second)
		e.followerFetch(t, 2, off)
		off = e.rm.getPartition(tp0()).log.LogEndOffset()
		waitResult(t, e.produce(t, 1, 50, time.Second), time.Second)
		e.clock.Advance(time.Second)
	}
	e.followerFetch(t, 2, off)
	e.rm.tasks.maybeShrinkIsr()
	if e.coord.writes != 0 {
		t.Fatalf("a follower that keeps up was evicted: ISR %v", e.coord.isrOf(tp0()))
	}
}

func TestK4_ISRExpandsWhenFollowerReachesHWAndEpochStart(t *testing.T) {
	e := newEnv(t, 1, 1)
	e.leaderAndIsr(t, 1, 0, []int32{1, 2}, []int32{1})
	waitResult(t, e.produce(t, 1, 3, time.Second), time.Second)
	if hw := e.rm.getPartition(tp0()).HighWatermark(); hw != 3 {
		t.Fatalf("HW %d with ISR {1}", hw)
	}
	e.followerFetch(t, 2, 1)
	if e.coord.writes != 0 {
		t.Fatal("expanded before the follower reached the HW")
	}
	e.followerFetch(t, 2, 3)
	if isr := e.coord.isrOf(tp0()); !slices.Equal(isr, []int32{1, 2}) {
		t.Fatalf("ISR = %v, want [1 2]", isr)
	}
	if m := e.rm.metrics.isrExpands.Count(); m != 1 {
		t.Fatalf("IsrExpandsPerSec count %d", m)
	}
}

func TestK3_FailedIsrWriteKeepsISRAndCounts(t *testing.T) {
	e := newEnv(t, 1, 1)
	e.leaderAndIsr(t, 1, 0, []int32{1, 2}, []int32{1, 2})
	e.coord.mu.Lock()
	e.coord.version[tp0()] = 42 // the controller moved on
	e.coord.mu.Unlock()
	e.clock.Advance(20 * time.Second)
	e.rm.tasks.maybeShrinkIsr()
	if m := e.rm.metrics.failedIsrUpdates.Count(); m != 1 {
		t.Fatalf("FailedIsrUpdatesPerSec = %d", m)
	}
	if v := e.rm.getPartition(tp0()).view(); !slices.Equal(v.isr, []int32{1, 2}) {
		t.Fatalf("ISR changed locally to %v after a failed write", v.isr)
	}
}

func TestHWNeverDecreases(t *testing.T) {
	e := newEnv(t, 1, 1)
	e.leaderAndIsr(t, 1, 0, []int32{1}, []int32{1})
	waitResult(t, e.produce(t, 1, 5, time.Second), time.Second)
	// A new replica joins the assignment at a higher epoch without being in the ISR and far behind.
	e.leaderAndIsr(t, 1, 1, []int32{1, 2}, []int32{1})
	p := e.rm.getPartition(tp0())
	e.followerFetch(t, 2, 0)
	if hw := p.HighWatermark(); hw != 5 {
		t.Fatalf("HW went from 5 to %d", hw)
	}
}

func TestLeaderAndIsrFences(t *testing.T) {
	e := newEnv(t, 1, 1)
	e.leaderAndIsr(t, 1, 5, []int32{1}, []int32{1})
	res := e.rm.Requests().BecomeLeaderOrFollower(LeaderAndIsrRequest{ControllerEpoch: 0, BrokerEpoch: -1, Partitions: []PartitionState{{TopicPartition: tp0(), Leader: 1, LeaderEpoch: 9, Replicas: []int32{1}, ISR: []int32{1}}}})
	if res.ErrorCode != kerr.StaleControllerEpoch.Code {
		t.Fatalf("stale controller epoch: %d", res.ErrorCode)
	}
	res = e.leaderAndIsr(t, 1, 5, []int32{1}, []int32{1})
	if res.Partitions[tp0()] != kerr.StaleControllerEpoch.Code {
		t.Fatalf("same leader epoch: %d", res.Partitions[tp0()])
	}
	res = e.leaderAndIsr(t, 2, 6, []int32{2, 3}, []int32{2, 3})
	if res.Partitions[tp0()] != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("not in replicas: %d", res.Partitions[tp0()])
	}
	e.rm.SetBrokerEpoch(100)
	res = e.rm.Requests().BecomeLeaderOrFollower(LeaderAndIsrRequest{ControllerEpoch: 1, BrokerEpoch: 99})
	if res.ErrorCode != kerr.StaleBrokerEpoch.Code {
		t.Fatalf("stale broker epoch: %d", res.ErrorCode)
	}
}

func TestS14_MakeFollowerStartsFetcherFromHWAndSkipsUnchanged(t *testing.T) {
	e := newEnv(t, 1, 1)
	e.leaderAndIsr(t, 1, 0, []int32{1, 2}, []int32{1, 2})
	waitResult(t, e.produce(t, 1, 3, time.Second), time.Second)
	e.followerFetch(t, 2, 3) // HW = 3
	parked := e.produce(t, -1, 1, 10*time.Second)
	e.leaderAndIsr(t, 2, 1, []int32{1, 2}, []int32{1, 2})
	// S14.5: the parked produce completes with NOT_LEADER_OR_FOLLOWER.
	if r := waitResult(t, parked, time.Second); r.ErrorCode != kerr.NotLeaderForPartition.Code {
		t.Fatalf("parked produce: %d", r.ErrorCode)
	}
	e.fetch.mu.Lock()
	st, ok := e.fetch.added[tp0()]
	removed := slices.Contains(e.fetch.removed, tp0())
	idle := e.fetch.idle
	e.fetch.mu.Unlock()
	if !ok || st.Leader.ID != 2 || st.CurrentLeaderEpoch != 1 || st.InitOffset != 3 || !removed || idle == 0 {
		t.Fatalf("fetcher calls: added %+v ok %v removed %v idle %d", st, ok, removed, idle)
	}
	// Same leader, same epoch: makeFollower returns false; nothing restarts.
	if p := e.rm.getPartition(tp0()); p.makeFollower(PartitionState{TopicPartition: tp0(), Leader: 2, LeaderEpoch: 1, Replicas: []int32{1, 2}}) {
		t.Fatal("makeFollower reported a change for the same leader and epoch")
	}
}

func TestDelayedFetchCompletesOnAppendAndOnTimeout(t *testing.T) {
	e := newEnv(t, 1, 1)
	e.leaderAndIsr(t, 1, 0, []int32{1}, []int32{1})
	ch := make(chan []FetchPartitionResult, 1)
	e.rm.Requests().FetchMessages(FetchParams{ReplicaID: -1, MaxWait: 10 * time.Second, MinBytes: 1, MaxBytes: 1 << 20, Partitions: []FetchPartition{{TopicPartition: tp0(), FetchOffset: 0, PartitionMaxBytes: 1 << 20, CurrentLeaderEpoch: -1}}}, func(r []FetchPartitionResult) { ch <- r })
	select {
	case <-ch:
		t.Fatal("fetch answered with no data")
	default:
	}
	waitResult(t, e.produce(t, 1, 2, time.Second), time.Second)
	if fr := waitResult(t, ch, time.Second)[0]; len(fr.Records) == 0 {
		t.Fatal("woken fetch returned no data")
	}
	start := time.Now()
	e.rm.Requests().FetchMessages(FetchParams{ReplicaID: -1, MaxWait: 100 * time.Millisecond, MinBytes: 1, MaxBytes: 1 << 20, Partitions: []FetchPartition{{TopicPartition: tp0(), FetchOffset: 2, PartitionMaxBytes: 1 << 20, CurrentLeaderEpoch: -1}}}, func(r []FetchPartitionResult) { ch <- r })
	fr := waitResult(t, ch, 5*time.Second)[0]
	if fr.ErrorCode != 0 || len(fr.Records) != 0 || time.Since(start) < 100*time.Millisecond {
		t.Fatalf("timeout fetch: %+v after %v", fr, time.Since(start))
	}
}

func TestFetchOffsetOutOfRangeAndFencedEpoch(t *testing.T) {
	e := newEnv(t, 1, 1)
	e.leaderAndIsr(t, 1, 2, []int32{1}, []int32{1})
	waitResult(t, e.produce(t, 1, 2, time.Second), time.Second)
	fetch := func(off int64, epoch int32) FetchPartitionResult {
		ch := make(chan []FetchPartitionResult, 1)
		e.rm.Requests().FetchMessages(FetchParams{ReplicaID: -1, MaxBytes: 1 << 20, Partitions: []FetchPartition{{TopicPartition: tp0(), FetchOffset: off, PartitionMaxBytes: 1 << 20, CurrentLeaderEpoch: epoch}}}, func(r []FetchPartitionResult) { ch <- r })
		return waitResult(t, ch, time.Second)[0]
	}
	if r := fetch(10, -1); r.ErrorCode != kerr.OffsetOutOfRange.Code {
		t.Fatalf("offset 10 > LEO 2: %d", r.ErrorCode)
	}
	if r := fetch(0, 1); r.ErrorCode != kerr.FencedLeaderEpoch.Code {
		t.Fatalf("old epoch: %d", r.ErrorCode)
	}
	if r := fetch(0, 3); r.ErrorCode != kerr.UnknownLeaderEpoch.Code {
		t.Fatalf("future epoch: %d", r.ErrorCode)
	}
}

func TestListOffsetsAndEpochEndOffset(t *testing.T) {
	e := newEnv(t, 1, 1)
	e.leaderAndIsr(t, 1, 0, []int32{1}, []int32{1})
	waitResult(t, e.produce(t, 1, 3, time.Second), time.Second)
	e.leaderAndIsr(t, 1, 1, []int32{1}, []int32{1})
	waitResult(t, e.produce(t, 1, 2, time.Second), time.Second)
	res := e.rm.Requests().ListOffsets(-1, 0, []ListOffsetsPartition{{TopicPartition: tp0(), Timestamp: -2, CurrentLeaderEpoch: -1}, {TopicPartition: tp0(), Timestamp: -1, CurrentLeaderEpoch: -1}})
	if res[0].Offset != 0 || res[1].Offset != 5 {
		t.Fatalf("earliest/latest: %+v", res)
	}
	eo := e.rm.Requests().LastOffsetForLeaderEpoch(-1, []EpochEndOffsetRequest{{TopicPartition: tp0(), CurrentLeaderEpoch: -1, LeaderEpoch: 0}, {TopicPartition: tp0(), CurrentLeaderEpoch: -1, LeaderEpoch: 1}})
	if eo[0].LeaderEpoch != 0 || eo[0].EndOffset != 3 || eo[1].LeaderEpoch != 1 || eo[1].EndOffset != 5 {
		t.Fatalf("epoch end offsets: %+v", eo)
	}
}

func TestS22_StopReplicaRemovesFetcherAndDeletesLog(t *testing.T) {
	e := newEnv(t, 1, 1)
	e.leaderAndIsr(t, 1, 0, []int32{1}, []int32{1})
	waitResult(t, e.produce(t, 1, 1, time.Second), time.Second)
	res := e.rm.Requests().StopReplicas(StopReplicaRequest{ControllerEpoch: 1, BrokerEpoch: -1, DeletePartitions: true, Partitions: []TopicPartition{tp0()}})
	if res.ErrorCode != 0 || res.Partitions[tp0()] != 0 {
		t.Fatalf("StopReplica: %+v", res)
	}
	if e.rm.getPartition(tp0()) != nil || e.rm.logs.Get(tp0()) != nil {
		t.Fatal("partition or log still present after StopReplica(delete=true)")
	}
	if !slices.Contains(e.fetch.removed, tp0()) {
		t.Fatal("fetcher not removed (S22)")
	}
}

// S11 "slow": the follower fetches all the time but its appends are slower than the leader's,
// so it never reaches the LEO the leader had at its previous fetch; lastCaughtUpTime stops
// moving and the follower leaves the ISR after replica.lag.time.max.ms.
func TestS11_SlowFollowerLeavesISR(t *testing.T) {
	e := newEnv(t, 1, 1)
	e.leaderAndIsr(t, 1, 0, []int32{1, 2}, []int32{1, 2})
	off := int64(0)
	for i := 0; i < 12; i++ {
		waitResult(t, e.produce(t, 1, 100, time.Second), time.Second)
		e.followerFetch(t, 2, off)
		off += 10 // it only manages 10 of every 100 records
		e.clock.Advance(time.Second)
		e.rm.tasks.maybeShrinkIsr()
	}
	if isr := e.coord.isrOf(tp0()); !slices.Equal(isr, []int32{1}) {
		t.Fatalf("slow follower still in the ISR: %v", isr)
	}
}

// S11 "new" and S6: a replica added by a replication-factor increase starts outside the ISR (in
// the OSR) and joins only once it has caught up to the HW (K4).
func TestS6_S11_NewReplicaStartsOutsideISRAndJoinsWhenCaughtUp(t *testing.T) {
	e := newEnv(t, 1, 1)
	e.leaderAndIsr(t, 1, 0, []int32{1}, []int32{1})
	waitResult(t, e.produce(t, 1, 50, time.Second), time.Second)
	// The controller adds replica 3 (AR = [1 3], ISR = [1]) with a new leader epoch.
	e.leaderAndIsr(t, 1, 1, []int32{1, 3}, []int32{1})
	if got := e.gauge("kafka.server:type=ReplicaManager,name=UnderReplicatedPartitions"); got != 1 {
		t.Fatalf("URP = %d with a new replica outside the ISR", got)
	}
	e.followerFetch(t, 3, 0)
	e.followerFetch(t, 3, 25)
	if e.coord.writes != 0 {
		t.Fatalf("new replica joined the ISR before catching up: %v", e.coord.isrOf(tp0()))
	}
	e.followerFetch(t, 3, 50)
	if isr := e.coord.isrOf(tp0()); !slices.Equal(isr, []int32{1, 3}) {
		t.Fatalf("ISR = %v, want [1 3]", isr)
	}
	if got := e.gauge("kafka.server:type=ReplicaManager,name=UnderReplicatedPartitions"); got != 0 {
		t.Fatalf("URP = %d after the new replica joined", got)
	}
}

// S2: the leader serves every read and write of its partition; a follower answers neither
// (consumers and producers get NOT_LEADER_OR_FOLLOWER and go to the leader).
func TestS2_OnlyTheLeaderServesReadsAndWrites(t *testing.T) {
	e := newEnv(t, 1, 1)
	e.leaderAndIsr(t, 2, 0, []int32{2, 1}, []int32{2, 1})
	if r := waitResult(t, e.produce(t, 1, 1, time.Second), time.Second); r.ErrorCode != kerr.NotLeaderForPartition.Code {
		t.Fatalf("produce on a follower: %d", r.ErrorCode)
	}
	ch := make(chan []FetchPartitionResult, 1)
	e.rm.Requests().FetchMessages(FetchParams{ReplicaID: -1, MaxBytes: 1 << 20, Partitions: []FetchPartition{{TopicPartition: tp0(), PartitionMaxBytes: 1 << 20, CurrentLeaderEpoch: -1}}}, func(r []FetchPartitionResult) { ch <- r })
	if r := waitResult(t, ch, time.Second)[0]; r.ErrorCode != kerr.NotLeaderForPartition.Code {
		t.Fatalf("consumer fetch on a follower: %d", r.ErrorCode)
	}
	if r := e.rm.Requests().ListOffsets(-1, 0, []ListOffsetsPartition{{TopicPartition: tp0(), Timestamp: -1, CurrentLeaderEpoch: -1}}); r[0].ErrorCode != kerr.NotLeaderForPartition.Code {
		t.Fatalf("ListOffsets on a follower: %d", r[0].ErrorCode)
	}
	// Becoming leader at a new epoch makes it serve both.
	e.leaderAndIsr(t, 1, 1, []int32{2, 1}, []int32{1})
	if r := waitResult(t, e.produce(t, 1, 1, time.Second), time.Second); r.ErrorCode != 0 {
		t.Fatalf("produce on the new leader: %d", r.ErrorCode)
	}
}

// S8: commit waits for the ISR, not for every live replica (not synchronous replication), and
// not for the leader alone (not asynchronous): a live replica outside the ISR does not hold back
// an acks=all produce, an ISR member does.
func TestS8_CommitWaitsForTheISRNotForEveryLiveReplica(t *testing.T) {
	e := newEnv(t, 1, 1)
	e.leaderAndIsr(t, 1, 0, []int32{1, 2, 3}, []int32{1, 2})
	waitResult(t, e.produce(t, 1, 1, time.Second), time.Second)
	e.followerFetch(t, 2, 1) // HW = 1
	ch := e.produce(t, -1, 1, 10*time.Second)
	// Replica 3 is alive and fetching, but outside the ISR and below the HW, so it cannot join.
	e.followerFetch(t, 3, 0)
	select {
	case r := <-ch:
		t.Fatalf("acks=all answered on the leader's write alone: %+v", r)
	default:
	}
	e.followerFetch(t, 2, 2) // the only other ISR member has it
	if r := waitResult(t, ch, time.Second); r.ErrorCode != 0 {
		t.Fatalf("produce: %d", r.ErrorCode)
	}
	if hw := e.rm.getPartition(tp0()).HighWatermark(); hw != 2 {
		t.Fatalf("HW = %d, want 2 (replica 3 outside the ISR does not hold it back)", hw)
	}
	if isr := e.coord.isrOf(tp0()); isr != nil {
		t.Fatalf("ISR changed to %v", isr)
	}
}

// S13: every partition assigned to this broker exists here as a replica whose role is leader
// or follower, per the controller's LeaderAndIsr.
func TestS13_EveryAssignedPartitionIsALeaderOrFollowerReplica(t *testing.T) {
	e := newEnv(t, 1, 1)
	led := TopicPartition{Topic: "t", Partition: 0}
	followed := TopicPartition{Topic: "t", Partition: 1}
	other := TopicPartition{Topic: "t", Partition: 2}
	res := e.rm.Requests().BecomeLeaderOrFollower(LeaderAndIsrRequest{
		ControllerID: 1, ControllerEpoch: 1, BrokerEpoch: -1,
		Partitions: []PartitionState{
			{TopicPartition: led, Leader: 1, LeaderEpoch: 0, ISR: []int32{1, 2}, Replicas: []int32{1, 2}},
			{TopicPartition: followed, Leader: 2, LeaderEpoch: 0, ISR: []int32{2, 1}, Replicas: []int32{2, 1}},
			{TopicPartition: other, Leader: 2, LeaderEpoch: 0, ISR: []int32{2, 3}, Replicas: []int32{2, 3}},
		},
		LiveLeaders: map[int32]string{2: "127.0.0.1:2"},
	})
	if res.Partitions[led] != 0 || res.Partitions[followed] != 0 || res.Partitions[other] != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("result %+v", res)
	}
	if p := e.rm.getPartition(led); p == nil || !p.IsLeader() || e.rm.logs.Get(led) == nil {
		t.Fatal("led partition is not a leader replica with a log")
	}
	if p := e.rm.getPartition(followed); p == nil || p.IsLeader() || e.rm.logs.Get(followed) == nil {
		t.Fatal("followed partition is not a follower replica with a log")
	}
	if e.rm.getPartition(other) != nil {
		t.Fatal("a partition not assigned here got a replica")
	}
	e.fetch.mu.Lock()
	defer e.fetch.mu.Unlock()
	if st, ok := e.fetch.added[followed]; !ok || st.Leader.ID != 2 {
		t.Fatalf("no fetcher toward the follower's leader: %+v", e.fetch.added)
	}
	if _, ok := e.fetch.added[led]; ok {
		t.Fatal("a fetcher runs for a partition this broker leads")
	}
}

// S22 case 2: makeLeaders removes the partition's fetcher before the replica becomes leader.
func TestS22_MakeLeadersStopsFetching(t *testing.T) {
	e := newEnv(t, 1, 1)
	e.leaderAndIsr(t, 2, 0, []int32{2, 1}, []int32{2, 1})
	e.fetch.mu.Lock()
	_, fetching := e.fetch.added[tp0()]
	e.fetch.mu.Unlock()
	if !fetching {
		t.Fatal("no fetcher while following")
	}
	e.leaderAndIsr(t, 1, 1, []int32{2, 1}, []int32{1})
	e.fetch.mu.Lock()
	defer e.fetch.mu.Unlock()
	if _, still := e.fetch.added[tp0()]; still || !slices.Contains(e.fetch.removed, tp0()) {
		t.Fatalf("fetcher not removed on becoming leader: added %v removed %v", e.fetch.added, e.fetch.removed)
	}
}
