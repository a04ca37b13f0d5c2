package logstore

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestEpochCacheAssignTruncate(t *testing.T) {
	var c epochCache
	if !c.assign(1, 0) || !c.assign(3, 10) || c.assign(3, 12) || c.assign(-1, 30) {
		t.Fatal("assign: a new epoch changes the cache; the latest epoch at a later offset or a negative epoch does not")
	}
	if !c.assign(5, 10) { // a start offset at or below the last entry's replaces it
		t.Fatal("assign(5, 10)")
	}
	if got := c.snapshot(); len(got) != 2 || got[1] != (EpochEntry{5, 10}) {
		t.Fatalf("%+v", got)
	}
	c.assign(7, 20)
	c.truncateFromEnd(20)
	if got := c.snapshot(); len(got) != 2 || got[1].Epoch != 5 {
		t.Fatalf("truncateFromEnd: %+v", got)
	}
	c.truncateFromStart(15)
	if got := c.snapshot(); len(got) != 1 || got[0] != (EpochEntry{5, 15}) {
		t.Fatalf("truncateFromStart: %+v", got)
	}
}

// Kafka's assign/truncateAndAppend: an entry of an older epoch than the latest removes every
// later entry that conflicts with it (epoch or start offset at or above its own) instead of
// being ignored (the epoch-cache defect of issue 11).
func TestEpochCacheAssignOlderEpochRemovesConflictingEntries(t *testing.T) {
	cases := []struct {
		name  string
		start []EpochEntry
		epoch int32
		off   int64
		want  []EpochEntry
		chg   bool
	}{
		{"older epoch at the stale entry's start", []EpochEntry{{1, 0}, {2, 5}}, 1, 5, []EpochEntry{{1, 5}}, true},
		{"older epoch past a later entry", []EpochEntry{{1, 0}, {3, 5}, {4, 8}}, 2, 6, []EpochEntry{{1, 0}, {2, 6}}, true},
		{"same epoch earlier offset", []EpochEntry{{1, 0}, {3, 10}}, 3, 7, []EpochEntry{{1, 0}, {3, 7}}, true},
		{"same epoch later offset", []EpochEntry{{1, 0}, {3, 10}}, 3, 12, []EpochEntry{{1, 0}, {3, 10}}, false},
		{"newer epoch below the latest start", []EpochEntry{{1, 0}, {3, 10}}, 4, 9, []EpochEntry{{1, 0}, {4, 9}}, true},
		{"newer epoch", []EpochEntry{{1, 0}}, 2, 4, []EpochEntry{{1, 0}, {2, 4}}, true},
		{"empty", nil, 0, 0, []EpochEntry{{0, 0}}, true},
	}
	for _, tc := range cases {
		c := epochCache{entries: append([]EpochEntry(nil), tc.start...)}
		chg := c.assign(tc.epoch, tc.off)
		if got := c.snapshot(); chg != tc.chg || !slices.Equal(got, tc.want) {
			t.Errorf("%s: assign(%d, %d) on %v = %v changed=%v, want %v changed=%v", tc.name, tc.epoch, tc.off, tc.start, got, chg, tc.want, tc.chg)
		}
	}
}

// truncateFromStart keeps the last entry starting at or before the new log start: an entry
// starting exactly there stays as it is (no two entries may share a start offset).
func TestEpochCacheTruncateFromStartAtAnEntryStart(t *testing.T) {
	c := epochCache{entries: []EpochEntry{{1, 0}, {2, 5}, {3, 9}}}
	if !c.truncateFromStart(5) {
		t.Fatal("truncateFromStart(5) changed nothing")
	}
	if got := c.snapshot(); !slices.Equal(got, []EpochEntry{{2, 5}, {3, 9}}) {
		t.Fatalf("got %v, want [{2 5} {3 9}]", got)
	}
	if c.truncateFromStart(5) {
		t.Fatal("a second truncateFromStart(5) reported a change")
	}
}

// A follower append of a batch whose epoch is older than the cache's latest entry (after a
// leader that wrote nothing recorded its epoch at the LEO) replaces the stale entry.
func TestAppendAsFollowerOlderEpochReplacesStaleEntry(t *testing.T) {
	l := newTestLog(t, testConfig(), nil)
	mustAppend(t, l, testBatch{records: 5}.build(), 1)
	l.LeaderEpochCache().Assign(2, l.LogEndOffset()) // became leader in epoch 2, wrote nothing
	src := newTestLog(t, testConfig(), nil)
	mustAppend(t, src, testBatch{records: 5}.build(), 1)
	mustAppend(t, src, testBatch{records: 3}.build(), 1)
	rest, err := src.Read(5, 1<<20, src.LogEndOffset(), true)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.AppendAsFollower(rest); err != nil {
		t.Fatal(err)
	}
	if got := l.LeaderEpochCache().EpochEntries(); !slices.Equal(got, []EpochEntry{{1, 5}}) {
		t.Fatalf("epoch cache %v, want [{1 5}] (Kafka's assign drops 2@5)", got)
	}
	if e, end := l.LeaderEpochCache().EndOffsetFor(1); e != 1 || end != 8 {
		t.Fatalf("EndOffsetForEpoch(1) = (%d, %d), want (1, 8)", e, end)
	}
}

func TestEndOffsetForEpoch(t *testing.T) {
	var c epochCache
	if e, o := c.endOffsetFor(1, 10); e != -1 || o != -1 {
		t.Fatalf("empty cache: (%d, %d)", e, o)
	}
	c.assign(2, 5)
	c.assign(4, 10)
	c.assign(7, 20)
	const leo = 30
	cases := []struct {
		req, epoch int32
		end        int64
	}{
		{7, 7, leo}, // latest epoch: the LEO
		{4, 4, 20},  // next epoch's start
		{5, 4, 20},  // largest epoch <= 5 is 4 (KIP-279)
		{6, 4, 20},
		{2, 2, 10},
		{3, 2, 10},
		{1, 1, 5},   // below every epoch: Kafka answers (requested, first start offset)
		{8, -1, -1}, // above the latest
		{-1, -1, -1},
	}
	for _, tc := range cases {
		if e, o := c.endOffsetFor(tc.req, leo); e != tc.epoch || o != tc.end {
			t.Errorf("endOffsetFor(%d) = (%d, %d), want (%d, %d)", tc.req, e, o, tc.epoch, tc.end)
		}
	}
}

// TestK1_KIP279Example replays the constructed example of docs/kafka-facts.md §5: with KIP-101's
// answer B would keep 1:e2 against A's 1:e1; KIP-279's (epoch, end) answer makes B truncate
// to 1 and converge.
func TestK1_KIP279Example(t *testing.T) {
	a := newTestLog(t, testConfig(), nil)
	b := newTestLog(t, testConfig(), nil)
	// (1) A leads e1 and writes 0:e1 and 1:e1; only 0 reaches B.
	a.LeaderEpochCache().Assign(1, a.LogEndOffset())
	mustAppend(t, a, testBatch{records: 1}.build(), 1)
	mustAppend(t, a, testBatch{records: 1}.build(), 1)
	first, _ := a.Read(0, 1<<20, 1, false)
	if _, err := b.AppendAsFollower(first); err != nil {
		t.Fatal(err)
	}
	// (2) B leads e2 and writes 1:e2 and 2:e2.
	b.LeaderEpochCache().Assign(2, b.LogEndOffset())
	mustAppend(t, b, testBatch{records: 1}.build(), 2)
	mustAppend(t, b, testBatch{records: 1}.build(), 2)
	// (3) B dies; A is uncleanly elected for e3 and writes 2:e3.
	a.LeaderEpochCache().Assign(3, a.LogEndOffset())
	mustAppend(t, a, testBatch{records: 1}.build(), 3)
	// (4) B asks A for the end of its latest epoch, e2.
	latest, _ := b.LeaderEpochCache().LatestEpoch()
	epoch, end := a.LeaderEpochCache().EndOffsetFor(latest)
	if epoch != 1 || end != 2 {
		t.Fatalf("A answers (%d, %d), want (1, 2)", epoch, end)
	}
	// B does not hold epoch 2 on A's side: it takes its own end for epoch 1 and truncates.
	_, ownEnd := b.LeaderEpochCache().EndOffsetFor(epoch)
	target := min(end, ownEnd, b.LogEndOffset())
	if target != 1 {
		t.Fatalf("truncation target %d", target)
	}
	if err := b.TruncateTo(target); err != nil {
		t.Fatal(err)
	}
	rest, err := a.Read(b.LogEndOffset(), 1<<20, a.LogEndOffset(), false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.AppendAsFollower(rest); err != nil {
		t.Fatal(err)
	}
	all := func(l *Log) []byte { d, _ := l.Read(0, 1<<20, l.LogEndOffset(), false); return d }
	if !bytes.Equal(all(a), all(b)) {
		t.Fatal("replicas diverge after KIP-279 truncation")
	}
	if ea, eb := a.LeaderEpochCache().EpochEntries(), b.LeaderEpochCache().EpochEntries(); len(ea) != len(eb) || eb[len(eb)-1] != (EpochEntry{3, 2}) {
		t.Fatalf("epoch caches A %+v B %+v", ea, eb)
	}
}

func TestLeaderEpochCheckpointPersisted(t *testing.T) {
	l := newTestLog(t, testConfig(), nil)
	l.LeaderEpochCache().Assign(3, 0)
	mustAppend(t, l, testBatch{records: 4}.build(), 3)
	l.LeaderEpochCache().Assign(5, 4)
	// Written by the flush that moves the recovery point past the entries (persistDeferred).
	if _, err := os.Stat(filepath.Join(l.Dir(), leaderEpochCheckpointFile)); !os.IsNotExist(err) {
		t.Fatalf("checkpoint written before a flush (stat: %v)", err)
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(l.Dir(), leaderEpochCheckpointFile))
	if err != nil {
		t.Fatal(err)
	}
	if string(data) != "0\n2\n3 0\n5 4\n" {
		t.Fatalf("leader-epoch-checkpoint:\n%s", data)
	}
	if err := l.TruncateTo(2); err != nil {
		t.Fatal(err)
	}
	data, _ = os.ReadFile(filepath.Join(l.Dir(), leaderEpochCheckpointFile))
	if string(data) != "0\n0\n" {
		t.Fatalf("after truncation:\n%s", data)
	}
}
