package broker

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/isrbroker/isrbroker/broker/kproto"
)

// frameFirstChunk is the first buffer of a request frame that has not arrived yet: a frame
// header may claim up to socket.request.max.bytes, and a buffer of the claimed size made at
// once would let a connection that sends only the header (or an idle client's) pin that much.
// The buffer grows by a factor frameGrowth as the bytes arrive, so what a connection holds is
// at most frameGrowth times what it has sent, and a frame already received is read at once.
const (
	frameFirstChunk = 64 << 10
	frameGrowth     = 4
)

// readRequestFrame reads the next request frame (Kafka's NetworkReceive.readFrom: a size
// below zero is kproto.ErrFrameInvalid, above maxSize kproto.ErrFrameTooLarge). A Produce frame
// is read into buffers of pool, the one holding the frame returned with it for the caller to
// put back once the request is handled; other frames get fresh buffers (their handlers may
// keep decoded bytes). Either grows as the bytes arrive (frameFirstChunk).
func readRequestFrame(br *bufio.Reader, maxSize int32, pool *bufferPool) ([]byte, *[]byte, error) {
	_, produce := peekProduceFrame(br, maxSize)
	var sz [4]byte
	if _, err := io.ReadFull(br, sz[:]); err != nil {
		return nil, nil, err
	}
	size := int32(binary.BigEndian.Uint32(sz[:]))
	if size < 0 {
		return nil, nil, fmt.Errorf("%w: %d", kproto.ErrFrameInvalid, size)
	}
	if size > maxSize {
		return nil, nil, fmt.Errorf("%w: %d > %d", kproto.ErrFrameTooLarge, size, maxSize)
	}
	n := int(size)
	alloc := func(c int) ([]byte, *[]byte) {
		if produce {
			if p := pool.get(c); p != nil {
				return (*p)[:0], p
			}
		}
		return make([]byte, 0, c), nil
	}
	release := func(p *[]byte) {
		if p != nil {
			pool.put(p)
		}
	}
	buf, pooled := alloc(min(n, max(frameFirstChunk, br.Buffered())))
	for len(buf) < n {
		if len(buf) == cap(buf) {
			nb, np := alloc(min(n, frameGrowth*cap(buf)))
			nb = append(nb, buf...)
			release(pooled)
			buf, pooled = nb, np
		}
		k, err := io.ReadFull(br, buf[len(buf):min(n, cap(buf))])
		buf = buf[:len(buf)+k]
		if err != nil {
			release(pooled)
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return nil, nil, err
		}
	}
	return buf, pooled, nil
}
