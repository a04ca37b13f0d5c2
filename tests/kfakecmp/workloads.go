package main

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// The timed workloads of one round: produce, consume and the latency run.

// produceAll produces n records as fast as the client goes and returns MiB/s; started (if not
// nil) runs when the clock starts and its result is awaited after the last acknowledgement.
func produceAll(ctx context.Context, seeds []string, topic string, n int, value []byte, started func() error, extra ...kgo.Opt) (float64, error) {
	cl, err := producer(seeds, extra...)
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	if err := warm(ctx, cl, topic, value); err != nil {
		return 0, fmt.Errorf("warm-up records: %w", err)
	}
	var wg sync.WaitGroup
	var firstErr atomic.Pointer[error]
	var profErr chan error
	if started != nil {
		profErr = make(chan error, 1)
		go func() { profErr <- started() }()
	}
	wg.Add(n)
	t0 := time.Now()
	for range n {
		cl.Produce(ctx, &kgo.Record{Topic: topic, Value: value}, func(_ *kgo.Record, err error) {
			if err != nil {
				firstErr.CompareAndSwap(nil, &err)
			}
			wg.Done()
		})
	}
	wg.Wait()
	elapsed := time.Since(t0)
	if e := firstErr.Load(); e != nil {
		return 0, *e
	}
	if profErr != nil {
		if err := <-profErr; err != nil {
			return 0, fmt.Errorf("profiles: %w", err)
		}
	}
	return float64(n) * recordSize / mib / elapsed.Seconds(), nil
}

// consumeAll reads n records from the start of topic (plus the warm-up records, one per
// partition) and returns MiB/s of the n records' values.
func consumeAll(ctx context.Context, seeds []string, topic string, n int) (float64, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	want := n + partitions // and the warm-up records
	got := 0
	t0 := time.Now()
	for got < want {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return 0, fmt.Errorf("%d of %d records after 10 min", got, want)
		}
		var ferr error
		fs.EachError(func(t string, p int32, err error) { ferr = fmt.Errorf("%s[%d]: %w", t, p, err) })
		if ferr != nil {
			return 0, ferr
		}
		got += fs.NumRecords()
	}
	return float64(n) * recordSize / mib / time.Since(t0).Seconds(), nil
}

// latency produces at a steady rate for the given time and returns the p50 and p99 of the
// time from Produce to the acknowledgement, in ms. The producer lingers for linger (0 by
// default: with franz-go's default of 10 ms since v1.20 every record would wait up to 10 ms in
// the client before its request is sent, which is the client's choice, not the broker's ack
// latency; issue 13's p99 of 7.7 ms could not have been measured with it).
//
// With timeline > 0 it also logs the p50, p99 and max of the records sent in each window of
// that length, to show whether a tail is spread over the phase or comes in bursts.
func latency(ctx context.Context, seeds []string, topic string, rateMiB, seconds float64, linger, timeline time.Duration, value []byte, started func() error) (p50, p99 float64, err error) {
	cl, err := producer(seeds, kgo.ProducerLinger(linger))
	if err != nil {
		return 0, 0, err
	}
	defer cl.Close()
	if err := warm(ctx, cl, topic, value); err != nil {
		return 0, 0, fmt.Errorf("warm-up records: %w", err)
	}
	perSec := rateMiB * mib / recordSize
	n := int(perSec * seconds)
	interval := time.Duration(float64(time.Second) / perSec)
	lat := make([]time.Duration, n)
	sentAt := make([]time.Duration, n) // since t0, for the timeline
	var wg sync.WaitGroup
	var firstErr atomic.Pointer[error]
	var profErr chan error
	if started != nil {
		profErr = make(chan error, 1)
		go func() { profErr <- started() }()
	}
	wg.Add(n)
	t0 := time.Now()
	for i := range n {
		if d := time.Until(t0.Add(time.Duration(i) * interval)); d > 0 {
			time.Sleep(d)
		}
		sent := time.Now()
		sentAt[i] = sent.Sub(t0)
		cl.Produce(ctx, &kgo.Record{Topic: topic, Value: value}, func(_ *kgo.Record, err error) {
			if err != nil {
				firstErr.CompareAndSwap(nil, &err)
			}
			lat[i] = time.Since(sent)
			wg.Done()
		})
	}
	wg.Wait()
	if e := firstErr.Load(); e != nil {
		return 0, 0, *e
	}
	if profErr != nil {
		if err := <-profErr; err != nil {
			return 0, 0, fmt.Errorf("profiles: %w", err)
		}
	}
	if timeline > 0 {
		logTimeline(lat, sentAt, t0, timeline)
	}
	slices.Sort(lat)
	pct := func(p float64) float64 { return float64(lat[int(p*float64(n-1))]) / float64(time.Millisecond) }
	return pct(0.50), pct(0.99), nil
}

// logTimeline logs, per window of the given length by send time, how many records were sent
// and the p50, p99 and max of their acknowledgement latency. Each line also gives the window's
// start as UTC wall-clock time, to line it up with `vmstat -t` or a trace of the same seconds.
func logTimeline(lat, sentAt []time.Duration, t0 time.Time, window time.Duration) {
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	for from := 0; from < len(lat); {
		w := sentAt[from] / window
		to := from
		for to < len(lat) && sentAt[to]/window == w {
			to++
		}
		win := slices.Clone(lat[from:to])
		slices.Sort(win)
		at := func(p float64) time.Duration { return win[int(p*float64(len(win)-1))] }
		off := time.Duration(w) * window
		logf("latency %6.1f s: %6d records, p50 %6.2f ms, p99 %7.2f ms, max %7.2f ms (from %s UTC)",
			off.Seconds(), len(win), ms(at(0.5)), ms(at(0.99)), ms(win[len(win)-1]),
			t0.Add(off).UTC().Format("15:04:05.000"))
		from = to
	}
}
