package logstore

import (
	"bytes"
	"errors"
	"os"
	"testing"
)

// A fetch at a batch the log appended a moment ago is answered from recentBatches without
// reading the batch header from the file: with that header overwritten on disk the fetch still
// gets the batch, while a read that has to find the header (an offset no longer remembered)
// reports the damage. After a truncation the positions are new: a fetch at an offset written
// again gets the new batch, not the remembered position of the old one.
func TestTailFetchUsesRecentBatchesAndTruncationForgetsThem(t *testing.T) {
	l := newTestLog(t, testConfig(), nil)
	var starts []int64 // each batch's first offset
	for i := 0; i < recentBatchCount+4; i++ {
		info := mustAppend(t, l, testBatch{records: 1 + i%3, valueSize: 100 + 37*i}.build(), 0)
		starts = append(starts, info.FirstOffset)
	}
	leo := l.LogEndOffset()

	// Every remembered batch start reads exactly what a read from the headers reads.
	regionBytes := func(from int64) []byte {
		t.Helper()
		fr, err := l.ReadRegions(from, 1<<20, leo, true)
		if err != nil {
			t.Fatalf("ReadRegions(%d): %v", from, err)
		}
		b, err := fr.ReadAll(nil)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	// headerRead reads from off through the batch headers alone (no remembered batches).
	headerRead := func(from int64) ([]byte, error) {
		l.mu.RLock()
		defer l.mu.RUnlock()
		return l.segs.read(from, 1<<20, leo, leo, true, nil)
	}
	for _, off := range starts {
		want, err := headerRead(off)
		if err != nil {
			t.Fatal(err)
		}
		if got := regionBytes(off); !bytes.Equal(got, want) {
			t.Fatalf("fetch at %d: %d bytes, a read through the headers gives %d", off, len(got), len(want))
		}
	}

	// Overwrite the header of the newest batch on disk: a remembered start does not read it.
	last := starts[len(starts)-1]
	b, ok := l.recent.find(l.segs.active(), last)
	if !ok {
		t.Fatalf("the newest batch (offset %d) is not remembered", last)
	}
	f, err := os.OpenFile(l.segs.active().logPath(), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(make([]byte, batchHeaderSize), b.pos); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if got := regionBytes(last); int64(len(got)) != b.size {
		t.Fatalf("fetch at the newest batch got %d bytes, want its %d", len(got), b.size)
	}
	if _, err := headerRead(last); !errors.Is(err, ErrCorruptMessage) {
		t.Fatalf("a read through the headers at %d: %v, want ErrCorruptMessage (the test's damage)", last, err)
	}

	// Truncate below the damaged batch and append batches of other sizes at the same offsets.
	cut := starts[len(starts)-6]
	if err := l.TruncateTo(cut); err != nil {
		t.Fatal(err)
	}
	for l.LogEndOffset() < leo+5 {
		mustAppend(t, l, testBatch{records: 2, valueSize: 900}.build(), 1)
	}
	leo = l.LogEndOffset()
	for off := cut; off < leo; off += 2 {
		want, err := headerRead(off)
		if err != nil {
			t.Fatal(err)
		}
		if got := regionBytes(off); !bytes.Equal(got, want) {
			t.Fatalf("after truncation, fetch at %d: %d bytes, a read through the headers gives %d", off, len(got), len(want))
		}
	}
}
