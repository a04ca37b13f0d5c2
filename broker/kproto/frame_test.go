package kproto

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"runtime"
	"testing"
	"unsafe"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func sizePrefixed(size int32, body []byte) []byte {
	return append(binary.BigEndian.AppendUint32(nil, uint32(size)), body...)
}

// ReadFrame follows Kafka's rule for the size prefix (NetworkReceive.readFrom): a negative size
// or one above max is refused before any byte of the body is read; every size from 0 to max is
// read whole, even below the 8 bytes a request header needs (ParseHeader refuses those).
func TestReadFrameSizeEdges(t *testing.T) {
	const max = 64
	body := bytes.Repeat([]byte{0xab}, max+1)
	cases := []struct {
		name string
		size int32
		want error // nil: a frame of size bytes
	}{
		{"min int32", math.MinInt32, ErrFrameInvalid},
		{"-1", -1, ErrFrameInvalid},
		{"0", 0, nil},
		{"1", 1, nil},
		{"7", 7, nil},
		{"8", 8, nil},
		{"max", max, nil},
		{"max+1", max + 1, ErrFrameTooLarge},
		{"max int32", math.MaxInt32, ErrFrameTooLarge},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := bytes.NewReader(sizePrefixed(c.size, body))
			frame, err := ReadFrame(r, max)
			if c.want != nil {
				if !errors.Is(err, c.want) {
					t.Fatalf("err = %v, want %v", err, c.want)
				}
				if r.Len() != len(body) {
					t.Fatalf("%d body bytes consumed before refusing the size", len(body)-r.Len())
				}
				return
			}
			if err != nil {
				t.Fatalf("err = %v", err)
			}
			if len(frame) != int(c.size) || !bytes.Equal(frame, body[:c.size]) {
				t.Fatalf("frame of %d bytes, want the %d sent", len(frame), c.size)
			}
		})
	}
}

// A frame too short for a request header is read (above) and then refused by ParseHeader.
func TestParseHeaderRefusesFramesBelow8(t *testing.T) {
	for n := 0; n < 8; n++ {
		if _, _, err := ParseHeader(make([]byte, n), IsFlexible); !errors.Is(err, ErrShortHeader) {
			t.Errorf("%d-byte frame: err = %v, want ErrShortHeader", n, err)
		}
	}
}

// KAFKA-14063: a size that lies costs no more memory than the bytes really sent. A frame that
// claims 1 GiB but carries 100 bytes ends with io.ErrUnexpectedEOF after allocating about the
// first 1 MiB step, not the claimed size.
func TestReadFrameLyingSizeAllocatesOnlyWhatArrives(t *testing.T) {
	const claimed = 1 << 30
	in := sizePrefixed(claimed, make([]byte, 100))
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := ReadFrame(bytes.NewReader(in), claimed)
	runtime.ReadMemStats(&after)
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("err = %v, want io.ErrUnexpectedEOF", err)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 4*frameInitialCap {
		t.Fatalf("allocated %d bytes for a frame that carried 100", got)
	}
}

// The growing buffer keeps every byte across its doublings: a frame of several MiB, delivered
// in small reads, comes back identical.
func TestReadFrameGrowsAcrossSteps(t *testing.T) {
	body := make([]byte, 3*frameInitialCap+12345)
	for i := range body {
		body[i] = byte(i * 7)
	}
	r := &smallReads{r: bytes.NewReader(sizePrefixed(int32(len(body)), body)), n: 4093}
	frame, err := ReadFrame(r, math.MaxInt32)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(frame, body) {
		t.Fatal("frame differs from the bytes sent")
	}
}

// smallReads returns at most n bytes per Read, like a socket.
type smallReads struct {
	r io.Reader
	n int
}

func (s *smallReads) Read(p []byte) (int, error) {
	if len(p) > s.n {
		p = p[:s.n]
	}
	return s.r.Read(p)
}

// ReadFrameInto reads a frame that fits into the caller's buffer (same storage, no allocation),
// one that does not into a new buffer, and refuses the sizes ReadFrame refuses.
func TestReadFrameInto(t *testing.T) {
	buf := make([]byte, 0, 64)
	body := []byte("a frame of thirty-two bytes long")
	frame, err := ReadFrameInto(bytes.NewReader(sizePrefixed(int32(len(body)), body)), 1<<20, buf)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(frame, body) || unsafe.SliceData(frame) != unsafe.SliceData(buf) {
		t.Fatalf("a frame that fits: got %q (same storage: %v)", frame, unsafe.SliceData(frame) == unsafe.SliceData(buf))
	}
	in := sizePrefixed(int32(len(body)), body)
	r := bytes.NewReader(in)
	allocs := testing.AllocsPerRun(100, func() {
		r.Reset(in)
		_, _ = ReadFrameInto(r, 1<<20, buf)
	})
	if allocs > 1 { // at most the size prefix's array, escaping through io.Reader; never the frame
		t.Errorf("%.0f allocations per frame that fits", allocs)
	}

	big := bytes.Repeat([]byte{7}, 100)
	frame, err = ReadFrameInto(&smallReads{r: bytes.NewReader(sizePrefixed(int32(len(big)), big)), n: 9}, 1<<20, buf)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(frame, big) || unsafe.SliceData(frame) == unsafe.SliceData(buf) {
		t.Fatalf("a frame larger than the buffer: got %d bytes (same storage: %v)", len(frame), unsafe.SliceData(frame) == unsafe.SliceData(buf))
	}

	if _, err := ReadFrameInto(bytes.NewReader(sizePrefixed(-1, nil)), 1<<20, buf); !errors.Is(err, ErrFrameInvalid) {
		t.Errorf("size -1: err = %v, want ErrFrameInvalid", err)
	}
	if _, err := ReadFrameInto(bytes.NewReader(sizePrefixed(65, make([]byte, 65))), 64, buf); !errors.Is(err, ErrFrameTooLarge) {
		t.Errorf("size above max: err = %v, want ErrFrameTooLarge", err)
	}
	if _, err := ReadFrameInto(bytes.NewReader(sizePrefixed(32, body[:10])), 1<<20, buf); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("short body: err = %v, want io.ErrUnexpectedEOF", err)
	}
}

// ParseHeaderReusing returns the previous client id itself when the header's equals it, and a
// copy of its own when it differs or is null; the values are the header's either way.
func TestParseHeaderReusingSharesAnEqualClientID(t *testing.T) {
	frame := func(id *string) []byte {
		b := binary.BigEndian.AppendUint16(nil, 3) // Metadata
		b = binary.BigEndian.AppendUint16(b, 1)
		b = binary.BigEndian.AppendUint32(b, 7)
		if id == nil {
			return binary.BigEndian.AppendUint16(b, 0xffff)
		}
		b = binary.BigEndian.AppendUint16(b, uint16(len(*id)))
		return append(b, *id...)
	}
	a, other := "producer-1", "consumer-9"
	h, _, err := ParseHeaderReusing(frame(&a), IsFlexible, nil)
	if err != nil || h.ClientID == nil || *h.ClientID != a {
		t.Fatalf("first header: %+v, %v", h, err)
	}
	prev := h.ClientID
	h, _, err = ParseHeaderReusing(frame(&a), IsFlexible, prev)
	if err != nil || h.ClientID != prev {
		t.Fatalf("an equal client id: got %p (%v), want the previous pointer %p", h.ClientID, err, prev)
	}
	f := frame(&a)
	if allocs := testing.AllocsPerRun(100, func() { _, _, _ = ParseHeaderReusing(f, IsFlexible, prev) }); allocs != 0 {
		t.Errorf("%v allocations parsing a header with the previous client id, want 0", allocs)
	}
	h, _, err = ParseHeaderReusing(frame(&other), IsFlexible, prev)
	if err != nil || h.ClientID == prev || h.ClientID == nil || *h.ClientID != other || *prev != a {
		t.Fatalf("a different client id: %v (%v); previous now %q", h.ClientID, err, *prev)
	}
	h, _, err = ParseHeaderReusing(frame(nil), IsFlexible, prev)
	if err != nil || h.ClientID != nil {
		t.Fatalf("a null client id: %v (%v)", h.ClientID, err)
	}
}

// IsFlexible's table answers what kmsg answers for every key and version it knows, and false
// for keys it does not know; it allocates nothing (it runs on every request's header).
func TestIsFlexibleAgreesWithKmsg(t *testing.T) {
	flexibleKeys := 0
	for key := int16(-1); key <= kmsg.MaxKey+2; key++ {
		req := kmsg.RequestForKey(key)
		if req == nil {
			for v := int16(0); v < 20; v++ {
				if IsFlexible(key, v) {
					t.Fatalf("unknown key %d v%d is flexible", key, v)
				}
			}
			continue
		}
		for v := int16(0); v <= req.MaxVersion()+1; v++ {
			req.SetVersion(v)
			if got, want := IsFlexible(key, v), req.IsFlexible(); got != want {
				t.Fatalf("IsFlexible(%d, %d) = %v, kmsg says %v", key, v, got, want)
			}
		}
		if IsFlexible(key, req.MaxVersion()) {
			flexibleKeys++
		}
	}
	if flexibleKeys < 40 {
		t.Fatalf("only %d keys are flexible at their newest version", flexibleKeys)
	}
	if allocs := testing.AllocsPerRun(100, func() { _ = IsFlexible(int16(kmsg.Fetch), 12) }); allocs != 0 {
		t.Errorf("%v allocations per IsFlexible, want 0", allocs)
	}
}
