package logstore

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	metrics "github.com/rcrowley/go-metrics"
	"github.com/sirupsen/logrus"

	"golang.org/x/sync/errgroup"
)

// Manager owns the log dirs and every partition log in them (Kafka's LogManager).
type Manager struct {
	fs       FS // the file-system seam (fs.go); the OS FS unless a test injects one
	dirs     []string
	brokerID int32
	defaults Config
	log      logrus.FieldLogger

	clockMu sync.RWMutex
	clock   func() time.Time

	mu        sync.RWMutex
	logs      map[TopicPartition]*Log
	dirOf     map[TopicPartition]string
	dirLogs   map[string]int                   // number of logs per dir (dirOf's values counted)
	creating  map[TopicPartition]chan struct{} // logs being created outside mu; closed when done
	dirSync   map[string]*dirSyncer            // group commit of each log dir's fsyncs (set at Open)
	hw        map[TopicPartition]int64         // last HW checkpointed per partition
	initialHW map[TopicPartition]int64         // as read at Open
	closed    bool

	checkpointMu sync.Mutex // serialises checkpoint file writes

	writtenMu sync.Mutex
	written   map[string][]byte // per checkpoint file path, the bytes last written to it (writePerDir)

	cleaner *cleaner // the log cleaner (cleaner.go), nil until StartCleaner; guarded by mu

	metricsReg metrics.Registry // the Log gauges' registry (log_metrics.go); guarded by mu

	writeback *writebackQueue // smooth writeback of active segments (writeback.go)
	// directWrites decides when appends are issued directly (directio.go).
	directWrites *directWriteGate

	// health is each configured dir's online state and failures the failure channel
	// (logdir_failure.go); both are set at Open and never replaced.
	health   map[string]*dirHealth
	failures chan string
}

// Open opens (creating if needed) the log dirs, checks or writes meta.properties, loads every
// `<topic>-<partition>` dir (removing `-delete` dirs), recovers after an unclean shutdown (no
// `.kafka_cleanshutdown` marker: batches past the recovery point are re-validated and torn or
// corrupt tails truncated), removes the marker once loaded, and reads the checkpoints.
func Open(dirs []string, brokerID int32, defaults Config, log logrus.FieldLogger) (*Manager, error) {
	return openManager(dirs, brokerID, defaults, log, time.Now)
}

func openManager(dirs []string, brokerID int32, defaults Config, log logrus.FieldLogger, now func() time.Time) (*Manager, error) {
	return openManagerFS(osFS{}, dirs, brokerID, defaults, log, now)
}

// openManagerFS is openManager on fsys (tests inject file-system errors through it: fs.go).
func openManagerFS(fsys FS, dirs []string, brokerID int32, defaults Config, log logrus.FieldLogger, now func() time.Time) (*Manager, error) {
	if len(dirs) == 0 {
		return nil, errors.New("logstore: no log dirs configured")
	}
	if log == nil {
		l := logrus.New()
		l.Out = io.Discard
		log = l
	}
	m := &Manager{
		fs:        fsOr(fsys),
		dirs:      append([]string(nil), dirs...),
		brokerID:  brokerID,
		defaults:  defaults.sanitized(),
		log:       log.WithField("brokerId", brokerID),
		clock:     now,
		logs:      map[TopicPartition]*Log{},
		dirOf:     map[TopicPartition]string{},
		dirLogs:   map[string]int{},
		written:   map[string][]byte{},
		creating:  map[TopicPartition]chan struct{}{},
		dirSync:   map[string]*dirSyncer{},
		hw:        map[TopicPartition]int64{},
		initialHW: map[TopicPartition]int64{},
		writeback: newWritebackQueue(),
	}
	m.directWrites = newDirectWriteGate(m.log, nil)
	m.newDirHealth()
	for _, dir := range m.dirs {
		m.dirSync[dir] = newDirSyncer(m.fs, dir)
	}
	for _, dir := range m.dirs {
		if err := m.loadDir(dir); err != nil {
			for _, l := range m.logs {
				l.Close()
			}
			return nil, err
		}
	}
	return m, nil
}

func (m *Manager) now() time.Time {
	m.clockMu.RLock()
	defer m.clockMu.RUnlock()
	return m.clock()
}

// setClock replaces the clock (tests).
func (m *Manager) setClock(now func() time.Time) {
	m.clockMu.Lock()
	m.clock = now
	m.clockMu.Unlock()
}

func (m *Manager) loadDir(dir string) error {
	if err := m.fs.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("logstore: creating log dir: %w", err)
	}
	if err := checkMetaProperties(m.fs, dir, m.brokerID); err != nil {
		return err
	}
	dlog := m.log.WithField("logDir", dir)
	marker := filepath.Join(dir, cleanShutdownFile)
	clean := fileExists(m.fs, marker)
	recovery, err := readOffsetCheckpoint(m.fs, filepath.Join(dir, recoveryPointCheckpointFile))
	if err != nil {
		dlog.WithError(err).Warn("unreadable recovery-point-offset-checkpoint; recovering every segment")
		recovery = nil
		clean = false
	}
	starts, err := readOffsetCheckpoint(m.fs, filepath.Join(dir, logStartCheckpointFile))
	if err != nil {
		dlog.WithError(err).Warn("unreadable log-start-offset-checkpoint; log start offsets come from the segments")
		starts = nil
	}
	hws, err := readOffsetCheckpoint(m.fs, filepath.Join(dir, replicationCheckpointFile))
	if err != nil {
		dlog.WithError(err).Warn("unreadable replication-offset-checkpoint; high watermarks unknown")
		hws = nil
	}
	cleaned, err := readOffsetCheckpoint(m.fs, filepath.Join(dir, cleanerCheckpointFile))
	if err != nil {
		dlog.WithError(err).Warn("unreadable cleaner-offset-checkpoint; compacted logs are cleaned from their start")
		cleaned = nil
	}
	entries, err := m.fs.ReadDir(dir)
	if err != nil {
		return err
	}
	// A fresh dir has no marker either; only a dir that holds partitions was shut down uncleanly.
	if !clean && slices.ContainsFunc(entries, func(e os.DirEntry) bool { return e.IsDir() }) {
		dlog.Info("no clean shutdown marker: recovering logs past their recovery points")
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		name := e.Name()
		full := filepath.Join(dir, name)
		if strings.HasSuffix(name, "-delete") {
			dlog.WithField("dir", name).Info("removing partition dir left over from a deletion")
			m.fs.RemoveAll(full)
			continue
		}
		if strings.HasSuffix(name, "-future") {
			continue
		}
		tp, ok := parseTopicPartitionDir(name)
		if !ok {
			dlog.WithField("dir", name).Warn("ignoring a directory that is not <topic>-<partition>")
			continue
		}
		if other, dup := m.dirOf[tp]; dup {
			return fmt.Errorf("logstore: duplicate log directories for %s-%d: %s and %s", tp.Topic, tp.Partition, other, dir)
		}
		rp, hasRP := recovery[tp]
		if !hasRP {
			rp = 0
		}
		ls, ok := starts[tp]
		if !ok {
			ls = -1
		}
		hw, ok := hws[tp]
		if !ok {
			hw = -1
		}
		cp, ok := cleaned[tp]
		if !ok {
			cp = -1
		}
		// the topic's own config arrives with GetOrCreate; until then the log is neither
		// cleaned nor subject to time/size retention
		l, err := openLog(loadParams{
			tp: tp, dir: full, cfg: m.defaults, recoveryPoint: rp, logStart: ls, hw: hw,
			clean: clean, cleanerCP: cp, log: m.log, now: m.now, writeback: m.writeback,
			directWrites: m.directWrites, checkpointOffsets: m.offsetCheckpointer(dir), fs: m.fs,
		})
		if err != nil {
			return fmt.Errorf("logstore: loading %s: %w", full, err)
		}
		l.health = m.health[dir]
		m.logs[tp] = l
		m.dirOf[tp] = dir
		m.dirLogs[dir]++
		if hw >= 0 {
			m.hw[tp] = hw
			m.initialHW[tp] = hw
		}
	}
	if clean {
		if err := m.fs.Remove(marker); err != nil && !os.IsNotExist(err) {
			return err
		}
	}
	return nil
}

// parseTopicPartitionDir splits `<topic>-<partition>` at the last dash.
func parseTopicPartitionDir(name string) (TopicPartition, bool) {
	i := strings.LastIndexByte(name, '-')
	if i <= 0 || i == len(name)-1 {
		return TopicPartition{}, false
	}
	p, err := strconv.ParseInt(name[i+1:], 10, 32)
	if err != nil || p < 0 || validTopic(name[:i]) != nil {
		return TopicPartition{}, false
	}
	return TopicPartition{Topic: name[:i], Partition: int32(p)}, true
}

// validTopic applies Kafka's topic name rule ([a-zA-Z0-9._-], 1..249, not "." or ".."), which
// also keeps names safe as directory names and checkpoint fields.
func validTopic(t string) error {
	if t == "" || t == "." || t == ".." || len(t) > 249 {
		return fmt.Errorf("logstore: illegal topic name %q", t)
	}
	for _, c := range t {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("logstore: illegal character %q in topic name %q", c, t)
		}
	}
	return nil
}

// checkMetaProperties reads meta.properties (Java properties: version=0, broker.id=N,
// optional cluster.id) and fails on a broker.id mismatch; it writes the file if absent.
func checkMetaProperties(fsys FS, dir string, brokerID int32) error {
	path := filepath.Join(dir, metaPropertiesFile)
	data, err := readFileFS(fsys, path)
	if os.IsNotExist(err) {
		content := fmt.Sprintf("#\n#%s\nversion=0\nbroker.id=%d\n", time.Now().UTC().Format(time.UnixDate), brokerID)
		return writeFileAtomic(fsys, path, []byte(content))
	}
	if err != nil {
		return err
	}
	props := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(string(data)))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			k, v, ok = strings.Cut(line, ":")
		}
		if ok {
			props[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	if v, ok := props["version"]; ok && v != "0" {
		return fmt.Errorf("logstore: %s: unsupported meta.properties version %s", path, v)
	}
	if v, ok := props["broker.id"]; ok {
		stored, err := strconv.ParseInt(v, 10, 32)
		if err != nil {
			return fmt.Errorf("logstore: %s: malformed broker.id %q", path, v)
		}
		if int32(stored) != brokerID {
			return fmt.Errorf("logstore: configured broker.id %d doesn't match stored broker.id %d in %s", brokerID, stored, path)
		}
	}
	return nil
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
			if m.dirOnline(d) && (dir == "" || m.dirLogs[d] < m.dirLogs[dir]) {
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
				recoveryPoint: 0, logStart: -1, hw: -1, clean: true, cleanerCP: -1, configured: true, log: m.log, now: m.now,
				writeback: m.writeback, directWrites: m.directWrites, checkpointOffsets: m.offsetCheckpointer(c.dir), fs: m.fs,
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
		m.registerLogMetricsLocked(tp, l)
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
	m.unregisterLogMetricsLocked(tp)
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

// CheckpointHighWatermarks writes replication-offset-checkpoint in each dir for its logs.
// Partitions absent from hw keep their last checkpointed value. The HWs also bound retention.
func (m *Manager) CheckpointHighWatermarks(hw map[TopicPartition]int64) error {
	m.checkpointMu.Lock()
	defer m.checkpointMu.Unlock()
	m.mu.Lock()
	for tp, v := range hw {
		if l := m.logs[tp]; l != nil {
			m.hw[tp] = v
			l.SetHighWatermark(v)
		}
	}
	perDir := m.perDir(func(tp TopicPartition, _ *Log) (int64, bool) {
		v, ok := m.hw[tp]
		return v, ok
	})
	m.mu.Unlock()
	return m.writePerDir(replicationCheckpointFile, perDir)
}

// perDir builds one checkpoint map per log dir (m.mu held).
func (m *Manager) perDir(value func(TopicPartition, *Log) (int64, bool)) map[string]map[TopicPartition]int64 {
	out := make(map[string]map[TopicPartition]int64, len(m.dirs))
	for _, d := range m.dirs {
		out[d] = map[TopicPartition]int64{}
	}
	for tp, l := range m.logs {
		if v, ok := value(tp, l); ok {
			out[m.dirOf[tp]][tp] = v
		}
	}
	return out
}

// writePerDir writes file in each log dir with that dir's entries (checkpointMu held). A
// dir whose file already holds exactly these bytes from this manager's last successful
// write of it is skipped: an unchanged checkpoint costs no fsyncs (the replica manager's
// final HW checkpoint and the log manager's at Close were the same file; idle brokers rewrote
// unchanged files every interval). The dirs are written in parallel, their renames made
// durable by a directory fsync shared with concurrent writes (dirsync.go), while the smooth
// writeback waits (writeback.go).
func (m *Manager) writePerDir(file string, perDir map[string]map[TopicPartition]int64) error {
	// No writeback starts while these fsyncs run (writebackQueue.fsyncs).
	defer m.writeback.pauseForFsync()()
	var g errgroup.Group
	for dir, entries := range perDir {
		if !m.dirOnline(dir) {
			continue // nothing is written to an offline dir (logdir_failure.go)
		}
		g.Go(func() error {
			path := filepath.Join(dir, file)
			data := formatOffsetCheckpoint(entries)
			m.writtenMu.Lock()
			same := bytes.Equal(m.written[path], data)
			m.writtenMu.Unlock()
			if same {
				return nil
			}
			err := writeSynced(m.fs, path+".tmp", data)
			if err == nil {
				err = m.fs.Rename(path+".tmp", path)
			}
			if err == nil {
				err = m.syncDir(dir)
			}
			m.writtenMu.Lock()
			if err == nil {
				m.written[path] = data
			} else {
				delete(m.written, path) // unknown now: written again next time
			}
			m.writtenMu.Unlock()
			if err != nil {
				m.log.WithError(err).WithField("logDir", dir).Errorf("writing %s", file)
				if h := m.health[dir]; h != nil {
					err = h.failed(err)
				}
			}
			return err
		})
	}
	return g.Wait()
}

// syncDir fsyncs a log dir with group commit (dirsync.go); a dir not opened by this manager
// directly.
func (m *Manager) syncDir(dir string) error {
	if d := m.dirSync[dir]; d != nil {
		return d.sync()
	}
	return syncDir(m.fs, dir)
}

// Checkpoint writes recovery-point-offset-checkpoint and log-start-offset-checkpoint.
func (m *Manager) Checkpoint() error {
	m.checkpointMu.Lock()
	defer m.checkpointMu.Unlock()
	m.mu.RLock()
	type st struct{ rp, ls int64 }
	states := make(map[TopicPartition]st, len(m.logs))
	for tp, l := range m.logs {
		ls := l.status()
		states[tp] = st{ls.recoveryPoint, ls.logStart}
	}
	recovery := m.perDir(func(tp TopicPartition, _ *Log) (int64, bool) { return states[tp].rp, true })
	starts := m.perDir(func(tp TopicPartition, _ *Log) (int64, bool) { return states[tp].ls, true })
	m.mu.RUnlock()
	// The three files are written at once, so their fsyncs overlap and their renames share
	// directory fsyncs (a broker's shutdown waits for them).
	var g errgroup.Group
	g.Go(func() error { return m.writePerDir(recoveryPointCheckpointFile, recovery) })
	g.Go(func() error { return m.writePerDir(logStartCheckpointFile, starts) })
	g.Go(m.writeCleanerCheckpointsLocked)
	return g.Wait()
}

// offsetCheckpointer returns a function that writes dir's recovery-point-offset-checkpoint and
// log-start-offset-checkpoint from its logs' state now: a truncation lowers a log's recovery
// point and has it written before the log takes appends again (Kafka's LogManager.truncateTo
// checkpoints the recovery points of the dir), so that a crash never loads a recovery point above
// batches written since.
func (m *Manager) offsetCheckpointer(dir string) func() error {
	return func() error {
		m.checkpointMu.Lock()
		defer m.checkpointMu.Unlock()
		recovery, starts := map[TopicPartition]int64{}, map[TopicPartition]int64{}
		m.mu.RLock()
		for tp, l := range m.logs {
			if m.dirOf[tp] == dir {
				ls := l.status()
				recovery[tp], starts[tp] = ls.recoveryPoint, ls.logStart
			}
		}
		m.mu.RUnlock()
		var g errgroup.Group
		g.Go(func() error {
			return m.writePerDir(recoveryPointCheckpointFile, map[string]map[TopicPartition]int64{dir: recovery})
		})
		g.Go(func() error {
			return m.writePerDir(logStartCheckpointFile, map[string]map[TopicPartition]int64{dir: starts})
		})
		return g.Wait()
	}
}

// RunBackground runs retention every retentionCheck (log.retention.check.interval.ms),
// time-based flushes (log.flush.interval.ms) and the recovery-point / log-start checkpoints
// every checkpointInterval, until ctx is done. A non-positive interval disables its task.
func (m *Manager) RunBackground(ctx context.Context, retentionCheck, checkpointInterval time.Duration) {
	tick := func(d time.Duration) (<-chan time.Time, func()) {
		if d <= 0 {
			return nil, func() {}
		}
		t := time.NewTicker(d)
		return t.C, t.Stop
	}
	retC, stop1 := tick(retentionCheck)
	defer stop1()
	cpC, stop2 := tick(checkpointInterval)
	defer stop2()
	flushEvery := time.Second
	if fi := m.defaults.FlushInterval; fi > 0 && fi < flushEvery {
		flushEvery = fi
	}
	flushC, stop3 := tick(flushEvery)
	defer stop3()
	go m.runScrub(ctx) // segments loaded without recovery (scrub.go)
	for {
		select {
		case <-ctx.Done():
			return
		case <-retC:
			m.runRetention()
		case <-cpC:
			if err := m.Checkpoint(); err != nil {
				m.log.WithError(err).Warn("writing offset checkpoints")
			}
		case <-flushC:
			now := m.now()
			for _, l := range m.All() {
				if l.Offline() {
					continue
				}
				if err := l.flusher.maybeTimeFlush(now); err != nil && !errors.Is(err, ErrClosed) {
					l.log.WithError(err).Warn("time-based flush")
				}
			}
		}
	}
}

// runRetention applies DeleteOldSegments to every log whose topic configuration is known (a
// log loaded at Open waits for GetOrCreate, so a compacted topic never meets the broker's
// delete policy).
func (m *Manager) runRetention() {
	now := m.now()
	for _, l := range m.All() {
		if !l.status().configured || l.Offline() {
			continue
		}
		if _, err := l.DeleteOldSegments(now); err != nil && !errors.Is(err, ErrClosed) {
			l.log.WithError(err).Warn("retention")
		}
	}
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
		if !m.dirOnline(dir) {
			// No marker: the next start recovers this dir's logs (a torn tail is truncated).
			continue
		}
		err := writeFileFS(m.fs, filepath.Join(dir, cleanShutdownFile), nil, 0o644)
		if err == nil {
			err = m.syncDir(dir)
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
