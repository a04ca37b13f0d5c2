package replicamanager

import (
	"strconv"
	"testing"
	"time"

	"github.com/rcrowley/go-metrics"
)

func TestRateLimiter(t *testing.T) {
	c := &clock{t: time.Unix(1_700_000_000, 0)}
	l := newRateLimiter(c.Now)
	l.Record(1 << 30)
	if l.Exceeded() {
		t.Fatal("an unlimited limiter reported exceeded")
	}
	l.SetRate(1000)
	if l.Exceeded() {
		t.Fatal("a fresh bucket is exceeded")
	}
	l.Record(1500) // a large read may overdraw the bucket: 1000 − 1500 = −500
	if !l.Exceeded() {
		t.Fatal("not exceeded after overdrawing the bucket")
	}
	c.Advance(400 * time.Millisecond) // −100
	if !l.Exceeded() {
		t.Fatal("not exceeded before the overdraft was refilled")
	}
	c.Advance(200 * time.Millisecond) // +100
	if l.Exceeded() {
		t.Fatal("still exceeded after the refill")
	}
	c.Advance(time.Hour) // the bucket holds at most one second's worth
	l.Record(1000)
	if !l.Exceeded() {
		t.Fatal("the bucket grew beyond one second's worth of bytes")
	}
	l.SetRate(0)
	if l.Exceeded() {
		t.Fatal("removing the rate did not remove the limit")
	}

	// Over a longer run the limiter lets through rate bytes per second (+ one bucket).
	l2 := newRateLimiter(c.Now)
	l2.SetRate(10_000)
	var sent int64
	for i := 0; i < 1000; i++ { // 10 s in 10 ms steps, 3000-byte reads when allowed
		if !l2.Exceeded() {
			l2.Record(3000)
			sent += 3000
		}
		c.Advance(10 * time.Millisecond)
	}
	if sent < 95_000 || sent > 115_000 {
		t.Fatalf("sent %d bytes in 10 s at 10000 B/s", sent)
	}
	if r := l2.MeasuredRate(); r < 5_000 || r > 15_000 {
		t.Fatalf("measured rate %d, want about 10000", r)
	}
}

func TestParseThrottledReplicas(t *testing.T) {
	var bad []string
	s := parseThrottledReplicas("0:1, 1:2,2:1,x:1,3,4:y,-1:1", 1, func(e string) { bad = append(bad, e) })
	if !s.has(0) || s.has(1) || !s.has(2) || s.has(3) {
		t.Fatalf("parsed %+v", s)
	}
	if len(bad) != 4 {
		t.Fatalf("malformed entries reported: %q", bad)
	}
	if all := parseThrottledReplicas(" * ", 7, nil); !all.has(99) {
		t.Fatal("* does not throttle every partition")
	}
	if !parseThrottledReplicas("", 1, nil).empty() {
		t.Fatal("empty list is not empty")
	}
}

// fetchNoWait is a follower fetch at offset answered at once (max_wait 0).
func (e *env) fetchFrom(replica int32, offset int64, maxWait time.Duration) []FetchPartitionResult {
	ch := make(chan []FetchPartitionResult, 1)
	e.rm.Requests().FetchMessages(FetchParams{ReplicaID: replica, MaxWait: maxWait, MinBytes: 1, MaxBytes: 1 << 20,
		Partitions: []FetchPartition{{TopicPartition: tp0(), FetchOffset: offset, PartitionMaxBytes: 1 << 20, CurrentLeaderEpoch: -1, LogStartOffset: 0}}},
		func(r []FetchPartitionResult) { ch <- r })
	return <-ch
}

// Issue 4 (shouldLeaderThrottle): a follower outside the ISR fetching a partition listed in
// leader.replication.throttled.replicas for this broker gets no records (and no error) while the
// leader quota is exceeded; ISR members are never throttled; unlisted partitions neither.
func TestLeaderThrottleSkipsFollowersOutsideIsr(t *testing.T) {
	e := newEnv(t, 1, 1)
	// Replica 2 is outside the ISR (a reassignment target), replica 3 is in it.
	if res := e.leaderAndIsr(t, 1, 1, []int32{1, 2, 3}, []int32{1, 3}); res.Partitions[tp0()] != 0 {
		t.Fatalf("LeaderAndIsr: %+v", res)
	}
	if r := waitResult(t, e.produce(t, 1, 10, time.Second), 5*time.Second); r.ErrorCode != 0 {
		t.Fatalf("produce: %+v", r)
	}
	size := int64(len(e.followerFetch(t, 3, 0).Records))
	if size == 0 {
		t.Fatal("no data to fetch")
	}
	e.followerFetch(t, 3, 10)
	if hw := e.rm.getPartition(tp0()).HighWatermark(); hw != 10 { // replica 3 caught up: HW 10
		t.Fatalf("HW %d, want 10", hw)
	}

	rate := size / 2 // one fetch overdraws the bucket
	e.rm.throttles.apply("brokers/1", map[string]string{leaderThrottledRateKey: itoa(rate), followerThrottledRateKey: itoa(rate)})
	e.rm.throttles.apply("brokers/2", map[string]string{leaderThrottledRateKey: "1"}) // not this broker: ignored
	e.rm.throttles.apply("topics/t", map[string]string{leaderThrottledReplicasKey: "0:1", followerThrottledReplicasKey: "0:2"})

	// Replica 2 stays at offset 0 (it never reaches the HW, so it is never added to the ISR).
	r := e.fetchFrom(2, 0, 0)[0]
	if r.ErrorCode != 0 || int64(len(r.Records)) != size {
		t.Fatalf("first throttled fetch: code %d, %d bytes; want the data (bucket full)", r.ErrorCode, len(r.Records))
	}
	r = e.fetchFrom(2, 0, 0)[0]
	if r.ErrorCode != 0 || len(r.Records) != 0 || r.HighWatermark != 10 {
		t.Fatalf("over the quota: code %d, %d bytes, HW %d; want no records, no error, HW 10", r.ErrorCode, len(r.Records), r.HighWatermark)
	}
	// An ISR member is never throttled.
	if got := e.fetchFrom(3, 0, 0)[0]; len(got.Records) == 0 {
		t.Fatal("an ISR follower was throttled")
	}
	if got := e.reg.Get(MetricLeaderReplicationByteRate).(metrics.Gauge).Value(); got <= 0 {
		t.Fatalf("leader byte-rate %d after throttled traffic", got)
	}

	// A delayed fetch does not complete on throttled data: it waits max_wait, then answers empty.
	start := time.Now()
	r = e.fetchFrom(2, 0, 300*time.Millisecond)[0]
	if len(r.Records) != 0 || time.Since(start) < 250*time.Millisecond {
		t.Fatalf("delayed throttled fetch: %d bytes after %v", len(r.Records), time.Since(start))
	}

	// Once the bucket refilled, the throttled follower gets data again.
	e.clock.Advance(2 * time.Second)
	if r = e.fetchFrom(2, 0, 0)[0]; int64(len(r.Records)) != size {
		t.Fatalf("after the refill: %d bytes, want %d", len(r.Records), size)
	}
	// Removing the throttled replica list (what --verify does) removes the throttle.
	e.rm.throttles.apply("topics/t", map[string]string{})
	for i := 0; i < 3; i++ {
		if r = e.fetchFrom(2, 0, 0)[0]; int64(len(r.Records)) != size {
			t.Fatalf("unthrottled fetch %d: %d bytes", i, len(r.Records))
		}
	}
	// And so does removing the rate, with the list back.
	e.rm.throttles.apply("topics/t", map[string]string{leaderThrottledReplicasKey: "*"})
	e.rm.throttles.apply("brokers/1", map[string]string{})
	for i := 0; i < 3; i++ {
		if r = e.fetchFrom(2, 0, 0)[0]; int64(len(r.Records)) != size {
			t.Fatalf("fetch %d without a rate: %d bytes", i, len(r.Records))
		}
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// A topic created with throttle settings has no change notification: the config read when its
// partition is created applies, until the dynamic config listener delivers the topic, whose
// view then wins over any later (possibly stale) read.
func TestThrottledReplicasFromTopicConfigAtCreation(t *testing.T) {
	e := newEnv(t, 1, 1)
	e.coord.configs["t"] = map[string]string{leaderThrottledReplicasKey: "*", followerThrottledReplicasKey: "0:2"}
	e.rm.throttles.apply("brokers/1", map[string]string{leaderThrottledRateKey: "100"})
	e.leaderAndIsr(t, 1, 1, []int32{1, 2}, []int32{1})
	if !e.rm.throttles.leader.IsThrottled(tp0()) {
		t.Fatal("topic config read at partition creation not applied")
	}
	e.rm.throttles.apply("topics/t", map[string]string{})
	e.rm.throttles.applyTopicConfigRead("t", map[string]string{leaderThrottledReplicasKey: "*"})
	if e.rm.throttles.leader.IsThrottled(tp0()) {
		t.Fatal("a stale topic config read overrode the listener")
	}
}
