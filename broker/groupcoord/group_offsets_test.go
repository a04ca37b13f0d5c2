package groupcoord

import "testing"

// onOffsetCommitAppend installs a commit only over one held in an earlier batch: a second commit
// of the same partition replaces the first, and the append of an older commit that completes
// first is replaced once the newer one's completes (CommitRecordMetadataAndOffset ordering).
func TestGroupOffsets_LaterBatchReplacesEarlier(t *testing.T) {
	k := tp{"t", 0}
	om := func(off int64) offsetAndMetadata {
		return offsetAndMetadata{offset: off, leaderEpoch: -1, expireTimestamp: -1}
	}
	o := newGroupOffsets()
	o.prepareOffsetCommit(map[tp]offsetAndMetadata{k: om(1)})
	o.onOffsetCommitAppend(k, commitEntry{om: om(1), batchOffset: 0})
	o.prepareOffsetCommit(map[tp]offsetAndMetadata{k: om(2)})
	o.onOffsetCommitAppend(k, commitEntry{om: om(2), batchOffset: 1})
	if got := o.committed[k].om.offset; got != 2 || len(o.pendingCommits) != 0 {
		t.Fatalf("after two commits: offset %d, pending %v; want 2, none", got, o.pendingCommits)
	}

	// Commits 3 (batch 2) and 4 (batch 3) under way; 3's append completes first.
	o.prepareOffsetCommit(map[tp]offsetAndMetadata{k: om(3)})
	o.prepareOffsetCommit(map[tp]offsetAndMetadata{k: om(4)})
	o.onOffsetCommitAppend(k, commitEntry{om: om(3), batchOffset: 2})
	if _, pending := o.pendingCommits[k]; !pending {
		t.Fatalf("the newer commit is no longer pending after the older one completed")
	}
	o.onOffsetCommitAppend(k, commitEntry{om: om(4), batchOffset: 3})
	if got := o.committed[k].om.offset; got != 4 {
		t.Fatalf("offset %d after both appends, want 4", got)
	}
}
