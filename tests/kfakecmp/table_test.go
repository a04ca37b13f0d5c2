package main

import (
	"bytes"
	"slices"
	"strings"
	"testing"
)

func TestMedian(t *testing.T) {
	for _, c := range []struct {
		in   []float64
		want float64
	}{{nil, 0}, {[]float64{3}, 3}, {[]float64{5, 1, 3}, 3}, {[]float64{4, 1, 3, 2}, 2.5}} {
		if got := median(c.in); got != c.want {
			t.Errorf("median(%v) = %v, want %v", c.in, got, c.want)
		}
	}
}

func TestWriteTable(t *testing.T) {
	rs := []Result{
		{Target: "isrbroker", Round: 1, Records: 10, ProduceRF1: 400, Consume: 1000, ProduceRF3: 150, LatencyP50ms: 4, LatencyP99ms: 8, LatencyRate: 20},
		{Target: "kfake", Round: 1, Records: 10, ProduceRF1: 500, Consume: 800, ProduceRF3: 600, LatencyP50ms: 2, LatencyP99ms: 50, LatencyRate: 20},
		{Target: "isrbroker", Round: 2, Records: 10, ProduceRF1: 600, Consume: 1000, ProduceRF3: 250, LatencyP50ms: 4, LatencyP99ms: 8, LatencyRate: 20},
		{Target: "kfake", Round: 2, Records: 10, ProduceRF1: 500, Consume: 800, ProduceRF3: 400, LatencyP50ms: 2, LatencyP99ms: 50, LatencyRate: 20},
	}
	var b bytes.Buffer
	if err := writeTable(rs, &b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"| produce RF=1 acks=1 | 500 MiB/s | 500 MiB/s | 1.00× | 400, 600 | 500, 500 |",
		"| consume (direct, from the start) | 1000 MiB/s | 800 MiB/s | 1.25× |",
		"| produce RF=3 acks=all, min ISR 2 | 200 MiB/s | 500 MiB/s | 0.40× |",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
	if strings.Contains(b.String(), "kfake-disk") {
		t.Errorf("a run without kfake-disk results has kfake-disk columns:\n%s", b.String())
	}

	// With kfake-disk results: a column and a ratio more.
	disk := []Result{
		{Target: "kfake-disk", Round: 1, Records: 10, ProduceRF1: 250, Consume: 400, ProduceRF3: 300, LatencyP50ms: 3, LatencyP99ms: 12, LatencyRate: 20},
		{Target: "kfake-disk", Round: 2, Records: 10, ProduceRF1: 250, Consume: 400, ProduceRF3: 500, LatencyP50ms: 3, LatencyP99ms: 12, LatencyRate: 20},
	}
	b.Reset()
	if err := writeTable(append(slices.Clone(rs), disk...), &b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"| path | isrbroker | kfake | kfake-disk | ratio to kfake | ratio to kfake-disk | samples isrbroker | samples kfake | samples kfake-disk |",
		"| produce RF=1 acks=1 | 500 MiB/s | 500 MiB/s | 250 MiB/s | 1.00× | 2.00× | 400, 600 | 500, 500 | 250, 250 |",
		"| produce RF=3 acks=all, min ISR 2 | 200 MiB/s | 500 MiB/s | 400 MiB/s | 0.40× | 0.50× |",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
	// isrbroker alone (--no-kfake) and the latency phase alone (--phases latency): no reference
	// columns, and no rows for the phases that did not run.
	lat := []Result{
		{Target: "isrbroker", Round: 1, Records: 10, LatencyP50ms: 3, LatencyP99ms: 9, LatencyRate: 20},
		{Target: "isrbroker", Round: 2, Records: 10, LatencyP50ms: 5, LatencyP99ms: 7, LatencyRate: 20},
	}
	b.Reset()
	if err := writeTable(lat, &b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"| path | isrbroker | samples isrbroker |",
		"| ack latency p99 at 20 MiB/s, RF=3 acks=all | 8.0 ms | 9.0, 7.0 |",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
	if strings.Contains(b.String(), "produce RF=1") || strings.Contains(b.String(), "kfake") {
		t.Errorf("a latency-only isrbroker run's table has rows or columns it did not measure:\n%s", b.String())
	}
	if err := writeTable(rs[1:2], &b); err == nil {
		t.Error("a table without isrbroker results did not fail")
	}
}
