package logstore

import (
	"errors"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
)

// openTwoDirs opens a manager over two log dirs with one log in each (the dir with the fewest
// logs gets the next one): a in dirs[0], b in dirs[1].
func openTwoDirs(t *testing.T, cfg Config) (m *Manager, dirs []string, a, b *Log) {
	t.Helper()
	dirs = []string{filepath.Join(t.TempDir(), "d0"), filepath.Join(t.TempDir(), "d1")}
	lg, _ := testLogger()
	m, err := Open(dirs, 1, cfg, lg)
	if err != nil {
		t.Fatal(err)
	}
	a, err = m.GetOrCreate(TopicPartition{Topic: "a", Partition: 0}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	b, err = m.GetOrCreate(TopicPartition{Topic: "b", Partition: 0}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(a.Dir()) != dirs[0] || filepath.Dir(b.Dir()) != dirs[1] {
		t.Fatalf("logs in %s and %s, want one in each of %v", a.Dir(), b.Dir(), dirs)
	}
	return m, dirs, a, b
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// A failed fsync takes the log's dir offline (KIP-112, docs/kafka-facts.md §12): the append
// answers a storage error, every later append, read and flush of every log in that dir fails
// without touching a file (no write, no second fsync), the dir is reported once, new logs go to
// the online dir, the logs of the online dir keep working, and the offline dir gets no
// checkpoint and no clean shutdown marker at Close (so the next start recovers it).
func TestFailedFsyncTakesLogDirOffline(t *testing.T) {
	cfg := testConfig()
	cfg.FlushIntervalMessages = 1 // every append fsyncs
	m, dirs, a, b := openTwoDirs(t, cfg)
	a2, err := m.GetOrCreate(TopicPartition{Topic: "a2", Partition: 0}, cfg) // fewest: dirs[0] again
	if err != nil || filepath.Dir(a2.Dir()) != dirs[0] {
		t.Fatalf("a2 in %v (%v), want %s", a2, err, dirs[0])
	}
	mustAppend(t, a, testBatch{records: 2, valueSize: 10}.build(), 0)
	if err := m.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	rpBefore, err := os.ReadFile(filepath.Join(dirs[0], recoveryPointCheckpointFile))
	if err != nil {
		t.Fatal(err)
	}

	var syncs atomic.Int32
	m.health[dirs[0]].syncFile = func(File) error { syncs.Add(1); return syscall.EIO }
	_, err = a.AppendAsLeader(testBatch{records: 1, valueSize: 10}.build(), 0)
	if !errors.Is(err, ErrLogDirOffline) || !errors.Is(err, syscall.EIO) {
		t.Fatalf("append with a failing fsync: %v, want ErrLogDirOffline wrapping EIO", err)
	}
	select {
	case d := <-m.LogDirFailures():
		if d != dirs[0] {
			t.Fatalf("failed dir %s, want %s", d, dirs[0])
		}
	default:
		t.Fatal("the failed dir was not reported on LogDirFailures")
	}

	segA := filepath.Join(a.Dir(), segmentName(0)+logSuffix)
	segA2 := filepath.Join(a2.Dir(), segmentName(0)+logSuffix)
	sizeA, sizeA2 := fileSize(t, segA), fileSize(t, segA2)
	for _, l := range []*Log{a, a2} {
		if !l.Offline() {
			t.Fatalf("%s not offline", l.Dir())
		}
		if _, err := l.AppendAsLeader(testBatch{records: 1, valueSize: 10}.build(), 0); !errors.Is(err, ErrLogDirOffline) {
			t.Fatalf("append to %s after the failure: %v, want ErrLogDirOffline", l.Dir(), err)
		}
		if _, err := l.AppendAsFollower(testBatch{records: 1, base: l.LogEndOffset()}.build()); !errors.Is(err, ErrLogDirOffline) {
			t.Fatalf("follower append to %s: %v, want ErrLogDirOffline", l.Dir(), err)
		}
		if _, err := l.Read(0, 1<<20, l.LogEndOffset(), true); !errors.Is(err, ErrLogDirOffline) {
			t.Fatalf("read of %s: %v, want ErrLogDirOffline", l.Dir(), err)
		}
		if err := l.Flush(); !errors.Is(err, ErrLogDirOffline) {
			t.Fatalf("flush of %s: %v, want ErrLogDirOffline", l.Dir(), err)
		}
		if err := l.TruncateTo(0); !errors.Is(err, ErrLogDirOffline) {
			t.Fatalf("truncation of %s: %v, want ErrLogDirOffline", l.Dir(), err)
		}
	}
	if got := fileSize(t, segA); got != sizeA {
		t.Fatalf("segment of a changed after the failure: %d -> %d bytes", sizeA, got)
	}
	if got := fileSize(t, segA2); got != sizeA2 {
		t.Fatalf("segment of a2 changed after the failure: %d -> %d bytes", sizeA2, got)
	}
	if n := syncs.Load(); n != 1 {
		t.Fatalf("%d fsyncs on the failed dir, want exactly the one that failed", n)
	}
	if got := m.OfflineLogDirs(); len(got) != 1 || got[0] != absDir(dirs[0]) {
		t.Fatalf("OfflineLogDirs = %v, want [%s]", got, dirs[0])
	}
	if m.LiveLogDirs() != 1 {
		t.Fatalf("LiveLogDirs = %d, want 1", m.LiveLogDirs())
	}

	// The healthy dir keeps serving; new logs go there.
	info := mustAppend(t, b, testBatch{records: 3, valueSize: 10}.build(), 0)
	if data, err := b.Read(info.FirstOffset, 1<<20, b.LogEndOffset(), true); err != nil || len(data) == 0 {
		t.Fatalf("read of the healthy log: %d bytes, %v", len(data), err)
	}
	c, err := m.GetOrCreate(TopicPartition{Topic: "c", Partition: 0}, cfg)
	if err != nil || filepath.Dir(c.Dir()) != dirs[1] {
		t.Fatalf("new log in %v (%v), want the online dir %s", c, err, dirs[1])
	}

	if err := m.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	if fileExists(osFS{}, filepath.Join(dirs[0], cleanShutdownFile)) {
		t.Fatal("clean shutdown marker written in the offline dir")
	}
	if !fileExists(osFS{}, filepath.Join(dirs[1], cleanShutdownFile)) {
		t.Fatal("no clean shutdown marker in the online dir")
	}
	if rp, _ := os.ReadFile(filepath.Join(dirs[0], recoveryPointCheckpointFile)); string(rp) != string(rpBefore) {
		t.Fatalf("recovery point checkpoint of the offline dir rewritten:\n%s\nwas\n%s", rp, rpBefore)
	}
	select {
	case d := <-m.LogDirFailures():
		t.Fatalf("dir %s reported a second time", d)
	default:
	}
}

// A write that fails part-way (a full disk: ENOSPC after some bytes) takes the dir offline and
// leaves the torn bytes unpublished; the next start, with the same files, recovers the dir
// (no clean shutdown marker) and truncates the torn tail, so no partial batch is ever read.
func TestPartialWriteTakesLogDirOfflineAndRecoveryDropsTheTornBatch(t *testing.T) {
	if !directIO {
		t.Skip("the write seam is the direct append (directio_linux.go)")
	}
	cfg := testConfig()
	m, dirs, a, _ := openTwoDirs(t, cfg)
	first := mustAppend(t, a, testBatch{records: 2, valueSize: 10}.build(), 0)
	seg := filepath.Join(a.Dir(), segmentName(0)+logSuffix)
	good := fileSize(t, seg)

	var writes atomic.Int32
	m.directWrites.pwrite = func(f *os.File, b []byte, off int64) (int, error) {
		writes.Add(1)
		n, _ := f.WriteAt(b[:len(b)/2], off) // half the batch reaches the file, then the disk is full
		return n, syscall.ENOSPC
	}
	if _, err := a.AppendAsLeader(testBatch{records: 5, valueSize: 10}.build(), 0); !errors.Is(err, ErrLogDirOffline) || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("append on a full disk: %v, want ErrLogDirOffline wrapping ENOSPC", err)
	}
	torn := fileSize(t, seg)
	if torn <= good {
		t.Fatalf("the seam wrote no torn bytes (%d <= %d)", torn, good)
	}
	if a.LogEndOffset() != first.LastOffset+1 {
		t.Fatalf("LEO %d after the failed append, want %d (nothing published)", a.LogEndOffset(), first.LastOffset+1)
	}
	if _, err := a.AppendAsLeader(testBatch{records: 1, valueSize: 10}.build(), 0); !errors.Is(err, ErrLogDirOffline) {
		t.Fatalf("second append: %v, want ErrLogDirOffline", err)
	}
	if n := writes.Load(); n != 1 {
		t.Fatalf("%d writes to the offline dir, want the one that failed", n)
	}
	if got := fileSize(t, seg); got != torn {
		t.Fatalf("segment changed after the failure: %d -> %d", torn, got)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}

	// "Restart with space": the same files, opened again.
	lg, _ := testLogger()
	m2, err := Open(dirs, 1, cfg, lg)
	if err != nil {
		t.Fatal(err)
	}
	defer m2.Close()
	a = m2.Get(TopicPartition{Topic: "a", Partition: 0})
	if a == nil {
		t.Fatal("log a not loaded")
	}
	if a.LogEndOffset() != first.LastOffset+1 {
		t.Fatalf("LEO after recovery %d, want %d", a.LogEndOffset(), first.LastOffset+1)
	}
	if got := fileSize(t, seg); got != good {
		t.Fatalf("recovered segment is %d bytes, want %d (the torn batch truncated)", got, good)
	}
	data, err := a.Read(0, 1<<20, a.LogEndOffset(), true)
	if err != nil {
		t.Fatal(err)
	}
	if _, rest, err := parseBatches(data); err != nil || rest != 0 {
		t.Fatalf("recovered log reads a partial batch: %d trailing bytes, %v", rest, err)
	}
	mustAppend(t, a, testBatch{records: 1, valueSize: 10}.build(), 0) // the dir is online again
}
