package logstore

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The I/O-error matrix (issue 28): every operation of the log store (fsfault_ops_test.go) is
// run once on the error FS (errorfs_test.go) to count its file-system calls of each kind, then
// once per call with that call failing with EIO and with ENOSPC. Each run checks that
//   - the error surfaces: the operation fails, or the log dir goes offline (a call that
//     changes the disk never fails silently; a failed read or stat may be absorbed only by an
//     operation that then has done all its work),
//   - the dir is offline where Kafka takes it offline: any failed change to the disk outside
//     the load (LogDirFailureChannel, KIP-112; docs/kafka-facts.md §12),
//   - after a failed fsync nothing in the dir is written, fsynced, truncated, created or
//     renamed again, by the failing operation or by any later one (appends, flushes,
//     truncations, checkpoints, Close),
//   - reopening the directory on the OS FS after that loads the log with no partial batch,
//     every record the value its offset was written with, the LEO, log start offset, recovery
//     point and leader epochs consistent with the batches, and every record appended and
//     flushed before the fault still there (unless the operation removes it by design).

// faultEnv is one run's broker: a Manager over one log dir on a faultFS and one log in it.
type faultEnv struct {
	t     *testing.T
	root  string // the log dir
	fs    *faultFS
	m     *Manager
	l     *Log
	clock *fakeClock
	cfg   Config
	tp    TopicPartition
	epoch int32

	// flushed is the LEO up to which everything appended was flushed before the operation
	flushed int64
	// gone reports the offsets the operation removes by design (nil: none)
	gone func(off int64) bool
}

// faultCase is one operation of the matrix.
type faultCase struct {
	name string
	cfg  func(*Config)
	// setup runs after the common setup (batches appended and flushed), unfaulted
	setup func(e *faultEnv)
	// op is the operation under faults; for a load it opens e.m itself
	op func(e *faultEnv) error
	// load: op opens the Manager (e.m is nil before it and on its failure)
	load bool
	// mayVanish: the operation removes the log; after a fault it is gone or whole
	mayVanish bool
	// readsSurface: a failed read must surface too (the operation reads what it answers)
	readsSurface bool
	// inFlight: a call of the operation that may run concurrently with a failed fsync of a
	// background flush (it started before the failure, as in Kafka)
	inFlight func(c fsCall) bool
}

// recordAt is the single-record batch of the matrix for offset off: key k<off%5>, value v<off>.
func recordAt(t testing.TB, off int64, ts int64) []byte {
	return keyedBatch(t, plain(ts), put(fmt.Sprintf("k%d", off%5), fmt.Sprintf("v%d", off)))
}

// appendN appends n records as leader in the current epoch.
func (e *faultEnv) appendN(n int) error {
	for i := 0; i < n; i++ {
		leo := e.l.LogEndOffset()
		if _, err := e.l.AppendAsLeader(recordAt(e.t, leo, e.clock.Now().UnixMilli()), e.epoch); err != nil {
			return err
		}
	}
	return nil
}

func (e *faultEnv) open() error {
	lg, _ := testLogger()
	m, err := openManagerFS(e.fs, []string{e.root}, 1, e.cfg, lg, e.clock.Now)
	if err != nil {
		return err
	}
	e.m = m
	e.l = m.Get(e.tp)
	if e.l != nil {
		e.l.SetConfig(e.cfg)
	}
	return nil
}

// newFaultEnv opens the broker and appends 12 records in epochs 0 and 1, flushed and
// checkpointed.
func newFaultEnv(t *testing.T, c faultCase) *faultEnv {
	t.Helper()
	cfg := testConfig()
	cfg.SegmentBytes = 600 // a few records a segment
	cfg.IndexIntervalBytes = 100
	cfg.FlushIntervalMessages = 1 << 40
	if c.cfg != nil {
		c.cfg(&cfg)
	}
	e := &faultEnv{t: t, root: filepath.Join(t.TempDir(), "d0"), fs: newFaultFS(), clock: newFakeClock(), cfg: cfg, tp: TopicPartition{Topic: "t", Partition: 0}}
	if err := e.open(); err != nil {
		t.Fatal(err)
	}
	l, err := e.m.GetOrCreate(e.tp, cfg)
	if err != nil {
		t.Fatal(err)
	}
	e.l = l
	if err := e.appendN(6); err != nil {
		t.Fatal(err)
	}
	e.epoch = 1
	if err := e.appendN(6); err != nil {
		t.Fatal(err)
	}
	if err := e.l.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := e.m.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	e.l.flusher.wg.Wait()
	if c.setup != nil {
		c.setup(e)
	}
	e.flushed = e.l.status().recoveryPoint
	return e
}

// offline reports whether the log dir is offline.
func (e *faultEnv) offline() bool { return e.m != nil && len(e.m.OfflineLogDirs()) > 0 }

// inDir reports whether p is in the log dir.
func (e *faultEnv) inDir(p string) bool {
	return p == e.root || strings.HasPrefix(p, e.root+string(filepath.Separator))
}

// changesAfter returns the calls of calls that change the disk in the dir (a remove of the
// failed operation's own temporary file excepted when allowRemove).
func (e *faultEnv) changes(calls []fsCall, allowRemove bool) []fsCall {
	var out []fsCall
	for _, c := range calls {
		if c.failed || !c.op.mutating() || !e.inDir(c.path) || allowRemove && c.op == opRemove {
			continue
		}
		out = append(out, c)
	}
	return out
}

// runFault runs c with rule armed during the operation; it returns the operation's error, the
// index of the operation's first call and how many calls of each kind it made.
func runFault(t *testing.T, c faultCase, rule faultRule) (e *faultEnv, err error, mark int, n [numFSOps]int) {
	e = newFaultEnv(t, c)
	mark = e.fs.mark()
	e.fs.arm(rule)
	err = c.op(e)
	if e.l != nil {
		e.l.flusher.wg.Wait()
	}
	return e, err, mark, e.fs.disarm()
}

var faultErrnos = []syscall.Errno{syscall.EIO, syscall.ENOSPC}

// runFaultMatrix runs the whole matrix of c.
func runFaultMatrix(t *testing.T, c faultCase) {
	e, err, _, n := runFault(t, c, faultRule{})
	if err != nil {
		t.Fatalf("%s without faults: %v", c.name, err)
	}
	e.finish()
	for op := fsOp(0); op < numFSOps; op++ {
		for k := 1; k <= n[op]; k++ {
			for _, errno := range faultErrnos {
				t.Run(fmt.Sprintf("%s#%d/%s", op, k, errnoName(errno)), func(t *testing.T) {
					checkFault(t, c, faultRule{op: op, k: k, errno: errno})
				})
			}
		}
	}
}

func errnoName(e syscall.Errno) string {
	if e == syscall.ENOSPC {
		return "ENOSPC"
	}
	return "EIO"
}

// finish closes the env's Manager (if open).
func (e *faultEnv) finish() {
	if e.m != nil {
		e.m.Close()
		e.m = nil
	}
}

// checkFault runs c with the k-th call of rule.op failing and checks the run.
func checkFault(t *testing.T, c faultCase, rule faultRule) {
	e, err, mark, _ := runFault(t, c, rule)
	defer e.finish()
	failed, at, ok := e.fs.firedCall()
	if !ok {
		t.Fatalf("call %d of kind %s did not happen (the counting run made more)", rule.k, rule.op)
	}
	after := e.fs.callsSince(at + 1)
	surfaced := err != nil || e.offline()
	// A failed remove of a `.deleted` file or a `-delete` dir leaves what is no longer part of
	// a log behind; the next load removes it (logLoader.segmentBases, Manager.loadDir). Kafka
	// takes the dir offline there too; here the removal runs after file.delete.delay.ms,
	// outside the log's locks.
	absorbable := failed.op == opRemove && (strings.HasSuffix(failed.path, deletedSuffix) || strings.HasSuffix(failed.path, "-delete"))
	if (failed.op.mutating() || c.readsSurface && failed.op == opRead) && !surfaced && !absorbable {
		t.Errorf("%v: the operation succeeded and the dir is online", failed)
	}
	// Kafka swallows a failure to create the clean shutdown marker (LogManager.shutdown): the
	// next start recovers the dir, as after a crash. So is the fsync of the dir that follows it.
	marker := filepath.Base(failed.path) == cleanShutdownFile
	if before := e.fs.callsSince(mark)[:at-mark]; failed.op == opSync && failed.path == e.root {
		for i := len(before) - 1; i >= 0; i-- {
			if before[i].op != opClose && before[i].path != e.root { // the dir's own open and close
				marker = filepath.Base(before[i].path) == cleanShutdownFile
				break
			}
		}
	}
	if failed.op.mutating() && !c.load && !absorbable && !marker && e.inDir(failed.path) && !e.offline() {
		t.Errorf("%v: the dir is not offline (operation error: %v)", failed, err)
	}
	if failed.op == opSync && e.l != nil {
		// nothing reaches the log's files after the failed fsync (checkpoint files of the dir
		// being written at the same time by the same operation may finish)
		var ch []fsCall
		for _, ch0 := range e.changes(after, true) {
			if c.inFlight != nil && c.inFlight(ch0) && ch0.path != failed.path {
				continue
			}
			if strings.HasPrefix(ch0.path, e.l.Dir()+string(filepath.Separator)) || ch0.path == e.l.Dir() {
				ch = append(ch, ch0)
			}
		}
		if len(ch) > 0 {
			t.Errorf("%v: then %v", failed, ch)
		}
	}
	if e.offline() && !managerClosed(e.m) {
		mark := e.fs.mark()
		e.probe()
		if ch := e.changes(e.fs.callsSince(mark), false); len(ch) > 0 {
			t.Errorf("%v: after the dir went offline: %v", failed, ch)
		}
	}
	e.finish()
	e.checkReopen(t, c, fmt.Sprint(failed))
}

// probe tries every kind of write on the offline dir: none may reach a file.
func (e *faultEnv) probe() {
	l := e.m.Get(e.tp)
	if l == nil {
		l = e.l
	}
	if l != nil {
		if _, err := l.AppendAsLeader(recordAt(e.t, l.LogEndOffset(), e.clock.Now().UnixMilli()), e.epoch); err == nil {
			e.t.Errorf("append to an offline dir succeeded")
		}
		_ = l.Flush()
		_ = l.TruncateTo(l.LogEndOffset() - 1)
		l.MaybeIncrementLogStartOffset(l.LogStartOffset() + 1)
		l.LeaderEpochCache().Assign(e.epoch+5, l.LogEndOffset())
		_, _ = l.DeleteOldSegments(e.clock.Now().Add(1000 * time.Hour))
		l.SetHighWatermark(l.LogEndOffset())
		e.cleanOnce()
	}
	_ = e.m.Checkpoint()
	_ = e.m.CheckpointHighWatermarks(map[TopicPartition]int64{e.tp: 1})
	_, _ = e.m.GetOrCreate(TopicPartition{Topic: "probe", Partition: 0}, e.cfg)
	_ = e.m.Delete(e.tp)
	_ = e.m.Close()
	e.m = nil
}

// checkReopen opens the dir again on the OS FS and checks the log's state.
func (e *faultEnv) checkReopen(t *testing.T, c faultCase, what string) {
	t.Helper()
	lg, _ := testLogger()
	m, err := openManager([]string{e.root}, 1, e.cfg, lg, e.clock.Now)
	if err != nil {
		t.Fatalf("%s: reopening on the OS FS: %v", what, err)
	}
	defer m.Close()
	l := m.Get(e.tp)
	if l == nil && c.mayVanish {
		return
	}
	if l == nil {
		t.Fatalf("%s: the log is gone after reopening", what)
	}
	l.SetConfig(e.cfg)
	checkLogConsistent(t, what, l, e.gone)
	recs, _ := readAll(t, l)
	have := map[int64]bool{}
	for _, r := range recs {
		have[r.offset] = true
	}
	for off := int64(0); off < e.flushed; off++ {
		if e.gone != nil && e.gone(off) {
			continue
		}
		if !have[off] {
			t.Errorf("%s: offset %d, appended and flushed before the fault, is gone (log %d..%d)", what, off, l.LogStartOffset(), l.LogEndOffset())
		}
	}
}

// checkLogConsistent checks a loaded log: whole valid batches in every segment, records whose
// values match their offsets, the LEO after the last batch, log start and recovery point
// inside the log, and the leader epoch cache matching the batches' epochs.
func checkLogConsistent(t testing.TB, what string, l *Log, gone func(int64) bool) {
	t.Helper()
	l.mu.RLock()
	for _, s := range l.segs {
		res := scanSegment(s.f, s.size, s.base, 0, s.base, newIndexState(s.base), l.cfg.IndexIntervalBytes)
		if res.err != nil || res.validBytes != s.size {
			t.Errorf("%s: segment %d holds %d valid bytes of %d: %v", what, s.base, res.validBytes, s.size, res.err)
		}
	}
	leo, start, rp := l.leo, l.logStart, l.recoveryPoint
	epochs := append([]EpochEntry(nil), l.epochs.entries...)
	l.mu.RUnlock()
	if start > leo || rp > leo || rp < start {
		t.Errorf("%s: log start %d, recovery point %d, LEO %d", what, start, rp, leo)
	}
	recs, hs := readAll(t, l)
	checkOffsetsRise(t, recs)
	for _, r := range recs {
		if want := fmt.Sprintf("v%d", r.offset); str(r.value) != want {
			t.Errorf("%s: offset %d holds %q, want %q", what, r.offset, str(r.value), want)
		}
	}
	if n := len(hs); n > 0 && hs[n-1].LastOffset()+1 != leo {
		t.Errorf("%s: LEO %d, last batch ends at %d", what, leo, hs[n-1].LastOffset()+1)
	}
	for i := 1; i < len(epochs); i++ {
		if epochs[i].Epoch <= epochs[i-1].Epoch || epochs[i].StartOffset <= epochs[i-1].StartOffset {
			t.Errorf("%s: leader epochs not rising: %v", what, epochs)
		}
	}
	for _, h := range hs {
		if gone != nil && gone(h.BaseOffset) {
			// below a log start offset that moved: the leader-epoch-checkpoint follows the move
			// at once, the log-start-offset-checkpoint at the next checkpoint (as Kafka's)
			continue
		}
		var cached *EpochEntry
		for i := range epochs {
			if epochs[i].StartOffset <= h.BaseOffset {
				cached = &epochs[i]
			}
		}
		if cached == nil || cached.Epoch != h.LeaderEpoch {
			t.Errorf("%s: batch %d of epoch %d, leader epoch cache %v", what, h.BaseOffset, h.LeaderEpoch, epochs)
			break
		}
	}
}

// isInjected reports whether err carries an errno of the matrix.
func isInjected(err error) bool {
	var no syscall.Errno
	return errors.As(err, &no) && (no == syscall.EIO || no == syscall.ENOSPC)
}

// managerClosed reports whether m was closed (the close operation of the matrix).
func managerClosed(m *Manager) bool {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.closed
}
