package logstore

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// TestDirSyncerSharesFsyncs: concurrent callers all return without error once an fsync that
// started after their call finished; they need fewer fsyncs than callers, and a missing
// directory's error reaches the caller.
func TestDirSyncerSharesFsyncs(t *testing.T) {
	d := newDirSyncer(osFS{}, t.TempDir())
	var wg sync.WaitGroup
	for i := 0; i < 64; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := d.sync(); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if d.done == 0 || d.done != d.started || d.running {
		t.Fatalf("started %d done %d running %v", d.started, d.done, d.running)
	}
	t.Logf("64 callers, %d fsyncs", d.done)
	gone := filepath.Join(t.TempDir(), "gone")
	if err := os.Mkdir(gone, 0o755); err != nil {
		t.Fatal(err)
	}
	g := newDirSyncer(osFS{}, gone)
	if err := os.Remove(gone); err != nil {
		t.Fatal(err)
	}
	if err := g.sync(); err == nil {
		t.Fatal("fsync of a missing directory succeeded")
	}
}
