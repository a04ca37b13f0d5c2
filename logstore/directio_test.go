package logstore

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/isrbroker/isrbroker/logstore/record"
)

// The gate turns direct appends off only when appends keep sleeping in the kernel: a slow
// append that did not sleep (preempted) or one that slept briefly is no strike; strikes
// spread wider than the window are the journal's commits and leave it open; the
// directAppendStrikes-th within the window closes it for the cooldown, after which appends
// are direct again. Whichever way an append goes, its bytes land where they should.
func TestDirectWriteGateClosesOnlyWhenAppendsKeepSleeping(t *testing.T) {
	clock := newFakeClock()
	g := newDirectWriteGate(nil, clock.Now)
	var direct int
	var took time.Duration
	var sleeps int64
	var sleepsInCall int64
	g.sleeps = func() int64 { return sleeps }
	g.pwrite = func(f *os.File, b []byte, off int64) (int, error) {
		direct++
		clock.Advance(took)
		sleeps += sleepsInCall
		return pwriteDirect(f, b, off)
	}
	f, err := os.Create(filepath.Join(t.TempDir(), "seg.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var want []byte
	write := func(b []byte) {
		t.Helper()
		if n, err := g.writeAt(osFile{f}, b, int64(len(want))); err != nil || n != len(b) {
			t.Fatalf("writeAt: %d, %v", n, err)
		}
		want = append(want, b...)
	}
	appendAs := func(d time.Duration, slept int64) {
		took, sleepsInCall = d, slept
		write([]byte("batch"))
	}
	expectDirect := func(n int, what string) {
		t.Helper()
		if direct != n {
			t.Fatalf("%s: %d direct appends, want %d", what, direct, n)
		}
	}

	appendAs(0, 0)
	expectDirect(1, "a quick append")
	appendAs(50*time.Millisecond, 0) // preempted, not asleep
	appendAs(50*time.Millisecond, 0)
	appendAs(50*time.Millisecond, 0)
	appendAs(time.Millisecond, 1) // slept, briefly
	appendAs(time.Millisecond, 1)
	appendAs(time.Millisecond, 1)
	expectDirect(7, "slow appends that did not sleep and short sleeps")

	// Sleeping appends spread wider than the window: the journal's commits.
	for range 5 {
		appendAs(20*time.Millisecond, 1)
		clock.Advance(directAppendWindow)
	}
	expectDirect(12, "sleeping appends a window apart")

	// directAppendStrikes of them within the window: throttled.
	for range directAppendStrikes {
		appendAs(20*time.Millisecond, 1)
	}
	expectDirect(12+directAppendStrikes, "the strikes themselves")
	appendAs(0, 0)
	clock.Advance(directAppendCooldown - time.Second)
	appendAs(0, 0)
	expectDirect(12+directAppendStrikes, "appends during the cooldown")
	clock.Advance(2 * time.Second)
	appendAs(0, 0)
	expectDirect(13+directAppendStrikes, "the first append after the cooldown")

	// Large appends never go direct.
	write(bytes.Repeat([]byte{7}, directAppendMax+1))
	expectDirect(13+directAppendStrikes, "an append above directAppendMax")

	got, err := os.ReadFile(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("file holds %d bytes that differ from the %d appended", len(got), len(want))
	}
}

// The direct pread and pwrite behave as os.File's ReadAt and WriteAt: whole buffers at the
// offset, io.EOF past the end, an error naming the file on a closed one.
func TestDirectReadWriteAsOsFile(t *testing.T) {
	if !directIO {
		t.Skip("no direct system calls on this platform")
	}
	f, err := os.Create(filepath.Join(t.TempDir(), "seg.log"))
	if err != nil {
		t.Fatal(err)
	}
	if n, err := pwriteDirect(f, []byte("hello, world"), 3); n != 12 || err != nil {
		t.Fatalf("pwriteDirect: %d, %v", n, err)
	}
	b := make([]byte, 5)
	if n, err := preadDirect(f, b, 10); n != 5 || err != nil || string(b) != "world" {
		t.Fatalf("preadDirect at 10: %d %q %v", n, b[:n], err)
	}
	if n, err := preadDirect(f, b, 12); n != 3 || !errors.Is(err, io.EOF) || string(b[:n]) != "rld" {
		t.Fatalf("preadDirect across the end: %d, %v", n, err)
	}
	if n, err := readAtResident(osFile{f}, b, 0, true); n != 5 || err != nil || string(b) != "\x00\x00\x00he" {
		t.Fatalf("readAtResident: %d %q %v", n, b[:n], err)
	}
	f.Close()
	if _, err := pwriteDirect(f, []byte("x"), 0); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("pwriteDirect on a closed file: %v, want os.ErrClosed", err)
	}
	if _, err := preadDirect(f, b, 0); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("preadDirect on a closed file: %v, want os.ErrClosed", err)
	}
}

// A region is resident exactly when it lies in the active segment from the first byte whose
// writeback the log has not started: data appended since the last writeback start, never a
// rolled segment's (flushed when it rolled) nor data already handed to writeback.
func TestReadRegionsMarksResidentData(t *testing.T) {
	clock := newFakeClock()
	cfg := testConfig()
	cfg.SegmentBytes = 256 << 10
	l := newTestLog(t, cfg, clock)
	l.writeback = &writebackQueue{start: func(*os.File, int64, int64) {}}
	batch := testBatch{valueSize: 10_000}.build()
	appendBatch := func() int64 { return mustAppend(t, l, append([]byte(nil), batch...), 0).FirstOffset }
	regionAt := func(off int64) record.FileRegion {
		t.Helper()
		fr, err := l.ReadRegions(off, 1<<20, l.LogEndOffset(), true)
		if err != nil || len(fr.Regions) == 0 {
			t.Fatalf("ReadRegions(%d): %v, %d regions", off, err, len(fr.Regions))
		}
		return fr.Regions[0]
	}

	first := appendBatch() // sets the writeback mark
	if r := regionAt(first); !r.Resident {
		t.Fatalf("fresh data at offset %d not resident: %+v", first, r)
	}
	clock.Advance(writebackLag)
	second := appendBatch() // starts the writeback of the first batch's whole pages
	seg := l.segs.active()
	if seg.writebackFrom == 0 {
		t.Fatal("no writeback started")
	}
	if r := regionAt(first); r.Resident {
		t.Fatalf("data handed to writeback (from 0 to %d) marked resident: %+v", seg.writebackFrom, r)
	}
	if r := regionAt(second); !r.Resident || r.Pos < seg.writebackFrom {
		t.Fatalf("data after the writeback start %d: %+v, want resident", seg.writebackFrom, r)
	}

	for len(l.segs) < 2 {
		appendBatch()
	}
	if r := regionAt(second); r.Resident {
		t.Fatalf("a rolled segment's data marked resident: %+v", r)
	}
	last := appendBatch()
	if r := regionAt(last); !r.Resident {
		t.Fatalf("the new active segment's fresh data not resident: %+v", r)
	}
}
