package logstore

import (
	"math"
	"os"
	"path/filepath"
	"sync"

	"github.com/sirupsen/logrus"
)

// leaderEpochs is a log's leader epoch cache together with its leader-epoch-checkpoint file
// (Kafka's LeaderEpochFileCache, split here into the pure epochCache and this file wrapper).
// The cache is guarded by the Log's mu; the file is written under appendMu (or before the log
// is shared), from a snapshot taken under mu, so readers never wait for the write.
type leaderEpochs struct {
	epochCache
	path string // <partition dir>/leader-epoch-checkpoint

	// unsyncedMu guards unsyncedFrom: the smallest start offset of an entry whose checkpoint
	// rename is not yet durable (persistDeferred), noUnsynced if none.
	unsyncedMu   sync.Mutex
	unsyncedFrom int64
}

// noUnsynced: every checkpoint rename is durable.
const noUnsynced = math.MaxInt64

// load fills the cache from the checkpoint file; an unreadable file leaves the cache empty
// (recovery rebuilds the entries of the batches it re-validates).
func (e *leaderEpochs) load(log logrus.FieldLogger) {
	ents, err := readEpochCheckpoint(e.path)
	if err != nil {
		log.WithError(err).Warn("unreadable leader-epoch-checkpoint; starting with an empty leader epoch cache")
		return
	}
	for _, x := range ents {
		e.assign(x.Epoch, x.StartOffset)
	}
}

// persist writes entries (a snapshot of the cache) to the checkpoint file atomically.
func (e *leaderEpochs) persist(entries []EpochEntry) error {
	return writeFileAtomic(e.path, formatEpochCheckpoint(entries))
}

// persistDeferred writes entries as persist does, the file fsynced and renamed over the old
// one (Kafka 2.4's checkpoint write, docs/kafka-facts.md section 6), but leaves the fsync of
// the partition directory that makes the rename durable to syncBefore, for entries starting at
// from or later. Until a batch at or after from is below the recovery point, losing the rename
// in a crash loses nothing recovery would not rebuild: the batches above the recovery point
// are re-validated and their epochs re-entered, and an entry at or after the LEO (an epoch with
// no batch yet) is dropped by the loader anyway (truncateFromEnd). A new leader's checkpoint (a LeaderAndIsr for a new topic makes thousands) so
// costs one fsync instead of two (docs/performance.md, "Controller at scale").
func (e *leaderEpochs) persistDeferred(entries []EpochEntry, from int64) error {
	if err := writeSynced(e.path+".tmp", formatEpochCheckpoint(entries)); err != nil {
		return err
	}
	if err := os.Rename(e.path+".tmp", e.path); err != nil {
		return err
	}
	e.unsyncedMu.Lock()
	e.unsyncedFrom = min(e.unsyncedFrom, from)
	e.unsyncedMu.Unlock()
	return nil
}

// syncBefore makes the deferred renames durable (one fsync of the partition directory) when
// an entry they wrote starts below offset: called before the recovery point is raised to
// offset. The caller must have read offset after the appends it covers, so that the
// persistDeferred before those appends is seen here.
func (e *leaderEpochs) syncBefore(offset int64) error {
	e.unsyncedMu.Lock()
	from := e.unsyncedFrom
	if from >= offset {
		e.unsyncedMu.Unlock()
		return nil
	}
	e.unsyncedFrom = noUnsynced
	e.unsyncedMu.Unlock()
	if err := syncDir(filepath.Dir(e.path)); err != nil {
		e.unsyncedMu.Lock()
		e.unsyncedFrom = min(e.unsyncedFrom, from)
		e.unsyncedMu.Unlock()
		return err
	}
	return nil
}

// LatestEpoch returns the latest cached leader epoch.
func (l *Log) LatestEpoch() (int32, bool) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	e, ok := l.epochs.latest()
	return e.Epoch, ok
}

// AssignEpochStartOffset records (epoch -> startOffset) with epochCache.assign's semantics;
// makeLeader records (new epoch -> LEO) (KIP-279 PR #5678). The cache is
// persisted to leader-epoch-checkpoint on every change, the directory fsync deferred until a
// flush needs it (persistDeferred).
func (l *Log) AssignEpochStartOffset(epoch int32, startOffset int64) {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	l.mu.Lock()
	changed := l.epochs.assign(epoch, startOffset)
	epochs := l.epochs.snapshot()
	l.mu.Unlock()
	if changed {
		// The entries an assign can change start at startOffset or later.
		if err := l.epochs.persistDeferred(epochs, startOffset); err != nil {
			l.log.WithError(err).WithField("leaderEpoch", epoch).Error("writing leader-epoch-checkpoint")
		}
	}
}

// EndOffsetForEpoch answers OffsetsForLeaderEpoch (KIP-101/KIP-279): the largest cached epoch
// <= requested and its end offset, which is the start offset of the next larger epoch, or
// the LEO for the latest epoch. See epochCache.endOffsetFor for the edge cases.
func (l *Log) EndOffsetForEpoch(epoch int32) (int32, int64) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.epochs.endOffsetFor(epoch, l.leo)
}

// EpochEntries returns a copy of the leader epoch cache.
func (l *Log) EpochEntries() []EpochEntry {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.epochs.snapshot()
}
