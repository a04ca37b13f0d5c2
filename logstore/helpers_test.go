package logstore

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/sirupsen/logrus/hooks/test"
)

// testBatch describes a v2 batch to build by hand (the storage format, not a request codec).
type testBatch struct {
	records   int
	valueSize int
	baseTs    int64 // timestamp of the first record; record i has baseTs+i
	epoch     int32 // partitionLeaderEpoch stored in the header (leader appends overwrite it)
	base      int64 // baseOffset stored in the header
}

func appendVarint(b []byte, v int64) []byte { return binary.AppendVarint(b, v) }

// build encodes the batch with real records and a valid CRC-32C.
func (tb testBatch) build() []byte {
	if tb.records == 0 {
		tb.records = 1
	}
	var recs []byte
	for i := 0; i < tb.records; i++ {
		var r []byte
		r = append(r, 0)                         // attributes
		r = appendVarint(r, int64(i))            // timestampDelta
		r = appendVarint(r, int64(i))            // offsetDelta
		r = appendVarint(r, -1)                  // key = null
		r = appendVarint(r, int64(tb.valueSize)) // value length
		for j := 0; j < tb.valueSize; j++ {
			r = append(r, byte('a'+(i+j)%26))
		}
		r = appendVarint(r, 0) // headers
		recs = appendVarint(recs, int64(len(r)))
		recs = append(recs, r...)
	}
	b := make([]byte, batchHeaderSize, batchHeaderSize+len(recs))
	binary.BigEndian.PutUint64(b[0:], uint64(tb.base))
	binary.BigEndian.PutUint32(b[8:], uint32(batchHeaderSize-batchLengthShift+len(recs)))
	binary.BigEndian.PutUint32(b[12:], uint32(tb.epoch))
	b[16] = 2
	binary.BigEndian.PutUint16(b[21:], 0)
	binary.BigEndian.PutUint32(b[23:], uint32(tb.records-1))
	binary.BigEndian.PutUint64(b[27:], uint64(tb.baseTs))
	binary.BigEndian.PutUint64(b[35:], uint64(tb.baseTs+int64(tb.records-1)))
	binary.BigEndian.PutUint64(b[43:], ^uint64(0)) // producerId -1
	binary.BigEndian.PutUint16(b[51:], 0xffff)     // producerEpoch -1
	binary.BigEndian.PutUint32(b[53:], 0xffffffff) // baseSequence -1
	binary.BigEndian.PutUint32(b[57:], uint32(tb.records))
	b = append(b, recs...)
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
	return b
}

// fakeClock is an injectable clock.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{t: time.UnixMilli(1_700_000_000_000)} }
func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func testConfig() Config {
	c := DefaultConfig()
	c.FileDeleteDelay = 0
	return c
}

func testLogger() (logrus.FieldLogger, *test.Hook) {
	l, hook := test.NewNullLogger()
	l.SetLevel(logrus.DebugLevel)
	return l, hook
}

// newTestLog opens a standalone log in a temp dir.
func newTestLog(t testing.TB, cfg Config, clock *fakeClock) *Log {
	t.Helper()
	if clock == nil {
		clock = newFakeClock()
	}
	lg, _ := testLogger()
	l, err := openLog(loadParams{
		tp: TopicPartition{Topic: "t", Partition: 0}, dir: t.TempDir() + "/t-0", cfg: cfg,
		logStart: -1, hw: -1, clean: true, log: lg, now: clock.Now,
		directWrites: newDirectWriteGate(lg, nil), // as the Manager's logs: appends issued directly
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func mustAppend(t testing.TB, l *Log, b []byte, epoch int32) AppendInfo {
	t.Helper()
	info, err := l.AppendAsLeader(b, epoch)
	if err != nil {
		t.Fatalf("append: %v", err)
	}
	return info
}

func mustHeaders(t testing.TB, b []byte) []BatchHeader {
	t.Helper()
	hs, err := BatchHeaders(b)
	if err != nil {
		t.Fatalf("BatchHeaders: %v", err)
	}
	return hs
}

// crash stops the manager without flushing, checkpointing or writing the clean shutdown
// marker, as a SIGKILL would (file contents written so far stay, as in the page cache).
func (m *Manager) crash() {
	m.mu.Lock()
	m.closed = true
	logs := m.logs
	m.mu.Unlock()
	for _, l := range logs {
		crashLog(l)
	}
}

func isErr(err, target error) bool { return errors.Is(err, target) }

func crcOf(b []byte) uint32 { return crc32.Checksum(b, crc32.MakeTable(crc32.Castagnoli)) }
