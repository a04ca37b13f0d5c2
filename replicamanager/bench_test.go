package replicamanager

import (
	"testing"
	"time"
)

// BenchmarkAppendRecordsParallel measures acks=1 produces from concurrent clients to one
// partition led here, while a follower's fetches update its progress (the partition lock's
// read side for appends, write side for follower state).
func BenchmarkAppendRecordsParallel(b *testing.B) {
	e := newEnv(b, 1, 1)
	e.leaderAndIsr(b, 1, 1, []int32{1, 2}, []int32{1, 2})
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() { // a follower fetching at the leader's LEO
		defer close(stopped)
		for {
			select {
			case <-done:
				return
			default:
			}
			leo := e.rm.getPartition(tp0()).log.LogEndOffset()
			e.rm.Requests().FetchMessages(FetchParams{ReplicaID: 2, MaxBytes: 1, Partitions: []FetchPartition{{TopicPartition: tp0(), FetchOffset: leo, PartitionMaxBytes: 1, CurrentLeaderEpoch: -1}}}, func([]FetchPartitionResult) {})
		}
	}()
	b.SetParallelism(4)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			e.rm.Requests().AppendRecords(time.Second, 1, map[TopicPartition][]byte{tp0(): makeBatch(10, "benchmark-value")}, func(map[TopicPartition]ProduceResult) {})
		}
	})
	b.StopTimer()
	close(done)
	<-stopped
}
