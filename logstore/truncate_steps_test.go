package logstore

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// truncCase is a truncation of the log newStepLog builds (one-record batches 0..119, 28 a
// segment: segments at 0, 28, 56, 84, 112; epoch 1 up to 59, epoch 2 from 60; producer 7).
type truncCase struct {
	name   string
	offset int64
	newLEO int64
	epochs []EpochEntry // after the truncation
}

var truncCases = []truncCase{
	{"cut inside a segment", 40, 40, []EpochEntry{{1, 0}}},
	{"cut at a segment boundary", 56, 56, []EpochEntry{{1, 0}}},
	{"below the first segment", 0, 0, nil},
}

func stepLogBatch(i int64) []byte {
	epoch := int32(1)
	if i >= 60 {
		epoch = 2
	}
	b := followerBatch(i, epoch)
	b[offProducerID+7] = 7
	b[offProducerID], b[offProducerID+1], b[offProducerID+2], b[offProducerID+3] = 0, 0, 0, 0
	b[offProducerID+4], b[offProducerID+5], b[offProducerID+6] = 0, 0, 0
	b[offProducerEpoch], b[offProducerEpoch+1] = 0, 0
	b[offBaseSequence], b[offBaseSequence+1], b[offBaseSequence+2], b[offBaseSequence+3] = 0, 0, byte(i>>8), byte(i)
	fixCRC(b)
	return b
}

func stepLogConfig() Config {
	cfg := testConfig()
	cfg.SegmentBytes = int64(28 * len(stepLogBatch(0)))
	cfg.IndexIntervalBytes = 1000
	return cfg
}

// newStepLog opens a manager on dirs with the log t-0 holding 0..119, flushed and checkpointed.
func newStepLog(t *testing.T, dirs []string) (*Manager, *Log) {
	t.Helper()
	cfg := stepLogConfig()
	m, _ := openTestManager(t, dirs, cfg, nil)
	l, err := m.GetOrCreate(TopicPartition{Topic: "t", Partition: 0}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i := int64(0); i < 120; i++ {
		if _, err := l.AppendAsFollower(stepLogBatch(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := m.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	return m, l
}

// logState is what a truncation changes.
type logState struct {
	leo, logStart, recoveryPoint int64
	epochs                       []EpochEntry
	producers                    producerState
	contents                     []byte
}

func stateOf(t *testing.T, l *Log) logState {
	t.Helper()
	st := logState{leo: l.LogEndOffset(), logStart: l.LogStartOffset(), recoveryPoint: l.status().recoveryPoint, epochs: l.LeaderEpochCache().EpochEntries()}
	l.appendMu.Lock()
	st.producers = maps.Clone(l.producers)
	for pid, bs := range st.producers {
		st.producers[pid] = slices.Clone(bs)
	}
	l.appendMu.Unlock()
	var err error
	if st.contents, err = l.Read(st.logStart, 1<<30, st.leo, false); err != nil {
		t.Fatal(err)
	}
	return st
}

// truncationSteps records the steps of a truncation run without failures.
func truncationSteps(t *testing.T, tc truncCase) []string {
	t.Helper()
	m, l := newStepLog(t, []string{t.TempDir()})
	defer m.Close()
	var steps []string
	l.truncHook = func(step string) error { steps = append(steps, step); return nil }
	if err := l.TruncateTo(tc.offset); err != nil || l.LogEndOffset() != tc.newLEO {
		t.Fatalf("truncation: %v, LEO %d", err, l.LogEndOffset())
	}
	return steps
}

// failAt returns a hook that fails the n-th step (0-based) with err.
func failAt(n int, err error) func(string) error {
	i := 0
	return func(string) error {
		i++
		if i-1 == n {
			return err
		}
		return nil
	}
}

// committed reports whether step n of steps comes after the commit's rename.
func committed(steps []string, n int) bool {
	return n > slices.Index(steps, "commit")
}

func leftovers(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if strings.Contains(e.Name(), ".truncate") {
			out = append(out, e.Name())
		}
	}
	return out
}

// checkTruncated checks that l is before truncated as tc says.
func checkTruncated(t *testing.T, l *Log, before logState, tc truncCase) {
	t.Helper()
	if l.LogEndOffset() != tc.newLEO {
		t.Fatalf("LEO %d, want %d", l.LogEndOffset(), tc.newLEO)
	}
	got, err := l.Read(l.LogStartOffset(), 1<<30, l.LogEndOffset(), false)
	if err != nil {
		t.Fatal(err)
	}
	want := before.contents[:len(got)]
	if tc.newLEO > 0 {
		hs := mustHeaders(t, got)
		if len(hs) != int(tc.newLEO) || hs[len(hs)-1].LastOffset() != tc.newLEO-1 {
			t.Fatalf("%d batches after the truncation, want %d", len(hs), tc.newLEO)
		}
	}
	if !bytes.Equal(got, want) {
		t.Fatal("contents after the truncation are not a prefix of the log before it")
	}
	if e := l.LeaderEpochCache().EpochEntries(); !slices.Equal(e, tc.epochs) {
		t.Fatalf("epochs %+v, want %+v", e, tc.epochs)
	}
	if _, err := l.AppendAsFollower(stepLogBatch(tc.newLEO)); err != nil {
		t.Fatalf("append at the new LEO: %v", err)
	}
}

func checkUnchanged(t *testing.T, l *Log, before logState) {
	t.Helper()
	after := stateOf(t, l)
	if after.leo != before.leo || after.logStart != before.logStart || after.recoveryPoint != before.recoveryPoint ||
		!slices.Equal(after.epochs, before.epochs) || !bytes.Equal(after.contents, before.contents) {
		t.Fatalf("log changed: LEO %d start %d rp %d epochs %+v (before: %d %d %d %+v), contents equal %v",
			after.leo, after.logStart, after.recoveryPoint, after.epochs, before.leo, before.logStart, before.recoveryPoint,
			before.epochs, bytes.Equal(after.contents, before.contents))
	}
	if fmt.Sprint(after.producers) != fmt.Sprint(before.producers) {
		t.Fatalf("producer state changed: %v, before %v", after.producers, before.producers)
	}
}

// TestTruncationFailureAtEachStep injects a failure (ENOSPC, EIO) at each step of a truncation.
// Before the commit's rename, the truncation returns the error, its dir goes offline (KIP-112:
// the log writes no more) and, reopened, the log (LEO, contents, epochs, producer state,
// recovery point) is as it was, with no file left behind, and it appends and truncates. After it, the truncation returns the error, the log is failed (no more
// appends: none reaches a file that is no longer the segment's), and the next open finds the
// log truncated.
func TestTruncationFailureAtEachStep(t *testing.T) {
	for _, tc := range truncCases {
		steps := truncationSteps(t, tc)
		for n, step := range steps {
			t.Run(fmt.Sprintf("%s/%d-%s", tc.name, n, step), func(t *testing.T) {
				dirs := []string{t.TempDir()}
				m, l := newStepLog(t, dirs)
				defer m.Close()
				before := stateOf(t, l)
				injected := syscall.ENOSPC
				if step != "copy" && step != "sync" {
					injected = syscall.EIO
				}
				l.truncHook = failAt(n, injected)
				err := l.TruncateTo(tc.offset)
				if !errors.Is(err, injected) {
					t.Fatalf("truncation returned %v, want %v", err, injected)
				}
				l.truncHook = nil
				if !committed(steps, n) {
					if left := leftovers(t, l.Dir()); len(left) > 0 {
						t.Fatalf("left behind: %v", left)
					}
					// An I/O error on the dir takes it offline (KIP-112): the log writes no
					// more; restarted (with space), it is as it was and works.
					if _, err := l.AppendAsFollower(stepLogBatch(120)); !errors.Is(err, ErrLogDirOffline) {
						t.Fatalf("append after a failed truncation: %v, want ErrLogDirOffline", err)
					}
					m.crash()
					m2, _ := openTestManager(t, dirs, stepLogConfig(), nil)
					defer m2.Close()
					l2 := m2.Get(l.TopicPartition())
					checkUnchanged(t, l2, before)
					if _, err := l2.AppendAsFollower(stepLogBatch(120)); err != nil {
						t.Fatalf("append after a failed truncation and a restart: %v", err)
					}
					before = stateOf(t, l2)
					if err := l2.TruncateTo(tc.offset); err != nil {
						t.Fatalf("truncation after a failed one: %v", err)
					}
					checkTruncated(t, l2, before, tc)
					return
				}
				if _, err := l.AppendAsFollower(stepLogBatch(l.LogEndOffset())); !errors.Is(err, ErrClosed) {
					t.Fatalf("append after a failure past the commit: %v, want ErrClosed", err)
				}
				m.crash()
				m2, _ := openTestManager(t, dirs, stepLogConfig(), nil)
				defer m2.Close()
				l2 := m2.Get(l.TopicPartition())
				if left := leftovers(t, l2.Dir()); len(left) > 0 {
					t.Fatalf("left behind after reopening: %v", left)
				}
				checkTruncated(t, l2, before, tc)
			})
		}
	}
}

// TestTruncationCrashAtEachStep stops a truncation before each of its steps, as a kill -9
// would, and reopens the log dir: before the commit's rename the log is the old one, from it on
// the truncated one, never a mix (offsets gone but the LEO kept, segments above the cut kept,
// epochs of removed batches), and no file of the truncation is left.
func TestTruncationCrashAtEachStep(t *testing.T) {
	for _, tc := range truncCases {
		steps := truncationSteps(t, tc)
		for n, step := range steps {
			t.Run(fmt.Sprintf("%s/%d-%s", tc.name, n, step), func(t *testing.T) {
				dirs := []string{t.TempDir()}
				m, l := newStepLog(t, dirs)
				before := stateOf(t, l)
				l.truncHook = failAt(n, errTruncationStopped)
				if err := l.TruncateTo(tc.offset); !errors.Is(err, errTruncationStopped) {
					t.Fatalf("truncation did not stop at %s: %v", step, err)
				}
				m.crash()
				m2, _ := openTestManager(t, dirs, stepLogConfig(), nil)
				defer m2.Close()
				l2 := m2.Get(l.TopicPartition())
				if left := leftovers(t, l2.Dir()); len(left) > 0 {
					t.Fatalf("left behind after reopening: %v", left)
				}
				if !committed(steps, n) {
					got := stateOf(t, l2)
					if got.leo != before.leo || !bytes.Equal(got.contents, before.contents) || !slices.Equal(got.epochs, before.epochs) {
						t.Fatalf("crash before the commit: LEO %d epochs %+v, want the old log (LEO %d epochs %+v)", got.leo, got.epochs, before.leo, before.epochs)
					}
					return
				}
				checkTruncated(t, l2, before, tc)
			})
		}
	}
}

// TestTruncationCopyRunsOutsideTheLogLocks: while a truncation copies the kept bytes, the log
// serves reads and its flushes and the Manager writes its checkpoints (its appendMu, flushMu and
// mu are free), and the caller's own locks are its business (PrepareTruncateTo, then Commit).
func TestTruncationCopyRunsOutsideTheLogLocks(t *testing.T) {
	m, l := newStepLog(t, []string{t.TempDir()})
	defer m.Close()
	inCopy := make(chan struct{})
	release := make(chan struct{})
	l.truncHook = func(step string) error {
		if step == "copy" {
			close(inCopy)
			<-release
		}
		return nil
	}
	done := make(chan error, 1)
	go func() {
		p, err := l.PrepareTruncateTo(40)
		if err == nil {
			err = p.Commit()
		}
		done <- err
	}()
	<-inCopy
	if !l.appendMu.TryLock() {
		t.Fatal("appendMu held during the copy")
	}
	l.appendMu.Unlock()
	if !l.flushMu.TryLock() {
		t.Fatal("flushMu held during the copy")
	}
	l.flushMu.Unlock()
	if _, err := l.Read(100, 1<<20, l.LogEndOffset(), true); err != nil {
		t.Fatalf("read during the copy: %v", err)
	}
	if err := m.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	close(release)
	if err := <-done; err != nil || l.LogEndOffset() != 40 {
		t.Fatalf("truncation: %v, LEO %d", err, l.LogEndOffset())
	}
}

// TestTruncationPreparedThenAbortedOrStale: an aborted truncation changes nothing and leaves no
// file; one whose cut segment was replaced meanwhile (here: retention removed it) is prepared
// again at Commit.
func TestTruncationPreparedThenAbortedOrStale(t *testing.T) {
	m, l := newStepLog(t, []string{t.TempDir()})
	defer m.Close()
	before := stateOf(t, l)
	p, err := l.PrepareTruncateTo(40)
	if err != nil {
		t.Fatal(err)
	}
	p.Abort()
	checkUnchanged(t, l, before)
	if left := leftovers(t, l.Dir()); len(left) > 0 {
		t.Fatalf("left behind: %v", left)
	}
	// prepared at 40 (cutting segment 28), then the log start moves to 60 and retention
	// removes segments 0 and 28 before the commit: the commit prepares it again, now as a
	// truncation below the first segment (the log restarts empty at 40)
	creates := 0
	l.truncHook = func(step string) error {
		if step == "create" {
			creates++
		}
		return nil
	}
	if p, err = l.PrepareTruncateTo(40); err != nil {
		t.Fatal(err)
	}
	l.SetHighWatermark(120)
	l.MaybeIncrementLogStartOffset(60)
	if n, err := l.DeleteOldSegments(m.clock.now()); err != nil || n != 2 {
		t.Fatalf("retention: %d, %v", n, err)
	}
	if err := p.Commit(); err != nil || l.LogEndOffset() != 40 || l.LogStartOffset() != 40 {
		t.Fatalf("commit after the log changed: %v, LEO %d start %d", err, l.LogEndOffset(), l.LogStartOffset())
	}
	if creates != 2 {
		t.Fatalf("prepared %d times, want 2 (the first plan was stale)", creates)
	}
	if n := len(l.segs); n != 1 || l.segs[0].base != 40 || l.segs[0].size != 0 {
		t.Fatalf("segments after the commit: %d, first at %d", n, l.segs[0].base)
	}
	if left := leftovers(t, l.Dir()); len(left) > 0 {
		t.Fatalf("left behind: %v", left)
	}
}

// A segment recovered at open has no flushed size of its own; a truncation that cuts it still
// fsyncs the kept bytes before it renames them in (the cut used to fsync only a segment with
// flushed bytes, so a crash could lose bytes below the recovery point).
func TestTruncationOfARecoveredSegmentFsyncsTheCopy(t *testing.T) {
	dirs := []string{t.TempDir()}
	m, _ := newStepLog(t, dirs)
	m.crash()
	m2, _ := openTestManager(t, dirs, stepLogConfig(), nil)
	defer m2.Close()
	l := m2.Get(TopicPartition{Topic: "t", Partition: 0})
	if s := l.segs.active(); s.flushedSize != 0 {
		t.Fatalf("setup: recovered segment with flushed size %d", s.flushedSize)
	}
	var steps []string
	l.truncHook = func(step string) error { steps = append(steps, step); return nil }
	if err := l.TruncateTo(115); err != nil || l.LogEndOffset() != 115 {
		t.Fatalf("truncation: %v", err)
	}
	if !slices.Contains(steps, "sync") || slices.Index(steps, "sync") > slices.Index(steps, "commit") {
		t.Fatalf("no fsync of the copy before the commit: steps %v", steps)
	}
	if s := l.segs.active(); s.flushedSize != s.size {
		t.Fatalf("flushed size %d of %d after the fsynced copy", s.flushedSize, s.size)
	}
	if _, err := os.Stat(filepath.Join(l.Dir(), segmentName(112)+logSuffix)); err != nil {
		t.Fatal(err)
	}
}
