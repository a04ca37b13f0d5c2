package broker

import (
	"runtime"
	"sync"
	"syscall"
	"time"

	"github.com/rcrowley/go-metrics"
)

// MetricRequestHandlerIdle is Kafka's request handler pool idle ratio. Kafka measures the
// time its fixed pool of request handler threads waits for a request; 0 means every handler
// is busy and requests queue. A Go broker has no handler pool: each request runs on its own
// goroutine and what queues requests is the CPUs the Go scheduler may use (GOMAXPROCS). So
// isrbroker reports the idle share of those: 1 − (process CPU time, user + system) ÷
// (GOMAXPROCS × wall time), between two readings at least a second apart (earlier readings
// repeat the last value), clamped to [0, 1] — a ratio like Kafka's, though named Percent
// (docs/metrics.md).
const MetricRequestHandlerIdle = "kafka.server:type=KafkaRequestHandlerPool,name=RequestHandlerAvgIdlePercent"

// idleSampler computes the ratio from getrusage readings.
type idleSampler struct {
	mu       sync.Mutex
	cpu      func() time.Duration // process CPU time so far
	now      func() time.Time
	procs    func() int
	lastWall time.Time
	lastCPU  time.Duration
	value    float64
}

const idleMinWindow = time.Second

func newIdleSampler(cpu func() time.Duration, now func() time.Time, procs func() int) *idleSampler {
	return &idleSampler{cpu: cpu, now: now, procs: procs, lastWall: now(), lastCPU: cpu(), value: 1}
}

// Value is the idle ratio over the window since the previous reading.
func (s *idleSampler) Value() float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	wall := s.now()
	elapsed := wall.Sub(s.lastWall)
	if elapsed < idleMinWindow {
		return s.value
	}
	cpu := s.cpu()
	busy := float64(cpu-s.lastCPU) / (float64(elapsed) * float64(max(s.procs(), 1)))
	s.value = min(max(1-busy, 0), 1)
	s.lastWall, s.lastCPU = wall, cpu
	return s.value
}

func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// registerIdleGauge registers the idle ratio in reg (once per registry).
func registerIdleGauge(reg metrics.Registry) {
	s := newIdleSampler(processCPU, time.Now, func() int { return runtime.GOMAXPROCS(0) })
	_ = reg.Register(MetricRequestHandlerIdle, metrics.NewFunctionalGaugeFloat64(s.Value))
}
