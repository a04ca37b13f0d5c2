package decaysample

import (
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/rcrowley/go-metrics"
)

func seeded(seed uint64) func() float64 { return rand.New(rand.NewPCG(seed, 1)).Float64 }

func count(vs []int64, v int64) int {
	n := 0
	for _, x := range vs {
		if x == v {
			n++
		}
	}
	return n
}

// Until the reservoir is full every value is kept; after that Count still counts every value
// and Size stays at the reservoir's size.
func TestFillsThenKeepsSizeAndCountsEverything(t *testing.T) {
	s := newWithRand(100, DefaultAlpha, seeded(1))
	t0 := time.Unix(1_000_000, 0)
	for i := range 100 {
		s.UpdateAt(t0, int64(i))
	}
	got := s.Values()
	slices.Sort(got)
	for i, v := range got {
		if v != int64(i) {
			t.Fatalf("after 100 values the reservoir holds %v, want 0..99", got)
		}
	}
	for i := range 10_000 {
		s.UpdateAt(t0, int64(i))
	}
	if s.Count() != 10_100 || s.Size() != 100 {
		t.Fatalf("Count %d Size %d, want 10100 and 100", s.Count(), s.Size())
	}
	snap := s.Snapshot()
	if snap.Count() != 10_100 || len(snap.Values()) != 100 {
		t.Fatalf("snapshot Count %d with %d values", snap.Count(), len(snap.Values()))
	}
}

// Equal numbers of values ten seconds apart are kept in proportion to their weights
// (e^(0.015·10) ≈ 1.16 : 1, so about 54 % of the newer): not all of the newer, as a reservoir
// of the last values would keep, nor all of the older.
func TestKeepsValuesInProportionToTheirDecayedWeights(t *testing.T) {
	s := newWithRand(DefaultSize, DefaultAlpha, seeded(2))
	t0 := time.Unix(1_000_000, 0)
	s.Clear()
	s.landmark, s.weightAt, s.nextRescale = t0.Unix(), t0.Unix(), t0.Unix()+rescaleEvery
	for range 50_000 {
		s.UpdateAt(t0, 1)
	}
	for range 50_000 {
		s.UpdateAt(t0.Add(10*time.Second), 2)
	}
	newer := float64(count(s.Values(), 2)) / float64(s.Size())
	if newer < 0.48 || newer > 0.60 {
		t.Fatalf("%.3f of the kept values are the newer ones, want about 0.54", newer)
	}
	// Five minutes later the older ones weigh e^(0.015·300) ≈ 90 times less: few are left.
	for range 50_000 {
		s.UpdateAt(t0.Add(310*time.Second), 3)
	}
	if latest := float64(count(s.Values(), 3)) / float64(s.Size()); latest < 0.95 {
		t.Fatalf("%.3f of the kept values are from five minutes later, want > 0.95", latest)
	}
}

// A full reservoir drops a new value whose priority is below every kept one (Yammer's rule;
// go-metrics' ExpDecaySample would evict the lowest and keep it).
func TestDropsANewValueOfTheLowestPriority(t *testing.T) {
	u := 0.5
	s := newWithRand(4, DefaultAlpha, func() float64 { return u })
	t0 := time.Unix(1_000_000, 0)
	s.landmark, s.weightAt, s.nextRescale = t0.Unix(), t0.Unix(), t0.Unix()+rescaleEvery
	for v := range int64(4) {
		s.UpdateAt(t0, v) // priority 1/0.5 = 2
	}
	u = 0 // priority 1/1 = 1: the lowest
	s.UpdateAt(t0, 99)
	if count(s.Values(), 99) != 0 || s.Count() != 5 {
		t.Fatalf("kept %v (Count %d): the lowest-priority value should be dropped and counted", s.Values(), s.Count())
	}
	u = 0.9 // priority 10: replaces one of the four
	s.UpdateAt(t0, 42)
	if count(s.Values(), 42) != 1 || s.Size() != 4 {
		t.Fatalf("kept %v: a higher-priority value should replace the lowest", s.Values())
	}
}

// After an hour the landmark moves: the kept values' priorities are scaled down, their order
// and the counts stay, and new values compete with them as before.
func TestRescaleKeepsValuesAndProportions(t *testing.T) {
	s := newWithRand(DefaultSize, DefaultAlpha, seeded(3))
	t0 := time.Unix(1_000_000, 0)
	s.landmark, s.weightAt, s.nextRescale = t0.Unix(), t0.Unix(), t0.Unix()+rescaleEvery
	late := t0.Add(time.Hour - 5*time.Second)
	for range 50_000 {
		s.UpdateAt(late, 1)
	}
	before := s.Values()
	s.UpdateAt(t0.Add(time.Hour+5*time.Second), 2) // crosses the rescale
	if s.landmark != t0.Add(time.Hour+5*time.Second).Unix() {
		t.Fatalf("landmark %d, want the update's second", s.landmark)
	}
	if s.Count() != 50_001 || s.Size() != DefaultSize {
		t.Fatalf("Count %d Size %d after the rescale", s.Count(), s.Size())
	}
	for _, it := range s.heap {
		if it.priority > 1e6 {
			t.Fatalf("priority %g after the rescale: not scaled", it.priority)
		}
	}
	if kept := count(s.Values(), 1); kept < len(before)-1 {
		t.Fatalf("%d of %d values survived the rescale", kept, len(before))
	}
	for range 50_000 {
		s.UpdateAt(t0.Add(time.Hour+5*time.Second), 2)
	}
	// 10 s apart again: about 54 % the newer.
	if newer := float64(count(s.Values(), 2)) / float64(s.Size()); newer < 0.48 || newer > 0.60 {
		t.Fatalf("%.3f of the kept values are the newer ones after the rescale, want about 0.54", newer)
	}
}

// The statistics are those of the kept values; Clear empties the reservoir.
func TestStatisticsAndClear(t *testing.T) {
	s := New(DefaultSize, DefaultAlpha)
	for v := int64(1); v <= 100; v++ {
		s.Update(v)
	}
	if s.Min() != 1 || s.Max() != 100 || s.Sum() != 5050 || s.Mean() != 50.5 {
		t.Fatalf("min %d max %d sum %d mean %v", s.Min(), s.Max(), s.Sum(), s.Mean())
	}
	if p := s.Percentiles([]float64{0.5, 0.99}); p[0] != 50.5 || p[1] < 99 {
		t.Fatalf("percentiles %v", p)
	}
	if s.Percentile(0.5) != 50.5 || s.StdDev() == 0 || s.Variance() == 0 {
		t.Fatalf("p50 %v stddev %v variance %v", s.Percentile(0.5), s.StdDev(), s.Variance())
	}
	s.Clear()
	if s.Count() != 0 || s.Size() != 0 {
		t.Fatalf("after Clear: Count %d Size %d", s.Count(), s.Size())
	}
}

// Concurrent updates and snapshots (run with -race); every update is counted.
func TestConcurrentUpdates(t *testing.T) {
	s := New(64, DefaultAlpha)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 5_000 {
				s.Update(int64(g*10_000 + i))
				if i%500 == 0 {
					_ = s.Snapshot().Percentiles([]float64{0.99})
				}
			}
		})
	}
	wg.Wait()
	if s.Count() != 20_000 || s.Size() != 64 {
		t.Fatalf("Count %d Size %d, want 20000 and 64", s.Count(), s.Size())
	}
}

func BenchmarkUpdateAt(b *testing.B) {
	s := New(DefaultSize, DefaultAlpha)
	t0 := time.Now()
	b.ReportAllocs()
	for i := range b.N {
		s.UpdateAt(t0.Add(time.Duration(i)*time.Microsecond), int64(i&1023))
	}
}

// The go-metrics reservoir this one replaces on the request path, for comparison
// (docs/performance.md, "Request histograms").
func BenchmarkGoMetricsExpDecaySampleUpdate(b *testing.B) {
	s := metrics.NewExpDecaySample(DefaultSize, DefaultAlpha)
	b.ReportAllocs()
	for i := range b.N {
		s.Update(int64(i & 1023))
	}
}
