// Package ratelog rate-limits repeated log lines (docs/logging.md, "Rate-limited warnings").
//
// A warning a client or a stale peer can trigger on every request — a produce rejected for an
// ISR below min.insync.replicas (K2), a request from a stale controller (K3), a bad frame — would
// otherwise write one line per request. A Limiter logs a given message with a given key (a
// partition, a controller, a listener) at most once per interval; the first line after the
// interval carries the field suppressed=<n>, the count of lines dropped meanwhile.
//
// The package imports nothing of the repository: it is one of the named shared leaves of
// docs/design.md ("Layering"), beside the wire helpers (broker/kproto), so every layer may use it.
package ratelog

import (
	"sync"
	"time"

	"github.com/sirupsen/logrus"
)

// DefaultInterval is how long a message with the same key stays quiet after it was logged.
const DefaultInterval = 10 * time.Second

// maxEntries bounds the remembered (message, key) pairs; beyond it entries that have been
// quiet for a whole interval are forgotten.
const maxEntries = 4096

// Limiter remembers when each (message, key) pair was last logged. The zero value is not
// usable; New builds one. It is safe for concurrent use.
type Limiter struct {
	interval time.Duration
	now      func() time.Time

	mu   sync.Mutex
	seen map[entryKey]*entry
}

type entryKey struct{ msg, key string }

type entry struct {
	last       time.Time // when the pair was last logged
	suppressed int64     // lines dropped since
}

// New returns a Limiter letting one line per (message, key) through per interval
// (DefaultInterval when <= 0); now is the clock (time.Now when nil), injectable for tests.
func New(interval time.Duration, now func() time.Time) *Limiter {
	if interval <= 0 {
		interval = DefaultInterval
	}
	if now == nil {
		now = time.Now
	}
	return &Limiter{interval: interval, now: now, seen: make(map[entryKey]*entry)}
}

// Warn logs msg at warning level through log unless the same msg with the same key was
// logged less than the interval ago.
func (l *Limiter) Warn(log logrus.FieldLogger, key, msg string) {
	if log, ok := l.Allow(log, key, msg); ok {
		log.Warn(msg)
	}
}

// Info is Warn at info level.
func (l *Limiter) Info(log logrus.FieldLogger, key, msg string) {
	if log, ok := l.Allow(log, key, msg); ok {
		log.Info(msg)
	}
}

// Allow reports whether a line (msg, key) is due now and, when it is, returns log with the
// suppressed field added if lines were dropped since the last one. Each call that returns
// false counts one dropped line.
func (l *Limiter) Allow(log logrus.FieldLogger, key, msg string) (logrus.FieldLogger, bool) {
	now := l.now()
	k := entryKey{msg, key}
	l.mu.Lock()
	e, ok := l.seen[k]
	if ok && now.Sub(e.last) < l.interval {
		e.suppressed++
		l.mu.Unlock()
		return nil, false
	}
	var dropped int64
	if ok {
		dropped = e.suppressed
		e.last, e.suppressed = now, 0
	} else {
		if len(l.seen) >= maxEntries {
			l.forgetQuietLocked(now)
		}
		l.seen[k] = &entry{last: now}
	}
	l.mu.Unlock()
	if dropped > 0 {
		log = log.WithField("suppressed", dropped)
	}
	return log, true
}

// forgetQuietLocked drops the pairs last logged more than an interval ago: the next line of
// such a pair is due anyway, only its count of dropped lines is lost.
func (l *Limiter) forgetQuietLocked(now time.Time) {
	for k, e := range l.seen {
		if now.Sub(e.last) >= l.interval {
			delete(l.seen, k)
		}
	}
}
