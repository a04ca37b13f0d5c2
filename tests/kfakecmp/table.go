package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
)

// median of the samples (mean of the middle two for an even count).
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func samples(xs []float64) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = fmt.Sprintf("%.0f", x)
		if x < 100 {
			parts[i] = fmt.Sprintf("%.1f", x)
		}
	}
	return strings.Join(parts, ", ")
}

// tableCmd prints issue 13's table: medians over the rounds per target, the ratio
// isrbroker ÷ kfake, and every sample.
func tableCmd(path string, w io.Writer) error {
	rs, err := readResults(path)
	if err != nil {
		return err
	}
	return writeTable(rs, w)
}

// The reference targets, in the table's column order: kfake as it comes, and kfake with its
// segment files on disk (optional: a run without kfake-disk results has no such columns).
var references = []string{"kfake", "kfake-disk"}

func writeTable(rs []Result, w io.Writer) error {
	by := map[string][]Result{}
	for _, r := range rs {
		by[r.Target] = append(by[r.Target], r)
	}
	if len(by["isrbroker"]) == 0 {
		return fmt.Errorf("no isrbroker results (%d results in all)", len(rs))
	}
	refs := []string{}
	for _, ref := range references {
		if len(by[ref]) > 0 {
			refs = append(refs, ref)
		}
	}
	col := func(target string, f func(Result) float64) []float64 {
		var xs []float64
		for _, r := range by[target] {
			xs = append(xs, f(r))
		}
		return xs
	}
	rows := []struct {
		name, unit string
		f          func(Result) float64
	}{
		{"produce RF=1 acks=1", "MiB/s", func(r Result) float64 { return r.ProduceRF1 }},
		{"consume (direct, from the start)", "MiB/s", func(r Result) float64 { return r.Consume }},
		{"produce RF=3 acks=all, min ISR 2", "MiB/s", func(r Result) float64 { return r.ProduceRF3 }},
		{fmt.Sprintf("ack latency p50 at %.0f MiB/s, RF=3 acks=all", rs[0].LatencyRate), "ms", func(r Result) float64 { return r.LatencyP50ms }},
		{fmt.Sprintf("ack latency p99 at %.0f MiB/s, RF=3 acks=all", rs[0].LatencyRate), "ms", func(r Result) float64 { return r.LatencyP99ms }},
	}
	fmt.Fprintf(w, "%d rounds of %d records of 1 KiB per phase, latency phase with linger %gms; medians, then every round's sample (%s)\n\n",
		len(by["isrbroker"]), rs[0].Records, rs[0].LatencyLingerMs, strings.Join(append([]string{"isrbroker"}, refs...), " | "))
	head, rule := "| path | isrbroker |", "|---|---|"
	for _, ref := range refs {
		head += " " + ref + " |"
		rule += "---|"
	}
	for _, ref := range refs {
		head += " ratio to " + ref + " |"
		rule += "---|"
	}
	head += " samples isrbroker |"
	rule += "---|"
	for _, ref := range refs {
		head += " samples " + ref + " |"
		rule += "---|"
	}
	fmt.Fprintln(w, head)
	fmt.Fprintln(w, rule)
	for _, row := range rows {
		a := col("isrbroker", row.f)
		if slices.Max(a) == 0 {
			continue // a phase left out (--phases)
		}
		ma := median(a)
		line := fmt.Sprintf("| %s | %s %s |", row.name, fmtNum(ma), row.unit)
		for _, ref := range refs {
			line += fmt.Sprintf(" %s %s |", fmtNum(median(col(ref, row.f))), row.unit)
		}
		for _, ref := range refs {
			ratio := "–"
			if mb := median(col(ref, row.f)); mb > 0 {
				ratio = fmt.Sprintf("%.2f×", ma/mb)
			}
			line += " " + ratio + " |"
		}
		line += " " + samples(a) + " |"
		for _, ref := range refs {
			line += " " + samples(col(ref, row.f)) + " |"
		}
		fmt.Fprintln(w, line)
	}
	return nil
}

func fmtNum(x float64) string {
	if x < 100 {
		return fmt.Sprintf("%.1f", x)
	}
	return fmt.Sprintf("%.0f", x)
}
