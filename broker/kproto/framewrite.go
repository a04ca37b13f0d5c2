package kproto

import (
	"io"
	"syscall"

	"github.com/isrbroker/isrbroker/logstore/record"
)

// FrameWrite is one response frame on its way to a socket: its pieces in wire order (bytes of
// the encoded frame, and for a spliced fetch the segment-file regions between them) and how
// far the write has got. TryWrite advances it without waiting for the socket; Finish writes
// the rest, waiting as needed. A connection's writer uses TryWrite where it must not block
// (another connection's goroutine completed the response) and leaves the rest to a goroutine
// that may (broker/conn_write.go).
type FrameWrite struct {
	pieces []framePiece
	next   int   // index of the first piece not fully written
	off    int64 // bytes of pieces[next] already written
}

// framePiece is either bytes or a file region.
type framePiece struct {
	b      []byte
	region record.FileRegion
	file   bool
}

func (p framePiece) len() int64 {
	if p.file {
		return p.region.Len
	}
	return int64(len(p.b))
}

// NewFrameWrite is a plain frame (AppendResponse's output). The write aliases frame.
func NewFrameWrite(frame []byte) *FrameWrite {
	w := new(FrameWrite)
	w.Reset(frame)
	return w
}

// NewSplicedWrite is a frame of AppendSplicedFetch with each spliced partition's regions at
// its cut. The write aliases frame.
func NewSplicedWrite(frame []byte, cuts []int, sf *SplicedFetch) *FrameWrite {
	w := new(FrameWrite)
	w.ResetSpliced(frame, cuts, sf)
	return w
}

// Reset makes w the write of a plain frame, reusing its memory.
func (w *FrameWrite) Reset(frame []byte) {
	w.pieces = append(w.pieces[:0], framePiece{b: frame})
	w.next, w.off = 0, 0
}

// ResetSpliced makes w the write of a spliced fetch frame (NewSplicedWrite), reusing its memory.
func (w *FrameWrite) ResetSpliced(frame []byte, cuts []int, sf *SplicedFetch) {
	w.pieces = w.pieces[:0]
	w.next, w.off = 0, 0
	prev := 0
	for k, cut := range cuts {
		w.pieces = append(w.pieces, framePiece{b: frame[prev:cut]})
		for _, r := range sf.Files[k].Records.Regions {
			if r.Len > 0 {
				w.pieces = append(w.pieces, framePiece{region: r, file: true})
			}
		}
		prev = cut
	}
	w.pieces = append(w.pieces, framePiece{b: frame[prev:]})
}

// Release drops the write's references to the frame and the files (the pieces' memory stays
// for the next Reset).
func (w *FrameWrite) Release() {
	clear(w.pieces)
	w.pieces = w.pieces[:0]
	w.next, w.off = 0, 0
}

// Len is the frame's length on the wire.
func (w *FrameWrite) Len() int64 {
	var n int64
	for _, p := range w.pieces {
		n += p.len()
	}
	return n
}

// Done reports whether every byte of the frame was written.
func (w *FrameWrite) Done() bool { return w.next == len(w.pieces) }

// advance records n more bytes written.
func (w *FrameWrite) advance(n int64) {
	for n > 0 && w.next < len(w.pieces) {
		left := w.pieces[w.next].len() - w.off
		if n < left {
			w.off += n
			return
		}
		n -= left
		w.next++
		w.off = 0
	}
	for w.next < len(w.pieces) && w.pieces[w.next].len() == 0 {
		w.next++
	}
}

// TryWrite writes what the socket behind raw takes now, never waiting for room: bytes with
// write(2), regions with sendfile(2) (Linux). It stops at the first piece the socket will not
// take at once, and also at anything unusual (an error, a kernel refusing sendfile, a file
// shorter than its region), leaving that to Finish, which waits, falls back to copying, or
// reports the error. It reports whether the frame is done.
func (w *FrameWrite) TryWrite(raw syscall.RawConn) bool {
	w.advance(0)
	for !w.Done() {
		p := w.pieces[w.next]
		var n int64
		if p.file {
			r := p.region
			r.Pos += w.off
			r.Len -= w.off
			n = trySendfile(raw, r)
		} else {
			// Bytes right before a file region (a partition's framing before its records) go
			// with MSG_MORE: the kernel holds them until sendfile adds the records and pushes,
			// so the frame leaves as one segment and wakes its reader once, not twice.
			more := w.next+1 < len(w.pieces) && w.pieces[w.next+1].file
			n = tryWriteBytes(raw, p.b[w.off:], more)
		}
		if n <= 0 {
			return false
		}
		w.advance(n)
	}
	return true
}

// Finish writes the rest of the frame to dst, waiting for the socket as needed (regions with
// WriteFileRegion). An error leaves part of the frame on dst: the caller closes the connection.
func (w *FrameWrite) Finish(dst io.Writer) error {
	w.advance(0)
	for !w.Done() {
		p := w.pieces[w.next]
		if p.file {
			r := p.region
			r.Pos += w.off
			r.Len -= w.off
			if err := WriteFileRegion(dst, r); err != nil {
				return err
			}
		} else if _, err := dst.Write(p.b[w.off:]); err != nil {
			return err
		}
		w.next++
		w.off = 0
		w.advance(0)
	}
	return nil
}
