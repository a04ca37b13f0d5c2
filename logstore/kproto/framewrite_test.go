package kproto

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/isrbroker/isrbroker/logstore/kproto/kprototest"
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
		{Topic: 0, Partition: 0, Records: FileRecords{Regions: []FileRegion{{f, 0, 1 << 20, true}, {f, 1 << 20, half - 1<<20, false}}, Len: half}},
		{Topic: 0, Partition: 1, Records: FileRecords{Regions: []FileRegion{{f, 0, half, true}}, Len: half}},
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
