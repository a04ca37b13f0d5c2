package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"time"
)

// The latency phase measures acknowledgements at a *steady* 20 MiB/s. Run right after the
// throughput phases, it would instead measure a machine still writing back their gigabytes:
// RF=3 acks=all leaves three copies of every record in the page cache, and on this kind of
// machine the writeback of 3 GB takes tens of seconds, with the host's disk work billed to the
// guest's CPUs (docs/performance.md, "Fifth look"). So before the latency phase the run waits
// until the kernel's dirty and under-writeback pages are below a bound (or a deadline passes),
// the same for every target, and says how long it waited. --phases latency alone has nothing to
// wait for.

// settleDeadline bounds the wait; a machine that never gets below the bound (another program
// writing) still gets its latency phase, after this.
const settleDeadline = 90 * time.Second

// settle waits until Dirty + Writeback in /proc/meminfo is at most below bytes, polling every
// 100 ms, for at most max. It returns how long it waited and the last figure; where
// /proc/meminfo cannot be read (not Linux) it returns at once.
func settle(ctx context.Context, below int64, max time.Duration) (time.Duration, int64, error) {
	start := time.Now()
	deadline := start.Add(max)
	for {
		b, err := os.ReadFile("/proc/meminfo")
		if err != nil {
			return 0, 0, nil
		}
		pending, err := dirtyBytes(b)
		if err != nil {
			return 0, 0, err
		}
		if pending <= below || !time.Now().Before(deadline) {
			return time.Since(start), pending, nil
		}
		select {
		case <-ctx.Done():
			return time.Since(start), pending, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// dirtyBytes is Dirty + Writeback of a /proc/meminfo text, in bytes.
func dirtyBytes(meminfo []byte) (int64, error) {
	var total int64
	found := 0
	sc := bufio.NewScanner(bytes.NewReader(meminfo))
	for sc.Scan() {
		f := bytes.Fields(sc.Bytes())
		if len(f) < 2 || (string(f[0]) != "Dirty:" && string(f[0]) != "Writeback:") {
			continue
		}
		kb, err := strconv.ParseInt(string(f[1]), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/meminfo: %s %q: %w", f[0], f[1], err)
		}
		total += kb << 10
		found++
	}
	if found != 2 {
		return 0, fmt.Errorf("/proc/meminfo: Dirty or Writeback missing")
	}
	return total, nil
}
