package logstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// kv is one record to build: a tombstone has a nil value; noKey builds a null key.
type kv struct {
	key   string
	value *string
	noKey bool
}

func val(s string) *string { return &s }

func put(key, value string) kv { return kv{key: key, value: val(value)} }
func tomb(key string) kv       { return kv{key: key} }

// batchOpts are the header fields of a test batch.
type batchOpts struct {
	codec int
	pid   int64 // -1: not idempotent
	seq   int32
	ts    int64
}

// keyedBatch builds a v2 batch through kmsg (and kgo's compressor for codec != 0).
func keyedBatch(t testing.TB, o batchOpts, recs ...kv) []byte {
	t.Helper()
	var raw []byte
	for i, r := range recs {
		rec := kmsg.Record{TimestampDelta64: int64(i), OffsetDelta: int32(i)}
		if !r.noKey {
			rec.Key = []byte(r.key)
		}
		if r.value != nil {
			rec.Value = []byte(*r.value)
		}
		body := rec.AppendTo(nil)
		rec.Length = int32(len(body) - 1) // the zero Length varint is one byte
		raw = rec.AppendTo(raw)
	}
	attrs := int16(0)
	if o.codec != codecNone {
		c, err := compressorFor(o.codec)
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		z, used := c.Compress(&buf, raw)
		if int(used) != o.codec {
			t.Fatalf("compressor used codec %d, want %d", used, o.codec)
		}
		raw = append([]byte(nil), z...)
		attrs = int16(o.codec)
	}
	epoch, seq := int16(-1), int32(-1)
	if o.pid >= 0 {
		epoch, seq = 0, o.seq
	}
	rb := kmsg.RecordBatch{
		Length: int32(minBatchLength + len(raw)), Magic: 2, Attributes: attrs,
		LastOffsetDelta: int32(len(recs) - 1), FirstTimestamp: o.ts, MaxTimestamp: o.ts + int64(len(recs)-1),
		ProducerID: o.pid, ProducerEpoch: epoch, FirstSequence: seq, NumRecords: int32(len(recs)), Records: raw,
	}
	b := rb.AppendTo(nil)
	binary.BigEndian.PutUint32(b[offCRC:], crcOf(b[offAttributes:]))
	return b
}

// plain returns batch options for a non-idempotent, uncompressed batch at ts.
func plain(ts int64) batchOpts { return batchOpts{pid: -1, ts: ts} }

// readRec is one record read back from a log.
type readRec struct {
	offset    int64
	key       string
	value     *string
	epoch     int32
	batchBase int64
	codec     int
}

// readAll reads every batch of l and decodes its records through kmsg.
func readAll(t testing.TB, l *Log) ([]readRec, []BatchHeader) {
	t.Helper()
	b, err := l.Read(l.LogStartOffset(), math.MaxInt32, l.LogEndOffset(), true)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	hs := mustHeaders(t, b)
	var out []readRec
	pos := 0
	for _, h := range hs {
		rb, recs, err := decodeBatch(b[pos : pos+h.Size()])
		if err != nil {
			t.Fatalf("decoding batch at %d: %v", h.BaseOffset, err)
		}
		for _, r := range recs {
			var rec kmsg.Record
			if err := rec.ReadFrom(r.raw); err != nil {
				t.Fatal(err)
			}
			rr := readRec{offset: r.offset, key: string(r.key), epoch: rb.PartitionLeaderEpoch, batchBase: h.BaseOffset, codec: int(rb.Attributes & attrCompressionMask)}
			if rec.Value != nil {
				rr.value = val(string(rec.Value))
			}
			out = append(out, rr)
		}
		pos += h.Size()
	}
	return out, hs
}

// checkOffsetsRise fails on a duplicate or out-of-order offset.
func checkOffsetsRise(t testing.TB, recs []readRec) {
	t.Helper()
	for i := 1; i < len(recs); i++ {
		if recs[i].offset <= recs[i-1].offset {
			t.Fatalf("offset %d follows %d: duplicate or out of order", recs[i].offset, recs[i-1].offset)
		}
	}
}

// latestByKey maps each key to its latest record.
func latestByKey(recs []readRec) map[string]readRec {
	m := map[string]readRec{}
	for _, r := range recs {
		m[r.key] = r
	}
	return m
}

// expectCompacted checks after a cleaning up to end (the cleaner checkpoint, a first cleaning
// or one whose earlier part was already compacted): below end only the latest record of each
// key below end remains (tombstones kept iff keepTombs), at its original offset with its
// original value and epoch; from end on everything is unchanged.
func expectCompacted(t testing.TB, before, after []readRec, end int64, keepTombs bool) {
	t.Helper()
	var below []readRec
	for _, r := range before {
		if r.offset < end {
			below = append(below, r)
		}
	}
	latest := latestByKey(below)
	var want []readRec
	for _, r := range before {
		if r.offset >= end {
			want = append(want, r)
			continue
		}
		if latest[r.key].offset != r.offset {
			continue
		}
		if r.value == nil && !keepTombs {
			continue
		}
		want = append(want, r)
	}
	checkOffsetsRise(t, after)
	if len(after) != len(want) {
		t.Fatalf("after cleaning up to %d: %d records, want %d", end, len(after), len(want))
	}
	for i := range want {
		w, g := want[i], after[i]
		if w.offset != g.offset || w.key != g.key || (w.value == nil) != (g.value == nil) ||
			(w.value != nil && *w.value != *g.value) || w.epoch != g.epoch {
			t.Fatalf("record %d: got offset %d key %q value %v epoch %d, want offset %d key %q value %v epoch %d",
				i, g.offset, g.key, str(g.value), g.epoch, w.offset, w.key, str(w.value), w.epoch)
		}
	}
}

func str(p *string) string {
	if p == nil {
		return "<null>"
	}
	return *p
}

// compactConfig is a compacted log with small segments.
func compactConfig() Config {
	c := testConfig()
	c.CleanupPolicy = PolicyCompact
	c.SegmentBytes = 2048
	c.IndexIntervalBytes = 256
	c.MinCleanableRatio = 0.01
	c.DeleteRetentionMs = 3600_000
	return c
}

// newCompactLog opens a configured compacted log.
func newCompactLog(t testing.TB, cfg Config, clock *fakeClock) *Log {
	t.Helper()
	l := newTestLog(t, cfg, clock)
	l.SetConfig(cfg)
	return l
}

// cleanOnce runs one cleaning of l with a 1 MiB offset map, as a cleaner thread would.
func cleanOnce(t testing.TB, l *Log, now time.Time) (cleanerStats, error) {
	t.Helper()
	return cleanOnceWith(t, l, now, newOffsetMap(1<<20))
}

// cleanAndRead cleans l once (failing the test on an error) and returns its records before and
// after the cleaning.
func cleanAndRead(t testing.TB, l *Log, now time.Time) (before, after []readRec) {
	t.Helper()
	before, _ = readAll(t, l)
	if _, err := cleanOnce(t, l, now); err != nil {
		t.Fatal(err)
	}
	after, _ = readAll(t, l)
	return before, after
}

func cleanOnceWith(t testing.TB, l *Log, now time.Time, m *offsetMap) (cleanerStats, error) {
	t.Helper()
	ltc, ok := cleanableOffsets(l, now)
	if !ok {
		t.Fatalf("log not cleanable")
	}
	th := &cleanerThread{omap: m}
	return th.clean(context.Background(), ltc)
}

// fillKeys appends n single-record batches cycling over keys k0..k(keys-1), value "v<i>".
func fillKeys(t testing.TB, l *Log, n, keys int, ts int64, epoch int32) {
	t.Helper()
	for i := 0; i < n; i++ {
		mustAppend(t, l, keyedBatch(t, plain(ts), put(fmt.Sprintf("k%d", i%keys), fmt.Sprintf("v%d", i))), epoch)
	}
}

// segmentFiles lists the files of the log dir with a suffix among sufs.
func segmentFiles(t testing.TB, dir string, sufs ...string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		for _, s := range sufs {
			if strings.HasSuffix(e.Name(), s) {
				out = append(out, e.Name())
			}
		}
	}
	sort.Strings(out)
	return out
}

// crashLog closes l's files without flushing or checkpointing (kill -9).
func crashLog(l *Log) {
	l.flusher.wg.Wait()
	l.flushMu.Lock()
	l.mu.Lock()
	l.closed = true
	l.segs.closeFiles()
	l.mu.Unlock()
	l.flushMu.Unlock()
}

// reopenLog opens l's dir again after a crash (recovery from offset 0).
func reopenLog(t testing.TB, l *Log, cfg Config, clock *fakeClock) *Log {
	t.Helper()
	lg, _ := testLogger()
	nl, err := openLog(loadParams{
		tp: l.tp, dir: l.dir, cfg: cfg, logStart: -1, hw: -1, cleanerCP: -1, configured: true,
		clean: false, log: lg, now: clock.Now,
	})
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	t.Cleanup(func() { nl.Close() })
	return nl
}

func activeSegmentBytes(t testing.TB, l *Log) []byte {
	t.Helper()
	l.mu.RLock()
	p := l.segs[len(l.segs)-1].logPath()
	l.mu.RUnlock()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

var _ = filepath.Join
var _ = kgo.CodecNone
