package main

import (
	"context"
	"errors"
	"os"
	"time"

	"github.com/prometheus/procfs"
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
	fs, err := procfs.NewDefaultFS()
	if err != nil {
		return 0, 0, nil
	}
	return settleOn(ctx, fs, below, max)
}

func settleOn(ctx context.Context, fs procfs.FS, below int64, max time.Duration) (time.Duration, int64, error) {
	start := time.Now()
	deadline := start.Add(max)
	for {
		mi, err := fs.Meminfo()
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return 0, 0, nil
			}
			return 0, 0, err
		}
		pending, err := dirtyBytes(mi)
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

// dirtyBytes is Dirty + Writeback of a parsed /proc/meminfo, in bytes.
func dirtyBytes(mi procfs.Meminfo) (int64, error) {
	if mi.DirtyBytes == nil || mi.WritebackBytes == nil {
		return 0, errors.New("/proc/meminfo: Dirty or Writeback missing")
	}
	return int64(*mi.DirtyBytes + *mi.WritebackBytes), nil
}
