package logstore

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sirupsen/logrus"
)

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
		clock:     managerClock{clock: now},
		logs:      map[TopicPartition]*Log{},
		dirOf:     map[TopicPartition]string{},
		dirLogs:   map[string]int{},
		creating:  map[TopicPartition]chan struct{}{},
		dirSync:   map[string]*dirSyncer{},
		hw:        map[TopicPartition]int64{},
		initialHW: map[TopicPartition]int64{},
		writeback: newWritebackQueue(),
	}
	m.checkpoints.m, m.checkpoints.written = m, map[string][]byte{}
	m.directWrites = newDirectWriteGate(m.log, nil)
	m.health, m.failures = newDirHealths(m.dirs, m.log, m.checkpoints.writeCorruptionCheckpoint)
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
			clean: clean, cleanerCP: cp, log: m.log, now: m.clock.now, writeback: m.writeback,
			directWrites: m.directWrites, checkpointOffsets: m.checkpoints.offsetCheckpointer(dir), fs: m.fs,
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
