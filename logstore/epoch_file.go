package logstore

import (
	"fmt"
	"math"
	"sync"

	"github.com/sirupsen/logrus"
)

// leaderEpochs is a log's leader epoch cache together with its leader-epoch-checkpoint file
// (Kafka's LeaderEpochFileCache, split here into the pure epochCache and this file wrapper).
// The cache is guarded by the Log's mu; the file is written from a snapshot taken under mu, so
// readers never wait for the write: by persist under appendMu (or before the log is shared),
// or, for a snapshot persistDeferred left pending, by syncBefore under flushMu.
type leaderEpochs struct {
	epochCache
	path string // <partition dir>/leader-epoch-checkpoint
	fs   FS     // nil: the OS FS (fs.go)

	// fileMu serialises the writes of the file and guards pending and pendingFrom: the latest
	// snapshot persistDeferred left unwritten (nil if none), and the smallest start offset of
	// an entry it changed since the file was last written (noPending if none).
	fileMu      sync.Mutex
	pending     []EpochEntry
	pendingFrom int64
}

// noPending: the file holds the cache (as far as persist and persistDeferred were told).
const noPending = math.MaxInt64

// load fills the cache from the checkpoint file; a malformed file leaves the cache empty
// (recovery rebuilds the entries of the batches it re-validates). A file that cannot be read
// (an I/O error) fails the load: the entries of the batches below the recovery point would be
// lost.
func (e *leaderEpochs) load(log logrus.FieldLogger) error {
	ents, err := readEpochCheckpoint(fsOr(e.fs), e.path)
	if isIOError(err) {
		return err
	}
	if err != nil {
		log.WithError(err).Warn("unreadable leader-epoch-checkpoint; starting with an empty leader epoch cache")
		return nil
	}
	for _, x := range ents {
		e.assign(x.Epoch, x.StartOffset)
	}
	return nil
}

// persist writes entries (a snapshot of the cache) to the checkpoint file atomically and
// durably (a .tmp file, fsynced, renamed over the old one, the directory fsynced: Kafka 2.4's
// checkpoint write, docs/kafka-facts.md section 6). The snapshot is the cache's latest (its
// callers hold appendMu, as persistDeferred's do), so it replaces a pending one.
func (e *leaderEpochs) persist(entries []EpochEntry) error {
	e.fileMu.Lock()
	defer e.fileMu.Unlock()
	if err := writeFileAtomic(fsOr(e.fs), e.path, formatEpochCheckpoint(entries)); err != nil {
		return err
	}
	e.pending, e.pendingFrom = nil, noPending
	return nil
}

// persistDeferred records entries, a snapshot that differs from the last one written only by
// entries added at offset from or later (a new leader's start offset, or appended batches from
// the first that changed the cache; nothing removed), to be written by the flush that raises the
// recovery point past from (syncBefore), not now. A crash before that flush leaves the file as it
// was, and that loses nothing recovery would not rebuild: recovery re-validates every batch from
// the recovery point's segment on and re-enters their rising epochs (as Kafka's
// LogSegment.recover), which adds the same entries (its first assign drops whatever the file holds
// at or after that segment's first batch, the added entries with it), and an entry at or after the
// LEO (an epoch with no batch yet) is dropped by the loader anyway (truncateFromEnd). A change that
// removes entries is written at once (persist). A new leader's entry (a LeaderAndIsr for a new topic makes
// thousands, each at the empty log's offset 0) so costs no file write and no fsync until its
// first batches are flushed, at a segment roll or a clean shutdown (docs/performance.md,
// "Controller at scale").
func (e *leaderEpochs) persistDeferred(entries []EpochEntry, from int64) {
	e.fileMu.Lock()
	e.pending = entries
	e.pendingFrom = min(e.pendingFrom, from)
	e.fileMu.Unlock()
}

// persistChange writes entries, the cache after assigns for offset from or later, as the
// change demands: at once when they removed entries (persist), else by the flush past from
// (persistDeferred).
func (e *leaderEpochs) persistChange(entries []EpochEntry, from int64, removed bool) error {
	if removed {
		return e.persist(entries)
	}
	e.persistDeferred(entries, from)
	return nil
}

// syncBefore writes a pending snapshot (as persist does) when an entry it changed starts
// below offset: called before the recovery point is raised to offset. The caller must have
// read offset after the appends it covers, so that the persistDeferred before those appends
// is seen here.
func (e *leaderEpochs) syncBefore(offset int64) error {
	e.fileMu.Lock()
	defer e.fileMu.Unlock()
	if e.pendingFrom >= offset || e.pending == nil {
		return nil
	}
	if err := writeFileAtomic(fsOr(e.fs), e.path, formatEpochCheckpoint(e.pending)); err != nil {
		return err
	}
	e.pending, e.pendingFrom = nil, noPending
	return nil
}

// LeaderEpochCache is a log's leader epoch cache as the replica manager and the fetcher use it
// (Kafka's Log.leaderEpochCache, a LeaderEpochFileCache): a handle on the Log that takes the
// log's locks (the cache is guarded by its mu, written under its appendMu).
type LeaderEpochCache struct{ l *Log }

// LeaderEpochCache returns the log's leader epoch cache.
func (l *Log) LeaderEpochCache() LeaderEpochCache { return LeaderEpochCache{l} }

// LatestEpoch returns the latest cached leader epoch.
func (c LeaderEpochCache) LatestEpoch() (int32, bool) {
	l := c.l
	l.mu.RLock()
	defer l.mu.RUnlock()
	e, ok := l.epochs.latest()
	return e.Epoch, ok
}

// Assign records (epoch -> startOffset) with epochCache.assign's semantics; makeLeader records
// (new epoch -> LEO) (KIP-279 PR #5678). A change of the cache is written to
// leader-epoch-checkpoint by the flush that needs it (persistDeferred).
func (c LeaderEpochCache) Assign(epoch int32, startOffset int64) {
	l := c.l
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if l.health.check() != nil {
		return // offline dir: nothing is written to it again (logdir_failure.go)
	}
	l.mu.Lock()
	changed, removed := l.epochs.assignTracked(epoch, startOffset)
	epochs := l.epochs.snapshot()
	l.mu.Unlock()
	if changed {
		if err := l.epochs.persistChange(epochs, startOffset, removed); err != nil {
			// an I/O error on the dir: offline (KIP-112), as Kafka's checkpoint write does
			_ = l.health.failed(fmt.Errorf("logstore: writing leader-epoch-checkpoint of %s (leader epoch %d): %w", l.dir, epoch, err))
		}
	}
}

// EndOffsetFor answers OffsetsForLeaderEpoch (KIP-101/KIP-279): the largest cached epoch <=
// requested and its end offset, which is the start offset of the next larger epoch, or the LEO
// for the latest epoch. See epochCache.endOffsetFor for the edge cases.
func (c LeaderEpochCache) EndOffsetFor(epoch int32) (int32, int64) {
	l := c.l
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.epochs.endOffsetFor(epoch, l.leo)
}

// EpochEntries returns a copy of the leader epoch cache.
func (c LeaderEpochCache) EpochEntries() []EpochEntry {
	l := c.l
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.epochs.snapshot()
}
