package broker

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/isrbroker/isrbroker/broker/kproto"
	"github.com/isrbroker/isrbroker/logstore/record"
	rm "github.com/isrbroker/isrbroker/replicamanager"
)

// The zero-copy fetch response (records as file regions, spliced in by the writer) is byte for
// byte the copying path's response for the same request and the same records, including when
// max_bytes or partition_max_bytes cut a partition's records at a batch boundary (then read
// into memory) and for the KIP-74 first batch larger than the limits.
func TestZeroCopyFetchMatchesCopy(t *testing.T) {
	b := makeBatch(3, make([]byte, 300))
	three := bytes.Repeat(b, 3)
	f, err := os.Create(filepath.Join(t.TempDir(), "00000000000000000000.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(append([]byte("junk before"), three...)); err != nil {
		t.Fatal(err)
	}
	file := record.FileRecords{Regions: []record.FileRegion{{File: f, Pos: 11, Len: int64(len(three))}}, Len: int64(len(three))}

	for _, c := range []struct {
		name                   string
		maxBytes, partMaxBytes int32
	}{
		{"whole", 1 << 20, 1 << 20},
		{"max_bytes cuts the second partition", int32(len(three) + len(b) + 10), 1 << 20},
		{"partition_max_bytes cuts", 1 << 20, int32(2*len(b) + 1)},
		{"first batch larger than the limits", 10, 10},
	} {
		for v := int16(4); v <= 11; v++ {
			req := kmsg.NewPtrFetchRequest()
			req.Version = v
			for _, topic := range []string{"a", "b"} {
				rt := kmsg.NewFetchRequestTopic()
				rt.Topic = topic
				for p := int32(0); p < 2; p++ {
					rp := kmsg.NewFetchRequestTopicPartition()
					rp.Partition, rp.PartitionMaxBytes = p, c.partMaxBytes
					rt.Partitions = append(rt.Partitions, rp)
				}
				req.Topics = append(req.Topics, rt)
			}
			var memRes, fileRes []rm.FetchPartitionResult
			for _, topic := range []string{"a", "b"} {
				for p := int32(0); p < 2; p++ {
					r := rm.FetchPartitionResult{TopicPartition: tp(topic, p), HighWatermark: 9, LastStableOffset: 9, LogStartOffset: 0}
					fr := r
					if !(topic == "b" && p == 1) { // b/1 has no records
						r.Records, fr.Files = three, file
					}
					memRes, fileRes = append(memRes, r), append(fileRes, fr)
				}
			}
			mem := req.ResponseKind().(*kmsg.FetchResponse)
			nMem, none := fillFetchResponse(mem, req, c.maxBytes, memRes)
			if len(none) != 0 {
				t.Fatalf("%s v%d: in-memory records spliced", c.name, v)
			}
			want := kproto.AppendResponse(nil, 5, mem)

			resp := req.ResponseKind().(*kmsg.FetchResponse)
			nFile, spliced := fillFetchResponse(resp, req, c.maxBytes, fileRes)
			if nMem != nFile {
				t.Fatalf("%s v%d: %d record bytes copied, %d zero-copy", c.name, v, nMem, nFile)
			}
			sf := &kproto.SplicedFetch{Resp: resp, Files: spliced}
			frame, cuts, err := kproto.AppendSplicedFetch(nil, 5, sf)
			if err != nil {
				t.Fatalf("%s v%d: %v", c.name, v, err)
			}
			var got bytes.Buffer
			if err := kproto.WriteSplicedFetch(&got, frame, cuts, sf); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got.Bytes(), want) {
				t.Fatalf("%s v%d: zero-copy frame (%d bytes, %d spliced) differs from the copying path's (%d bytes)", c.name, v, got.Len(), len(spliced), len(want))
			}
			if c.name == "whole" && len(spliced) != 3 {
				t.Fatalf("whole v%d: %d partitions spliced, want 3", v, len(spliced))
			}
		}
	}
}
