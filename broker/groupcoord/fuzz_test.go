package groupcoord

import (
	"io"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
)

// FuzzOffsetsLoader treats random bytes as what a read of a __consumer_offsets partition returns
// and runs the loader's path over it (decodeBatches, then loadedPartition.apply for every record
// of every batch): a log another program wrote, or a damaged one, must never crash the
// coordinator (docs/reliability.md, fault matrix row 14). Invariants: no panic; every batch
// decoded advances the read (nextOffset > baseOffset), so the load loop cannot spin; records
// applied twice give the same state (the last value per key wins).
func FuzzOffsetsLoader(f *testing.F) {
	g := newGroup("g", time.Time{})
	g.generation = 3
	seed := encodeBatch(1700000000000, []kv{
		{offsetCommitKey("g", tp{"t", 0}), offsetCommitValue(offsetAndMetadata{offset: 42, leaderEpoch: 1, expireTimestamp: -1})},
		{offsetCommitKey("g", tp{"t", 1}), offsetCommitValue(offsetAndMetadata{offset: 7, leaderEpoch: -1, expireTimestamp: 99})},
		{groupMetadataKey("g"), groupMetadataValue(g, nil)},
		{offsetCommitKey("g", tp{"t", 1}), nil}, // tombstone
	})
	f.Add(seed)
	f.Add(append(append([]byte(nil), seed...), seed[:40]...)) // a torn second batch
	f.Add(seed[:61])
	f.Add([]byte{})
	log := logrus.New()
	log.SetOutput(io.Discard)
	f.Fuzz(func(t *testing.T, raw []byte) {
		batches, _, _ := decodeBatches(raw)
		once := &loadedPartition{offsets: map[offsetKey]commitEntry{}, groups: map[string]*group{}, removed: map[string]bool{}}
		twice := &loadedPartition{offsets: map[offsetKey]commitEntry{}, groups: map[string]*group{}, removed: map[string]bool{}}
		for _, b := range batches {
			if b.nextOffset <= b.baseOffset {
				t.Fatalf("batch at %d: next offset %d does not advance the load", b.baseOffset, b.nextOffset)
			}
			for _, r := range b.records {
				once.apply(r, b.baseOffset, log)
				twice.apply(r, b.baseOffset, log)
				twice.apply(r, b.baseOffset, log)
			}
		}
		if len(once.offsets) != len(twice.offsets) || len(once.groups) != len(twice.groups) {
			t.Fatalf("applying each record twice changed the state: %d/%d offsets, %d/%d groups",
				len(once.offsets), len(twice.offsets), len(once.groups), len(twice.groups))
		}
		for k, e := range once.offsets {
			if twice.offsets[k] != e {
				t.Fatalf("offset %v: %+v once, %+v twice", k, e, twice.offsets[k])
			}
		}
	})
}
