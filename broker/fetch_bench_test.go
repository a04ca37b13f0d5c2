package broker

import (
	"bytes"
	"io"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/isrbroker/isrbroker/broker/kproto"
	"github.com/isrbroker/isrbroker/logstore/record"
	rm "github.com/isrbroker/isrbroker/replicamanager"
)

// BenchmarkFetchResponse writes a fetch response of 3 partitions × 1 MiB of stored batches to a
// loopback TCP socket (a goroutine drains it), as the connection writer does:
//   - copy: the records are read from the segment file into memory (pread, what Log.Read does),
//     encoded into the response by kmsg and written;
//   - zerocopy: the response is encoded around empty record sets and the file regions go out
//     with sendfile (kproto.WriteSplicedFetch).
//
// go test -run XXX -bench BenchmarkFetchResponse -benchmem ./broker (docs/performance.md)
func BenchmarkFetchResponse(b *testing.B) { benchmarkFetchResponse(b, 1<<20) }

// BenchmarkFetchResponseSmall is BenchmarkFetchResponse with one 16 KB batch per partition, a
// follower's or a caught-up consumer's steady state, where a response's fixed costs show.
func BenchmarkFetchResponseSmall(b *testing.B) { benchmarkFetchResponse(b, 16<<10) }

func benchmarkFetchResponse(b *testing.B, perPart int) {
	const parts = 3
	batch := makeBatch(16, make([]byte, 1000))
	data := bytes.Repeat(batch, perPart/len(batch))
	f, err := os.Create(filepath.Join(b.TempDir(), "00000000000000000000.log"))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(data); err != nil {
		b.Fatal(err)
	}
	file := record.FileRecords{Regions: []record.FileRegion{{File: f, Len: int64(len(data))}}, Len: int64(len(data))}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err == nil {
			io.Copy(io.Discard, c)
			c.Close()
		}
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()

	req := kmsg.NewPtrFetchRequest()
	req.Version = 11
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = "t"
	for p := int32(0); p < parts; p++ {
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.PartitionMaxBytes = p, int32(2*perPart)
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)

	b.Run("copy", func(b *testing.B) {
		var buf []byte
		b.SetBytes(int64(parts * len(data)))
		b.ReportAllocs()
		for b.Loop() {
			results := make([]rm.FetchPartitionResult, parts)
			for p := range results {
				recs, err := file.ReadAll(nil)
				if err != nil {
					b.Fatal(err)
				}
				results[p] = rm.FetchPartitionResult{TopicPartition: tp("t", int32(p)), Records: recs}
			}
			resp := req.ResponseKind().(*kmsg.FetchResponse)
			fillFetchResponse(resp, req, 1<<30, results)
			buf = kproto.AppendResponse(buf[:0], 1, resp)
			if _, err := c.Write(buf); err != nil {
				b.Fatal(err)
			}
			if cap(buf) > 1<<20 { // as conn.written: a large buffer is not kept
				buf = nil
			}
		}
	})
	b.Run("zerocopy", func(b *testing.B) {
		var buf []byte
		b.SetBytes(int64(parts * len(data)))
		b.ReportAllocs()
		for b.Loop() {
			results := make([]rm.FetchPartitionResult, parts)
			for p := range results {
				results[p] = rm.FetchPartitionResult{TopicPartition: tp("t", int32(p)), Files: file}
			}
			resp := req.ResponseKind().(*kmsg.FetchResponse)
			_, spliced := fillFetchResponse(resp, req, 1<<30, results)
			sf := &kproto.SplicedFetch{Resp: resp, Files: spliced}
			var cuts []int
			buf, cuts, err = kproto.AppendSplicedFetch(buf[:0], 1, sf)
			if err != nil {
				b.Fatal(err)
			}
			if err := kproto.WriteSplicedFetch(c, buf, cuts, sf); err != nil {
				b.Fatal(err)
			}
		}
	})
}
