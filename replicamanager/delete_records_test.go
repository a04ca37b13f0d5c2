package replicamanager

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/isrbroker/isrbroker/logstore"
)

// fetchWithLogStart is a follower fetch at offset reporting the follower's log start offset.
func (e *env) fetchWithLogStart(replica int32, offset, logStart int64) FetchPartitionResult {
	ch := make(chan []FetchPartitionResult, 1)
	e.rm.Requests().FetchMessages(FetchParams{ReplicaID: replica, MaxBytes: 1 << 20, Partitions: []FetchPartition{{TopicPartition: tp0(), FetchOffset: offset, PartitionMaxBytes: 1 << 20, CurrentLeaderEpoch: -1, LogStartOffset: logStart}}}, func(r []FetchPartitionResult) { ch <- r })
	return (<-ch)[0]
}

func (e *env) deleteRecords(offset int64, timeout time.Duration) chan DeleteRecordsResult {
	ch := make(chan DeleteRecordsResult, 1)
	e.rm.Requests().DeleteRecords(timeout, []DeleteRecordsPartition{{TopicPartition: tp0(), Offset: offset}}, func(r []DeleteRecordsResult) { ch <- r[0] })
	return ch
}

// DeleteRecords (docs/delete-records.md): the leader raises its log start at once; the answer
// waits until every follower on a live broker reported a log start >= the offset (the low
// watermark); a follower on a dead broker does not count; offsets above the HW are refused;
// a timeout answers REQUEST_TIMED_OUT.
func TestDeleteRecords_LowWatermarkWaitsForFollowers(t *testing.T) {
	e := newEnv(t, 1, 1)
	e.leaderAndIsr(t, 1, 1, []int32{1, 2, 3}, []int32{1, 2, 3})
	alive := map[int32]bool{1: true, 2: true, 3: true}
	e.rm.SetAliveBroker(func(id int32) bool { return alive[id] })
	e.produce(t, 1, 10, time.Second)
	e.fetchWithLogStart(2, 10, 0)
	e.fetchWithLogStart(3, 10, 0)
	if hw := e.rm.getPartition(tp0()).HighWatermark(); hw != 10 {
		t.Fatalf("HW %d, want 10", hw)
	}

	if r := waitResult(t, e.deleteRecords(11, time.Second), time.Second); r.ErrorCode != kerr.OffsetOutOfRange.Code {
		t.Fatalf("offset above the HW: %+v, want OFFSET_OUT_OF_RANGE", r)
	}
	if r := waitResult(t, e.deleteRecords(-2, time.Second), time.Second); r.ErrorCode != kerr.OffsetOutOfRange.Code {
		t.Fatalf("offset -2: %+v, want OFFSET_OUT_OF_RANGE", r)
	}

	ch := e.deleteRecords(4, 5*time.Second)
	if start := e.rm.getPartition(tp0()).log.LogStartOffset(); start != 4 {
		t.Fatalf("leader log start %d, want 4 at once", start)
	}
	e.fetchWithLogStart(2, 10, 4)
	select {
	case r := <-ch:
		t.Fatalf("answered %+v before follower 3 raised its log start", r)
	default:
	}
	e.fetchWithLogStart(3, 10, 4)
	if r := waitResult(t, ch, time.Second); r.ErrorCode != 0 || r.LowWatermark != 4 {
		t.Fatalf("after both followers: %+v, want low watermark 4", r)
	}

	// A follower on a dead broker is not waited for; -1 means the HW.
	alive[3] = false
	ch = e.deleteRecords(-1, 5*time.Second)
	e.fetchWithLogStart(2, 10, 10)
	if r := waitResult(t, ch, time.Second); r.ErrorCode != 0 || r.LowWatermark != 10 {
		t.Fatalf("offset -1 with broker 3 dead: %+v, want low watermark 10", r)
	}

	// Nobody reports: REQUEST_TIMED_OUT after the timeout.
	alive[3] = true
	if r := waitResult(t, e.deleteRecords(10, 50*time.Millisecond), 2*time.Second); r.ErrorCode != kerr.RequestTimedOut.Code {
		t.Fatalf("follower 3 behind: %+v, want REQUEST_TIMED_OUT", r)
	}
	// Not the leader any more.
	e.leaderAndIsr(t, 2, 2, []int32{1, 2, 3}, []int32{2, 3})
	if r := waitResult(t, e.deleteRecords(10, time.Second), time.Second); r.ErrorCode != kerr.NotLeaderForPartition.Code {
		t.Fatalf("follower: %+v, want NOT_LEADER_FOR_PARTITION", r)
	}
	if r := waitResult(t, e.deleteRecords(10, time.Second), time.Second); r.LowWatermark != -1 {
		t.Fatalf("error answers carry low watermark -1: %+v", r)
	}
}

// A follower raises its log start to the leader's from a fetch response, reports it in its
// fetches (fetcher.LogStartOffsetter), and checkpoints it so that a restart keeps it.
func TestDeleteRecords_FollowerFollowsLeaderLogStart(t *testing.T) {
	e := newEnv(t, 2, 1)
	e.leaderAndIsr(t, 1, 1, []int32{1, 2}, []int32{1, 2})
	if _, err := e.rm.followers.ProcessPartitionData(tp0(), 0, makeBatch(10, "v"), 10, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := e.rm.followers.ProcessPartitionData(tp0(), 10, nil, 10, 6); err != nil {
		t.Fatal(err)
	}
	if start, err := e.rm.followers.LogStartOffset(tp0()); err != nil || start != 6 {
		t.Fatalf("follower log start %d (%v), want the leader's 6", start, err)
	}
	// Written at once, not at the next periodic checkpoint or at shutdown: the env's log dir is
	// a sibling of any other t.TempDir().
	files, _ := filepath.Glob(filepath.Join(filepath.Dir(t.TempDir()), "*", "log-start-offset-checkpoint"))
	found := false
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err == nil && strings.Contains(string(data), "\nt 0 6\n") {
			found = true
		}
	}
	if !found {
		t.Fatalf("no log-start-offset-checkpoint holds t 0 6 right after the follower raised its log start (%v)", files)
	}
}

// fetchWithLogStartOf is fetchWithLogStart for any partition.
func (e *env) fetchWithLogStartOf(t *testing.T, tp TopicPartition, replica int32, offset, logStart int64) {
	t.Helper()
	ch := make(chan []FetchPartitionResult, 1)
	e.rm.Requests().FetchMessages(FetchParams{ReplicaID: replica, MaxBytes: 1 << 20, Partitions: []FetchPartition{{TopicPartition: tp, FetchOffset: offset, PartitionMaxBytes: 1 << 20, CurrentLeaderEpoch: -1, LogStartOffset: logStart}}}, func(r []FetchPartitionResult) { ch <- r })
	if r := waitResult(t, ch, 5*time.Second)[0]; r.ErrorCode != 0 {
		t.Fatalf("follower fetch of %v: error %d", tp, r.ErrorCode)
	}
}

// TestDeleteRecordsKeepsNotLeaderAfterLeadershipReturns: as Kafka's DelayedDeleteRecords, a
// partition's answer is fixed the first time it is done: t-0 lost leadership while the request
// waited for t-1, so it answers NOT_LEADER_FOR_PARTITION (low watermark -1) even though it leads
// again, with its low watermark past the offset, when t-1 completes.
func TestDeleteRecordsKeepsNotLeaderAfterLeadershipReturns(t *testing.T) {
	e := newEnv(t, 1, 1)
	e.leaderAndIsrFor(t, e.partitionState(tp0(), 1, 1, []int32{1, 2}), e.partitionState(tp1(), 1, 1, []int32{1, 2}))
	appended := make(chan map[TopicPartition]ProduceResult, 1)
	e.rm.Requests().AppendRecords(time.Second, 1, map[TopicPartition][]byte{tp0(): makeBatch(10, "v"), tp1(): makeBatch(10, "v")},
		func(m map[TopicPartition]ProduceResult) { appended <- m })
	waitResult(t, appended, 5*time.Second)
	for _, tp := range []TopicPartition{tp0(), tp1()} {
		e.fetchWithLogStartOf(t, tp, 2, 10, 0)
	}
	ch := make(chan []DeleteRecordsResult, 1)
	e.rm.Requests().DeleteRecords(30*time.Second, []DeleteRecordsPartition{{TopicPartition: tp0(), Offset: 4}, {TopicPartition: tp1(), Offset: 4}},
		func(r []DeleteRecordsResult) { ch <- r })

	e.leaderAndIsrFor(t, e.partitionState(tp0(), 2, 2, []int32{1, 2}))
	e.leaderAndIsrFor(t, e.partitionState(tp0(), 1, 3, []int32{1, 2}))
	e.fetchWithLogStartOf(t, tp0(), 2, 10, 4) // t-0's low watermark reaches 4 in epoch 3
	select {
	case r := <-ch:
		t.Fatalf("answered before t-1's low watermark reached 4: %+v", r)
	default:
	}
	e.fetchWithLogStartOf(t, tp1(), 2, 10, 4)
	r := waitResult(t, ch, 5*time.Second)
	if r[0].ErrorCode != kerr.NotLeaderForPartition.Code || r[0].LowWatermark != -1 {
		t.Errorf("t-0: %+v, want NOT_LEADER_FOR_PARTITION with low watermark -1", r[0])
	}
	if r[1].ErrorCode != 0 || r[1].LowWatermark != 4 {
		t.Errorf("t-1: %+v, want low watermark 4", r[1])
	}
}

// A DeleteRecords on the leader put its log start inside a batch (offsets 3..7, log start 5); a
// new follower empties its log and starts at 5, and the leader answers its fetch at 5 with the
// whole batch from 3. Kafka's follower restarts its empty log at the batch's first offset and
// appends it (Partition.appendRecordsToFollowerOrFutureReplica, docs/kafka-facts.md §4,
// "Compaction gaps"); it used to refuse it and fetch 5 again forever. A log that is not empty
// still refuses a first offset below its LEO.
func TestFollowerAppendIntoEmptyLogFromInsideABatch(t *testing.T) {
	e := newEnv(t, 2, 1)
	e.leaderAndIsr(t, 1, 1, []int32{1, 2}, []int32{1, 2})
	if err := e.rm.followers.TruncateFullyAndStartAt(tp0(), 5); err != nil {
		t.Fatal(err)
	}
	b := makeBatch(5, "v")
	binary.BigEndian.PutUint64(b[0:], 3) // base offset 3 (outside the CRC)
	leo, err := e.rm.followers.ProcessPartitionData(tp0(), 5, b, 8, 5)
	if err != nil || leo != 8 {
		t.Fatalf("fetch at 5 answered with the batch 3..7: LEO %d, %v; want 8", leo, err)
	}
	if start, err := e.rm.followers.LogStartOffset(tp0()); err != nil || start != 5 {
		t.Fatalf("follower log start %d (%v), want the leader's 5", start, err)
	}
	if hw, err := e.rm.followers.HighWatermark(tp0()); err != nil || hw != 8 {
		t.Fatalf("follower HW %d (%v), want 8", hw, err)
	}
	// not empty: a batch from below the LEO is refused
	b2 := makeBatch(2, "w")
	binary.BigEndian.PutUint64(b2[0:], 7)
	if _, err := e.rm.followers.ProcessPartitionData(tp0(), 8, b2, 9, 5); !errors.Is(err, logstore.ErrUnexpectedOffset) {
		t.Fatalf("batch 7..8 into a log at LEO 8: %v, want ErrUnexpectedOffset", err)
	}
	if leo, _ := e.rm.followers.LogEndOffset(tp0()); leo != 8 {
		t.Fatalf("LEO %d after the refused append, want 8", leo)
	}
}
