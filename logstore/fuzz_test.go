package logstore

import (
	"bytes"
	"reflect"
	"testing"
)

func fuzzSeeds(f *testing.F) {
	b1 := testBatch{records: 3, valueSize: 20, baseTs: 5}.build()
	b2 := testBatch{records: 1, valueSize: 200, base: 3, epoch: 2, baseTs: 9}.build()
	b3 := testBatch{records: 2, base: 10, epoch: 1}.build()
	setBaseOffsetAndEpoch(b1, 0, 1)
	two := append(append([]byte{}, b1...), b2...)
	f.Add(two)
	f.Add(append(append([]byte{}, two...), b3...)) // epoch goes down, offsets jump
	f.Add(two[:len(two)-7])
	f.Add(append(append([]byte{}, two...), 0xde, 0xad, 0xbe, 0xef))
	f.Add([]byte{})
	huge := append([]byte{}, b1...)
	huge[offLength] = 0x80 // negative length
	f.Add(huge)
}

// FuzzRecoverSegment treats random bytes as a segment file: recovery must not panic, must
// keep at most len(data) bytes, and recovering the valid prefix again must keep all of it
// and rebuild identical indexes (franz-go FuzzReadEntries invariants; docs/reliability.md, fault matrix row 14).
func FuzzRecoverSegment(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		const interval = 64
		res := scanSegment(bytes.NewReader(data), int64(len(data)), 0, 0, 0, newIndexState(0), interval)
		if res.validBytes < 0 || res.validBytes > int64(len(data)) {
			t.Fatalf("validBytes %d of %d", res.validBytes, len(data))
		}
		if (res.err == nil) != (res.validBytes == int64(len(data))) {
			t.Fatalf("err %v with %d/%d valid bytes", res.err, res.validBytes, len(data))
		}
		prefix := data[:res.validBytes]
		again := scanSegment(bytes.NewReader(prefix), int64(len(prefix)), 0, 0, 0, newIndexState(0), interval)
		if again.err != nil || again.validBytes != res.validBytes || again.nextOffset != res.nextOffset ||
			again.batches != res.batches || !reflect.DeepEqual(again.ix, res.ix) || !reflect.DeepEqual(again.epochs, res.epochs) {
			t.Fatalf("re-recovery differs: %+v vs %+v", again, res)
		}
		// the valid prefix is well-formed for the header parser and the index points at batches
		hs, err := BatchHeaders(prefix)
		if err != nil || len(hs) != res.batches {
			t.Fatalf("BatchHeaders on valid prefix: %d batches, %v", len(hs), err)
		}
		for _, e := range res.ix.idx {
			if e.pos <= 0 || int64(e.pos) >= res.validBytes {
				t.Fatalf("index entry %+v outside %d bytes", e, res.validBytes)
			}
			if _, err := checkBatchAt(prefix[e.pos:]); err != nil {
				t.Fatalf("index entry %+v does not point at a batch: %v", e, err)
			}
		}
	})
}

// FuzzBatchHeaders: header parsing and produce validation never panic, never accept a length
// beyond the input, and the accepted batches tile the input exactly.
func FuzzBatchHeaders(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		hs, err := BatchHeaders(data)
		total := 0
		for _, h := range hs {
			if h.Size() < batchHeaderSize || total+h.Size() > len(data) {
				t.Fatalf("header %+v exceeds input", h)
			}
			_ = validateForLeader(data[total:], h, 1<<20)
			_, _ = walkRecords(data[total:total+h.Size()], h, 1<<20)
			firstRecordAtOrAfter(data[total:total+h.Size()], h, 0)
			total += h.Size()
		}
		if err == nil && total != len(data) {
			t.Fatalf("accepted %d of %d bytes", total, len(data))
		}
		// appending as leader either fails cleanly or stores exactly the input
		if err == nil && len(hs) > 0 {
			l := newTestLog(t, testConfig(), nil)
			in := append([]byte{}, data...)
			if _, aerr := l.AppendAsLeader(in, 3); aerr == nil {
				got, rerr := l.Read(0, int32(len(data)), l.LogEndOffset(), true)
				if rerr != nil || !bytes.Equal(got, in) {
					t.Fatalf("read back differs: %v", rerr)
				}
			}
		}
	})
}
