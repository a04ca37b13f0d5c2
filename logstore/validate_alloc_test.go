package logstore

import "testing"

// TestValidateRecordsAllocations: the walk over an uncompressed batch allocates nothing, and
// over a compressed one a constant that does not grow with the number of records, with the
// per-record checks of a compacted topic with a timestamp limit on (they allocate only to
// refuse).
func TestValidateRecordsAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts differ under the race detector")
	}
	for _, c := range allCodecs {
		t.Run(c.name, func(t *testing.T) {
			allocs := func(n int) float64 {
				b := codecBatch(t, c.codec, seqRecords(n, 100))
				h := parseHeader(b)
				chk := recordChecks{compacted: true, tsLimited: true, nowMs: 1, diffMs: 1 << 40}
				return testing.AllocsPerRun(50, func() {
					if _, err := walkRecordsChecked(b, h, 1<<30, chk); err != nil {
						t.Fatal(err)
					}
				})
			}
			few, many := allocs(10), allocs(2000)
			if c.codec == codecNone && many != 0 {
				t.Fatalf("uncompressed walk allocates %v per batch", many)
			}
			if many > few {
				t.Fatalf("%v allocations for 10 records, %v for 2000: not constant", few, many)
			}
		})
	}
}

// BenchmarkValidateRecords walks a 16 KB batch of 1 KB records (BenchmarkAppend's) per codec.
func BenchmarkValidateRecords(b *testing.B) {
	for _, c := range allCodecs {
		b.Run(c.name, func(b *testing.B) {
			batch := codecBatch(b, c.codec, seqRecords(16, 1000))
			h := parseHeader(batch)
			b.SetBytes(16 * 1000)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := walkRecords(batch, h, 1<<30); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
