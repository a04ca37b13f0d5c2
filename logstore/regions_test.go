package logstore

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math/rand"
	"net"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/isrbroker/isrbroker/logstore/kproto"
)

// ReadRegions delimits exactly the bytes Read returns, for every start offset, budget, upper
// bound and minOneBatch, across segment boundaries: the zero-copy fetch path sends what the
// copying path sent.
func TestReadRegionsMatchesRead(t *testing.T) {
	cfg := testConfig()
	cfg.SegmentBytes = 16 << 10 // many segments
	l := newTestLog(t, cfg, nil)
	rng := rand.New(rand.NewSource(7))
	for range 200 {
		mustAppend(t, l, testBatch{records: 1 + rng.Intn(8), valueSize: rng.Intn(600), baseTs: 1}.build(), 1)
	}
	leo := l.LogEndOffset()
	if n := len(l.segs); n < 5 {
		t.Fatalf("want several segments, have %d", n)
	}
	for i := range 3000 {
		start := rng.Int63n(leo + 1)
		budget := int32(rng.Intn(40 << 10))
		if i%10 == 0 {
			budget = 0
		}
		maxOffset := start + rng.Int63n(leo-start+2)
		if i%3 == 0 {
			maxOffset = leo
		}
		minOne := rng.Intn(2) == 0
		want, werr := l.Read(start, budget, maxOffset, minOne)
		fr, gerr := l.ReadRegions(start, budget, maxOffset, minOne)
		if (werr == nil) != (gerr == nil) {
			t.Fatalf("Read(%d, %d, %d, %v) error %v, ReadRegions error %v", start, budget, maxOffset, minOne, werr, gerr)
		}
		got, err := fr.ReadAll(nil)
		if err != nil {
			t.Fatal(err)
		}
		var sum int64
		for _, r := range fr.Regions {
			sum += r.Len
			if r.Len <= 0 {
				t.Fatalf("empty region %+v", r)
			}
		}
		if sum != fr.Len || int64(len(got)) != fr.Len {
			t.Fatalf("regions add up to %d, Len %d, read %d bytes", sum, fr.Len, len(got))
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("Read(%d, %d, %d, %v): %d bytes, ReadRegions %d bytes in %d regions", start, budget, maxOffset, minOne, len(want), len(got), len(fr.Regions))
		}
	}
	if _, err := l.ReadRegions(leo+1, 100, leo, true); err == nil {
		t.Fatal("ReadRegions past the log end did not fail")
	}
}

// A fetch's regions are chosen under the log's read lock and sent after it is released (as
// Kafka's FileRecords are). A follower truncating to its leader's epoch end offset and then
// appending the leader's batches writes new bytes at the very file positions of a region
// already chosen: the response must then never reach the client whole with those new bytes
// (records that were never at the offsets read, and for a follower a divergent replica). It is
// cut short and fails (kproto.ErrRegionChanged; the connection is closed, the client fetches
// again), or it carries the bytes that were there when the regions were chosen.
// docs/performance.md, "Zero-copy reads".
func TestZeroCopyFetchTruncatedAndRewrittenAfterRegionsChosen(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	for _, path := range []string{"sendfile to a socket", "copy to a buffer", "read into memory"} {
		t.Run(path, func(t *testing.T) {
			l := newTestLog(t, testConfig(), nil)
			mustAppend(t, l, testBatch{records: 2, valueSize: 100, baseTs: 1}.build(), 1)
			old := testBatch{records: 2, valueSize: 100, baseTs: 1000}.build()
			mustAppend(t, l, old, 1) // offsets 2-3, leader epoch 1
			fr, err := l.ReadRegions(2, 1<<20, l.LogEndOffset(), true)
			if err != nil || fr.Len != int64(len(old)) {
				t.Fatalf("ReadRegions: %d bytes, %v; want the batch at offset 2 (%d bytes)", fr.Len, err, len(old))
			}
			// Leader epoch 2 on another broker wrote other records at offsets 2-3: this replica
			// truncates to the epoch's end offset (2) and appends them, at the same positions.
			if err := l.TruncateTo(2); err != nil {
				t.Fatal(err)
			}
			rewritten := testBatch{records: 2, valueSize: 100, baseTs: 2000, epoch: 2, base: 2}.build()
			if _, err := l.AppendAsFollower(rewritten); err != nil {
				t.Fatal(err)
			}
			if got, err := l.Read(2, 1<<20, l.LogEndOffset(), true); err != nil || !bytes.Equal(got, rewritten) || len(rewritten) != len(old) {
				t.Fatalf("setup: offsets 2-3 do not hold the rewritten batch of the same size (%v)", err)
			}

			if path == "read into memory" {
				got, err := fr.ReadAll(nil)
				if err == nil && !bytes.Equal(got, old) {
					t.Fatalf("ReadAll returned %d bytes that were never at offsets 2-3 when the regions were chosen", len(got))
				}
				if err != nil && !errors.Is(err, kproto.ErrRegionChanged) {
					t.Fatalf("ReadAll: %v, want kproto.ErrRegionChanged", err)
				}
				return
			}
			resp := kmsg.NewPtrFetchResponse()
			resp.Version = 11
			rt := kmsg.NewFetchResponseTopic()
			rt.Topic = "t"
			rp := kmsg.NewFetchResponseTopicPartition()
			rp.RecordBatches = []byte{}
			rt.Partitions = append(rt.Partitions, rp)
			resp.Topics = append(resp.Topics, rt)
			sf := &kproto.SplicedFetch{Resp: resp, Files: []kproto.SplicedPartition{{Records: fr}}}
			frame, cuts, err := kproto.AppendSplicedFetch(nil, 5, sf)
			if err != nil {
				t.Fatal(err)
			}
			var received []byte
			var werr error
			if path == "copy to a buffer" {
				var buf bytes.Buffer
				werr = kproto.WriteSplicedFetch(&buf, frame, cuts, sf)
				received = buf.Bytes()
			} else {
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
				werr = kproto.WriteSplicedFetch(c, frame, cuts, sf)
				c.Close() // what the connection writer does on an error
				received = <-got
			}
			want := int(binary.BigEndian.Uint32(frame)) + 4
			if len(received) >= want {
				// A whole frame: the client decodes it, so its records must be the old batch.
				recs := received[len(received)-len(old):]
				if !bytes.Equal(recs, old) {
					same := "the rewritten batch"
					if !bytes.Equal(recs, rewritten) {
						same = "neither batch"
					}
					t.Fatalf("the client received a whole response (write error %v) whose records at offsets 2-3 are %s, not the batch there when the regions were chosen", werr, same)
				}
				return
			}
			if !errors.Is(werr, kproto.ErrRegionChanged) {
				t.Fatalf("response cut short at %d of %d bytes with %v, want kproto.ErrRegionChanged", len(received), want, werr)
			}
		})
	}
}
