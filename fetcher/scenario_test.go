package fetcher

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// S19: the follower's fetch offset is above the leader's LEO (it led before; the new leader has
// less): truncate to the leader's LEO, then fetch. The follower here has no leader epochs, so
// it truncates to its HW and reaches OFFSET_OUT_OF_RANGE as S19 of docs/requirements.md describes.
func TestS19_FetchOffsetAboveLeaderLEOTruncates(t *testing.T) {
	c := newCluster(t, Config{}, 1)
	x := tp("t", 0)
	fl := c.local.log(x)
	fl.noEpochs = true
	for _, v := range values("old", 0, 10) {
		fl.appendLeader(0, v)
	}
	fl.hw = 10
	ll := &memLog{}
	for _, v := range values("old", 0, 6) {
		ll.appendLeader(0, v)
	}
	c.leaders[1].lead(x, 1, ll)
	c.follow(x, 1, 1)

	eventually(t, "truncation to the leader's LEO", func() bool {
		return slices.Contains(c.local.truncationLog(), "TruncateTo t-0 6")
	})
	if got := c.leaders[1].listLog(); len(got) == 0 || got[0] != -1 {
		t.Fatalf("ListOffsets asked %v, want LATEST first", got)
	}
	c.leaders[1].produce(x, "new6", "new7")
	c.waitInSync(x, 1)
	if _, _, leo, _ := c.local.snapshot(x); leo != 8 {
		t.Fatalf("LEO = %d, want 8", leo)
	}
}

// S20: the fetch offset is below the leader's log start (the follower was away; the leader
// deleted old segments): empty the local log and start at the leader's log start.
func TestS20_FetchOffsetBelowLeaderLogStartResets(t *testing.T) {
	c := newCluster(t, Config{}, 1)
	x := tp("t", 0)
	fl := c.local.log(x)
	for _, v := range values("m", 0, 3) {
		fl.appendLeader(0, v)
	}
	fl.hw = 3
	ll := &memLog{}
	for _, v := range values("m", 0, 110) {
		ll.appendLeader(0, v)
	}
	ll.hw = 110
	ll.deleteBefore(100)
	c.leaders[1].lead(x, 0, ll)
	c.follow(x, 1, 0)

	c.waitInSync(x, 1)
	entries, start, leo, _ := c.local.snapshot(x)
	if start != 100 || leo != 110 || entries[0].offset != 100 {
		t.Fatalf("log start %d, LEO %d, first %v; want 100, 110, offset 100", start, leo, entries[0])
	}
	if got := c.local.truncationLog(); !slices.Contains(got, "TruncateFullyAndStartAt t-0 100") {
		t.Fatalf("truncations %v: want TruncateFullyAndStartAt 100", got)
	}
	if got := c.leaders[1].listLog(); !reflect.DeepEqual(got, []int64{-1, -2}) {
		t.Fatalf("ListOffsets timestamps %v, want [LATEST EARLIEST]", got)
	}
}

// S21: while the follower handles S19, the leader's LEO grows past the follower's: it simply
// refetches from its own LEO and the next fetch proceeds normally.
func TestS21_LeaderLEOGrewDuringOutOfRangeRetries(t *testing.T) {
	c := newCluster(t, Config{}, 1)
	x := tp("t", 0)
	fl := c.local.log(x)
	fl.noEpochs = true
	for _, v := range values("a", 0, 10) {
		fl.appendLeader(0, v)
	}
	fl.hw = 10
	ll := &memLog{}
	for _, v := range values("b", 0, 6) {
		ll.appendLeader(0, v)
	}
	ll.hw = 6
	c.leaders[1].lead(x, 1, ll)
	grown := false
	c.leaders[1].beforeList = func(ts int64) {
		if ts == -1 && !grown { // the race: appends land between the fetch and ListOffsets
			grown = true
			for _, v := range values("b", 6, 12) {
				ll.appendLeader(1, v)
			}
			ll.hw = ll.leo
		}
	}
	c.follow(x, 1, 1)

	eventually(t, "follower LEO 12", func() bool {
		_, _, leo, _ := c.local.snapshot(x)
		return leo == 12
	})
	entries, _, _, _ := c.local.snapshot(x)
	want := append(append([]entry(nil), fl2entries("a", 0, 10, 0)...), entry{10, 1, "b10"}, entry{11, 1, "b11"})
	if !reflect.DeepEqual(entries, want) {
		t.Fatalf("entries\n got %v\nwant %v", entries, want)
	}
	for _, tr := range c.local.truncationLog() {
		if tr != "TruncateTo t-0 10" { // the HW truncation at start is a no-op
			t.Fatalf("unexpected truncation %q", tr)
		}
	}
	if got := c.leaders[1].listLog(); !reflect.DeepEqual(got, []int64{-1, -2}) {
		t.Fatalf("ListOffsets timestamps %v, want [LATEST EARLIEST]", got)
	}
	c.leaders[1].produce(x, "b12")
	eventually(t, "next fetch proceeds normally", func() bool {
		_, _, leo, _ := c.local.snapshot(x)
		return leo == 13
	})
}

func fl2entries(prefix string, from, to int, epoch int32) []entry {
	var out []entry
	for i, v := range values(prefix, from, to) {
		out = append(out, entry{int64(from + i), epoch, v})
	}
	return out
}

// KIP-101 scenario 1 (docs/kafka-facts.md §5): B leads, A fetched m2 but A's HW is still one round
// behind when A restarts. Truncating to the HW would drop m2 and lose it when B then fails;
// epoch truncation (K1) keeps it.
func TestKIP101Scenario1_NoLossAfterFollowerRestart(t *testing.T) {
	const b = 1
	c := newCluster(t, Config{}, b)
	x := tp("t", 0)
	bl := &memLog{}
	bl.appendLeader(0, "m1")
	bl.appendLeader(0, "m2")
	bl.hw = 2 // m2 is committed: A fetched it, so acks=all was answered
	c.leaders[b].lead(x, 0, bl)
	al := c.local.log(x)
	al.appendLeader(0, "m1")
	al.appendLeader(0, "m2")
	al.hw = 1 // the follower's HW lags one fetch round

	// A restarts and follows B again (InitOffset = its HW, 1).
	c.follow(x, b, 0)
	eventually(t, "A to finish truncation", func() bool {
		st, ok := c.mgr.PartitionState(x)
		return ok && !st.Truncating
	})
	for _, tr := range c.local.truncationLog() {
		if tr != "TruncateTo t-0 2" {
			t.Fatalf("A truncated below its LEO: %q (would lose m2)", tr)
		}
	}
	// B fails; A becomes leader (makeLeaders removes its fetcher).
	c.mgr.RemoveFetcherForPartitions([]TopicPartition{x})
	c.requireEntries(x, []entry{{0, 0, "m1"}, {1, 0, "m2"}})
}

// KIP-101 scenario 2: both replicas crash with different unflushed tails; B comes back first,
// leads at a new epoch and writes m3 at offset 1; A (m2 at offset 1) must not keep m2.
func TestKIP101Scenario2_NoDivergenceAfterDoubleCrash(t *testing.T) {
	const b = 1
	c := newCluster(t, Config{}, b)
	x := tp("t", 0)
	bl := &memLog{}
	bl.appendLeader(0, "m1") // B lost m2 in the power failure
	bl.hw = 1
	c.leaders[b].lead(x, 1, bl) // epoch cache: e0→0, e1→1
	c.leaders[b].produce(x, "m3")
	al := c.local.log(x)
	al.appendLeader(0, "m1")
	al.appendLeader(0, "m2")
	al.hw = 2 // truncate-to-HW would keep m2 here: divergence

	c.follow(x, b, 1)
	c.waitInSync(x, b)
	c.requireEntries(x, []entry{{0, 0, "m1"}, {1, 1, "m3"}})
	if got := c.leaders[b].epochLog(); len(got) != 1 || got[0].LeaderEpoch != 0 || got[0].CurrentLeaderEpoch != 1 {
		t.Fatalf("OffsetForLeaderEpoch requests %+v, want one {current 1, leaderEpoch 0}", got)
	}
	if got := c.local.truncationLog(); !reflect.DeepEqual(got, []string{"TruncateTo t-0 1"}) {
		t.Fatalf("truncations %v, want [TruncateTo 1]", got)
	}
}

// KIP-279, the constructed example of docs/kafka-facts.md §5: A leads e1 and writes 0:e1, 1:e1; only 0
// reaches B. B leads e2, writes 1:e2, 2:e2, dies; A is uncleanly elected for e3 and writes 2:e3.
// B asks for the end of e2: KIP-279 answers (e1, 2); B's end of e1 is 1: it truncates to 1 and
// converges (KIP-101 alone would answer 2 and keep 1:e2 against 1:e1).
func TestKIP279_ConstructedExampleConverges(t *testing.T) {
	const a = 1
	c := newCluster(t, Config{}, a)
	x := tp("t", 0)
	al := &memLog{}
	al.appendLeader(1, "x0")
	al.appendLeader(1, "x1")
	c.leaders[a].lead(x, 3, al)
	c.leaders[a].produce(x, "a2")
	bl := c.local.log(x)
	bl.appendLeader(1, "x0")
	bl.appendLeader(2, "b1")
	bl.appendLeader(2, "b2")
	bl.hw = 1

	c.follow(x, a, 3)
	c.waitInSync(x, a)
	c.requireEntries(x, []entry{{0, 1, "x0"}, {1, 1, "x1"}, {2, 3, "a2"}})
	if got := c.local.truncationLog(); !reflect.DeepEqual(got, []string{"TruncateTo t-0 1"}) {
		t.Fatalf("truncations %v, want [TruncateTo 1]", got)
	}
}

// KIP-279 iteration: the follower does not know the epoch the leader answers with, so it cuts back
// to the end of its largest smaller epoch and asks again.
func TestKIP279_IteratesWhenFollowerLacksLeaderEpoch(t *testing.T) {
	const a = 1
	c := newCluster(t, Config{}, a)
	x := tp("t", 0)
	ll := &memLog{}
	ll.appendLeader(0, "v0")
	ll.appendLeader(0, "v1")
	ll.appendLeader(1, "l2")
	ll.appendLeader(1, "l3")
	c.leaders[a].lead(x, 3, ll) // cache e0→0, e1→2, e3→4
	c.leaders[a].produce(x, "l4")
	fl := c.local.log(x)
	fl.appendLeader(0, "v0")
	fl.appendLeader(0, "v1")
	fl.appendLeader(2, "f2")
	fl.appendLeader(2, "f3") // cache e0→0, e2→2

	c.follow(x, a, 3)
	c.waitInSync(x, a)
	var asked []int32
	for _, r := range c.leaders[a].epochLog() {
		asked = append(asked, r.LeaderEpoch)
	}
	if !reflect.DeepEqual(asked, []int32{2, 0}) {
		t.Fatalf("OffsetForLeaderEpoch asked epochs %v, want [2 0] (leader answers e1; follower lacks e1)", asked)
	}
	if got := c.local.truncationLog(); !reflect.DeepEqual(got, []string{"TruncateTo t-0 2", "TruncateTo t-0 2"}) {
		t.Fatalf("truncations %v", got)
	}
}

// S17: a partition that hits an error is delayed by replica.fetch.backoff.ms; the other
// partitions of the same fetcher keep fetching.
func TestS17_BackoffIsPerPartition(t *testing.T) {
	c := newCluster(t, Config{FetchBackoff: time.Second}, 1)
	bad, good := tp("t", 0), tp("t", 1)
	for _, x := range []TopicPartition{bad, good} {
		c.local.log(x)
		c.leaders[1].lead(x, 0, &memLog{})
		c.leaders[1].produce(x, "v0")
	}
	errAt := -1
	c.leaders[1].fetchErr = func(x TopicPartition, n int) int16 {
		if x == bad && (errAt < 0 || errAt == n) {
			errAt = n
			return kerr.NotLeaderForPartition.Code
		}
		return 0
	}
	c.mgr.AddFetcherForPartitions(map[TopicPartition]InitialFetchState{
		bad: {Leader: ep(1), InitOffset: 0}, good: {Leader: ep(1), InitOffset: 0},
	})
	c.waitInSync(good, 1)
	for i := 1; i < 5; i++ {
		c.leaders[1].produce(good, values("v", i, i+1)...)
		c.waitInSync(good, 1)
	}
	c.waitInSync(bad, 1)

	fetches := c.leaders[1].fetchLog()
	first := -1
	for i, f := range fetches {
		if _, ok := f.errors[bad]; ok {
			first = i
			break
		}
	}
	if first < 0 {
		t.Fatal("no fetch answered the injected error")
	}
	// After the error: fetches of the good partition without the bad one, then the bad one back.
	withoutBad, back := 0, false
	for _, f := range fetches[first+1:] {
		_, hasBad := f.offsets[bad]
		if hasBad {
			back = true
			break
		}
		if _, ok := f.offsets[good]; ok {
			withoutBad++
		}
	}
	if withoutBad == 0 || !back {
		t.Fatalf("after the error: %d fetches without the delayed partition, back=%v; want >0, true", withoutBad, back)
	}
}

// S17: a failed send delays every partition, then fetching resumes (the connection is redialled).
func TestS17_SendErrorBacksOff(t *testing.T) {
	c := newCluster(t, Config{}, 1)
	x := tp("t", 0)
	c.local.log(x)
	c.leaders[1].lead(x, 0, &memLog{})
	c.leaders[1].produce(x, "v0")
	c.leaders[1].sendErr = func(n int) error {
		if n < 2 {
			return errors.New("connection reset")
		}
		return nil
	}
	c.follow(x, 1, 0)
	c.waitInSync(x, 1)
	if got := len(c.leaders[1].fetchLog()); got < 3 {
		t.Fatalf("fetches = %d, want >= 3", got)
	}
}

// FENCED_LEADER_EPOCH: our epoch is older than the leader's; the partition is failed until a
// LeaderAndIsr re-adds it with the new epoch. Checked on OffsetForLeaderEpoch and on Fetch.
func TestFencedLeaderEpochFailsPartitionUntilReAdded(t *testing.T) {
	c := newCluster(t, Config{}, 1)
	x := tp("t", 0)
	c.local.log(x)
	c.leaders[1].lead(x, 5, &memLog{})
	c.leaders[1].produce(x, "v0")

	c.follow(x, 1, 4) // stale epoch: OffsetForLeaderEpoch is fenced
	eventually(t, "partition failed", func() bool { return slices.Equal(c.mgr.FailedPartitions(), []TopicPartition{x}) })
	if fs := c.mgr.Fetchers(); len(fs) != 1 || len(fs[0].Partitions) != 0 {
		t.Fatalf("fetchers = %+v, want one without partitions", fs)
	}
	c.follow(x, 1, 5)
	if got := c.mgr.FailedPartitions(); len(got) != 0 {
		t.Fatalf("failed after re-add = %v", got)
	}
	c.waitInSync(x, 1)

	// The leader moves to epoch 6 while we fetch at 5: the Fetch is fenced.
	n := len(c.leaders[1].fetchLog())
	c.leaders[1].bumpEpoch(x)
	eventually(t, "partition failed on Fetch", func() bool { return slices.Equal(c.mgr.FailedPartitions(), []TopicPartition{x}) })
	fenced := false
	for _, f := range c.leaders[1].fetchLog()[n:] {
		fenced = fenced || f.errors[x] == kerr.FencedLeaderEpoch.Code
	}
	if !fenced {
		t.Fatal("no fetch was answered FENCED_LEADER_EPOCH")
	}
	c.mgr.ShutdownIdleFetcherThreads()
	if fs := c.mgr.Fetchers(); len(fs) != 0 {
		t.Fatalf("fetchers = %+v, want none (only a failed partition left)", fs)
	}
	c.follow(x, 1, 6)
	c.leaders[1].produce(x, "v1")
	c.waitInSync(x, 1)
}

// S18: a corrupt fetch response (bad CRC) is refused by the log; the partition is delayed and
// replication resumes from the local LEO.
func TestS18_CorruptResponseDelaysPartition(t *testing.T) {
	c := newCluster(t, Config{}, 1)
	x := tp("t", 0)
	c.local.log(x)
	c.leaders[1].lead(x, 0, &memLog{})
	c.leaders[1].produce(x, "v0", "v1")
	corrupted := 0
	c.leaders[1].corrupt = func(TopicPartition, int) bool {
		corrupted++
		return corrupted == 1
	}
	c.follow(x, 1, 0)
	c.waitInSync(x, 1)
	c.leaders[1].mu.Lock()
	defer c.leaders[1].mu.Unlock()
	if corrupted < 2 {
		t.Fatalf("leader served %d reads, want the corrupt one and a good one", corrupted)
	}
}

// S18 size check: more than one batch beyond replica.fetch.max.bytes is reported; a partial
// trailing batch is dropped; a bad header is corrupt; garbage never panics.
func TestS18_CompleteBatchesSizeCheck(t *testing.T) {
	b0, b1 := makeBatch(0, 0, "a"), makeBatch(1, 0, "b")
	two := append(append([]byte(nil), b0...), b1...)
	if got, n, over, err := completeBatches(two, int32(len(two))); err != nil || over || n != 2 || len(got) != len(two) {
		t.Fatalf("two batches within limit: %d, %d, %v, %v", len(got), n, over, err)
	}
	if _, _, over, err := completeBatches(two, int32(len(b0))); err != nil || !over {
		t.Fatalf("two batches over the limit: oversize = %v, err = %v", over, err)
	}
	if got, n, over, err := completeBatches(b0, 1); err != nil || over || n != 1 || len(got) != len(b0) {
		t.Fatalf("one oversized first batch must pass (Fetch v3+): %d, %d, %v, %v", len(got), n, over, err)
	}
	if got, n, _, err := completeBatches(two[:len(two)-3], 1<<20); err != nil || n != 1 || len(got) != len(b0) {
		t.Fatalf("partial trailing batch: %d, %d, %v", len(got), n, err)
	}
	bad := append([]byte(nil), b0...)
	bad[16] = 1 // magic 1
	if _, _, _, err := completeBatches(bad, 1<<20); !errors.Is(err, errCorruptResponse) || !strings.Contains(err.Error(), "magic") {
		t.Fatalf("magic 1: err = %v", err)
	}
	for _, garbage := range [][]byte{nil, {0}, make([]byte, 12), {0, 0, 0, 0, 0, 0, 0, 0, 0x7f, 0xff, 0xff, 0xff, 2}, {0, 0, 0, 0, 0, 0, 0, 0, 0x80, 0, 0, 0}} {
		_, _, _, _ = completeBatches(garbage, 1<<20)
	}
}

// A fetch response whose bytes are no complete batch (header claims more than was sent and
// nothing else) never reaches the log: the partition is delayed.
func TestS18_MalformedResponseDelaysPartition(t *testing.T) {
	c := newCluster(t, Config{FetchBackoff: time.Hour}, 1)
	x := tp("t", 0)
	c.local.log(x)
	c.leaders[1].lead(x, 0, &memLog{})
	c.leaders[1].produce(x, "v0")
	c.leaders[1].corrupt = func(TopicPartition, int) bool { return true }
	c.leaders[1].truncateReads = true
	c.follow(x, 1, 0)
	eventually(t, "partition delayed", func() bool {
		st, ok := c.mgr.PartitionState(x)
		return ok && st.Delayed && !st.Truncating
	})
	if _, _, leo, _ := c.local.snapshot(x); leo != 0 {
		t.Fatalf("LEO = %d, want 0", leo)
	}
}

// Local reports ErrNotFollower (the replica manager moved on): the fetcher backs off and keeps
// the partition until the next LeaderAndIsr decides.
func TestNotFollowerBacksOff(t *testing.T) {
	c := newCluster(t, Config{}, 1)
	x := tp("t", 0)
	c.local.log(x)
	c.leaders[1].lead(x, 0, &memLog{})
	c.leaders[1].produce(x, "v0")
	c.local.mu.Lock()
	c.local.notFollower[x] = true
	c.local.mu.Unlock()
	c.follow2(x)
	eventually(t, "partition delayed", func() bool {
		st, ok := c.mgr.PartitionState(x)
		return ok && st.Delayed && st.Truncating
	})
	c.local.mu.Lock()
	c.local.notFollower[x] = false
	c.local.mu.Unlock()
	c.waitInSync(x, 1)
}

func (c *cluster) follow2(x TopicPartition) {
	c.mgr.AddFetcherForPartitions(map[TopicPartition]InitialFetchState{x: {Leader: ep(1), InitOffset: 0}})
}

// KAFKA-10706 (issue 11's stuck truncation): the follower led epoch 3 without writing, so its
// cache ends with 3@5 at its LEO; the leader (epoch 4) answers epoch 2, which the follower lacks,
// ending at 8. The follower truncates to its LEO (dropping 3@5), asks again about epoch 1 and
// then fetches, instead of backing off and asking about epoch 3 forever.
func TestK1_KAFKA10706_LeaderThatWroteNothingFollowsAgain(t *testing.T) {
	c := newCluster(t, Config{}, 1)
	x := tp("t", 0)
	ll := &memLog{}
	ll.appendLeader(1, "a", "b", "c", "d", "e")
	ll.appendLeader(2, "f", "g", "h")
	ll.hw = ll.leo
	c.leaders[1].lead(x, 4, ll)
	fl := c.local.log(x)
	fl.appendLeader(1, "a", "b", "c", "d", "e")
	fl.assignEpoch(3, fl.leo) // became leader in epoch 3, wrote nothing
	fl.hw = 5
	c.follow(x, 1, 4)
	c.waitInSync(x, 1)
	asked := []int32{}
	for _, r := range c.leaders[1].epochLog() {
		asked = append(asked, r.LeaderEpoch)
	}
	if !slices.Equal(asked, []int32{3, 1}) {
		t.Fatalf("OffsetForLeaderEpoch asked about epochs %v, want [3 1]", asked)
	}
	if _, _, leo, _ := c.local.snapshot(x); leo != 8 {
		t.Fatalf("follower LEO %d, want 8", leo)
	}
}
