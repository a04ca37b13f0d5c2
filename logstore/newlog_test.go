package logstore

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"
)

// TestOpenLogNewDirectory: a log whose directory openLog creates starts as load would start it
// in an empty directory (one segment at the log start offset, LEO = log start = recovery
// point, no epochs, no index files), and an existing directory is still loaded, not taken as
// new: its records, leader epochs and a leftover of an interrupted atomic write are seen.
func TestOpenLogNewDirectory(t *testing.T) {
	cfg := testConfig()
	lg, _ := testLogger()
	clock := newFakeClock()
	open := func(dir string, logStart int64) *Log {
		t.Helper()
		l, err := openLog(loadParams{tp: TopicPartition{Topic: "t", Partition: 0}, dir: dir, cfg: cfg,
			logStart: logStart, hw: -1, clean: true, log: lg, now: clock.Now})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	for _, logStart := range []int64{-1, 42} {
		fresh := filepath.Join(t.TempDir(), "t-0")
		empty := filepath.Join(t.TempDir(), "t-0")
		if err := os.Mkdir(empty, 0o755); err != nil {
			t.Fatal(err)
		}
		a, b := open(fresh, logStart), open(empty, logStart) // loadNew, load
		for _, l := range []*Log{a, b} {
			want := max(logStart, 0)
			if l.LogEndOffset() != want || l.LogStartOffset() != want || l.recoveryPoint != want || len(l.LeaderEpochCache().EpochEntries()) != 0 || len(l.segs) != 1 || l.segs[0].base != want {
				t.Fatalf("%s: leo %d start %d recovery %d epochs %v segments %d, want all at %d, no epochs, one segment",
					l.Dir(), l.LogEndOffset(), l.LogStartOffset(), l.recoveryPoint, l.LeaderEpochCache().EpochEntries(), len(l.segs), want)
			}
		}
		for _, l := range []*Log{a, b} {
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
		}
		for _, dir := range []string{fresh, empty} {
			names := dirNames(t, dir)
			if want := []string{fmt.Sprintf("%020d.log", max(logStart, 0))}; !slices.Equal(names, want) {
				t.Fatalf("%s holds %v, want %v", dir, names, want)
			}
		}
	}

	// An existing directory with records is loaded.
	dir := filepath.Join(t.TempDir(), "t-0")
	l := open(dir, -1)
	l.LeaderEpochCache().Assign(3, 0)
	mustAppend(t, l, testBatch{records: 2}.build(), 3)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "leader-epoch-checkpoint.tmp"), []byte("junk"), 0o644); err != nil {
		t.Fatal(err)
	}
	l = open(dir, -1)
	defer l.Close()
	if l.LogEndOffset() != 2 || !slices.Equal(l.LeaderEpochCache().EpochEntries(), []EpochEntry{{Epoch: 3, StartOffset: 0}}) {
		t.Fatalf("reopened: leo %d epochs %v, want 2 and [{3 0}]", l.LogEndOffset(), l.LeaderEpochCache().EpochEntries())
	}
}

func dirNames(t testing.TB, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

// BenchmarkCreateLogs times what a LeaderAndIsr for a new topic costs a broker per partition
// in the log store (docs/performance.md, "Controller at scale"): creating the log on 8 workers,
// each with GetOrCreate ("each": a directory fsync shared by the creations running at once) or
// all with one GetOrCreateAll ("all": one directory fsync after all), then assigning its first leader epoch (a leader's
// leader-epoch-checkpoint), then closing the manager. One iteration = one partition.
func BenchmarkCreateLogs(b *testing.B) {
	b.Run("each", func(b *testing.B) { benchmarkCreateLogs(b, false) })
	b.Run("all", func(b *testing.B) { benchmarkCreateLogs(b, true) })
}

func benchmarkCreateLogs(b *testing.B, all bool) {
	const workers = 8
	lg, _ := testLogger()
	cfg := testConfig()
	m, err := openManager([]string{b.TempDir()}, 1, cfg, lg, newFakeClock().Now)
	if err != nil {
		b.Fatal(err)
	}
	logs := make([]*Log, b.N)
	parallel := func(f func(i int)) {
		var wg sync.WaitGroup
		next := make(chan int)
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range next {
					f(i)
				}
			}()
		}
		for i := 0; i < b.N; i++ {
			next <- i
		}
		close(next)
		wg.Wait()
	}
	b.ResetTimer()
	start := time.Now()
	if all {
		tps, cfgs := make([]TopicPartition, b.N), make([]Config, b.N)
		for i := range tps {
			tps[i], cfgs[i] = TopicPartition{Topic: "bench", Partition: int32(i)}, cfg
		}
		var errs []error
		logs, errs = m.GetOrCreateAll(tps, cfgs, workers)
		for _, err := range errs {
			if err != nil {
				b.Fatal(err)
			}
		}
	} else {
		parallel(func(i int) {
			l, err := m.GetOrCreate(TopicPartition{Topic: "bench", Partition: int32(i)}, cfg)
			if err != nil {
				b.Error(err)
			}
			logs[i] = l
		})
	}
	created := time.Now()
	parallel(func(i int) { logs[i].LeaderEpochCache().Assign(1, 0) })
	led := time.Now()
	if err := m.Close(); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	perOp := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(b.N) }
	b.ReportMetric(perOp(created.Sub(start)), "create-µs/op")
	b.ReportMetric(perOp(led.Sub(created)), "leader-µs/op")
	b.ReportMetric(perOp(time.Since(led)), "close-µs/op")
}

// TestGetOrCreateAll: one call creates the missing logs (spread over the dirs), returns the
// existing ones with the config applied, reports a bad name per partition, and gives one log
// for a partition named twice; the logs are registered (Get) and reopen after Close.
func TestGetOrCreateAll(t *testing.T) {
	dirs := []string{t.TempDir(), t.TempDir()}
	cfg := testConfig()
	m, _ := openTestManager(t, dirs, cfg, nil)
	existing, err := m.GetOrCreate(TopicPartition{Topic: "all", Partition: 0}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	other := cfg
	other.SegmentBytes = 1 << 20
	tps := []TopicPartition{{Topic: "all", Partition: 0}, {Topic: "all", Partition: 1}, {Topic: "all", Partition: 2}, {Topic: "bad/name", Partition: 0}, {Topic: "all", Partition: 2}, {Topic: "all", Partition: -1}, {Topic: "all", Partition: 3}}
	cfgs := slices.Repeat([]Config{other}, len(tps))
	logs, errs := m.GetOrCreateAll(tps, cfgs, 4)
	for i, tp := range tps {
		bad := tp.Topic == "bad/name" || tp.Partition < 0
		if (errs[i] != nil) != bad || (logs[i] == nil) != bad {
			t.Fatalf("%v: log %v err %v", tp, logs[i], errs[i])
		}
		if !bad && (m.Get(tp) != logs[i] || logs[i].Config().SegmentBytes != other.SegmentBytes) {
			t.Fatalf("%v: registered %p, returned %p, segment.bytes %d", tp, m.Get(tp), logs[i], logs[i].Config().SegmentBytes)
		}
	}
	if logs[0] != existing || logs[2] != logs[4] {
		t.Fatalf("existing %p got %p; twice-named %p %p", existing, logs[0], logs[2], logs[4])
	}
	if m.dirLogs[dirs[0]] != 2 || m.dirLogs[dirs[1]] != 2 || len(m.creating) != 0 {
		t.Fatalf("dir counts %v, creating %v", m.dirLogs, m.creating)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	m2, _ := openTestManager(t, dirs, cfg, nil)
	defer m2.Close()
	if len(m2.All()) != 4 {
		t.Fatalf("reopened %d logs, want 4", len(m2.All()))
	}
	if _, errs := m2.GetOrCreateAll([]TopicPartition{{Topic: "all", Partition: 9}}, []Config{cfg}, 1); errs[0] != nil {
		t.Fatal(errs[0])
	}
}

// TestCheckpointUnchangedNotRewritten: a checkpoint whose bytes are those this manager last
// wrote is not written again (no fsyncs), a changed one is, and a file written by someone
// else meanwhile is not assumed: a new manager writes its first checkpoint in any case.
func TestCheckpointUnchangedNotRewritten(t *testing.T) {
	dirs := []string{t.TempDir()}
	cfg := testConfig()
	m, _ := openTestManager(t, dirs, cfg, nil)
	tp := TopicPartition{Topic: "cp", Partition: 0}
	if _, err := m.GetOrCreate(tp, cfg); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dirs[0], replicationCheckpointFile)
	write := func(hw int64) {
		t.Helper()
		if err := m.CheckpointHighWatermarks(map[TopicPartition]int64{tp: hw}); err != nil {
			t.Fatal(err)
		}
	}
	mtime := func() time.Time {
		t.Helper()
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		return fi.ModTime()
	}
	write(0)
	// A marker older than any write: an unchanged checkpoint leaves the file alone.
	old := time.Unix(1_000_000, 0)
	if err := os.Chtimes(path, old, old); err != nil {
		t.Fatal(err)
	}
	write(0)
	if !mtime().Equal(old) {
		t.Fatal("unchanged HW checkpoint rewritten")
	}
	write(0) // still unchanged
	if !mtime().Equal(old) {
		t.Fatal("unchanged HW checkpoint rewritten")
	}
	// Close writes the recovery-point and log-start checkpoints; the HW one is unchanged.
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if !mtime().Equal(old) {
		t.Fatal("HW checkpoint rewritten at Close though unchanged")
	}
	got, err := readOffsetCheckpoint(osFS{}, path)
	if err != nil || got[tp] != 0 {
		t.Fatalf("HW checkpoint %v %v", got, err)
	}
	// A new manager does not know what the file holds: it writes.
	m2, _ := openTestManager(t, dirs, cfg, nil)
	defer m2.Close()
	if err := m2.CheckpointHighWatermarks(map[TopicPartition]int64{tp: 0}); err != nil {
		t.Fatal(err)
	}
	if mtime().Equal(old) {
		t.Fatal("a new manager's first HW checkpoint was skipped")
	}
}

// TestEpochCheckpointWriteDeferred: a new leader's epoch entry is in the cache at once but
// written to leader-epoch-checkpoint only by a flush that moves the recovery point past the
// entry's start (a flush of an empty log, or Close of one whose LEO is the entry's start, writes
// nothing); a reopen sees the written entry; a crash before the write loses nothing recovery
// does not rebuild; a truncation's own write replaces a pending snapshot, which a later flush
// then does not write over it.
func TestEpochCheckpointWriteDeferred(t *testing.T) {
	cfg := testConfig()
	l := newTestLog(t, cfg, nil)
	l.LeaderEpochCache().Assign(2, 0)
	if got := l.LeaderEpochCache().EpochEntries(); !slices.Equal(got, []EpochEntry{{2, 0}}) {
		t.Fatalf("cache %v, want [{2 0}]", got)
	}
	if _, err := os.Stat(l.epochs.path); !os.IsNotExist(err) {
		t.Fatalf("a new leader's checkpoint was written at once (stat: %v)", err)
	}
	if err := l.Flush(); err != nil { // nothing to flush: nothing written
		t.Fatal(err)
	}
	if _, err := os.Stat(l.epochs.path); !os.IsNotExist(err) {
		t.Fatalf("an empty flush wrote the checkpoint (stat: %v)", err)
	}
	mustAppend(t, l, testBatch{records: 3}.build(), 2)
	if err := l.Flush(); err != nil { // the recovery point passes offset 0: written
		t.Fatal(err)
	}
	if got := epochCheckpointOnDisk(t, l); !slices.Equal(got, []EpochEntry{{2, 0}}) {
		t.Fatalf("after a flush past the entry: checkpoint %v, want [{2 0}]", got)
	}
	l.LeaderEpochCache().Assign(5, 3)
	if got := epochCheckpointOnDisk(t, l); !slices.Equal(got, []EpochEntry{{2, 0}}) {
		t.Fatalf("epoch 5 written before a flush needed it: %v", got)
	}
	if err := l.Close(); err != nil { // LEO 3: no batch of epoch 5, nothing to write
		t.Fatal(err)
	}
	if got := epochCheckpointOnDisk(t, l); !slices.Equal(got, []EpochEntry{{2, 0}}) {
		t.Fatalf("after Close: checkpoint %v, want [{2 0}]", got)
	}
	lg, _ := testLogger()
	l2, err := openLog(loadParams{tp: l.tp, dir: l.dir, cfg: cfg, logStart: -1, hw: -1, recoveryPoint: 3, clean: true, log: lg, now: newFakeClock().Now})
	if err != nil {
		t.Fatal(err)
	}
	// The loader drops entries at or after the LEO (truncateFromEnd), written or not: an epoch
	// without batches is not kept across a restart either way.
	if got := l2.LeaderEpochCache().EpochEntries(); !slices.Equal(got, []EpochEntry{{2, 0}}) {
		t.Fatalf("reopened epochs %v, want [{2 0}]", got)
	}

	// Epoch 5 with batches, then a crash before any flush: the file still says [{2 0}], and
	// recovery re-enters epoch 5 from its batches.
	l2.LeaderEpochCache().Assign(5, 3)
	mustAppend(t, l2, testBatch{records: 4}.build(), 5)
	if got := epochCheckpointOnDisk(t, l); !slices.Equal(got, []EpochEntry{{2, 0}}) {
		t.Fatalf("epoch 5 written before a flush needed it: %v", got)
	}
	crashLog(l2)
	l3 := reopenLog(t, l2, cfg, newFakeClock())
	if got, want := l3.LeaderEpochCache().EpochEntries(), []EpochEntry{{2, 0}, {5, 3}}; !slices.Equal(got, want) {
		t.Fatalf("after a crash: epochs %v, want %v", got, want)
	}

	// A pending snapshot, then a truncation that removes its entry: the truncation's write is
	// the file's content, and a later flush does not bring the pending entry back.
	l3.LeaderEpochCache().Assign(7, 7)
	mustAppend(t, l3, testBatch{records: 2}.build(), 7)
	if err := l3.TruncateTo(7); err != nil {
		t.Fatal(err)
	}
	// The new leader's epoch-5 batches, then a flush that moves the recovery point past 7.
	mustFollow(t, l3, testBatch{records: 2, base: 7, epoch: 5}.build())
	if err := l3.Flush(); err != nil {
		t.Fatal(err)
	}
	if got, want := epochCheckpointOnDisk(t, l), []EpochEntry{{2, 0}, {5, 3}}; !slices.Equal(got, want) {
		t.Fatalf("after truncating epoch 7 away and a flush: checkpoint %v, want %v", got, want)
	}
}

// TestFollowerEpochCheckpointWriteDeferred: a follower's batches of a new epoch add to its cache
// at once and to its checkpoint file at the flush past them, and a crash before that flush
// recovers the same cache (recovery re-enters the batches' rising epochs); a batch of an older
// epoch, which removes later entries, is written at once, as before.
func TestFollowerEpochCheckpointWriteDeferred(t *testing.T) {
	cfg := testConfig()
	l := newTestLog(t, cfg, nil)
	mustFollow(t, l, testBatch{records: 3, base: 0, epoch: 2}.build())
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	if got := epochCheckpointOnDisk(t, l); !slices.Equal(got, []EpochEntry{{2, 0}}) {
		t.Fatalf("after a flush: checkpoint %v, want [{2 0}]", got)
	}
	mustFollow(t, l, testBatch{records: 2, base: 3, epoch: 4}.build())
	mustFollow(t, l, testBatch{records: 2, base: 5, epoch: 5}.build())
	want := []EpochEntry{{2, 0}, {4, 3}, {5, 5}}
	if got := l.LeaderEpochCache().EpochEntries(); !slices.Equal(got, want) {
		t.Fatalf("cache %v, want %v", got, want)
	}
	if got := epochCheckpointOnDisk(t, l); !slices.Equal(got, []EpochEntry{{2, 0}}) {
		t.Fatalf("written before a flush: %v", got)
	}
	crashLog(l)
	l2 := reopenLog(t, l, cfg, newFakeClock())
	if got := l2.LeaderEpochCache().EpochEntries(); !slices.Equal(got, want) {
		t.Fatalf("after a crash: epochs %v, want %v", got, want)
	}
	l = l2
	mustFollow(t, l, testBatch{records: 2, base: 7, epoch: 3}.build()) // older: (4, 3) and (5, 5) go
	want = []EpochEntry{{2, 0}, {3, 7}}
	if got := l.LeaderEpochCache().EpochEntries(); !slices.Equal(got, want) {
		t.Fatalf("cache %v, want %v", got, want)
	}
	if got := epochCheckpointOnDisk(t, l); !slices.Equal(got, want) {
		t.Fatalf("a removal was not written at once: checkpoint %v, want %v", got, want)
	}
}

// TestLeaderEpochRemovalWrittenAtOnce: an AssignEpochStartOffset that removes entries (a
// lower epoch than the latest, or entries at or after its start) is written at once.
func TestLeaderEpochRemovalWrittenAtOnce(t *testing.T) {
	l := newTestLog(t, testConfig(), nil)
	l.LeaderEpochCache().Assign(5, 0)
	mustAppend(t, l, testBatch{records: 3}.build(), 5)
	l.LeaderEpochCache().Assign(4, 3) // epoch 5 is at or above 4: (5, 0) goes
	want := []EpochEntry{{4, 3}}
	if got := l.LeaderEpochCache().EpochEntries(); !slices.Equal(got, want) {
		t.Fatalf("cache %v, want %v", got, want)
	}
	if got, err := readEpochCheckpoint(osFS{}, l.epochs.path); err != nil || !slices.Equal(got, want) {
		t.Fatalf("checkpoint %v %v, want %v written at once", got, err, want)
	}
}

// epochCheckpointOnDisk reads l's leader-epoch-checkpoint file.
func epochCheckpointOnDisk(t *testing.T, l *Log) []EpochEntry {
	t.Helper()
	got, err := readEpochCheckpoint(osFS{}, l.epochs.path)
	if err != nil {
		t.Fatal(err)
	}
	return got
}
