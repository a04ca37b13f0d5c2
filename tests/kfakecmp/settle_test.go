package main

import (
	"context"
	"testing"
	"time"
)

func TestDirtyBytesAddsDirtyAndWriteback(t *testing.T) {
	meminfo := []byte("MemTotal:       24683916 kB\nDirty:            131072 kB\nWriteback:         65536 kB\nWritebackTmp:          7 kB\n")
	got, err := dirtyBytes(meminfo)
	if err != nil || got != (131072+65536)<<10 {
		t.Fatalf("dirtyBytes = %d, %v; want %d", got, err, (131072+65536)<<10)
	}
	if _, err := dirtyBytes([]byte("MemTotal: 1 kB\nDirty: 5 kB\n")); err == nil {
		t.Fatal("a meminfo without Writeback was accepted")
	}
	if _, err := dirtyBytes([]byte("Dirty: x kB\nWriteback: 0 kB\n")); err == nil {
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
