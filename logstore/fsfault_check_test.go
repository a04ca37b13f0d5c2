package logstore

import (
	"fmt"
	"strings"
	"testing"
)

// The matrix's checks of a reopened log can fail (fsfault_test.go): each defect below, made by
// hand in a loaded log, is reported by checkLogConsistent.

// errorRecorder is a testing.TB that records Errorf and Fatalf instead of failing.
type errorRecorder struct {
	testing.TB
	errs []string
}

func (r *errorRecorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

func (r *errorRecorder) Fatalf(format string, args ...any) { r.Errorf(format, args...) }
func (r *errorRecorder) Helper()                           {}

func TestFaultMatrixChecksCanFail(t *testing.T) {
	for _, c := range []struct {
		name  string
		spoil func(l *Log)
		want  string
	}{
		{"whole", func(*Log) {}, ""},
		{"partialBatch", func(l *Log) {
			s := l.segs.active()
			b := recordAt(t, l.leo, 0)
			if _, err := s.f.WriteAt(b[:len(b)/2], s.size); err != nil {
				t.Fatal(err)
			}
			s.size += int64(len(b) / 2)
		}, "valid bytes"},
		{"leo", func(l *Log) { l.leo-- }, "LEO"},
		{"logStart", func(l *Log) { l.logStart = l.leo + 1 }, "log start"},
		{"recoveryPoint", func(l *Log) { l.recoveryPoint = l.leo + 1 }, "recovery point"},
		{"epochs", func(l *Log) { l.epochs.entries = []EpochEntry{{Epoch: 7, StartOffset: 0}} }, "leader epoch cache"},
		{"epochsNotRising", func(l *Log) {
			l.epochs.entries = []EpochEntry{{Epoch: 0, StartOffset: 0}, {Epoch: 1, StartOffset: 6}, {Epoch: 1, StartOffset: 9}}
		}, "not rising"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := testConfig()
			l := newCompactLog(t, cfg, nil)
			for off := int64(0); off < 12; off++ {
				mustAppend(t, l, recordAt(t, off, 0), int32(off/6))
			}
			l.mu.Lock()
			c.spoil(l)
			l.mu.Unlock()
			r := &errorRecorder{TB: t}
			checkLogConsistent(r, c.name, l, nil)
			got := strings.Join(r.errs, "; ")
			if c.want == "" && got != "" || c.want != "" && !strings.Contains(got, c.want) {
				t.Errorf("reported %q, want %q", got, c.want)
			}
		})
	}
}
