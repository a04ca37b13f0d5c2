package broker

import (
	"errors"
	"net"
	"sync"
	"syscall"

	"github.com/isrbroker/isrbroker/logstore/kproto"
)

// responseStream is a connection's responses in request order, and the right to write them
// (the writer role). Whichever goroutine finds the oldest unanswered response ready takes the
// role: the reader once a handler has returned, or the goroutine that completed a parked
// request (an acks=-1 produce completed by a follower's fetch, a consumer fetch completed by
// an append). It writes what is ready with one non-blocking write per response, so it never
// waits for the client; whatever would wait (a short write, a full socket buffer, a fetch
// answered from the segment files with sendfile, a connection that is not a socket) goes to
// the connection's writer goroutine (writeLoop), which may block.
//
// Before this, every response went through the writer goroutine: one more goroutine wake-up
// on each acknowledgement's path, which on a busy two-core machine costs scheduling delay
// (docs/performance.md, "Inline response writes").
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
	buf      []byte // encoding buffer
	rest     []byte // the unwritten tail of restSlot's response (aliases buf)
	restSlot *slot
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
		take := !sl.inHandler && o.takeRoleLocked()
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

// takeRoleLocked takes the writer role when nobody holds it and the oldest response is ready.
func (o *responseStream) takeRoleLocked() bool {
	if o.writing || len(o.pending) == 0 || !o.pending[0].done || o.pending[0].inHandler {
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

// handOff passes the writer role to writeLoop.
func (c *conn) handOff() {
	select {
	case c.out.handoff <- struct{}{}:
	case <-c.done:
	}
}

// next pops the oldest response if it is ready; otherwise it gives the writer role up. A
// non-blocking holder leaves a fetch answered from the segment files in place and hands the
// role to writeLoop (handoff reports that).
func (c *conn) next(blocking bool) (sl *slot, handoff bool) {
	o := &c.out
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.pending) == 0 || !o.pending[0].done || o.pending[0].inHandler {
		o.writing = false
		return nil, false
	}
	sl = o.pending[0]
	if !blocking && sl.r.fetch != nil {
		return nil, true
	}
	o.pending[0] = nil
	o.pending = o.pending[1:]
	if len(o.pending) == 0 {
		o.pending = o.pending[:0:0] // let the array go once it drains; push allocates anew
	}
	return sl, false
}

// drain writes ready responses in order until the oldest is not ready (the role is given up)
// or, when not blocking, a write would wait (the role goes to writeLoop).
func (c *conn) drain(blocking bool) {
	o := &c.out
	for {
		sl, handoff := c.next(blocking)
		if handoff {
			c.handOff()
			return
		}
		if sl == nil {
			return
		}
		sl.timing.responseTaken()
		r := sl.r
		switch {
		case r.fetch != nil: // blocking only (next)
			var cuts []int
			var err error
			o.buf, cuts, err = kproto.AppendSplicedFetch(o.buf[:0], sl.corr, r.fetch)
			if err != nil {
				c.log.WithError(err).Error("closing connection: encoding a fetch response around segment-file regions failed")
				c.close()
				return
			}
			if err := kproto.WriteSplicedFetch(c.nc, o.buf, cuts, r.fetch); err != nil {
				// Part of the response may be on the wire: only closing keeps the stream framed.
				c.log.WithError(err).Info("closing connection: writing a fetch response from the segment files failed")
				c.close()
				return
			}
		case r.resp != nil:
			o.buf = kproto.AppendResponse(o.buf[:0], sl.corr, r.resp)
			if blocking {
				if _, err := c.nc.Write(o.buf); err != nil {
					c.close()
					return
				}
				break
			}
			n, err := c.tryWrite(o.buf)
			if err != nil {
				c.close()
				return
			}
			if n < len(o.buf) {
				o.rest, o.restSlot = o.buf[n:], sl
				c.handOff()
				return
			}
		}
		if !c.written(sl) {
			return
		}
	}
}

// tryWrite is one non-blocking write: it returns what the socket took without waiting for
// room (0 and no error when its buffer is full).
func (c *conn) tryWrite(b []byte) (int, error) {
	var n int
	var werr error
	err := c.out.raw.Write(func(fd uintptr) bool {
		for {
			n, werr = syscall.Write(int(fd), b)
			if werr == syscall.EINTR {
				continue
			}
			break
		}
		if werr == syscall.EAGAIN {
			n, werr = 0, nil
		}
		if n < 0 {
			n = 0
		}
		return true // never wait for writability here: writeLoop does
	})
	if err == nil {
		err = werr
	}
	return n, err
}

// written finishes a response on the wire: its timing, its in-flight token, and an acks=0
// produce error's close. It reports whether the connection stays open.
func (c *conn) written(sl *slot) bool {
	if cap(c.out.buf) > 1<<20 { // do not pin a large fetch response's buffer
		c.out.buf = nil
	}
	sl.timing.record()
	<-c.inflight
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
		if o.rest != nil {
			if _, err := c.nc.Write(o.rest); err != nil {
				if !errors.Is(err, net.ErrClosed) {
					c.log.WithError(err).Debug("closing connection: writing a response failed")
				}
				return
			}
			sl := o.restSlot
			o.rest, o.restSlot = nil, nil
			if !c.written(sl) {
				return
			}
		}
		c.drain(true)
	}
}
