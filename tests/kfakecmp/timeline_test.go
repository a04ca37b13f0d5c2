package main

import (
	"io"
	"os"
	"strings"
	"testing"
	"time"
)

// The timeline gives each window's records, percentiles and its start in UTC wall-clock time
// (the phase's start plus the window's offset), so it lines up with vmstat -t and traces.
func TestTimelineWindowsCarryTheirUTCStart(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	saved := os.Stderr
	os.Stderr = w
	t0 := time.Date(2026, 12, 2, 17, 3, 20, 250e6, time.FixedZone("CET", 3600))
	ms := time.Millisecond
	// two records in the first second, one in the third
	logTimeline([]time.Duration{2 * ms, 4 * ms, 9 * ms}, []time.Duration{100 * ms, 900 * ms, 2100 * ms}, t0, time.Second)
	os.Stderr = saved
	w.Close()
	out, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d lines, want 2 (one per window that has records):\n%s", len(lines), out)
	}
	for i, want := range []struct{ at, count, from string }{
		{"latency    0.0 s:", "     2 records", "(from 16:03:20.250 UTC)"},
		{"latency    2.0 s:", "     1 records", "(from 16:03:22.250 UTC)"},
	} {
		for _, part := range []string{want.at, want.count, want.from} {
			if !strings.Contains(lines[i], part) {
				t.Fatalf("line %d %q lacks %q", i, lines[i], part)
			}
		}
	}
	if !strings.Contains(lines[0], "max    4.00 ms") {
		t.Fatalf("line 0 %q: want max 4.00 ms", lines[0])
	}
}
