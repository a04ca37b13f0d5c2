package logstore

import (
	"io"
	"os"
	"path/filepath"
	"testing"
)

// snapshotDirs copies the log dirs as they are now (every file's bytes as the page cache holds
// them), as a kill -9 at this moment leaves them, into new temp dirs.
func snapshotDirs(t *testing.T, dirs []string) []string {
	t.Helper()
	var out []string
	for _, d := range dirs {
		dst := t.TempDir()
		err := filepath.Walk(d, func(p string, fi os.FileInfo, err error) error {
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(d, p)
			to := filepath.Join(dst, rel)
			if fi.IsDir() {
				return os.MkdirAll(to, 0o755)
			}
			src, err := os.Open(p)
			if err != nil {
				return err
			}
			defer src.Close()
			w, err := os.Create(to)
			if err != nil {
				return err
			}
			defer w.Close()
			_, err = io.Copy(w, src)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, dst)
	}
	return out
}

// followerBatch is one record at offset base written in leader epoch epoch.
func followerBatch(base int64, epoch int32) []byte {
	return testBatch{records: 1, valueSize: 100, base: base, epoch: epoch}.build()
}

// TestKillAfterTruncationKeepsEpochStart is issue 28's sequence: a follower truncates from
// recovery point 120 to 10, appends epoch-2 batches, rolls at 28 and is killed before the
// roll's flush. The reloaded log must say that epoch 2 starts at 10: the truncation wrote the
// lowered recovery point to recovery-point-offset-checkpoint, so the loader re-validates the
// segment holding 10..27 and re-enters its epochs.
func TestKillAfterTruncationKeepsEpochStart(t *testing.T) {
	dirs := []string{t.TempDir()}
	cfg := testConfig()
	cfg.SegmentBytes = int64(28 * len(followerBatch(0, 1))) // 28 one-record batches a segment
	m, _ := openTestManager(t, dirs, cfg, nil)
	defer m.Close()
	tp := TopicPartition{Topic: "t", Partition: 0}
	l, err := m.GetOrCreate(tp, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i := int64(0); i < 120; i++ {
		if _, err := l.AppendAsFollower(followerBatch(i, 1)); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Flush(); err != nil || l.status().recoveryPoint != 120 {
		t.Fatalf("flush: %v, recovery point %d", err, l.status().recoveryPoint)
	}
	if err := m.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	if err := l.TruncateTo(10); err != nil || l.LogEndOffset() != 10 {
		t.Fatalf("truncate: %v, LEO %d", err, l.LogEndOffset())
	}
	// No flush may run from here on: the roll's flush is what the kill -9 prevents.
	l.flushMu.Lock()
	for i := int64(10); i <= 28; i++ { // the batch at 28 rolls a new segment
		if _, err := l.AppendAsFollower(followerBatch(i, 2)); err != nil {
			l.flushMu.Unlock()
			t.Fatal(err)
		}
	}
	if n := len(l.segs); n != 2 || l.segs[1].base != 28 {
		l.flushMu.Unlock()
		t.Fatalf("setup: %d segments, want a roll at 28", n)
	}
	killed := snapshotDirs(t, dirs)
	l.flushMu.Unlock()

	m2, _ := openTestManager(t, killed, cfg, nil)
	defer m2.Close()
	l2 := m2.Get(tp)
	if l2.LogEndOffset() != 29 {
		t.Fatalf("LEO after reload %d, want 29", l2.LogEndOffset())
	}
	want := []EpochEntry{{1, 0}, {2, 10}}
	if got := l2.LeaderEpochCache().EpochEntries(); len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("leader epoch cache after reload %+v, want %+v", got, want)
	}
	// as a leader: OffsetForLeaderEpoch(1) ends epoch 1 at 10, where the follower must cut
	if e, end := l2.LeaderEpochCache().EndOffsetFor(1); e != 1 || end != 10 {
		t.Fatalf("EndOffsetForEpoch(1) = (%d, %d), want (1, 10)", e, end)
	}
}
