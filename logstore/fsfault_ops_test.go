package logstore

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The operations of the I/O-error matrix (fsfault_test.go): each is run under a failure of each
// of its file-system calls in turn, with EIO and with ENOSPC.

var faultCases = []faultCase{
	{name: "append", op: func(e *faultEnv) error { return e.appendN(1) }},
	{
		// an append that fsyncs (flush.messages=1) in a new leader epoch: the segment, its
		// indexes and the leader-epoch-checkpoint
		name: "appendFlush",
		cfg:  func(c *Config) { c.FlushIntervalMessages = 1 },
		op: func(e *faultEnv) error {
			e.epoch = 2
			return e.appendN(1)
		},
	},
	{
		// an append that rolls: the new segment, and the rolled one flushed in the background
		name: "roll",
		setup: func(e *faultEnv) {
			e.l.mu.RLock()
			room := e.cfg.SegmentBytes - e.l.segs.active().size
			e.l.mu.RUnlock()
			for room >= int64(len(recordAt(e.t, e.l.LogEndOffset(), 0))) {
				if err := e.appendN(1); err != nil {
					e.t.Fatal(err)
				}
				room -= int64(len(recordAt(e.t, e.l.LogEndOffset(), 0)))
			}
		},
		op: func(e *faultEnv) error { return e.appendN(1) },
		// the append's write to the new segment runs while the rolled one is flushed
		inFlight: func(c fsCall) bool { return c.op == opWrite && strings.HasSuffix(c.path, logSuffix) },
	},
	{
		name:  "flush",
		setup: func(e *faultEnv) { must(e.t, e.appendN(3)) },
		op:    func(e *faultEnv) error { return e.l.Flush() },
	},
	{
		name:  "close",
		setup: func(e *faultEnv) { must(e.t, e.appendN(3)) },
		op:    func(e *faultEnv) error { return e.m.Close() },
	},
	{
		name: "truncateTo",
		op: func(e *faultEnv) error {
			e.gone = func(off int64) bool { return off >= 7 }
			return e.l.TruncateTo(7)
		},
	},
	{
		// a cut inside the first segment: the later one goes, and the epoch 1 entry with it
		name: "truncateToEpoch",
		op: func(e *faultEnv) error {
			e.gone = func(off int64) bool { return off >= 4 }
			return e.l.TruncateTo(4)
		},
	},
	{
		// StopReplica with delete: the partition dir renamed `-delete` and removed
		name:      "deleteLog",
		mayVanish: true,
		op: func(e *faultEnv) error {
			e.gone = func(int64) bool { return true }
			return e.m.Delete(e.tp)
		},
	},
	{
		name: "truncateFully",
		op: func(e *faultEnv) error {
			e.gone = func(int64) bool { return true }
			return e.l.TruncateFullyAndStartAt(40)
		},
	},
	{
		name: "cleaning",
		cfg: func(c *Config) {
			c.CleanupPolicy = PolicyCompact
			c.MinCleanableRatio = 0.01
		},
		setup: func(e *faultEnv) {
			e.l.SetHighWatermark(e.l.LogEndOffset())
			// the cleaner keeps the latest record of each key (k<off%5>): an older one may go
			leo := e.l.LogEndOffset()
			e.gone = func(off int64) bool { return off+5 < leo }
		},
		op: func(e *faultEnv) error {
			if !e.cleanOnce() {
				e.t.Fatal("nothing to clean")
			}
			return nil
		},
	},
	{
		// recovery-point-offset-checkpoint, log-start-offset-checkpoint, cleaner-offset-checkpoint
		name:  "checkpoint",
		setup: func(e *faultEnv) { must(e.t, e.appendN(2)); must(e.t, e.l.Flush()) },
		op:    func(e *faultEnv) error { return e.m.Checkpoint() },
	},
	{
		name: "checkpointHW",
		op: func(e *faultEnv) error {
			return e.m.CheckpointHighWatermarks(map[TopicPartition]int64{e.tp: e.l.LogEndOffset()})
		},
	},
	{
		// a new leader's epoch (deferred), its first batch and the flush that writes the
		// leader-epoch-checkpoint
		name: "assignEpoch",
		op: func(e *faultEnv) error {
			e.epoch = 3
			e.l.LeaderEpochCache().Assign(e.epoch, e.l.LogEndOffset())
			if err := e.appendN(1); err != nil {
				return err
			}
			return e.l.Flush()
		},
	},
	{
		// DeleteRecords moves the log start offset (the leader-epoch-checkpoint follows it)
		name: "logStart",
		op: func(e *faultEnv) error {
			e.gone = func(off int64) bool { return off < 8 }
			e.l.MaybeIncrementLogStartOffset(8)
			return nil
		},
	},
	{
		// retention deletes whole segments and moves the log start offset
		name: "retention",
		cfg:  func(c *Config) { c.RetentionBytes = 700 },
		setup: func(e *faultEnv) {
			e.l.SetHighWatermark(e.l.LogEndOffset())
			e.gone = func(int64) bool { return true } // checked by the reopened log's consistency
		},
		op: func(e *faultEnv) error {
			_, err := e.l.DeleteOldSegments(e.clock.Now())
			return err
		},
	},
	{
		name: "createLog",
		op: func(e *faultEnv) error {
			_, err := e.m.GetOrCreate(TopicPartition{Topic: "new", Partition: 0}, e.cfg)
			return err
		},
	},
	{
		// the load after a clean shutdown
		name:  "loadClean",
		load:  true,
		setup: func(e *faultEnv) { must(e.t, e.m.Close()); e.m = nil },
		op:    func(e *faultEnv) error { return e.open() },
	},
	{
		// a fetch that copies (Log.Read, the path of a response that cannot use sendfile)
		name:         "read",
		readsSurface: true,
		op: func(e *faultEnv) error {
			_, err := e.l.Read(e.l.LogStartOffset(), 1<<20, e.l.LogEndOffset(), true)
			return err
		},
	},
	{
		// the first start on a dir: meta.properties is written
		name: "loadMeta",
		load: true,
		setup: func(e *faultEnv) {
			must(e.t, e.m.Close())
			e.m = nil
			must(e.t, os.Remove(filepath.Join(e.root, metaPropertiesFile)))
		},
		op: func(e *faultEnv) error { return e.open() },
	},
	{
		// the load after a crash: recovery of the segments past the recovery point
		name: "loadRecovery",
		load: true,
		setup: func(e *faultEnv) {
			must(e.t, e.appendN(3)) // unflushed: recovery scans them
			e.m.crash()
			e.m = nil
		},
		op: func(e *faultEnv) error { return e.open() },
	},
}

// cleanOnce runs one pass of a cleaner thread of e's Manager (no thread started): it reports
// whether a log was cleaned.
func (e *faultEnv) cleanOnce() bool {
	c := &cleaner{
		m: e.m, cfg: CleanerConfig{Enable: true, Threads: 1, DedupeBufferSize: 1 << 20}, log: e.m.log,
		wake: make(chan struct{}, 1), inProgress: map[*Log]bool{}, uncleanable: map[*Log]bool{},
		timeOfLastRun: e.m.clock.now(), lastStats: make([]cleanerStats, 1),
	}
	th := &cleanerThread{c: c}
	return th.cleanFilthiestLog(context.Background())
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestIOErrorMatrix(t *testing.T) {
	for _, c := range faultCases {
		t.Run(c.name, func(t *testing.T) { runFaultMatrix(t, c) })
	}
}
