package replicamanager

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Tests of the acks=-1 delayed produce over several partitions (issue 28 item 10): a partition's
// answer is fixed the first time it is done, as Kafka's DelayedProduce.tryComplete does, and a
// record appended in a leader epoch the log no longer holds it in is never acknowledged.

func tp1() TopicPartition { return TopicPartition{Topic: "t", Partition: 1} }

// partitionState is the controller's state of tp at the fake coordinator's current zkVersion.
func (e *env) partitionState(tp TopicPartition, leader, epoch int32, isr []int32) PartitionState {
	e.coord.mu.Lock()
	zkv := e.coord.version[tp]
	e.coord.mu.Unlock()
	return PartitionState{TopicPartition: tp, ControllerEpoch: 1, Leader: leader, LeaderEpoch: epoch, ISR: isr, ZkVersion: zkv, Replicas: []int32{1, 2}}
}

// leaderAndIsrFor sends a LeaderAndIsr for the given partitions (replicas 1,2).
func (e *env) leaderAndIsrFor(t *testing.T, states ...PartitionState) {
	t.Helper()
	res := e.rm.Requests().BecomeLeaderOrFollower(LeaderAndIsrRequest{
		ControllerID: 1, ControllerEpoch: 1, BrokerEpoch: -1, Partitions: states,
		LiveLeaders: map[int32]string{1: "127.0.0.1:1", 2: "127.0.0.1:2"},
	})
	if res.ErrorCode != 0 {
		t.Fatalf("LeaderAndIsr: error %d", res.ErrorCode)
	}
	for tp, c := range res.Partitions {
		if c != 0 {
			t.Fatalf("LeaderAndIsr %v: error %d", tp, c)
		}
	}
}

// followerFetchOf is followerFetch for any partition.
func (e *env) followerFetchOf(t *testing.T, tp TopicPartition, replica int32, offset int64) FetchPartitionResult {
	t.Helper()
	ch := make(chan []FetchPartitionResult, 1)
	e.rm.Requests().FetchMessages(FetchParams{ReplicaID: replica, MaxBytes: 1 << 20, Partitions: []FetchPartition{{TopicPartition: tp, FetchOffset: offset, PartitionMaxBytes: 1 << 20, CurrentLeaderEpoch: -1, LogStartOffset: 0}}}, func(r []FetchPartitionResult) { ch <- r })
	r := waitResult(t, ch, 5*time.Second)[0]
	if r.ErrorCode != 0 {
		t.Fatalf("follower fetch of %v at %d: error %d", tp, offset, r.ErrorCode)
	}
	return r
}

// produceBoth sends one acks=-1 produce of one record to t-0 and t-1.
func (e *env) produceBoth(timeout time.Duration) chan map[TopicPartition]ProduceResult {
	ch := make(chan map[TopicPartition]ProduceResult, 2)
	e.rm.Requests().AppendRecords(timeout, -1, map[TopicPartition][]byte{tp0(): makeBatch(1, "ours"), tp1(): makeBatch(1, "ours")},
		func(m map[TopicPartition]ProduceResult) { ch <- m })
	return ch
}

// batchInEpoch is a one-record batch as a leader of epoch wrote it at base offset 0 (the
// partition leader epoch field is outside the batch CRC).
func batchInEpoch(epoch int32, value string) []byte {
	b := makeBatch(1, value)
	binary.BigEndian.PutUint32(b[12:], uint32(epoch))
	return b
}

// replaceRecordOfT0 makes this broker (1) lose t-0 to broker 2 in epoch 2, truncate its record
// at offset 0 and copy broker 2's record there, then lead again in epoch 3 with ISR {1}: the HW
// passes offset 0 at once. viaController sends the LeaderAndIsr requests (which re-check the
// delayed operations); otherwise the role changes are applied to the partition alone, as when
// they fall between the append and the produce's registration in the purgatory.
func (e *env) replaceRecordOfT0(t *testing.T, viaController bool) {
	t.Helper()
	follow, lead := e.partitionState(tp0(), 2, 2, []int32{1, 2}), e.partitionState(tp0(), 1, 3, []int32{1})
	p := e.rm.getPartition(tp0())
	if viaController {
		e.leaderAndIsrFor(t, follow)
	} else {
		p.makeFollower(follow)
	}
	if err := e.rm.followers.TruncateTo(tp0(), 0); err != nil {
		t.Fatal(err)
	}
	if leo, err := e.rm.followers.ProcessPartitionData(tp0(), 0, batchInEpoch(2, "theirs"), 1, 0); err != nil || leo != 1 {
		t.Fatalf("copying broker 2's record: leo %d, %v", leo, err)
	}
	if viaController {
		e.leaderAndIsrFor(t, lead)
	} else {
		p.makeLeader(lead, e.clock.Now())
	}
	if hw := p.HighWatermark(); hw != 1 {
		t.Fatalf("t-0 HW %d after leading again with ISR {1}, want 1", hw)
	}
}

// setupTwoPartitions makes broker 1 leader of t-0 and t-1 (replicas and ISR 1,2, epoch 1) and
// parks an acks=-1 produce to both: broker 2 has fetched neither record.
func setupTwoPartitions(t *testing.T, timeout time.Duration) (*env, chan map[TopicPartition]ProduceResult) {
	e := newEnv(t, 1, 1)
	e.leaderAndIsrFor(t, e.partitionState(tp0(), 1, 1, []int32{1, 2}), e.partitionState(tp1(), 1, 1, []int32{1, 2}))
	e.followerFetchOf(t, tp0(), 2, 0)
	e.followerFetchOf(t, tp1(), 2, 0)
	ch := e.produceBoth(timeout)
	select {
	case m := <-ch:
		t.Fatalf("acks=-1 produce answered before broker 2 fetched: %+v", m)
	default:
	}
	return e, ch
}

func assertCodes(t *testing.T, m map[TopicPartition]ProduceResult, want map[TopicPartition]int16) {
	t.Helper()
	for tp, code := range want {
		if got := m[tp].ErrorCode; got != code {
			t.Errorf("%s-%d: error %s, want %s (result %+v)", tp.Topic, tp.Partition, codeName(got), codeName(code), m[tp])
		}
	}
}

// TestDelayedProduceKeepsNotLeaderOfReplacedRecord: t-0 loses leadership while the produce
// waits for t-1, its record is replaced by the new leader's, and it leads again with its HW past
// the offset; when t-1 completes, t-0's answer stays NOT_LEADER_FOR_PARTITION (its record is no
// longer in the log).
func TestDelayedProduceKeepsNotLeaderOfReplacedRecord(t *testing.T) {
	e, ch := setupTwoPartitions(t, 30*time.Second)
	e.replaceRecordOfT0(t, true)
	select {
	case m := <-ch:
		t.Fatalf("answered before t-1's HW passed its record: %+v", m)
	default:
	}
	e.followerFetchOf(t, tp1(), 2, 1) // t-1's HW reaches 1
	m := waitResult(t, ch, 5*time.Second)
	assertCodes(t, m, map[TopicPartition]int16{tp0(): kerr.NotLeaderForPartition.Code, tp1(): 0})
	if r := m[tp0()]; r.ErrorCode == 0 {
		t.Errorf("t-0 acknowledged at offset %d, but offset 0 now holds broker 2's record", r.BaseOffset)
	}
}

// TestDelayedProduceTimeoutKeepsNotLeader: the same, but t-1 never completes: at expiry t-0
// answers NOT_LEADER_FOR_PARTITION and t-1 (still pending) REQUEST_TIMED_OUT.
func TestDelayedProduceTimeoutKeepsNotLeader(t *testing.T) {
	e, ch := setupTwoPartitions(t, 300*time.Millisecond)
	e.replaceRecordOfT0(t, true)
	m := waitResult(t, ch, 10*time.Second)
	assertCodes(t, m, map[TopicPartition]int16{tp0(): kerr.NotLeaderForPartition.Code, tp1(): kerr.RequestTimedOut.Code})
}

// TestDelayedProduceChecksAppendEpoch: the leadership changes of t-0 reach the partition without
// the delayed produce seeing them (the window between the append and the registration in the
// purgatory). The append's leader epoch (1) no longer covers offset 0, so t-0 answers
// NOT_LEADER_FOR_PARTITION although this broker leads with the HW past it.
func TestDelayedProduceChecksAppendEpoch(t *testing.T) {
	e, ch := setupTwoPartitions(t, 30*time.Second)
	e.replaceRecordOfT0(t, false)
	e.followerFetchOf(t, tp1(), 2, 1)
	m := waitResult(t, ch, 5*time.Second)
	assertCodes(t, m, map[TopicPartition]int16{tp0(): kerr.NotLeaderForPartition.Code, tp1(): 0})
}

// TestDelayedProduceSurvivesEpochBumpOfSameLeader: the controller removes broker 2 from the ISR
// and bumps the leader epoch, broker 1 still leading (removeFromIsr). The records are still in
// the log in their epoch, so the produce succeeds as in Kafka: a changed epoch alone is no
// reason for NOT_LEADER_FOR_PARTITION.
func TestDelayedProduceSurvivesEpochBumpOfSameLeader(t *testing.T) {
	e, ch := setupTwoPartitions(t, 30*time.Second)
	e.leaderAndIsrFor(t, e.partitionState(tp0(), 1, 2, []int32{1}), e.partitionState(tp1(), 1, 2, []int32{1}))
	m := waitResult(t, ch, 5*time.Second)
	assertCodes(t, m, map[TopicPartition]int16{tp0(): 0, tp1(): 0})
}
