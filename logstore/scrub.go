package logstore

import (
	"context"
	"errors"
	"time"
)

// The scrubber CRC-checks, in the background, the segments loaded without recovery that no
// read has checked yet (verify.go; docs/design.md, "Corruption below the recovery point"). It
// reads at most scrubBytesPerSecond per broker (an internal bound: Kafka has no scrubber and so
// no setting for one), in steps of scrubStepBytes each taken under the log's read lock, and
// stops once every such segment is verified: only loading creates unverified segments.
const (
	scrubBytesPerSecond = 16 << 20
	scrubStepBytes      = 1 << 20
)

// scrubLogs verifies the unverified segments of every log of logs until all are verified or ctx
// is done (started by RunBackground over every log of the Manager).
func scrubLogs(ctx context.Context, logs map[TopicPartition]*Log) {
	for _, l := range logs {
		for {
			if ctx.Err() != nil {
				return
			}
			n, more := l.corrupt.scrubStep(scrubStepBytes)
			if n > 0 {
				t := time.NewTimer(time.Duration(n) * time.Second / scrubBytesPerSecond)
				select {
				case <-ctx.Done():
					t.Stop()
					return
				case <-t.C:
				}
			}
			if !more {
				break
			}
		}
	}
}

// scrubStep verifies up to limit bytes of the log's first unverified segment and returns the
// bytes read and whether anything may be left to verify. A bad batch is handled as a read's
// (check) and ends the log's scrub.
func (c *logCorruption) scrubStep(limit int64) (int64, bool) {
	l := c.l
	l.mu.RLock()
	if l.closed || l.health.check() != nil {
		l.mu.RUnlock()
		return 0, false
	}
	var n int64
	var err error
	more := false
	for _, s := range l.segs {
		if s.verify == nil || s.verify.complete.Load() {
			continue
		}
		n, err = s.verifyNext(limit)
		more = true
		break
	}
	l.mu.RUnlock()
	if err != nil {
		if cerr := c.check(err); !errors.Is(cerr, ErrLogDirOffline) {
			l.log.WithError(cerr).Warn("scrubbing a segment")
		}
		return n, false
	}
	return n, more
}

// unverified reports how many of the log's segments hold bytes not CRC-checked since they
// were loaded (tests, diagnostics).
func (c *logCorruption) unverified() int {
	l := c.l
	l.mu.RLock()
	defer l.mu.RUnlock()
	n := 0
	for _, s := range l.segs {
		if s.verify != nil && !s.verify.complete.Load() {
			n++
		}
	}
	return n
}
