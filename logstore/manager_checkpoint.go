package logstore

import (
	"bytes"
	"path/filepath"
	"sync"

	"golang.org/x/sync/errgroup"
)

// logCheckpoints writes a Manager's offset checkpoint files in its log dirs: Kafka's
// LogManager checkpointing (checkpointLogRecoveryOffsets, checkpointLogStartOffsets, the log
// cleaner's cleaner-offset-checkpoint, and the replica manager's replication-offset-checkpoint,
// written here for it by CheckpointHighWatermarks). mu serialises the writes and is taken before
// the Manager's mu, which guards the logs whose offsets are written (docs/design.md, lock order).
type logCheckpoints struct {
	m *Manager

	mu sync.Mutex // serialises checkpoint file writes

	writtenMu sync.Mutex
	written   map[string][]byte // per checkpoint file path, the bytes last written to it (writePerDir)
}

// CheckpointHighWatermarks writes replication-offset-checkpoint in each dir for its logs.
// Partitions absent from hw keep their last checkpointed value. The HWs also bound retention.
func (m *Manager) CheckpointHighWatermarks(hw map[TopicPartition]int64) error {
	m.checkpoints.mu.Lock()
	defer m.checkpoints.mu.Unlock()
	m.mu.Lock()
	for tp, v := range hw {
		if l := m.logs[tp]; l != nil {
			m.hw[tp] = v
			l.SetHighWatermark(v)
		}
	}
	perDir := m.checkpoints.perDir(func(tp TopicPartition, _ *Log) (int64, bool) {
		v, ok := m.hw[tp]
		return v, ok
	})
	m.mu.Unlock()
	return m.checkpoints.writePerDir(replicationCheckpointFile, perDir)
}

// perDir builds one checkpoint map per log dir (m.mu held).
func (c *logCheckpoints) perDir(value func(TopicPartition, *Log) (int64, bool)) map[string]map[TopicPartition]int64 {
	m := c.m
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

// writePerDir writes file in each log dir with that dir's entries (c.mu held). A
// dir whose file already holds exactly these bytes from this manager's last successful
// write of it is skipped: an unchanged checkpoint costs no fsyncs (the replica manager's
// final HW checkpoint and the log manager's at Close were the same file; idle brokers rewrote
// unchanged files every interval). The dirs are written in parallel, their renames made
// durable by a directory fsync shared with concurrent writes (dirsync.go), while the smooth
// writeback waits (writeback.go).
func (c *logCheckpoints) writePerDir(file string, perDir map[string]map[TopicPartition]int64) error {
	m := c.m
	// No writeback starts while these fsyncs run (writebackQueue.fsyncs).
	defer m.writeback.pauseForFsync()()
	var g errgroup.Group
	for dir, entries := range perDir {
		if !m.health.online(dir) {
			continue // nothing is written to an offline dir (logdir_failure.go)
		}
		g.Go(func() error {
			path := filepath.Join(dir, file)
			data := formatOffsetCheckpoint(entries)
			c.writtenMu.Lock()
			same := bytes.Equal(c.written[path], data)
			c.writtenMu.Unlock()
			if same {
				return nil
			}
			err := writeSynced(m.fs, path+".tmp", data)
			if err == nil {
				err = m.fs.Rename(path+".tmp", path)
			}
			if err == nil {
				err = c.syncDir(dir)
			}
			c.writtenMu.Lock()
			if err == nil {
				c.written[path] = data
			} else {
				delete(c.written, path) // unknown now: written again next time
			}
			c.writtenMu.Unlock()
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
func (c *logCheckpoints) syncDir(dir string) error {
	m := c.m
	if d := m.dirSync[dir]; d != nil {
		return d.sync()
	}
	return syncDir(m.fs, dir)
}

// Checkpoint writes recovery-point-offset-checkpoint and log-start-offset-checkpoint.
func (m *Manager) Checkpoint() error {
	m.checkpoints.mu.Lock()
	defer m.checkpoints.mu.Unlock()
	m.mu.RLock()
	type st struct{ rp, ls int64 }
	states := make(map[TopicPartition]st, len(m.logs))
	for tp, l := range m.logs {
		ls := l.status()
		states[tp] = st{ls.recoveryPoint, ls.logStart}
	}
	recovery := m.checkpoints.perDir(func(tp TopicPartition, _ *Log) (int64, bool) { return states[tp].rp, true })
	starts := m.checkpoints.perDir(func(tp TopicPartition, _ *Log) (int64, bool) { return states[tp].ls, true })
	m.mu.RUnlock()
	// The three files are written at once, so their fsyncs overlap and their renames share
	// directory fsyncs (a broker's shutdown waits for them).
	var g errgroup.Group
	g.Go(func() error { return m.checkpoints.writePerDir(recoveryPointCheckpointFile, recovery) })
	g.Go(func() error { return m.checkpoints.writePerDir(logStartCheckpointFile, starts) })
	g.Go(m.checkpoints.writeCleanerCheckpointsLocked)
	return g.Wait()
}

// offsetCheckpointer returns a function that writes dir's recovery-point-offset-checkpoint and
// log-start-offset-checkpoint from its logs' state now: a truncation lowers a log's recovery
// point and has it written before the log takes appends again (Kafka's LogManager.truncateTo
// checkpoints the recovery points of the dir), so that a crash never loads a recovery point above
// batches written since.
func (c *logCheckpoints) offsetCheckpointer(dir string) func() error {
	m := c.m
	return func() error {
		c.mu.Lock()
		defer c.mu.Unlock()
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
			return c.writePerDir(recoveryPointCheckpointFile, map[string]map[TopicPartition]int64{dir: recovery})
		})
		g.Go(func() error {
			return c.writePerDir(logStartCheckpointFile, map[string]map[TopicPartition]int64{dir: starts})
		})
		return g.Wait()
	}
}

// writeCleanerCheckpoints writes cleaner-offset-checkpoint in every log dir for its cleaned logs.
func (c *logCheckpoints) writeCleanerCheckpoints() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.writeCleanerCheckpointsLocked()
}

// writeCleanerCheckpointsLocked is writeCleanerCheckpoints with c.mu held.
func (c *logCheckpoints) writeCleanerCheckpointsLocked() error {
	m := c.m
	m.mu.RLock()
	perDir := c.perDir(func(_ TopicPartition, l *Log) (int64, bool) {
		cp := l.status().cleanerCheckpoint
		return cp, cp >= 0
	})
	m.mu.RUnlock()
	return c.writePerDir(cleanerCheckpointFile, perDir)
}

// writeCorruptionCheckpoint writes dir's recovery-point checkpoint after a corrupt batch was
// found in one of its logs, the dir being offline already (so nothing else writes there any
// more): each log's recovery point, lowered to the base offset of its corrupt segment, so the
// next start recovers that segment. It is the one write to an offline dir: the dir's I/O did
// not fail, its stored data did.
func (c *logCheckpoints) writeCorruptionCheckpoint(dir string) error {
	m := c.m
	c.mu.Lock()
	defer c.mu.Unlock()
	recovery := map[TopicPartition]int64{}
	m.mu.RLock()
	for tp, l := range m.logs {
		if m.dirOf[tp] == dir {
			rp := l.status().recoveryPoint
			if from := l.corrupt.from.Load(); from >= 0 {
				rp = min(rp, from)
			}
			recovery[tp] = rp
		}
	}
	m.mu.RUnlock()
	path := filepath.Join(dir, recoveryPointCheckpointFile)
	c.writtenMu.Lock()
	delete(c.written, path)
	c.writtenMu.Unlock()
	return writeOffsetCheckpoint(m.fs, path, recovery)
}
