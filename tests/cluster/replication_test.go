package cluster

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// writeSegment writes batches into <dir>/<base>.log.
func writeSegment(t *testing.T, dir string, base int64, batches ...[]byte) string {
	t.Helper()
	var data []byte
	for _, b := range batches {
		data = append(data, b...)
	}
	name := filepath.Join(dir, strings.Repeat("0", 20-len(Itoa32(int32(base))))+Itoa32(int32(base))+".log")
	if err := os.WriteFile(name, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return name
}

func TestEncodeBatchReadsBackThroughKmsg(t *testing.T) {
	raw := EncodeBatch(7, 3, 1700000000000, []byte("a"), []byte("bc"))
	var b kmsg.RecordBatch
	if err := b.ReadFrom(raw); err != nil {
		t.Fatal(err)
	}
	if b.FirstOffset != 7 || b.PartitionLeaderEpoch != 3 || b.NumRecords != 2 || b.LastOffsetDelta != 1 || int(b.Length)+12 != len(raw) {
		t.Fatalf("decoded %+v", b)
	}
	var r kmsg.Record
	if err := r.ReadFrom(b.Records); err != nil || string(r.Value) != "a" {
		t.Fatalf("first record %+v %v", r, err)
	}
}

func TestReadPartitionBatchesAndCompare(t *testing.T) {
	zeroStarts := map[int32]int64{1: 0, 2: 0}
	dirA, dirB := t.TempDir(), t.TempDir()
	v := []byte("value")
	writeSegment(t, dirA, 0, EncodeBatch(0, 0, 1, v, v), EncodeBatch(2, 0, 1, v))
	writeSegment(t, dirA, 3, EncodeBatch(3, 1, 1, v), EncodeBatch(4, 1, 1, v))
	writeSegment(t, dirB, 0, EncodeBatch(0, 0, 1, v, v), EncodeBatch(2, 0, 1, v), EncodeBatch(3, 1, 1, v))
	torn := EncodeBatch(4, 1, 1, v)
	writeSegment(t, dirB, 4, torn[:len(torn)-3]) // a write in flight at the end of the last segment

	a, err := ReadPartitionBatches(dirA)
	if err != nil || len(a) != 4 || a[3].BaseOffset != 4 || a[2].PartitionLeaderEpoch != 1 || a[2].Segment != 3 {
		t.Fatalf("dir A: %v %v", a, err)
	}
	b, err := ReadPartitionBatches(dirB)
	if err != nil || len(b) != 3 {
		t.Fatalf("dir B: %v %v", b, err)
	}
	if leo, err := LogEndOffsetOnDisk(dirB); err != nil || leo != 4 {
		t.Errorf("LogEndOffsetOnDisk(B) = %d %v, want 4", leo, err)
	}
	if d := CompareReplicas(4, zeroStarts, map[int32][]SegmentBatch{1: a, 2: b}); d != "" {
		t.Errorf("identical below HW 4, got %q", d)
	}
	if d := CompareReplicas(5, zeroStarts, map[int32][]SegmentBatch{1: a, 2: b}); !strings.Contains(d, "lacks batch") {
		t.Errorf("B lacks offset 4 below HW 5, got %q", d)
	}
	// Same offsets, different leader epoch (a diverged log, KIP-101): a difference.
	writeSegment(t, dirB, 0, EncodeBatch(0, 0, 1, v, v), EncodeBatch(2, 0, 1, v))
	writeSegment(t, dirB, 3, EncodeBatch(3, 2, 1, v))
	_ = os.Remove(filepath.Join(dirB, "00000000000000000004.log"))
	if b, err = ReadPartitionBatches(dirB); err != nil || len(b) != 3 {
		t.Fatalf("dir B rewritten: %v %v", b, err)
	}
	if d := CompareReplicas(4, zeroStarts, map[int32][]SegmentBatch{1: a, 2: b}); !strings.Contains(d, "differs") {
		t.Errorf("epoch 1 vs 2 at offset 3, got %q", d)
	}
	// Retention deleted the first segment on one replica only; both report log start 3:
	// compared from there.
	if d := CompareReplicas(4, map[int32]int64{1: 3, 2: 3}, map[int32][]SegmentBatch{1: a, 2: a[2:]}); d != "" {
		t.Errorf("retention-trimmed replica: %q", d)
	}
	// Planted violations: the same batches from offset 3, but one replica reports (and
	// serves) the log from 0 while the other starts at 3; a replica whose reported log start
	// is below its first batch on disk.
	if d := CompareReplicas(4, map[int32]int64{1: 0, 2: 3}, map[int32][]SegmentBatch{1: a, 2: a[2:]}); !strings.Contains(d, "log start offsets differ") {
		t.Errorf("log start 0 vs 3, got %q", d)
	}
	if d := CompareReplicas(4, zeroStarts, map[int32][]SegmentBatch{1: a, 2: a[2:]}); !strings.Contains(d, "first batch on disk is at 3") {
		t.Errorf("log start 0 reported, first batch at 3, got %q", d)
	}
	if d := CompareReplicas(4, map[int32]int64{1: 0}, map[int32][]SegmentBatch{1: a, 2: a}); !strings.Contains(d, "no log start offset") {
		t.Errorf("missing log start, got %q", d)
	}

	// Overlapping offsets across segments are an error.
	writeSegment(t, dirB, 2, EncodeBatch(2, 0, 1, v))
	if _, err := ReadPartitionBatches(dirB); err == nil {
		t.Error("offset 2 twice: no error")
	}

	// A flipped byte fails the CRC; a torn batch in a non-last segment is an error.
	bad := EncodeBatch(0, 0, 1, v)
	bad[len(bad)-1] ^= 0xff
	dirC := t.TempDir()
	writeSegment(t, dirC, 0, bad)
	if _, err := ReadPartitionBatches(dirC); err == nil || !strings.Contains(err.Error(), "CRC") {
		t.Errorf("flipped byte: %v", err)
	}
	dirD := t.TempDir()
	writeSegment(t, dirD, 0, torn[:20])
	writeSegment(t, dirD, 4, torn)
	if _, err := ReadPartitionBatches(dirD); err == nil {
		t.Error("torn batch in a middle segment: no error")
	}
}
