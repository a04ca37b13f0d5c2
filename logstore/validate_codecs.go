package logstore

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// Streaming decompression for the leader's record walk (validate.go). Each codec's decoder
// is pooled together with the reader over the compressed bytes and the window the walk reads
// into, so a compressed batch costs a constant number of allocations, whatever its records.
// The formats are those Kafka's producers write (CompressionType.wrapForInput): gzip (RFC
// 1952, several members allowed), snappy in the xerial framing of snappy-java or a raw block,
// the LZ4 frame format, and zstd frames.

// walkWindow is the size of the window the walk reads decompressed records into.
const walkWindow = 64 << 10

// maxZstdWindow bounds the window a zstd frame may ask the decoder to keep: 8 MiB covers the
// windows of levels 1-19 (Kafka's producers use level 3; KIP-390 levels arrive in 3.8), and
// keeps a 100-byte frame from making the leader allocate zstd's 2 GiB maximum. Deviation: a
// frame of an "ultra" level (20-22) is refused as INVALID_RECORD.
const maxZstdWindow = 8 << 20

// recordSource streams one batch's records.
type recordSource interface {
	io.Reader
	window() []byte // the walk's pooled window (walkWindow bytes)
	release()       // returns the decoder to its pool
}

var (
	gzipPool   = sync.Pool{New: func() any { return &gzipSource{win: make([]byte, walkWindow)} }}
	lz4Pool    = sync.Pool{New: func() any { return &lz4Source{r: lz4.NewReader(nil), win: make([]byte, walkWindow)} }}
	zstdPool   = sync.Pool{New: newZstdSource}
	snappyPool = sync.Pool{New: func() any { return &snappySource{win: make([]byte, walkWindow)} }}
)

// openDecompressor starts decompressing data, a batch's records compressed with codec (1-4).
func openDecompressor(codec int, data []byte, limit int64) (recordSource, error) {
	switch codec {
	case codecGzip:
		s := gzipPool.Get().(*gzipSource)
		s.src.Reset(data)
		if err := s.r.Reset(&s.src); err != nil {
			s.release()
			return nil, err
		}
		return s, nil
	case codecLz4:
		s := lz4Pool.Get().(*lz4Source)
		s.src.Reset(data)
		s.r.Reset(&s.src)
		return s, nil
	case codecZstd:
		s := zstdPool.Get().(*zstdSource)
		if s.r == nil {
			return nil, s.err
		}
		s.src.Reset(data)
		if err := s.r.Reset(&s.src); err != nil {
			s.release()
			return nil, err
		}
		return s, nil
	default:
		s := snappyPool.Get().(*snappySource)
		if err := s.reset(data, limit); err != nil {
			s.release()
			return nil, err
		}
		return s, nil
	}
}

type gzipSource struct {
	r   gzip.Reader
	src bytes.Reader
	win []byte
}

func (s *gzipSource) Read(p []byte) (int, error) { return s.r.Read(p) }
func (s *gzipSource) window() []byte             { return s.win }
func (s *gzipSource) release()                   { s.src.Reset(nil); gzipPool.Put(s) }

type lz4Source struct {
	r   *lz4.Reader
	src bytes.Reader
	win []byte
}

func (s *lz4Source) Read(p []byte) (int, error) { return s.r.Read(p) }
func (s *lz4Source) window() []byte             { return s.win }
func (s *lz4Source) release()                   { s.src.Reset(nil); s.r.Reset(nil); lz4Pool.Put(s) }

type zstdSource struct {
	r   *zstd.Decoder
	err error
	src bytes.Reader
	win []byte
}

func newZstdSource() any {
	d, err := zstd.NewReader(nil,
		zstd.WithDecoderConcurrency(1), // synchronous: no goroutine per stream
		zstd.WithDecoderLowmem(true),
		zstd.WithDecoderMaxWindow(maxZstdWindow),
		zstd.WithDecoderMaxMemory(1<<30))
	if err != nil {
		return &zstdSource{err: err}
	}
	s := &zstdSource{r: d, win: make([]byte, walkWindow)}
	runtime.AddCleanup(s, func(d *zstd.Decoder) { d.Close() }, d)
	return s
}

func (s *zstdSource) Read(p []byte) (int, error) { return s.r.Read(p) }
func (s *zstdSource) window() []byte             { return s.win }
func (s *zstdSource) release()                   { s.src.Reset(nil); zstdPool.Put(s) }

// xerialHeader is snappy-java's stream header: a magic, then version and minimum compatible
// version (big endian int32s).
var xerialMagic = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

const xerialHeaderSize = 16

var errXerialFraming = errors.New("malformed xerial snappy framing")

// snappySource decodes snappy as snappy-java's SnappyInputStream reads it: xerial blocks
// (a big-endian int32 length, then a raw snappy block) after the xerial header, or, without
// the header, the whole input as one raw block. Blocks are decoded strictly (standard snappy,
// not s2's extensions) into a pooled buffer; their claimed lengths count against the limit
// before they are decoded.
type snappySource struct {
	rest    []byte // compressed bytes not decoded yet
	xerial  bool
	block   []byte // the decoded block
	pos     int    // read position in block
	decoded int64
	limit   int64
	win     []byte
}

func (s *snappySource) reset(data []byte, limit int64) error {
	s.block, s.pos, s.decoded, s.limit = s.block[:0], 0, 0, limit
	s.xerial = len(data) >= xerialHeaderSize && bytes.HasPrefix(data, xerialMagic)
	if s.xerial {
		data = data[xerialHeaderSize:]
	}
	s.rest = data
	return nil
}

func (s *snappySource) Read(p []byte) (int, error) {
	for s.pos == len(s.block) {
		if len(s.rest) == 0 {
			return 0, io.EOF
		}
		if err := s.next(); err != nil {
			return 0, err
		}
	}
	n := copy(p, s.block[s.pos:])
	s.pos += n
	return n, nil
}

// next decodes the next block.
func (s *snappySource) next() error {
	blk := s.rest
	if s.xerial {
		if len(s.rest) < 4 {
			return errXerialFraming
		}
		size := int64(int32(binary.BigEndian.Uint32(s.rest)))
		if size < 0 || size > int64(len(s.rest)-4) {
			return errXerialFraming
		}
		blk, s.rest = s.rest[4:4+size], s.rest[4+size:]
	} else {
		s.rest = nil
	}
	n, err := snappy.DecodedLen(blk)
	if err != nil {
		return err
	}
	if s.decoded += int64(n); s.decoded > s.limit {
		return fmt.Errorf("%w of %d bytes", errDecompressSize, s.limit)
	}
	if cap(s.block) < n {
		s.block = make([]byte, n)
	}
	out, err := snappy.DecodeStrict(s.block[:cap(s.block)], blk)
	if err != nil {
		return err
	}
	s.block, s.pos = out, 0
	return nil
}

func (s *snappySource) window() []byte { return s.win }
func (s *snappySource) release() {
	s.rest = nil
	if cap(s.block) > 4*walkWindow {
		s.block = nil // a raw block of a large batch: not kept in the pool
	}
	snappyPool.Put(s)
}
