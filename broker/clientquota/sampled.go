package clientquota

// sampledStat is Kafka's SampledStat (org.apache.kafka.common.metrics.stats) with the
// behaviour of its Rate over a SampledTotal and of its Avg: numWindows samples of window
// milliseconds each, the current one advanced once it is window old, samples older than
// numWindows windows reset before every measurement. Not safe for concurrent use.
type sampledStat struct {
	window     int64 // ms (quota.window.size.seconds)
	numWindows int   // quota.window.num
	samples    []sample
	current    int
}

type sample struct {
	start int64 // ms, Kafka's lastWindowMs
	value float64
	count int64
}

func (s *sample) reset(now int64) { *s = sample{start: now} }

// record adds v at now (SampledStat.record: the current sample, advanced when complete).
func (s *sampledStat) record(v float64, now int64) {
	if len(s.samples) == 0 {
		s.samples = append(s.samples, sample{start: now})
	}
	cur := &s.samples[s.current]
	if now-cur.start >= s.window {
		s.current = (s.current + 1) % s.numWindows
		if s.current >= len(s.samples) {
			s.samples = append(s.samples, sample{start: now})
		} else {
			s.samples[s.current].reset(now)
		}
		cur = &s.samples[s.current]
	}
	cur.value += v
	cur.count++
}

// purge resets the samples older than numWindows windows (purgeObsoleteSamples).
func (s *sampledStat) purge(now int64) {
	expire := int64(s.numWindows) * s.window
	for i := range s.samples {
		if now-s.samples[i].start >= expire {
			s.samples[i].reset(now)
		}
	}
}

// total is the sum of the retained samples' values (SampledTotal.combine).
func (s *sampledStat) total(now int64) float64 {
	s.purge(now)
	t := 0.0
	for _, x := range s.samples {
		t += x.value
	}
	return t
}

// windowSize is Rate.windowSize: the time from the oldest retained sample to now, raised to
// numWindows-1 full windows when less has been retained (ms).
func (s *sampledStat) windowSize(now int64) int64 {
	s.purge(now)
	if len(s.samples) == 0 {
		s.samples = append(s.samples, sample{start: now})
	}
	oldest := s.samples[0].start
	for _, x := range s.samples[1:] {
		if x.start < oldest {
			oldest = x.start
		}
	}
	elapsed := now - oldest
	full := elapsed / s.window
	if min := int64(s.numWindows - 1); full < min {
		elapsed += (min - full) * s.window
	}
	return elapsed
}

// rate is Rate.measure in units per second.
func (s *sampledStat) rate(now int64) float64 {
	v := s.total(now)
	return v / (float64(s.windowSize(now)) / 1000)
}

// avg is Avg.combine: the retained values' total over their count (0 without any).
func (s *sampledStat) avg(now int64) float64 {
	s.purge(now)
	t, n := 0.0, int64(0)
	for _, x := range s.samples {
		t += x.value
		n += x.count
	}
	if n == 0 {
		return 0
	}
	return t / float64(n)
}
