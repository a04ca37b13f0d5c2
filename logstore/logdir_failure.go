package logstore

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/sirupsen/logrus"
)

// Offline log dirs (Kafka's LogDirFailureChannel, KIP-112; docs/kafka-facts.md §12). An I/O
// error on a log dir's files (a failed write, fsync, segment creation, index or checkpoint
// write) takes the whole dir offline: every Log in it refuses appends, reads, flushes and
// truncations from then on with ErrLogDirOffline, nothing in it is written or fsynced again
// (a page whose fsync failed may be gone from the page cache: data the kernel dropped must
// never be taken as durable, and a later fsync could report success over the hole), and the
// dir is reported once on the Manager's LogDirFailures channel. A dir stays offline until the
// broker restarts; its clean shutdown marker is then missing, so recovery re-validates its logs
// and truncates a torn tail.

// ErrLogDirOffline: the log's dir is offline after an I/O error (KAFKA_STORAGE_ERROR).
var ErrLogDirOffline = errors.New("logstore: log dir is offline")

// dirHealth is one log dir's online state, shared by the Manager and every Log in the dir.
// The zero of a nil *dirHealth is an online dir that reports nowhere (standalone logs in tests).
type dirHealth struct {
	path    string // as configured
	offline atomic.Bool
	once    sync.Once
	cause   atomic.Pointer[error]
	report  func(dir string) // the Manager's failure channel
	log     logrus.FieldLogger

	// corruptionCheckpoint writes the dir's lowered recovery points after a corrupt batch
	// (verify.go); nil for a standalone log.
	corruptionCheckpoint func() error

	// syncFile is the fsync of segment files; tests substitute a failing one (the only seam).
	syncFile func(File) error
}

// isIOError reports whether err is a failed file-system call (a *PathError, *LinkError or
// *SyscallError of package os, or an errno): an I/O error on a log dir, as opposed to a
// corrupt batch, a closed log or an aborted operation.
func isIOError(err error) bool {
	if err == nil {
		return false
	}
	var pe *fs.PathError
	var le *os.LinkError
	var se *os.SyscallError
	var no syscall.Errno
	return errors.As(err, &pe) || errors.As(err, &le) || errors.As(err, &se) || errors.As(err, &no)
}

// check returns ErrLogDirOffline (with the first failure's cause) once the dir is offline.
func (h *dirHealth) check() error {
	if h == nil || !h.offline.Load() {
		return nil
	}
	if c := h.cause.Load(); c != nil {
		return fmt.Errorf("%w: %s: %v", ErrLogDirOffline, h.path, *c)
	}
	return fmt.Errorf("%w: %s", ErrLogDirOffline, h.path)
}

// failed takes the dir offline after err (an I/O error on one of its files), reports it the
// first time, and returns the error the caller answers with (wrapping ErrLogDirOffline).
func (h *dirHealth) failed(err error) error {
	if h == nil {
		return err
	}
	if errors.Is(err, ErrLogDirOffline) {
		return err
	}
	h.once.Do(func() {
		h.cause.Store(&err)
		h.offline.Store(true)
		if h.log != nil {
			h.log.WithField("logDir", h.path).WithError(err).Error("I/O error on a log dir: the dir is offline until the broker restarts; its replicas go offline")
		}
		if h.report != nil {
			h.report(h.path)
		}
	})
	return fmt.Errorf("%w: %s: %w", ErrLogDirOffline, h.path, err)
}

// sync fsyncs a segment file of this dir.
func (h *dirHealth) sync(f File) error {
	if h != nil && h.syncFile != nil {
		return h.syncFile(f)
	}
	return f.Sync()
}

// Offline reports whether the log's dir is offline (its partition must go offline too).
func (l *Log) Offline() bool { return l.health.check() != nil }

// LogDirFailures delivers each log dir that goes offline, once (the configured path). The
// replica manager takes its partitions offline and tells the controller.
func (m *Manager) LogDirFailures() <-chan string { return m.failures }

// OfflineLogDirs returns the offline log dirs by absolute path (as LogsByDir names them).
func (m *Manager) OfflineLogDirs() []string {
	var out []string
	for _, d := range m.dirs {
		if m.health[d].offline.Load() {
			out = append(out, absDir(d))
		}
	}
	sort.Strings(out)
	return out
}

// LiveLogDirs returns how many log dirs are online; a broker with none shuts down.
func (m *Manager) LiveLogDirs() int {
	n := 0
	for _, d := range m.dirs {
		if !m.health[d].offline.Load() {
			n++
		}
	}
	return n
}

// dirHealths is the health of each configured log dir, by its configured path (the Manager's,
// built at Open and never changed).
type dirHealths map[string]*dirHealth

// online reports whether the configured dir d is online.
func (hs dirHealths) online(d string) bool {
	h := hs[d]
	return h == nil || !h.offline.Load()
}

// newDirHealths builds the health of each configured dir and the failure channel they report
// to (at Open); corruptionCheckpoint writes a dir's lowered recovery points (verify.go).
func newDirHealths(dirs []string, log logrus.FieldLogger, corruptionCheckpoint func(dir string) error) (dirHealths, chan string) {
	health := make(dirHealths, len(dirs))
	failures := make(chan string, len(dirs)) // each dir is reported at most once: never blocks
	for _, d := range dirs {
		health[d] = &dirHealth{path: d, log: log, report: func(dir string) { failures <- dir },
			corruptionCheckpoint: func() error { return corruptionCheckpoint(d) }}
	}
	return health, failures
}

func absDir(d string) string {
	if a, err := filepath.Abs(d); err == nil {
		return a
	}
	return d
}

// MarkLogDirOffline takes the configured dir offline after cause, an I/O error on it met
// outside this package (Kafka's maybeAddOfflineLogDir; also the tests' way to fail a dir).
// An unknown dir is ignored.
func (m *Manager) MarkLogDirOffline(dir string, cause error) {
	for _, d := range m.dirs {
		if d == dir || absDir(d) == absDir(dir) {
			m.health[d].failed(cause)
		}
	}
}
