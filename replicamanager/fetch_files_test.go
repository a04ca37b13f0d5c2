package replicamanager

import (
	"bytes"
	"testing"
	"time"
)

// With FetchParams.FileRecords a fetch answers with file regions holding exactly the bytes the
// copying read returns, for a consumer (up to the HW) and a follower (up to the LEO), and
// counts them against max_bytes the same way (docs/performance.md, "Zero-copy reads").
func TestFetchFileRecordsMatchRecords(t *testing.T) {
	e := newEnv(t, 1, 1)
	e.leaderAndIsr(t, 1, 1, []int32{1, 2}, []int32{1})
	for range 5 {
		if r := waitResult(t, e.produce(t, 1, 7, time.Second), time.Second); r.ErrorCode != 0 {
			t.Fatalf("produce: %+v", r)
		}
	}
	fetch := func(replica int32, files bool, maxBytes int32) FetchPartitionResult {
		ch := make(chan []FetchPartitionResult, 1)
		e.rm.Requests().FetchMessages(FetchParams{ReplicaID: replica, MaxBytes: maxBytes, FileRecords: files, Partitions: []FetchPartition{
			{TopicPartition: tp0(), FetchOffset: 7, PartitionMaxBytes: 1 << 20, CurrentLeaderEpoch: -1, LogStartOffset: 0},
		}}, func(r []FetchPartitionResult) { ch <- r })
		return waitResult(t, ch, time.Second)[0]
	}
	for _, replica := range []int32{-1, 2} {
		for _, maxBytes := range []int32{1 << 20, 300, 1} {
			mem := fetch(replica, false, maxBytes)
			fr := fetch(replica, true, maxBytes)
			if mem.ErrorCode != 0 || fr.ErrorCode != 0 || fr.Records != nil || mem.Files.Len != 0 {
				t.Fatalf("replica %d max %d: codes %d/%d, records %d, files %d", replica, maxBytes, mem.ErrorCode, fr.ErrorCode, len(fr.Records), mem.Files.Len)
			}
			got, err := fr.Files.ReadAll(nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(mem.Records) == 0 || !bytes.Equal(got, mem.Records) || fr.HighWatermark != mem.HighWatermark {
				t.Fatalf("replica %d max %d: file records %d bytes, copied %d bytes", replica, maxBytes, len(got), len(mem.Records))
			}
		}
	}
}
