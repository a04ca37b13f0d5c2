package logstore

import (
	"bytes"
	"math/rand"
	"testing"
)

// ReadRegions delimits exactly the bytes Read returns, for every start offset, budget, upper
// bound and minOneBatch, across segment boundaries: the zero-copy fetch path sends what the
// copying path sent.
func TestReadRegionsMatchesRead(t *testing.T) {
	cfg := testConfig()
	cfg.SegmentBytes = 16 << 10 // many segments
	l := newTestLog(t, cfg, nil)
	rng := rand.New(rand.NewSource(7))
	for range 200 {
		mustAppend(t, l, testBatch{records: 1 + rng.Intn(8), valueSize: rng.Intn(600), baseTs: 1}.build(), 1)
	}
	leo := l.LogEndOffset()
	if n := len(l.segs); n < 5 {
		t.Fatalf("want several segments, have %d", n)
	}
	for i := range 3000 {
		start := rng.Int63n(leo + 1)
		budget := int32(rng.Intn(40 << 10))
		if i%10 == 0 {
			budget = 0
		}
		maxOffset := start + rng.Int63n(leo-start+2)
		if i%3 == 0 {
			maxOffset = leo
		}
		minOne := rng.Intn(2) == 0
		want, werr := l.Read(start, budget, maxOffset, minOne)
		fr, gerr := l.ReadRegions(start, budget, maxOffset, minOne)
		if (werr == nil) != (gerr == nil) {
			t.Fatalf("Read(%d, %d, %d, %v) error %v, ReadRegions error %v", start, budget, maxOffset, minOne, werr, gerr)
		}
		got, err := fr.ReadAll(nil)
		if err != nil {
			t.Fatal(err)
		}
		var sum int64
		for _, r := range fr.Regions {
			sum += r.Len
			if r.Len <= 0 {
				t.Fatalf("empty region %+v", r)
			}
		}
		if sum != fr.Len || int64(len(got)) != fr.Len {
			t.Fatalf("regions add up to %d, Len %d, read %d bytes", sum, fr.Len, len(got))
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("Read(%d, %d, %d, %v): %d bytes, ReadRegions %d bytes in %d regions", start, budget, maxOffset, minOne, len(want), len(got), len(fr.Regions))
		}
	}
	if _, err := l.ReadRegions(leo+1, 100, leo, true); err == nil {
		t.Fatal("ReadRegions past the log end did not fail")
	}
}
