package logstore

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// The readers of a log dir's own small files, fuzzed (docs/reliability.md, fault matrix row
// 14): a truncated, flipped or foreign checkpoint or index must give an error or "rebuild",
// never a panic, and what a reader accepts must survive a write and a read unchanged.

// FuzzCheckpointFiles treats random bytes as a recovery-point / log-start-offset checkpoint
// and as a leader-epoch-checkpoint (Kafka's text formats: version, count, entries).
func FuzzCheckpointFiles(f *testing.F) {
	f.Add(formatOffsetCheckpoint(map[TopicPartition]int64{{Topic: "a", Partition: 0}: 10, {Topic: "b-c", Partition: 3}: 0}))
	f.Add(formatEpochCheckpoint([]EpochEntry{{Epoch: 0, StartOffset: 0}, {Epoch: 2, StartOffset: 17}}))
	f.Add([]byte("0\n2\na 0 10\n"))
	f.Add([]byte("0\n-1\n"))
	f.Add([]byte("0\n1\n0 9223372036854775807\n"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		path := filepath.Join(dir, "checkpoint")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		if offs, err := readOffsetCheckpoint(osFS{}, path); err == nil {
			again := filepath.Join(dir, "again")
			if err := os.WriteFile(again, formatOffsetCheckpoint(offs), 0o644); err != nil {
				t.Fatal(err)
			}
			got, err := readOffsetCheckpoint(osFS{}, again)
			if err != nil || len(got) != len(offs) {
				t.Fatalf("offset checkpoint %v read back as %v (%v)", offs, got, err)
			}
			for tp, o := range offs {
				if got[tp] != o {
					t.Fatalf("%v: %d read back as %d", tp, o, got[tp])
				}
			}
		}
		if es, err := readEpochCheckpoint(osFS{}, path); err == nil {
			again := filepath.Join(dir, "again-epochs")
			if err := os.WriteFile(again, formatEpochCheckpoint(es), 0o644); err != nil {
				t.Fatal(err)
			}
			if got, err := readEpochCheckpoint(osFS{}, again); err != nil || !reflect.DeepEqual(got, es) {
				t.Fatalf("epoch checkpoint %v read back as %v (%v)", es, got, err)
			}
		}
	})
}

// FuzzIndexFiles treats random bytes as a segment's `.index` and `.timeindex`: an index the
// loader accepts has entries rising in offset and position (or time), every position inside the
// log, and encodes back to the same bytes; anything else is refused (the loader rebuilds it
// from the segment).
func FuzzIndexFiles(f *testing.F) {
	f.Add(encodeOffsetEntries([]offsetEntry{{rel: 0, pos: 0}, {rel: 5, pos: 4096}}), int64(8192))
	f.Add(encodeOffsetEntries([]offsetEntry{{rel: 3, pos: 100}, {rel: 9, pos: 900}}), int64(1000))
	f.Add(encodeTimeEntries([]timeEntry{{ts: 10, rel: 0}, {ts: 20, rel: 4}}), int64(100))
	f.Add([]byte{0, 0, 0, 1}, int64(10))
	f.Fuzz(func(t *testing.T, data []byte, logSize int64) {
		dir := t.TempDir()
		path := filepath.Join(dir, "00000000000000000000.index")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		if idx, ok := loadOffsetIndex(osFS{}, path, logSize); ok {
			for i, e := range idx {
				if e.rel < 0 || e.pos < 0 || int64(e.pos) >= logSize {
					t.Fatalf("entry %d %+v outside a log of %d bytes", i, e, logSize)
				}
				if i > 0 && (e.rel <= idx[i-1].rel || e.pos <= idx[i-1].pos) {
					t.Fatalf("entry %d %+v does not rise after %+v", i, e, idx[i-1])
				}
			}
			if got := encodeOffsetEntries(idx); string(got) != string(data) {
				t.Fatalf("accepted index re-encodes differently: %x vs %x", got, data)
			}
		}
		tpath := filepath.Join(dir, "00000000000000000000.timeindex")
		if err := os.WriteFile(tpath, data, 0o644); err != nil {
			t.Fatal(err)
		}
		if tidx, ok := loadTimeIndex(osFS{}, tpath); ok {
			for i, e := range tidx {
				if e.rel < 0 || e.ts < 0 || (i > 0 && (e.ts <= tidx[i-1].ts || e.rel < tidx[i-1].rel)) {
					t.Fatalf("time entry %d %+v not rising or negative", i, e)
				}
			}
			if got := encodeTimeEntries(tidx); string(got) != string(data) {
				t.Fatalf("accepted time index re-encodes differently: %x vs %x", got, data)
			}
		}
	})
}
