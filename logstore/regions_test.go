package logstore

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"net"
	"os"
	"sync/atomic"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/isrbroker/isrbroker/broker/kproto"
	"github.com/isrbroker/isrbroker/logstore/record"
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
// appending the leader's batches must not write them at the file positions of a region already
// chosen: the response would carry records that were never at the offsets read (for a follower,
// a divergent replica). Whatever the client receives of the region is a prefix of the bytes at
// its offsets when it was chosen; the rest fails as a short file (the connection is closed and
// the client fetches again). docs/performance.md, "Zero-copy reads".
func TestZeroCopyFetchTruncatedAndRewrittenAfterRegionsChosen(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	for _, c := range []struct {
		path     string
		emptied  bool // the truncation empties the segment that held the region
		midSend  bool // truncate and append while the region is being sent
		recCount int
	}{
		{path: "socket", recCount: 2},
		{path: "socket", emptied: true, recCount: 2},
		{path: "socket", midSend: true, recCount: 2000},
		{path: "socket", emptied: true, midSend: true, recCount: 2000},
		{path: "buffer", recCount: 2},
		{path: "memory", recCount: 2},
		{path: "memory", emptied: true, recCount: 2},
	} {
		name := fmt.Sprintf("%s emptied=%v midSend=%v", c.path, c.emptied, c.midSend)
		t.Run(name, func(t *testing.T) {
			cfg := testConfig()
			cfg.SegmentBytes = 64 << 20
			cfg.MaxMessageBytes = 8 << 20
			l := newTestLog(t, cfg, nil)
			// emptied: the region's batch is the first of its segment and the truncation offset
			// falls inside it (the segment is cut at 0); else the cut is after another batch.
			start, truncateTo := int64(0), int64(1)
			if !c.emptied {
				mustAppend(t, l, testBatch{records: 2, valueSize: 100, baseTs: 1}.build(), 1)
				start, truncateTo = 2, 2
			}
			// The region: one batch, a large one (about 4 MB, far more than the socket buffers
			// below) when it is to be still in flight at the truncation.
			mustAppend(t, l, testBatch{records: c.recCount, valueSize: 2000, baseTs: 1000}.build(), 1)
			old, err := l.Read(start, 64<<20, l.LogEndOffset(), true) // as stored: offsets and epoch stamped
			if err != nil {
				t.Fatal(err)
			}
			fr, err := l.ReadRegions(start, 64<<20, l.LogEndOffset(), true)
			if err != nil || fr.Len != int64(len(old)) {
				t.Fatalf("ReadRegions: %d bytes, %v; want the batch at offset %d (%d bytes)", fr.Len, err, start, len(old))
			}
			// Leader epoch 2 on another broker wrote other records at these offsets: this
			// replica truncates to the epoch's end offset and appends them.
			rewritten := testBatch{records: c.recCount, valueSize: 2000, baseTs: 2000, epoch: 2, base: start}.build()
			rewrite := func() {
				if err := l.TruncateTo(truncateTo); err != nil {
					t.Error(err)
					return
				}
				if leo := l.LogEndOffset(); leo != start {
					t.Errorf("setup: LEO %d after the truncation, want %d", leo, start)
				}
				if _, err := l.AppendAsFollower(rewritten); err != nil {
					t.Error(err)
					return
				}
				if got, err := l.Read(start, 64<<20, l.LogEndOffset(), true); err != nil || !bytes.Equal(got, rewritten) || len(rewritten) != len(old) {
					t.Errorf("setup: the offsets from %d do not hold the rewritten batch of the same size (%v)", start, err)
				}
			}
			if !c.midSend {
				rewrite()
			}

			if c.path == "memory" {
				got, err := fr.ReadAll(nil)
				if err == nil && !bytes.Equal(got, old) {
					t.Fatalf("ReadAll returned %d bytes that were not at the offsets read when the regions were chosen", len(got))
				}
				if err != nil && !errors.Is(err, record.ErrShortFile) && !errors.Is(err, os.ErrClosed) {
					t.Fatalf("ReadAll: %v, want the old batch, record.ErrShortFile or a closed file", err)
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
			var sent, sentBeforeRewrite atomic.Bool
			if c.path == "buffer" {
				var buf bytes.Buffer
				werr = kproto.WriteSplicedFetch(&buf, frame, cuts, sf)
				received = buf.Bytes()
			} else {
				got := make(chan []byte, 1)
				go func() {
					conn, err := ln.Accept()
					if err != nil {
						got <- nil
						return
					}
					defer conn.Close()
					conn.(*net.TCPConn).SetReadBuffer(64 << 10)
					// The frame before the records and the region's first byte; then, the
					// sender still blocked in sendfile, the truncation and the new append.
					head := make([]byte, cuts[0]+1)
					if n, err := io.ReadFull(conn, head); err != nil {
						got <- head[:n] // the send failed at once
						return
					}
					if c.midSend {
						sentBeforeRewrite.Store(sent.Load())
						rewrite()
					}
					rest, _ := io.ReadAll(conn)
					got <- append(head, rest...)
				}()
				conn, err := net.Dial("tcp", ln.Addr().String())
				if err != nil {
					t.Fatal(err)
				}
				conn.(*net.TCPConn).SetWriteBuffer(64 << 10)
				werr = kproto.WriteSplicedFetch(conn, frame, cuts, sf)
				sent.Store(true)
				conn.Close() // what the connection writer does on an error
				received = <-got
			}
			if len(received) < cuts[0] {
				t.Fatalf("received %d bytes, less than the frame before the records (%d)", len(received), cuts[0])
			}
			recs := received[cuts[0]:]
			whole := len(frame) + len(old)
			if !bytes.HasPrefix(old, recs) {
				same := "neither batch"
				if len(recs) <= len(rewritten) && bytes.Equal(recs, rewritten[:len(recs)]) {
					same = "the rewritten batch"
				}
				t.Fatalf("the client received %d of the region's bytes (%d of %d bytes of the frame, write error %v), which are %s, not the batch at those offsets when the regions were chosen", len(recs), len(received), whole, werr, same)
			}
			if len(received) < whole && werr == nil {
				t.Fatalf("response cut short at %d of %d bytes without an error", len(received), whole)
			}
			if c.midSend && sentBeforeRewrite.Load() {
				t.Fatal("the response was written before the truncation: the test did not truncate mid-send")
			}
		})
	}
}

// ReadRegions against a model of the batches the log holds (their offsets and sizes as
// appended): from the batch that contains the start offset, whole batches in order while they
// end below maxOffset and fit the budget, the first one whole when minOneBatch. Read and
// ReadRegions share one walk, so TestReadRegionsMatchesRead cannot see an error common to both;
// this can, including in the shortcut that takes the rest of a segment without reading its
// headers.
func TestReadRegionsModel(t *testing.T) {
	cfg := testConfig()
	cfg.SegmentBytes = 16 << 10 // many segments
	l := newTestLog(t, cfg, nil)
	rng := rand.New(rand.NewSource(11))
	type batch struct{ base, last, size int64 }
	var batches []batch
	for range 150 {
		b := testBatch{records: 1 + rng.Intn(8), valueSize: rng.Intn(600), baseTs: 1}.build()
		info := mustAppend(t, l, b, 1)
		batches = append(batches, batch{info.FirstOffset, info.LastOffset, int64(len(b))})
	}
	leo := l.LogEndOffset()
	model := func(start int64, budget int32, maxOffset int64, minOne bool) (want [][2]int64) {
		remaining := int64(budget)
		for _, b := range batches {
			if b.last < start {
				continue
			}
			if b.last >= maxOffset {
				break
			}
			if b.size > remaining {
				if len(want) == 0 && minOne {
					want = append(want, [2]int64{b.base, b.last})
				}
				break
			}
			want = append(want, [2]int64{b.base, b.last})
			remaining -= b.size
		}
		return want
	}
	shortcuts := 0
	for i := range 4000 {
		start := rng.Int63n(leo)
		budget := int32(rng.Intn(64 << 10))
		switch i % 4 {
		case 0:
			budget = 1 << 30 // everything fits: the rest of each segment is taken whole
		case 1:
			budget = int32(rng.Intn(2000)) // about one batch
		}
		maxOffset := start + 1 + rng.Int63n(leo-start+1)
		if i%2 == 0 {
			maxOffset = leo // a follower's read (or a consumer's with HW = LEO)
		}
		minOne := rng.Intn(2) == 0
		fr, err := l.ReadRegions(start, budget, maxOffset, minOne)
		if err != nil {
			t.Fatal(err)
		}
		got, err := fr.ReadAll(nil)
		if err != nil {
			t.Fatal(err)
		}
		hs, err := BatchHeaders(got)
		if err != nil {
			t.Fatalf("ReadRegions(%d, %d, %d, %v): %v", start, budget, maxOffset, minOne, err)
		}
		var have [][2]int64
		for _, h := range hs {
			have = append(have, [2]int64{h.BaseOffset, h.LastOffset()})
		}
		want := model(start, budget, maxOffset, minOne)
		if fmt.Sprint(have) != fmt.Sprint(want) {
			t.Fatalf("ReadRegions(%d, %d, %d, %v): batches %v, want %v", start, budget, maxOffset, minOne, have, want)
		}
		if maxOffset == leo && budget == 1<<30 {
			shortcuts++
		}
	}
	if shortcuts < 500 {
		t.Fatalf("only %d reads of the whole tail", shortcuts)
	}
}
