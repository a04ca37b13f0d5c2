// Package decaysample owns the reservoir behind the broker's request histograms (Kafka's
// kafka.network:type=RequestMetrics ...TimeMs): the exponentially decaying sample of Yammer
// Metrics 2.2, which Kafka 2.4's biased histograms use, as a go-metrics Sample
// (docs/metrics.md, "Timers and histograms").
//
// It is written here rather than taken from go-metrics, whose ExpDecaySample is the same idea
// with two differences that matter on the request path (docs/performance.md, "Request
// histograms"):
//   - go-metrics pops the lowest priority and pushes the new value on every update once the
//     reservoir is full: two heap sifts per request phase, and a new value of lower priority than
//     all the others still takes the last place until the next update. Yammer's (Kafka's) keeps a
//     new value only when its priority beats the lowest, which at a steady rate is about one
//     update in a hundred, and costs one comparison otherwise;
//   - go-metrics reads the clock and computes exp() on every update; the weight here depends on
//     whole seconds since the landmark, as in Yammer, so it is computed once a second, and
//     UpdateAt takes the time the caller already read.
package decaysample

import (
	"math"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/rcrowley/go-metrics"
)

// Kafka's histograms (Yammer's ExponentiallyDecayingSample as metrics-core 2.2 builds a biased
// histogram): 1028 values, alpha 0.015 (the last ~5 minutes weigh the most), a new landmark
// every hour.
const (
	DefaultSize  = 1028
	DefaultAlpha = 0.015
	rescaleEvery = int64(time.Hour / time.Second)
)

// Sample is a forward-decaying priority reservoir (Cormode et al., "Forward Decay: A Practical
// Time Decay Model for Streaming Systems"): a value observed t seconds after the landmark gets
// the priority exp(alpha·t)/u, u uniform in (0, 1], and the reservoir keeps the size values of
// highest priority. Safe for concurrent use.
type Sample struct {
	size  int
	alpha float64
	rand  func() float64 // uniform in [0, 1)

	mu          sync.Mutex
	count       int64 // every value observed since the last Clear (go-metrics' Count)
	landmark    int64 // unix seconds; priorities are relative to it
	nextRescale int64 // unix seconds
	weightAt    int64 // the second weight was computed for
	weight      float64
	heap        []item // min-heap by priority: heap[0] is the value to drop first
}

type item struct {
	priority float64
	v        int64
}

// New is a reservoir of size values with decay factor alpha.
func New(size int, alpha float64) *Sample {
	return newWithRand(size, alpha, rand.Float64)
}

func newWithRand(size int, alpha float64, r func() float64) *Sample {
	if size < 1 {
		size = 1
	}
	s := &Sample{size: size, alpha: alpha, rand: r}
	s.Clear()
	return s
}

// Clear drops every value and starts a new landmark now.
func (s *Sample) Clear() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.clearLocked(time.Now().Unix())
}

func (s *Sample) clearLocked(now int64) {
	s.count = 0
	s.heap = make([]item, 0, s.size)
	s.landmark = now
	s.nextRescale = now + rescaleEvery
	s.weightAt = now
	s.weight = 1
}

// Update records v observed now.
func (s *Sample) Update(v int64) { s.UpdateAt(time.Now(), v) }

// UpdateAt records v observed at t (the request path passes the time it read to measure v).
func (s *Sample) UpdateAt(t time.Time, v int64) {
	now := t.Unix()
	u := 1 - s.rand() // (0, 1]: no division by zero
	s.mu.Lock()
	defer s.mu.Unlock()
	if now >= s.nextRescale {
		s.rescaleLocked(now)
	}
	if now != s.weightAt {
		s.weightAt = now
		s.weight = math.Exp(s.alpha * float64(now-s.landmark))
	}
	s.count++
	p := s.weight / u
	if len(s.heap) < s.size {
		s.heap = append(s.heap, item{p, v})
		s.up(len(s.heap) - 1)
		return
	}
	if p > s.heap[0].priority { // else: dropped, as Yammer's (its priority is the lowest)
		s.heap[0] = item{p, v}
		s.down(0)
	}
}

// rescaleLocked moves the landmark to now, scaling the kept priorities so that their order and
// ratios stay (the weights would otherwise overflow after some hours).
func (s *Sample) rescaleLocked(now int64) {
	f := math.Exp(-s.alpha * float64(now-s.landmark))
	for i := range s.heap {
		s.heap[i].priority *= f
	}
	s.landmark = now
	s.nextRescale = now + rescaleEvery
	s.weightAt = now
	s.weight = 1
}

// up and down restore the min-heap order after heap[i] was added or replaced (hand-written:
// container/heap's interface calls cost more than the sift on this path).
func (s *Sample) up(i int) {
	h := s.heap
	for i > 0 {
		parent := (i - 1) / 2
		if h[parent].priority <= h[i].priority {
			return
		}
		h[parent], h[i] = h[i], h[parent]
		i = parent
	}
}

func (s *Sample) down(i int) {
	h := s.heap
	for {
		l := 2*i + 1
		if l >= len(h) {
			return
		}
		least := l
		if r := l + 1; r < len(h) && h[r].priority < h[l].priority {
			least = r
		}
		if h[i].priority <= h[least].priority {
			return
		}
		h[i], h[least] = h[least], h[i]
		i = least
	}
}

// Count is the number of values observed since the start (or the last Clear), kept or not.
func (s *Sample) Count() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.count
}

// Size is the number of values kept.
func (s *Sample) Size() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.heap)
}

// Values is a copy of the values kept, in no order.
func (s *Sample) Values() []int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.valuesLocked()
}

func (s *Sample) valuesLocked() []int64 {
	vs := make([]int64, len(s.heap))
	for i, it := range s.heap {
		vs[i] = it.v
	}
	return vs
}

// Snapshot is a read-only copy (what the metrics endpoint reads).
func (s *Sample) Snapshot() metrics.Sample {
	s.mu.Lock()
	defer s.mu.Unlock()
	return metrics.NewSampleSnapshot(s.count, s.valuesLocked())
}

// The statistics are over the values kept, as go-metrics' samples' are.
func (s *Sample) Max() int64                   { return metrics.SampleMax(s.Values()) }
func (s *Sample) Mean() float64                { return metrics.SampleMean(s.Values()) }
func (s *Sample) Min() int64                   { return metrics.SampleMin(s.Values()) }
func (s *Sample) Percentile(p float64) float64 { return metrics.SamplePercentile(s.Values(), p) }
func (s *Sample) Percentiles(ps []float64) []float64 {
	return metrics.SamplePercentiles(s.Values(), ps)
}
func (s *Sample) StdDev() float64   { return metrics.SampleStdDev(s.Values()) }
func (s *Sample) Sum() int64        { return metrics.SampleSum(s.Values()) }
func (s *Sample) Variance() float64 { return metrics.SampleVariance(s.Values()) }

var _ metrics.Sample = (*Sample)(nil)
