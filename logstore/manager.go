package logstore

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	"github.com/sirupsen/logrus"

	"golang.org/x/sync/errgroup"
)

// Manager owns the log dirs and every partition log in them (Kafka's LogManager). This file
// holds the log map (Get, GetOrCreate, Delete) and Close; Open and the loading of the dirs are
// in manager_open.go, the offset checkpoint files in manager_checkpoint.go (logCheckpoints),
// the background tasks in manager_background.go, the offline dirs in logdir_failure.go and the
// cleaner in cleaner*.go.
type Manager struct {
	fs       FS // the file-system seam (fs.go); the OS FS unless a test injects one
	dirs     []string
	brokerID int32
	defaults Config
	log      logrus.FieldLogger

	clock managerClock

	mu        sync.RWMutex
	logs      map[TopicPartition]*Log
	dirOf     map[TopicPartition]string
	dirLogs   map[string]int                   // number of logs per dir (dirOf's values counted)
	creating  map[TopicPartition]chan struct{} // logs being created outside mu; closed when done
	dirSync   map[string]*dirSyncer            // group commit of each log dir's fsyncs (set at Open)
	hw        map[TopicPartition]int64         // last HW checkpointed per partition
	initialHW map[TopicPartition]int64         // as read at Open
	closed    bool

	checkpoints logCheckpoints // the offset checkpoint files (manager_checkpoint.go)

	cleaner *cleaner // the log cleaner (cleaner.go), nil until StartCleaner; guarded by mu

	gauges logGauges // the Log and LogManager gauges (log_metrics.go); guarded by mu

	writeback *writebackQueue // smooth writeback of active segments (writeback.go)
	// directWrites decides when appends are issued directly (directio.go).
	directWrites *directWriteGate

	// health is each configured dir's online state and failures the failure channel
	// (logdir_failure.go); both are set at Open and never replaced.
	health   dirHealths
	failures chan string
}

// managerClock is the Manager's time source (retention, cleaning, the logs' clock), which tests
// may replace while the Manager runs; clockMu is a leaf.
type managerClock struct {
	clockMu sync.RWMutex
	clock   func() time.Time
}

// now reads the clock.
func (c *managerClock) now() time.Time {
	c.clockMu.RLock()
	defer c.clockMu.RUnlock()
	return c.clock()
}

// set replaces the clock (tests).
func (c *managerClock) set(now func() time.Time) {
	c.clockMu.Lock()
	c.clock = now
	c.clockMu.Unlock()
}

// Get returns the log of tp, or nil.
func (m *Manager) Get(tp TopicPartition) *Log {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.logs[tp]
}

// GetOrCreate returns the log of tp with cfg applied (a log loaded at Open gets its topic's
// configuration here), creating it (empty, at offset 0) in the log dir holding the fewest
// partitions. A created log's directory entry is durable when it returns.
func (m *Manager) GetOrCreate(tp TopicPartition, cfg Config) (*Log, error) {
	logs, errs := m.GetOrCreateAll([]TopicPartition{tp}, []Config{cfg}, 1)
	return logs[0], errs[0]
}

// GetOrCreateAll is GetOrCreate for many partitions (a LeaderAndIsr for a new topic): the
// missing logs are created on up to workers goroutines at once, outside the manager's lock,
// and their directory entries made durable by one fsync per log dir once all are created
// (shared with concurrent creations: dirsync.go), instead of one per log; only then are they
// registered, so no caller sees a log whose directory a crash could still lose
// (docs/performance.md, "Controller at scale"). cfgs[i] is tps[i]'s configuration; logs[i]
// and errs[i] are its result.
func (m *Manager) GetOrCreateAll(tps []TopicPartition, cfgs []Config, workers int) ([]*Log, []error) {
	logs := make([]*Log, len(tps))
	errs := make([]error, len(tps))
	type creation struct {
		i    int
		dir  string // the log dir
		done chan struct{}
	}
	var mine []creation        // reserved by this call
	var waits []int            // being created by another call meanwhile: looked up again after
	var waitOn []chan struct{} // their done channels
	m.mu.Lock()
	for i, tp := range tps {
		if m.closed {
			errs[i] = ErrClosed
			continue
		}
		if err := validTopic(tp.Topic); err != nil {
			errs[i] = err
			continue
		}
		if tp.Partition < 0 {
			errs[i] = fmt.Errorf("logstore: illegal partition %d", tp.Partition)
			continue
		}
		if l := m.logs[tp]; l != nil {
			logs[i] = l
			continue
		}
		if wait, ok := m.creating[tp]; ok {
			waits, waitOn = append(waits, i), append(waitOn, wait)
			continue
		}
		// The online dir with the fewest logs (Kafka's nextLogDirs over the live log dirs).
		dir := ""
		for _, d := range m.dirs {
			if m.health.online(d) && (dir == "" || m.dirLogs[d] < m.dirLogs[dir]) {
				dir = d
			}
		}
		if dir == "" {
			errs[i] = fmt.Errorf("%w: no online log dir to create %s-%d in", ErrLogDirOffline, tp.Topic, tp.Partition)
			continue
		}
		done := make(chan struct{})
		m.creating[tp] = done
		m.dirLogs[dir]++ // reserved
		mine = append(mine, creation{i, dir, done})
	}
	m.mu.Unlock()

	// The files, in parallel; then one fsync of each dir that got a new log.
	var g errgroup.Group
	g.SetLimit(max(workers, 1))
	for _, c := range mine {
		g.Go(func() error {
			tp := tps[c.i]
			logs[c.i], errs[c.i] = openLog(loadParams{
				tp: tp, dir: filepath.Join(c.dir, fmt.Sprintf("%s-%d", tp.Topic, tp.Partition)), cfg: cfgs[c.i],
				recoveryPoint: 0, logStart: -1, hw: -1, clean: true, cleanerCP: -1, configured: true, log: m.log, now: m.clock.now,
				writeback: m.writeback, directWrites: m.directWrites, checkpointOffsets: m.checkpoints.offsetCheckpointer(c.dir), fs: m.fs,
			})
			return nil
		})
	}
	_ = g.Wait() // each worker's error is in errs
	synced := map[string]error{}
	for _, c := range mine {
		if errs[c.i] != nil && !errors.Is(errs[c.i], ErrLogDirOffline) {
			errs[c.i] = m.health[c.dir].failed(errs[c.i]) // creating its files failed
		}
		if _, ok := synced[c.dir]; !ok && errs[c.i] == nil {
			if err := m.dirSync[c.dir].sync(); err != nil {
				synced[c.dir] = m.health[c.dir].failed(err)
			} else {
				synced[c.dir] = m.health[c.dir].check()
			}
		}
	}

	m.mu.Lock()
	for _, c := range mine {
		tp, l := tps[c.i], logs[c.i]
		err := errs[c.i]
		if err == nil {
			err = synced[c.dir]
		}
		if err == nil && m.closed {
			err = ErrClosed
		}
		delete(m.creating, tp)
		close(c.done)
		if err != nil {
			if l != nil {
				l.Close()
			}
			logs[c.i], errs[c.i] = nil, err
			m.dirLogs[c.dir]--
			continue
		}
		l.health = m.health[c.dir]
		m.logs[tp] = l
		m.dirOf[tp] = c.dir
		m.gauges.registerLog(tp, l)
	}
	m.mu.Unlock()
	for _, c := range mine {
		if errs[c.i] == nil {
			m.log.WithFields(logrus.Fields{"topic": tps[c.i].Topic, "partition": tps[c.i].Partition, "logDir": c.dir}).Debug("created log")
		}
	}

	// The logs that existed apply cfg (SetConfig outside mu, as before); the ones another call
	// was creating are looked up again once it is done (created, or failed: then tried again).
	created := make([]bool, len(tps))
	for _, c := range mine {
		created[c.i] = true
	}
	for i, l := range logs {
		if l != nil && errs[i] == nil && !created[i] {
			l.SetConfig(cfgs[i])
		}
	}
	for k, i := range waits {
		<-waitOn[k]
		logs[i], errs[i] = m.GetOrCreate(tps[i], cfgs[i])
	}
	return logs, errs
}

// All returns a snapshot of every log.
func (m *Manager) All() map[TopicPartition]*Log {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make(map[TopicPartition]*Log, len(m.logs))
	for tp, l := range m.logs {
		out[tp] = l
	}
	return out
}

// Delete closes the log of tp, renames its dir to `<t>-<p>.<uuid>-delete` and removes it
// after file.delete.delay.ms (StopReplica with delete, topic deletion). Absent logs are a no-op.
func (m *Manager) Delete(tp TopicPartition) error {
	m.mu.Lock()
	l := m.logs[tp]
	if l == nil {
		m.mu.Unlock()
		return nil
	}
	delete(m.logs, tp)
	logDir, ok := m.dirOf[tp]
	if ok {
		m.dirLogs[logDir]--
	}
	delete(m.dirOf, tp)
	delete(m.hw, tp)
	m.gauges.unregisterLog(tp)
	m.mu.Unlock()
	delay := l.Config().FileDeleteDelay
	if err := l.Close(); err != nil && !errors.Is(err, ErrClosed) {
		m.log.WithError(err).WithFields(logrus.Fields{"topic": tp.Topic, "partition": tp.Partition}).Warn("closing log before deletion")
	}
	if err := m.health[logDir].check(); err != nil {
		// nothing is renamed or removed in an offline dir (logdir_failure.go): the log is
		// forgotten until the broker restarts, as Kafka forgets the logs of an offline dir
		return err
	}
	var id [16]byte
	if _, err := rand.Read(id[:]); err != nil {
		return err
	}
	target := fmt.Sprintf("%s.%s-delete", l.Dir(), hex.EncodeToString(id[:]))
	// An I/O error on the way takes the dir offline, as Kafka's asyncDelete does (KIP-112).
	if err := m.fs.Rename(l.Dir(), target); err != nil {
		return m.health[logDir].failed(fmt.Errorf("logstore: renaming %s for deletion: %w", l.Dir(), err))
	}
	if err := syncDir(m.fs, filepath.Dir(target)); err != nil {
		return m.health[logDir].failed(fmt.Errorf("logstore: renaming %s for deletion: %w", l.Dir(), err))
	}
	m.log.WithFields(logrus.Fields{"topic": tp.Topic, "partition": tp.Partition}).Info("scheduled log for deletion")
	remove := func() { m.fs.RemoveAll(target) }
	if delay <= 0 {
		remove()
	} else {
		time.AfterFunc(delay, remove)
	}
	return nil
}

// HighWatermark returns tp's HW as read from replication-offset-checkpoint at Open: one map
// lookup, where HighWatermarks copies the whole map (a replica manager creating thousands of
// partitions would otherwise copy it for each).
func (m *Manager) HighWatermark(tp TopicPartition) (int64, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	hw, ok := m.initialHW[tp]
	return hw, ok
}

// HighWatermarks returns the HWs read from replication-offset-checkpoint at Open.
func (m *Manager) HighWatermarks() map[TopicPartition]int64 {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make(map[TopicPartition]int64, len(m.initialHW))
	for tp, hw := range m.initialHW {
		out[tp] = hw
	}
	return out
}

// Close flushes and closes every log, writes the checkpoints, and, if all of that
// succeeded, writes `.kafka_cleanshutdown` in each dir so the next Open skips recovery.
func (m *Manager) Close() error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return ErrClosed
	}
	m.closed = true
	logs := make([]*Log, 0, len(m.logs))
	for _, l := range m.logs {
		logs = append(logs, l)
	}
	c := m.cleaner
	m.mu.Unlock()
	if c != nil {
		c.stop() // before the logs close: an in-progress cleaning aborts
	}
	// Closing flushes each log: done on a bounded worker pool across partitions and dirs
	// (Kafka closes logs on num.recovery.threads.per.data.dir threads per dir).
	var g errgroup.Group
	g.SetLimit(ioWorkers)
	for _, l := range logs {
		g.Go(func() error {
			if err := l.Close(); err != nil && !errors.Is(err, ErrClosed) {
				return err
			}
			return nil
		})
	}
	first := g.Wait() // the first error of a close
	if err := m.Checkpoint(); err != nil && first == nil {
		first = err
	}
	if err := m.CheckpointHighWatermarks(nil); err != nil && first == nil {
		first = err
	}
	if first != nil {
		return first
	}
	// The marker is an empty file: only its presence says anything, so it is created in place
	// (no temporary file to fsync and rename) and made durable by a directory fsync, after the
	// checkpoints' own. A crash before that fsync leaves no marker: recovery runs, as after any
	// crash.
	for _, dir := range m.dirs {
		if !m.health.online(dir) {
			// No marker: the next start recovers this dir's logs (a torn tail is truncated).
			continue
		}
		err := writeFileFS(m.fs, filepath.Join(dir, cleanShutdownFile), nil, 0o644)
		if err == nil {
			err = m.checkpoints.syncDir(dir)
		}
		if err != nil && first == nil {
			first = err
		}
	}
	return first
}

// ioWorkers bounds the goroutines that open, create or close logs at once: enough to overlap
// the file system's latencies (fsync, mmap, directory updates), few enough not to thrash.
const ioWorkers = 8
