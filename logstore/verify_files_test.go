package logstore

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// Damaged files beside the segments (issue 28): missing indexes and garbled checkpoints. Each
// matches Kafka 2.4 (Log.loadSegmentFiles, LogManager.loadLogs) or is stricter, as noted.

// TestMissingIndexesBelowRecoveryPointRebuilt: a segment below the recovery point whose
// .index and .timeindex were deleted is recovered and both files are rebuilt as they were
// (Kafka 2.4 recovers a segment whose offset index is missing; a missing time index it only
// recreates empty, isrbroker rebuilds it too).
func TestMissingIndexesBelowRecoveryPointRebuilt(t *testing.T) {
	dirs := []string{t.TempDir()}
	cfg := testConfig()
	cfg.SegmentBytes = 4000
	cfg.IndexIntervalBytes = 300
	m, _ := openTestManager(t, dirs, cfg, nil)
	tp := TopicPartition{Topic: "t", Partition: 0}
	l, _ := m.GetOrCreate(tp, cfg)
	for i := 0; i < 40; i++ {
		mustAppend(t, l, testBatch{records: 2, valueSize: 200, baseTs: int64(1000 + 10*i)}.build(), 1)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	seg := &segment{base: 0, dir: filepath.Join(dirs[0], "t-0")}
	idx, _ := os.ReadFile(seg.indexPath())
	tidx, _ := os.ReadFile(seg.timeIndexPath())
	if len(idx) == 0 || len(tidx) == 0 {
		t.Fatalf("fixture: index %d bytes, time index %d bytes", len(idx), len(tidx))
	}
	os.Remove(seg.indexPath())
	os.Remove(seg.timeIndexPath())
	os.Remove(filepath.Join(dirs[0], cleanShutdownFile)) // unclean: segment 0 is below the recovery point

	m2, hook := openTestManager(t, dirs, cfg, nil)
	defer m2.Close()
	l2 := m2.Get(tp)
	if hook.find("missing or inconsistent index; rebuilding it by recovering the segment") == nil {
		t.Fatalf("no warning: %v", hook.messages())
	}
	idx2, _ := os.ReadFile(seg.indexPath())
	tidx2, _ := os.ReadFile(seg.timeIndexPath())
	if !bytes.Equal(idx, idx2) || !bytes.Equal(tidx, tidx2) {
		t.Fatalf("rebuilt index %d bytes (was %d), time index %d bytes (was %d)", len(idx2), len(idx), len(tidx2), len(tidx))
	}
	if off, _, ok := l2.OffsetForTimestamp(1000 + 10*3); !ok || off != 6 {
		t.Fatalf("offset for timestamp %d %v, want 6", off, ok)
	}
	if n := l2.corrupt.unverified(); n != len(l2.segs)-2 {
		t.Fatalf("%d unverified of %d segments: the recovered one counts as verified", n, len(l2.segs))
	}
}

// TestGarbledRecoveryPointCheckpointRecoversEverySegment: an unreadable
// recovery-point-offset-checkpoint resets every recovery point to 0 (Kafka 2.4's loadLogs:
// "Resetting the recovery checkpoint to 0"), so a batch flipped in an old segment is found
// and truncated at load, and nothing is served from past it.
func TestGarbledRecoveryPointCheckpointRecoversEverySegment(t *testing.T) {
	dirs, cfg, tp := corruptFixture(t)
	cp := filepath.Join(dirs[0], recoveryPointCheckpointFile)
	data, _ := os.ReadFile(cp)
	if err := os.WriteFile(cp, data[:len(data)-3], 0o644); err != nil { // a torn last line
		t.Fatal(err)
	}
	m, hook := openTestManager(t, dirs, cfg, nil)
	defer m.Close()
	l := m.Get(tp)
	if hook.find("unreadable recovery-point-offset-checkpoint; recovering every segment") == nil {
		t.Fatalf("no warning: %v", hook.messages())
	}
	if leo := l.LogEndOffset(); leo != 10 {
		t.Fatalf("LEO %d, want 10 (truncated at the bad batch)", leo)
	}
	if n := l.corrupt.unverified(); n != 0 {
		t.Fatalf("%d unverified segments after recovering all", n)
	}
	if b, err := l.Read(0, 1<<20, 10, false); err != nil || badCRC(b) {
		t.Fatalf("read: %v", err)
	}
}

// TestGarbledLogStartCheckpoint: an unreadable log-start-offset-checkpoint is logged and the
// log start offsets come from the first segments (Kafka 2.4's loadLogs: a warning, no
// entries, so Log starts at its first segment's base offset).
func TestGarbledLogStartCheckpoint(t *testing.T) {
	dirs := []string{t.TempDir()}
	cfg := testConfig()
	m, _ := openTestManager(t, dirs, cfg, nil)
	tp := TopicPartition{Topic: "t", Partition: 0}
	l, _ := m.GetOrCreate(tp, cfg)
	for i := 0; i < 10; i++ {
		mustAppend(t, l, testBatch{records: 1}.build(), 1)
	}
	l.MaybeIncrementLogStartOffset(5)
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dirs[0], logStartCheckpointFile), []byte("0\n1\nt 0 x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	m2, hook := openTestManager(t, dirs, cfg, nil)
	defer m2.Close()
	if hook.find("unreadable log-start-offset-checkpoint; log start offsets come from the segments") == nil {
		t.Fatalf("no warning: %v", hook.messages())
	}
	if ls, leo := m2.Get(tp).LogStartOffset(), m2.Get(tp).LogEndOffset(); ls != 0 || leo != 10 {
		t.Fatalf("log start %d LEO %d, want 0 and 10", ls, leo)
	}
}

// TestGarbledReplicationCheckpoint: an unreadable replication-offset-checkpoint leaves every
// HW unknown (the partition starts from HW 0 as in Kafka 2.4's Partition.createLog, which
// uses 0 for a partition without a checkpointed HW) and the logs load whole.
func TestGarbledReplicationCheckpoint(t *testing.T) {
	dirs := []string{t.TempDir()}
	cfg := testConfig()
	m, _ := openTestManager(t, dirs, cfg, nil)
	tp := TopicPartition{Topic: "t", Partition: 0}
	l, _ := m.GetOrCreate(tp, cfg)
	for i := 0; i < 10; i++ {
		mustAppend(t, l, testBatch{records: 1}.build(), 1)
	}
	if err := m.CheckpointHighWatermarks(map[TopicPartition]int64{tp: 10}); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dirs[0], replicationCheckpointFile), []byte("0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	m2, hook := openTestManager(t, dirs, cfg, nil)
	defer m2.Close()
	if hook.find("unreadable replication-offset-checkpoint; high watermarks unknown") == nil {
		t.Fatalf("no warning: %v", hook.messages())
	}
	if hw, ok := m2.HighWatermark(tp); ok {
		t.Fatalf("HW %d from a garbled checkpoint", hw)
	}
	if leo := m2.Get(tp).LogEndOffset(); leo != 10 {
		t.Fatalf("LEO %d", leo)
	}
}
