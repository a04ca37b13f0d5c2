package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/procfs"
)

// meminfoFS is a procfs.FS over a directory holding text as its meminfo.
func meminfoFS(t *testing.T, text string) procfs.FS {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "meminfo"), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	fs, err := procfs.NewFS(dir)
	if err != nil {
		t.Fatal(err)
	}
	return fs
}

func TestDirtyBytesAddsDirtyAndWriteback(t *testing.T) {
	ctx := context.Background()
	fs := meminfoFS(t, "MemTotal:       24683916 kB\nDirty:            131072 kB\nWriteback:         65536 kB\nWritebackTmp:          7 kB\n")
	_, got, err := settleOn(ctx, fs, 1<<62, time.Second)
	if err != nil || got != (131072+65536)<<10 {
		t.Fatalf("dirty + writeback = %d, %v; want %d", got, err, (131072+65536)<<10)
	}
	if _, _, err := settleOn(ctx, meminfoFS(t, "MemTotal: 1 kB\nDirty: 5 kB\n"), 1<<62, time.Second); err == nil {
		t.Fatal("a meminfo without Writeback was accepted")
	}
	if _, _, err := settleOn(ctx, meminfoFS(t, "Dirty: x kB\nWriteback: 0 kB\n"), 1<<62, time.Second); err == nil {
		t.Fatal("a malformed Dirty was accepted")
	}
}

// With a bound no machine is under, settle gives up at its deadline; with one every machine is
// under, it returns at once.
func TestSettleStopsAtTheBoundOrTheDeadline(t *testing.T) {
	ctx := context.Background()
	waited, _, err := settle(ctx, -1, 300*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if waited < 300*time.Millisecond || waited > 5*time.Second {
		t.Fatalf("waited %v for an impossible bound, want the 300ms deadline", waited)
	}
	if waited, _, err = settle(ctx, 1<<62, time.Minute); err != nil || waited > time.Second {
		t.Fatalf("waited %v (%v) for a bound every machine is under", waited, err)
	}
}
