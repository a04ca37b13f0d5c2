package broker

import (
	"encoding/binary"
	"errors"
	"net"
	"sync"
	"syscall"

	"github.com/isrbroker/isrbroker/broker/kproto"
	"github.com/isrbroker/isrbroker/logstore/record"
)

// responseStream is a connection's responses in request order, and the right to write them
// (the writer role). Whichever goroutine finds the oldest unanswered response ready takes the
// role: the reader once a handler has returned, or the goroutine that completed a parked
// request (an acks=-1 produce completed by a follower's fetch, a consumer fetch completed by
// an append). It writes what is ready with non-blocking write(2) and sendfile(2) calls
// (kproto.FrameWrite.TryWrite), so it never waits for the client; the rest of a response the
// socket would not take at once, and everything on a connection that is not a socket, goes to
// the connection's writer goroutine (writeLoop), which may block.
//
// Before this, every response went through the writer goroutine: one more goroutine wake-up
// on each acknowledgement's path, which on a busy two-core machine costs scheduling delay
// (docs/performance.md, "Third look").
type responseStream struct {
	mu      sync.Mutex
	pending []*slot // requests decoded and not yet written, oldest first
	writing bool    // a goroutine holds the writer role

	// handoff passes the writer role to writeLoop (cap 1: the role has one holder).
	handoff chan struct{}
	// raw is the socket for non-blocking writes; nil when the connection is not a socket
	// (tests' net.Pipe), and then writeLoop writes everything.
	raw syscall.RawConn

	// Owned by the writer role's holder.
	buf      []byte            // encoding buffer
	fw       kproto.FrameWrite // the response being written (aliases buf)
	restSlot *slot             // set when fw was left unfinished for writeLoop
}

func (o *responseStream) init(nc net.Conn) {
	o.handoff = make(chan struct{}, 1)
	if sc, ok := nc.(syscall.Conn); ok {
		if raw, err := sc.SyscallConn(); err == nil {
			o.raw = raw
		}
	}
}

// push appends the slot of a request the reader is about to handle.
func (o *responseStream) push(sl *slot) {
	o.mu.Lock()
	sl.inHandler = true
	o.pending = append(o.pending, sl)
	o.mu.Unlock()
}

// complete sets the response of sl. Only the first call counts. When sl is the oldest
// unanswered request and its handler has returned, the caller writes it (and whatever follows
// it ready) before returning, unless another goroutine is writing.
func (sl *slot) complete(r reply) {
	sl.once.Do(func() {
		sl.timing.responseCompleted()
		o := &sl.c.out
		o.mu.Lock()
		sl.r, sl.done = r, true
		take := o.takeRoleLocked()
		o.mu.Unlock()
		if take {
			sl.c.write()
		}
	})
}

// handlerReturned is called by the reader after the handler of sl returned: a response the
// handler completed at once is written now, before the next request is read.
func (c *conn) handlerReturned(sl *slot) {
	o := &c.out
	o.mu.Lock()
	sl.inHandler = false
	take := o.takeRoleLocked()
	o.mu.Unlock()
	if take {
		c.write()
	}
}

// headReadyLocked reports whether the oldest response is set and its handler has returned.
func (o *responseStream) headReadyLocked() bool {
	return len(o.pending) > 0 && o.pending[0].done && !o.pending[0].inHandler
}

// takeRoleLocked takes the writer role when nobody holds it and the oldest response is ready.
func (o *responseStream) takeRoleLocked() bool {
	if o.writing || !o.headReadyLocked() {
		return false
	}
	o.writing = true
	return true
}

// write runs with the writer role: non-blocking writes from here, or the role goes to
// writeLoop.
func (c *conn) write() {
	if c.out.raw == nil {
		c.handOff()
		return
	}
	c.drain(false)
}

// maxInlineWrite is the largest response written without the writer goroutine. A larger one
// (a consumer's fetch of megabytes) does not fit a socket buffer anyway, its latency is its
// transfer, and writing its first part on the reader or a completing goroutine only delays
// what that goroutine does next; measured, consumers read no faster that way
// (docs/performance.md, "Third look").
const maxInlineWrite = 256 << 10

// handOff passes the writer role to writeLoop.
func (c *conn) handOff() {
	select {
	case c.out.handoff <- struct{}{}:
	case <-c.done:
	}
}

// next pops the oldest response if it is ready; otherwise it gives the writer role up.
func (c *conn) next() *slot {
	o := &c.out
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.headReadyLocked() {
		o.writing = false
		return nil
	}
	sl := o.pending[0]
	o.pending[0] = nil
	o.pending = o.pending[1:]
	if len(o.pending) == 0 {
		o.pending = o.pending[:0:0] // let the array go once it drains; push allocates anew
	}
	return sl
}

// drain writes ready responses in order until the oldest is not ready (the role is given up)
// or, when not blocking, the socket would make a write wait (the role goes to writeLoop with
// the rest of that response).
func (c *conn) drain(blocking bool) {
	o := &c.out
	for {
		sl := c.next()
		if sl == nil {
			return
		}
		sl.timing.responseTaken()
		r := sl.r
		switch {
		case r.fetch != nil:
			var cuts []int
			var err error
			o.buf, cuts, err = kproto.AppendSplicedFetch(o.buf[:0], sl.corr, r.fetch)
			if err != nil {
				c.log.WithError(err).Error("closing connection: encoding a fetch response around segment-file regions failed")
				c.close()
				return
			}
			o.fw.ResetSpliced(o.buf, cuts, r.fetch)
		case r.resp != nil:
			o.buf = kproto.AppendResponse(o.buf[:0], sl.corr, r.resp)
			o.fw.Reset(o.buf)
		case r.isRaw: // a SaslHandshake v0 challenge: a bare frame (sasl_conn.go)
			o.buf = append(binary.BigEndian.AppendUint32(o.buf[:0], uint32(len(r.raw))), r.raw...)
			o.fw.Reset(o.buf)
		default: // nothing on the wire (acks=0)
			if !c.written(sl) {
				return
			}
			continue
		}
		if !blocking && (o.fw.Len() > maxInlineWrite || !o.fw.TryWrite(o.raw)) {
			o.restSlot = sl
			c.handOff()
			return
		}
		if !c.finish(sl) {
			return
		}
	}
}

// finish writes the rest of the response in o.fw, waiting for the socket as needed, and then
// finishes sl (written). It reports whether the connection stays open.
func (c *conn) finish(sl *slot) bool {
	if err := c.out.fw.Finish(c.nc); err != nil {
		// Part of the response may be on the wire: only closing keeps the stream framed. A
		// segment file shorter than its region (truncated under the read) is worth telling;
		// a client that went away is not.
		if errors.Is(err, record.ErrShortFile) {
			c.log.WithError(err).Info("closing connection: writing a fetch response from the segment files failed")
		} else if !errors.Is(err, net.ErrClosed) {
			c.log.WithError(err).Debug("closing connection: writing a response failed")
		}
		c.close()
		return false
	}
	c.out.fw.Release()
	return c.written(sl)
}

// written finishes a response on the wire: its timing, its in-flight token, and an acks=0
// produce error's close. It reports whether the connection stays open.
func (c *conn) written(sl *slot) bool {
	if cap(c.out.buf) > 1<<20 { // do not pin a large fetch response's buffer
		c.out.buf = nil
	}
	sl.timing.record()
	c.activity.Add(1)
	<-c.inflight
	if sl.r.sent != nil {
		close(sl.r.sent)
	}
	if sl.r.close {
		c.log.Info("closing connection after an acks=0 produce error")
		c.close()
		return false
	}
	return true
}

// writeLoop is the connection's writer goroutine: it takes the writer role when a
// non-blocking holder hands it over, finishes a short write, and writes with blocking calls
// until the oldest response is not ready.
func (c *conn) writeLoop() {
	defer recoverLog(c.log, "connection writer")
	defer c.close()
	o := &c.out
	for {
		select {
		case <-o.handoff:
		case <-c.done:
			return
		}
		if sl := o.restSlot; sl != nil {
			o.restSlot = nil
			if !c.finish(sl) {
				return
			}
		}
		c.drain(true)
	}
}
