package kproto

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/isrbroker/isrbroker/logstore/record"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// fetchFixture is a fetch response with records in memory and the same records as regions of
// one file: topic "a" partitions 0 (two regions), 1 (no records), 2 (aborted transactions and
// records), topic "b" partition 7 (records kept in memory, not spliced).
func fetchFixture(t *testing.T, version int16) (mem *kmsg.FetchResponse, sf *SplicedFetch) {
	t.Helper()
	data := make([]byte, 10_000)
	for i := range data {
		data[i] = byte(i * 7)
	}
	f, err := os.Create(filepath.Join(t.TempDir(), "00000000000000000000.log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	build := func(spliced bool) (*kmsg.FetchResponse, []SplicedPartition) {
		resp := kmsg.NewPtrFetchResponse()
		resp.Version = version
		resp.ThrottleMillis = 3
		resp.SessionID = 0
		var files []SplicedPartition
		ta := kmsg.NewFetchResponseTopic()
		ta.Topic = "a"
		for _, p := range []struct {
			part    int32
			regions []record.FileRegion
			aborted bool
		}{
			{0, []record.FileRegion{{File: f, Pos: 100, Len: 2000, Resident: false}, {File: f, Pos: 5000, Len: 3000, Resident: true}}, false},
			{1, nil, false},
			{2, []record.FileRegion{{File: f, Pos: 0, Len: 1, Resident: false}}, true},
		} {
			rp := kmsg.NewFetchResponseTopicPartition()
			rp.Partition, rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset, rp.PreferredReadReplica = p.part, 42, 41, 1, -1
			if p.aborted {
				at := kmsg.NewFetchResponseTopicPartitionAbortedTransaction()
				at.ProducerID, at.FirstOffset = 9, 10
				rp.AbortedTransactions = append(rp.AbortedTransactions, at, at)
			}
			fr := record.FileRecords{Regions: p.regions}
			var recs []byte
			for _, r := range p.regions {
				fr.Len += r.Len
				recs = append(recs, data[r.Pos:r.Pos+r.Len]...)
			}
			rp.RecordBatches = []byte{}
			if spliced && fr.Len > 0 {
				files = append(files, SplicedPartition{Topic: 0, Partition: len(ta.Partitions), Records: fr})
			} else if recs != nil {
				rp.RecordBatches = recs
			}
			ta.Partitions = append(ta.Partitions, rp)
		}
		tb := kmsg.NewFetchResponseTopic()
		tb.Topic = "b"
		rp := kmsg.NewFetchResponseTopicPartition()
		rp.Partition, rp.RecordBatches = 7, []byte("in memory")
		tb.Partitions = append(tb.Partitions, rp)
		resp.Topics = append(resp.Topics, ta, tb)
		return resp, files
	}
	mem, _ = build(false)
	resp, files := build(true)
	return mem, &SplicedFetch{Resp: resp, Files: files}
}

// The frame written around file regions is byte for byte the frame of the same response with
// the records in memory, for every fetch version served (v4-v11), through a writer that copies
// and through a TCP socket (sendfile).
func TestSplicedFetchMatchesCopy(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	for v := int16(4); v <= 11; v++ {
		mem, sf := fetchFixture(t, v)
		want := AppendResponse(nil, 77, mem)
		frame, cuts, err := AppendSplicedFetch(nil, 77, sf)
		if err != nil {
			t.Fatalf("v%d: %v", v, err)
		}
		if len(cuts) != 2 {
			t.Fatalf("v%d: %d cuts, want 2", v, len(cuts))
		}
		var copied bytes.Buffer
		if err := WriteSplicedFetch(&copied, frame, cuts, sf); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(copied.Bytes(), want) {
			t.Fatalf("v%d: copied frame differs from AppendResponse's (%d vs %d bytes)", v, copied.Len(), len(want))
		}

		// Through a socket: sendfile on Linux.
		got := make(chan []byte, 1)
		go func() {
			c, err := ln.Accept()
			if err != nil {
				got <- nil
				return
			}
			defer c.Close()
			b, _ := io.ReadAll(c)
			got <- b
		}()
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		if err := WriteSplicedFetch(c, frame, cuts, sf); err != nil {
			t.Fatal(err)
		}
		c.Close()
		if b := <-got; !bytes.Equal(b, want) {
			t.Fatalf("v%d: socket frame differs from AppendResponse's (%d vs %d bytes)", v, len(b), len(want))
		}
		var decoded kmsg.FetchResponse
		decoded.Version = v
		if err := decoded.ReadFrom(want[8:]); err != nil || len(decoded.Topics) != 2 {
			t.Fatalf("v%d: frame does not decode: %v", v, err)
		}
	}
}

// A region beyond the end of its file (the segment was truncated after the read) fails, on
// both paths, so that the connection is closed rather than left mid-frame.
func TestWriteFileRegionShortFile(t *testing.T) {
	_, sf := fetchFixture(t, 11)
	r := sf.Files[0].Records.Regions[1]
	r.Len = 1 << 20
	if err := WriteFileRegion(io.Discard, r); !errors.Is(err, record.ErrShortFile) {
		t.Fatalf("copy path: %v, want record.ErrShortFile", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		if c, err := ln.Accept(); err == nil {
			io.Copy(io.Discard, c)
			c.Close()
		}
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := WriteFileRegion(c, r); !errors.Is(err, record.ErrShortFile) {
		t.Fatalf("socket path: %v, want record.ErrShortFile", err)
	}
	if _, err := (record.FileRecords{Regions: []record.FileRegion{r}, Len: r.Len}).ReadAll(nil); !errors.Is(err, record.ErrShortFile) {
		t.Fatalf("ReadAll: %v, want record.ErrShortFile", err)
	}
}

// Bad input to AppendSplicedFetch is an error, not a wrong frame.
func TestAppendSplicedFetchErrors(t *testing.T) {
	_, sf := fetchFixture(t, 11)
	bad := *sf
	bad.Files = append([]SplicedPartition(nil), sf.Files...)
	bad.Files[0].Partition = 9
	if _, _, err := AppendSplicedFetch(nil, 1, &bad); err == nil {
		t.Error("partition outside the response accepted")
	}
	bad.Files[0] = sf.Files[0]
	bad.Files[0].Partition = 1 // partition 1 of topic a has an empty record set: fine, but topic b's has bytes
	bad.Files[0].Topic = 1
	bad.Files[0].Partition = 0
	if _, _, err := AppendSplicedFetch(nil, 1, &bad); err == nil {
		t.Error("spliced partition with records in memory accepted")
	}
	flex := *sf
	flex.Resp = kmsg.NewPtrFetchResponse()
	flex.Resp.Version = 12
	flex.Files = nil
	if _, _, err := AppendSplicedFetch(nil, 1, &flex); err == nil {
		t.Error("flexible version accepted")
	}
}
