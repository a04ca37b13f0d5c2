package logstore

import "github.com/sirupsen/logrus"

// leaderEpochs is a log's leader epoch cache together with its leader-epoch-checkpoint file
// (Kafka's LeaderEpochFileCache, split here into the pure epochCache and this file wrapper).
// The cache is guarded by the Log's mu; the file is written under appendMu (or before the log
// is shared), from a snapshot taken under mu, so readers never wait for the write.
type leaderEpochs struct {
	epochCache
	path string // <partition dir>/leader-epoch-checkpoint
}

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

// LatestEpoch returns the latest cached leader epoch.
func (l *Log) LatestEpoch() (int32, bool) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	e, ok := l.epochs.latest()
	return e.Epoch, ok
}

// AssignEpochStartOffset records (epoch -> startOffset) with epochCache.assign's semantics;
// makeLeader records (new epoch -> LEO) (KIP-279 PR #5678). The cache is
// persisted to leader-epoch-checkpoint on every change.
func (l *Log) AssignEpochStartOffset(epoch int32, startOffset int64) {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	l.mu.Lock()
	changed := l.epochs.assign(epoch, startOffset)
	epochs := l.epochs.snapshot()
	l.mu.Unlock()
	if changed {
		if err := l.epochs.persist(epochs); err != nil {
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
