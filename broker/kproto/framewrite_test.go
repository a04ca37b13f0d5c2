package kproto

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
	"golang.org/x/sys/unix"

	"github.com/isrbroker/isrbroker/broker/kproto/kprototest"
	"github.com/isrbroker/isrbroker/logstore/record"
)

// A spliced fetch frame written with TryWrite until the socket stops taking bytes, then with
// Finish, arrives byte for byte as the same response with its records in memory: the position
// where the non-blocking write stopped (inside the framing or inside a file region) is where
// the rest starts.
func TestFrameWriteResumesWhereTryWriteStopped(t *testing.T) {
	const size = 16 << 20 // far above a loopback socket's buffers while nobody reads
	data := make([]byte, size)
	for i := range data {
		data[i] = byte(i*31 + i>>11)
	}
	f, err := os.Create(filepath.Join(t.TempDir(), "00000000000000000000.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	build := func(recs []byte) *kmsg.FetchResponse {
		resp := kmsg.NewPtrFetchResponse()
		resp.Version = 4
		tr := kmsg.NewFetchResponseTopic()
		tr.Topic = "t"
		for p := int32(0); p < 2; p++ {
			rp := kmsg.NewFetchResponseTopicPartition()
			rp.Partition, rp.HighWatermark = p, 99
			rp.RecordBatches = recs
			tr.Partitions = append(tr.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, tr)
		return resp
	}
	half := int64(size / 2)
	sf := &SplicedFetch{Resp: build([]byte{}), Files: []SplicedPartition{
		{Topic: 0, Partition: 0, Records: record.FileRecords{Regions: []record.FileRegion{{File: f, Pos: 0, Len: 1 << 20, Resident: true}, {File: f, Pos: 1 << 20, Len: half - 1<<20, Resident: false}}, Len: half}},
		{Topic: 0, Partition: 1, Records: record.FileRecords{Regions: []record.FileRegion{{File: f, Pos: 0, Len: half, Resident: true}}, Len: half}},
	}}
	frame, cuts, err := AppendSplicedFetch(nil, 5, sf)
	if err != nil {
		t.Fatal(err)
	}

	c, rc := kprototest.TCPPair(t)
	raw, err := c.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}

	// The same frame twice, so a resumed write is followed by a fresh one on the same stream.
	single := AppendResponse(nil, 5, build(data[:half]))
	var w FrameWrite
	w.ResetSpliced(frame, cuts, sf)
	if w.TryWrite(raw) { // nobody reads yet: the socket fills
		t.Fatal("the socket took 8 MiB without a reader: the resume path was not exercised")
	}
	got := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(io.LimitReader(rc, int64(2*len(single))))
		got <- b
	}()
	for i := 0; i < 2; i++ {
		if i > 0 {
			w.ResetSpliced(frame, cuts, sf)
			w.TryWrite(raw)
		}
		if err := w.Finish(c); err != nil {
			t.Fatal(err)
		}
		if !w.Done() {
			t.Fatal("Finish returned with bytes left")
		}
		w.Release()
	}
	if b := <-got; !bytes.Equal(b, append(single[:len(single):len(single)], single...)) {
		t.Fatalf("received %d bytes that differ from two in-memory frames of %d", len(b), len(single))
	}
}

// A small spliced fetch frame (a follower's fetch at the log's tail) written with TryWrite
// leaves as one TCP segment: its framing is held back (MSG_MORE) until sendfile adds the
// records, instead of going out alone and waking the reader for the framing only.
func TestFrameWriteSendsSmallSplicedFrameAsOneSegment(t *testing.T) {
	if !directSockets || raceEnabled {
		t.Skip("MSG_MORE is used on Linux only, and not under the race detector (rawSendMore)")
	}
	records := bytes.Repeat([]byte("r"), 4600)
	f, err := os.Create(filepath.Join(t.TempDir(), "00000000000000000000.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(records); err != nil {
		t.Fatal(err)
	}
	resp := kmsg.NewPtrFetchResponse()
	resp.Version = 11
	tr := kmsg.NewFetchResponseTopic()
	tr.Topic = "t"
	rp := kmsg.NewFetchResponseTopicPartition()
	rp.HighWatermark = 1
	rp.RecordBatches = []byte{}
	tr.Partitions = append(tr.Partitions, rp)
	resp.Topics = append(resp.Topics, tr)
	sf := &SplicedFetch{Resp: resp, Files: []SplicedPartition{
		{Records: record.FileRecords{Regions: []record.FileRegion{{File: f, Pos: 0, Len: int64(len(records)), Resident: true}}, Len: int64(len(records))}},
	}}
	frame, cuts, err := AppendSplicedFetch(nil, 1, sf)
	if err != nil {
		t.Fatal(err)
	}
	c, rc := kprototest.TCPPair(t)
	raw, err := c.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	want := NewSplicedWrite(frame, cuts, sf).Len()
	dataSegsOut := func() uint32 {
		t.Helper()
		var info *unix.TCPInfo
		var gerr error
		if err := raw.Control(func(fd uintptr) { info, gerr = unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO) }); err != nil || gerr != nil {
			t.Fatalf("TCP_INFO: %v %v", err, gerr)
		}
		return info.Data_segs_out
	}
	for i := range 5 {
		before := dataSegsOut()
		if !NewSplicedWrite(frame, cuts, sf).TryWrite(raw) {
			t.Fatal("TryWrite did not finish a 5 KB frame on an empty socket")
		}
		if segs := dataSegsOut() - before; segs != 1 {
			t.Fatalf("write %d: the frame left in %d segments, want 1", i, segs)
		}
		if _, err := io.ReadFull(rc, make([]byte, want)); err != nil {
			t.Fatal(err)
		}
	}
}
