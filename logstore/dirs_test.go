package logstore

import (
	"os"
	"path/filepath"
	"testing"
)

// TestLogsByDirAndSize: every configured dir is listed by absolute path, each log in the dir
// that holds it, and Size is the bytes of every segment file (a roll must not lose the
// closed segments' bytes).
func TestLogsByDirAndSize(t *testing.T) {
	dirs := []string{t.TempDir(), t.TempDir(), t.TempDir()}
	cfg := testConfig()
	cfg.SegmentBytes = 1000
	m, _ := openTestManager(t, dirs, cfg, nil)
	defer m.Close()
	tp := TopicPartition{Topic: "sized", Partition: 0}
	l, err := m.GetOrCreate(tp, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if l.Size() != 0 {
		t.Fatalf("empty log size %d", l.Size())
	}
	for j := 0; j < 20; j++ {
		mustAppend(t, l, testBatch{records: 2, valueSize: 100, baseTs: int64(j)}.build(), 0)
	}
	var onDisk int64
	files, _ := filepath.Glob(filepath.Join(l.Dir(), "*.log"))
	if len(files) < 2 {
		t.Fatalf("expected a roll, got %d segments", len(files))
	}
	for _, f := range files {
		fi, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		onDisk += fi.Size()
	}
	if l.Size() != onDisk {
		t.Fatalf("Size %d, segment files %d bytes", l.Size(), onDisk)
	}
	byDir := m.LogsByDir()
	if len(byDir) != len(dirs) {
		t.Fatalf("%d dirs listed, want %d", len(byDir), len(dirs))
	}
	found := 0
	for d, logs := range byDir {
		if !filepath.IsAbs(d) {
			t.Fatalf("dir %q not absolute", d)
		}
		if got := logs[tp]; got != nil {
			found++
			if filepath.Dir(got.Dir()) != d {
				t.Fatalf("log %s listed under %s", got.Dir(), d)
			}
		}
	}
	if found != 1 {
		t.Fatalf("log listed in %d dirs", found)
	}
}
