package perf

import (
	"fmt"
	"io"
	"slices"
	"sync"
	"time"
)

// ReportingInterval is how often the producer prints a progress line (Kafka: 5000 ms).
const ReportingInterval = 5 * time.Second

// maxLatencySamples bounds the latencies kept for percentiles, as Kafka's tool does: every
// k-th record's latency is kept, k = numRecords / min(numRecords, 500000).
const maxLatencySamples = 500000

// Stats accumulates per-record produce latencies (ack time − send time) the way Kafka's
// ProducerPerformance.Stats does: totals, a window printed every ReportingInterval, and a
// sample of latencies for percentiles. Latencies are kept in microseconds; the printed
// percentiles are whole milliseconds (truncated), as Kafka's integer-millisecond ones.
// Safe for concurrent use.
type Stats struct {
	mu       sync.Mutex
	out      io.Writer // progress lines; nil: none
	interval time.Duration

	start     time.Time
	sampling  int64
	latencies []int32 // microseconds
	iteration int64

	count        int64
	bytes        int64
	totalLatency time.Duration
	maxLatency   time.Duration

	windowStart        time.Time
	windowCount        int64
	windowBytes        int64
	windowTotalLatency time.Duration
	windowMaxLatency   time.Duration
}

// NewStats starts the statistics of a run of numRecords records at start; progress lines
// go to out every interval (none when out is nil or interval <= 0).
func NewStats(numRecords int64, start time.Time, interval time.Duration, out io.Writer) *Stats {
	if numRecords < 1 {
		numRecords = 1
	}
	sampling := numRecords / min(numRecords, maxLatencySamples)
	return &Stats{
		out:         out,
		interval:    interval,
		start:       start,
		sampling:    sampling,
		latencies:   make([]int32, 0, numRecords/sampling+1),
		windowStart: start,
	}
}

// Record adds one acknowledged record of size bytes whose ack arrived at now.
func (s *Stats) Record(latency time.Duration, bytes int, now time.Time) {
	if latency < 0 {
		latency = 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.count++
	s.bytes += int64(bytes)
	s.totalLatency += latency
	s.maxLatency = max(s.maxLatency, latency)
	s.windowCount++
	s.windowBytes += int64(bytes)
	s.windowTotalLatency += latency
	s.windowMaxLatency = max(s.windowMaxLatency, latency)
	if s.iteration%s.sampling == 0 && len(s.latencies) < cap(s.latencies) {
		us := latency.Microseconds()
		if us > 1<<31-1 {
			us = 1<<31 - 1
		}
		s.latencies = append(s.latencies, int32(us))
	}
	s.iteration++
	if s.out != nil && s.interval > 0 && now.Sub(s.windowStart) >= s.interval {
		fmt.Fprintln(s.out, s.windowLocked(now).String())
		s.windowStart = now
		s.windowCount, s.windowBytes = 0, 0
		s.windowTotalLatency, s.windowMaxLatency = 0, 0
	}
}

// Window is one progress line's numbers.
type Window struct {
	Records       int64
	RecordsPerSec float64
	MBPerSec      float64
	AvgLatencyMs  float64
	MaxLatencyMs  float64
}

// String formats w exactly like Kafka 2.4's ProducerPerformance progress line:
// "50000 records sent, 9998.0 records/sec (9.76 MB/sec), 2.3 ms avg latency, 45.0 ms max latency."
func (w Window) String() string {
	return fmt.Sprintf("%d records sent, %.1f records/sec (%.2f MB/sec), %.1f ms avg latency, %.1f ms max latency.",
		w.Records, w.RecordsPerSec, w.MBPerSec, w.AvgLatencyMs, w.MaxLatencyMs)
}

func (s *Stats) windowLocked(now time.Time) Window {
	secs := seconds(now.Sub(s.windowStart))
	return Window{
		Records:       s.windowCount,
		RecordsPerSec: float64(s.windowCount) / secs,
		MBPerSec:      float64(s.windowBytes) / secs / (1024 * 1024),
		AvgLatencyMs:  avgMs(s.windowTotalLatency, s.windowCount),
		MaxLatencyMs:  ms(s.windowMaxLatency),
	}
}

// Summary is the final line's numbers.
type Summary struct {
	Records       int64
	Bytes         int64
	Elapsed       time.Duration
	RecordsPerSec float64
	MBPerSec      float64
	AvgLatencyMs  float64
	MaxLatencyMs  float64
	P50, P95      int64 // whole milliseconds
	P99, P999     int64
}

// String formats s exactly like Kafka 2.4's ProducerPerformance final line:
// "100000 records sent, 19996.000800 records/sec (19.53 MB/sec), 2.34 ms avg latency,
// 45.00 ms max latency, 2 ms 50th, 5 ms 95th, 9 ms 99th, 30 ms 99.9th."
func (s Summary) String() string {
	return fmt.Sprintf("%d records sent, %f records/sec (%.2f MB/sec), %.2f ms avg latency, %.2f ms max latency, %d ms 50th, %d ms 95th, %d ms 99th, %d ms 99.9th.",
		s.Records, s.RecordsPerSec, s.MBPerSec, s.AvgLatencyMs, s.MaxLatencyMs, s.P50, s.P95, s.P99, s.P999)
}

// Total returns the run's summary as of now.
func (s *Stats) Total(now time.Time) Summary {
	s.mu.Lock()
	defer s.mu.Unlock()
	elapsed := now.Sub(s.start)
	secs := seconds(elapsed)
	p := Percentiles(s.latencies, 0.5, 0.95, 0.99, 0.999)
	return Summary{
		Records:       s.count,
		Bytes:         s.bytes,
		Elapsed:       elapsed,
		RecordsPerSec: float64(s.count) / secs,
		MBPerSec:      float64(s.bytes) / secs / (1024 * 1024),
		AvgLatencyMs:  avgMs(s.totalLatency, s.count),
		MaxLatencyMs:  ms(s.maxLatency),
		P50:           int64(p[0]) / 1000,
		P95:           int64(p[1]) / 1000,
		P99:           int64(p[2]) / 1000,
		P999:          int64(p[3]) / 1000,
	}
}

// Percentiles sorts latencies in place and returns, for each fraction q, the element at
// index ⌊q·n⌋ (Kafka's ProducerPerformance.percentiles: nearest rank, rounding down, no
// interpolation); 0 for an empty slice.
func Percentiles(latencies []int32, qs ...float64) []int32 {
	out := make([]int32, len(qs))
	n := len(latencies)
	if n == 0 {
		return out
	}
	slices.Sort(latencies)
	for i, q := range qs {
		idx := int(q * float64(n))
		idx = max(0, min(idx, n-1))
		out[i] = latencies[idx]
	}
	return out
}

// seconds is d in seconds, never 0 (a division by it stays finite).
func seconds(d time.Duration) float64 {
	if d <= 0 {
		d = time.Microsecond
	}
	return d.Seconds()
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func avgMs(total time.Duration, n int64) float64 {
	if n == 0 {
		return 0
	}
	return ms(total) / float64(n)
}
