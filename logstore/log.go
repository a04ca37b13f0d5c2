package logstore

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
)

// AppendInfo describes one append: offsets of the first and last record, the largest batch
// timestamp, the record count and the bytes written. FirstOffset is -1 for an empty append.
// LogAppendTime is the leader's clock stamped on the batches (message.timestamp.type
// LogAppendTime), else -1; only AppendAsLeader sets it.
type AppendInfo struct {
	FirstOffset, LastOffset, MaxTimestamp int64
	NumRecords                            int
	Bytes                                 int
	LogAppendTime                         int64
}

// Log is one partition's log (S1). It is safe for concurrent use: appends, truncations and
// retention are serialised; reads run concurrently with each other and with the file write
// of an append (see the package comment for the lock order).
//
// Log holds the locks and the published offsets and is the API the replica manager uses; the
// work is done by the parts it owns, each under the locks named at its field: the segment list
// and its lookups (segmentList, segments.go), the leader epoch cache and its checkpoint file
// (leaderEpochs, epoch_file.go, whose API is LeaderEpochCache), the flush policy and fsyncs
// (logFlusher, flush.go), the corrupt batches found below the recovery point and the scrubbing
// of unverified segments (logCorruption, verify.go and scrub.go), the log cleaner's state in
// this log (cleaningState, cleaner_swap.go) and, at open, the loader that recovers the segments
// (logLoader, loader.go). Appends are in append.go, truncation in truncate.go and
// truncate_swap.go (PreparedTruncation), retention in retention.go.
type Log struct {
	logDir
	fs  FS // the file-system seam (fs.go); never nil
	log logrus.FieldLogger
	now func() time.Time

	// truncMu serialises truncations, from PrepareTruncateTo to Commit or Abort (taken before
	// appendMu).
	truncMu  sync.Mutex
	appendMu sync.Mutex
	flushMu  sync.Mutex
	mu       sync.RWMutex

	// checkpointOffsets writes the recovery-point and log-start checkpoints of the log's dir
	// (the Manager's; nil for a log without one, in tests). A truncation calls it before
	// returning.
	checkpointOffsets func() error
	// truncHook (tests) is called before each step of a truncation (truncate_swap.go).
	truncHook truncationHook

	// guarded by mu (writers also hold appendMu)
	cfg           Config
	segs          segmentList // sorted by base offset; the last is the active segment
	leo           int64
	logStart      int64
	recoveryPoint int64
	hw            int64 // last high watermark handed in (retention and cleaning bound), -1 if unknown
	epochs        leaderEpochs
	closed        bool
	configured    bool // the topic's config was applied (GetOrCreate); logs loaded at Open wait for it

	// log cleaner state (cleaner_swap.go), guarded by mu
	cleaning cleaningState

	// guarded by appendMu
	producers producerState

	flusher logFlusher // flush accounting guarded by appendMu

	writeback *writebackQueue // the Manager's (writeback.go); nil: the kernel's writeback alone
	// writebackRing: the active segment's writeback marks (writeback.go), guarded by appendMu.
	writebackRing *writebackRing
	// recent: where the active segment's last batches start (recent.go); appendMu and mu to
	// write, mu to read.
	recent *recentBatches
	// directWrites is the Manager's gate for appends issued directly (directio.go); nil:
	// every append goes through os.File.
	directWrites *directWriteGate
	// health is the log dir's online state (logdir_failure.go), set by the Manager before the
	// log is published; nil for a standalone log.
	health *dirHealth
	// corrupt: the corrupt batches found below the recovery point, and the scrubbing of the
	// segments loaded without recovery (verify.go, scrub.go).
	corrupt logCorruption
}

// logDir names a partition's log directory `<topic>-<partition>`.
type logDir struct {
	tp  TopicPartition
	dir string
}

// TopicPartition returns the partition this log belongs to.
func (d logDir) TopicPartition() TopicPartition { return d.tp }

// Dir returns the partition directory.
func (d logDir) Dir() string { return d.dir }

// openLog loads (or creates) the log in p.dir. After an unclean shutdown every segment at or
// past the recovery point is re-validated and a torn or corrupt tail is truncated; segments
// after a truncated one are dropped (LogLoader).
func openLog(p loadParams) (*Log, error) {
	if p.now == nil {
		p.now = time.Now
	}
	if p.log == nil {
		l := logrus.New()
		l.Out = io.Discard
		p.log = l
	}
	p.fs = fsOr(p.fs)
	l := &Log{
		logDir:       logDir{tp: p.tp, dir: p.dir},
		fs:           p.fs,
		log:          p.log.WithFields(logrus.Fields{"topic": p.tp.Topic, "partition": p.tp.Partition}),
		now:          p.now,
		writeback:    p.writeback,
		directWrites: p.directWrites,
		cfg:          p.cfg.sanitized(),
		hw:           p.hw,
		epochs:       leaderEpochs{path: filepath.Join(p.dir, leaderEpochCheckpointFile), fs: p.fs, pendingFrom: noPending},
		producers:    producerState{},
		configured:   p.configured,
		cleaning:     cleaningState{checkpoint: p.cleanerCP},

		checkpointOffsets: p.checkpointOffsets,
	}
	l.flusher.l = l
	l.corrupt.l = l
	l.corrupt.from.Store(-1)
	ld := &logLoader{dir: l.dir, fs: l.fs, log: l.log, now: l.now, interval: l.cfg.IndexIntervalBytes, epochs: &l.epochs}
	var err error
	// A directory this call creates is empty: nothing to recover, no leftovers, no checkpoint
	// to read, so the new log needs only its first segment file (a LeaderAndIsr for a new
	// topic creates thousands of logs, and every file-system call on this path is paid once per
	// partition: docs/performance.md, "Controller at scale"). An existing directory is loaded.
	if mkErr := l.fs.Mkdir(p.dir, 0o755); mkErr == nil {
		err = ld.loadNew(p)
	} else {
		if !errors.Is(mkErr, fs.ErrExist) {
			if !errors.Is(mkErr, fs.ErrNotExist) {
				return nil, mkErr // an I/O error, not a missing parent
			}
			if err := l.fs.MkdirAll(p.dir, 0o755); err != nil {
				return nil, err
			}
		}
		err = ld.load(p)
	}
	l.segs, l.leo, l.logStart, l.recoveryPoint = ld.segs, ld.leo, ld.logStart, ld.recoveryPoint
	if err != nil {
		l.segs.closeFiles()
		return nil, err
	}
	l.producers = l.segs.rebuildProducerState(l.log)
	l.flusher.lastFlush = l.now()
	return l, nil
}

// Config returns the log's configuration.
func (l *Log) Config() Config {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.cfg
}

// SetConfig replaces the configuration (a topic config change); it applies to the next append.
func (l *Log) SetConfig(c Config) {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	l.mu.Lock()
	l.cfg = c.sanitized()
	l.configured = true
	l.mu.Unlock()
}

// LogEndOffset is the LEO: the offset the next appended record gets.
func (l *Log) LogEndOffset() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.leo
}

// LogStartOffset is the first offset that can be read.
func (l *Log) LogStartOffset() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.logStart
}

// SetHighWatermark tells the log the partition's HW; retention never deletes a segment that
// ends above it (Kafka's deletableSegments bound). The manager sets it from
// CheckpointHighWatermarks; without one, retention is bounded by the LEO only.
func (l *Log) SetHighWatermark(hw int64) {
	l.mu.Lock()
	l.hw = hw
	l.mu.Unlock()
}

// Read returns the raw stored bytes of whole batches, starting with the batch that contains
// startOffset (located through the sparse offset index). It stops before maxBytes would be
// exceeded, except that the first batch is returned whole when minOneBatch (KIP-74), and it
// never returns a batch that reaches maxOffset (last offset >= maxOffset): reads stop at the
// batch that contains the HW for consumers (S7), as Kafka's read up to the HW's position does;
// followers pass the LEO, which no stored batch reaches. startOffset below the log start or above the LEO is ErrOffsetOutOfRange;
// startOffset == LEO returns no bytes.
func (l *Log) Read(startOffset int64, maxBytes int32, maxOffset int64, minOneBatch bool) ([]byte, error) {
	b, err := func() ([]byte, error) {
		l.mu.RLock()
		defer l.mu.RUnlock()
		if empty, err := l.readableLocked(startOffset, maxOffset); empty || err != nil {
			return nil, err
		}
		return l.segs.read(startOffset, max(int64(maxBytes), 0), maxOffset, l.leo, minOneBatch, l.recent)
	}()
	return b, l.corrupt.check(err) // a bad batch below the recovery point (verify.go)
}

// readableLocked checks a read from startOffset that stops before maxOffset (mu held for
// reading): ErrClosed, the dir's offline error or ErrOffsetOutOfRange (startOffset below the log
// start or above the LEO), else whether it reads nothing (at the LEO, or at or above maxOffset).
func (l *Log) readableLocked(startOffset, maxOffset int64) (empty bool, err error) {
	if l.closed {
		return false, ErrClosed
	}
	if err := l.health.check(); err != nil {
		return false, err
	}
	if startOffset < l.logStart || startOffset > l.leo {
		return false, fmt.Errorf("%w: offset %d, log start %d, log end %d", ErrOffsetOutOfRange, startOffset, l.logStart, l.leo)
	}
	return startOffset == l.leo || startOffset >= maxOffset, nil
}

// OffsetForTimestamp finds the first record whose timestamp is >= ts (ListOffsets by time),
// through the time index. For an uncompressed batch it decodes that one batch's records to
// return the exact record; for a compressed batch it returns the batch's base offset and
// max timestamp.
func (l *Log) OffsetForTimestamp(ts int64) (offset int64, timestamp int64, found bool) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed || l.health.check() != nil {
		return -1, -1, false
	}
	return l.segs.offsetForTimestamp(ts, l.logStart)
}

// logStatus is what the manager reads of a log in one look: the offsets it checkpoints (the
// recovery point, below which everything has been fsynced; the log start; the cleaner
// checkpoint, the first dirty offset as last checkpointed by the cleaner, -1 if the log was never
// cleaned), whether the log is closed, whether its topic configuration was applied, and its
// number of segments (the NumLogSegments gauge).
type logStatus struct {
	recoveryPoint, logStart, cleanerCheckpoint int64
	closed, configured                         bool
	segments                                   int
}

// status returns the log's logStatus.
func (l *Log) status() logStatus {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return logStatus{recoveryPoint: l.recoveryPoint, logStart: l.logStart, cleanerCheckpoint: l.cleaning.checkpoint,
		closed: l.closed, configured: l.configured, segments: len(l.segs)}
}

// Close flushes the log (data, indexes with the final time index entry) and closes its
// files. Further calls return ErrClosed.
func (l *Log) Close() error {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if l.status().closed {
		return ErrClosed
	}
	l.flusher.wg.Wait()
	if l.health.check() != nil {
		// Offline dir: nothing is written or fsynced again (logdir_failure.go).
		l.mu.Lock()
		l.closed = true
		l.cleaning.gen++
		l.segs.closeFiles()
		l.mu.Unlock()
		return nil
	}
	l.mu.Lock()
	active := l.segs.active()
	active.ix.maybeAppendTime(active.base)
	l.mu.Unlock()
	err := l.flusher.flushAll()
	l.mu.Lock()
	l.closed = true
	l.cleaning.gen++
	l.segs.closeFiles()
	l.mu.Unlock()
	return err
}
