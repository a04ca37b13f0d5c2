package kproto

import (
	"io"
	"net"
	"syscall"
	"unsafe"
)

// Socket I/O without the scheduler's system-call hooks (docs/performance.md, "System calls the
// scheduler does not see").
//
// Go's syscall.Syscall (which net.Conn's Read and Write use) tells the scheduler a goroutine is
// entering a system call (entersyscall), so that a call which blocks can have its P handed to
// another thread. When the runtime's monitor thread (sysmon) is in its deep sleep, which it
// enters whenever every P is idle, that hook also wakes it, and it then polls every 20 µs until
// the process is idle again (golang/go#18236). A broker that goes idle and busy again thousands
// of times a second (each request, each follower fetch) so pays two or more thread switches per
// busy spell for the monitor; on a machine where a switch costs tens of µs that was about a
// sixth of each broker's CPU under a steady acks=all load.
//
// A read or write on a socket cannot block: the runtime poller opened it non-blocking, so the
// kernel answers EAGAIN instead of waiting, and RawConn.Read/Write wait for readiness through
// the poller (deadlines included). So these calls go straight to the kernel with
// syscall.RawSyscall, which skips the hooks; nothing changes for the scheduler but the wake-ups.

// directSockets: sockets are read and written with direct system calls on this platform.
const directSockets = true

// SocketReader reads a socket with read(2) issued directly (see above), waiting through the
// runtime poller when nothing is there. It follows net.Conn's Read: a read of 0 bytes at the
// end of the stream is io.EOF; deadline and close errors are the poller's.
type SocketReader struct {
	raw syscall.RawConn
	// One read's buffer and outcome, and readOnce bound once: Read allocates nothing (a
	// closure per call would, on every request). A SocketReader has one reader at a time.
	p      []byte
	n      int
	err    error
	readFn func(fd uintptr) bool
}

// NewSocketReader returns a SocketReader for c when c is a socket of the runtime poller
// (*net.TCPConn), and c itself otherwise (a pipe in a test, a wrapped connection).
func NewSocketReader(c net.Conn) io.Reader {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return c
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return c
	}
	r := &SocketReader{raw: raw}
	r.readFn = r.readOnce
	return r
}

// Read reads what the socket holds, up to len(p), waiting until something arrives.
func (r *SocketReader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	r.p, r.n, r.err = p, 0, nil
	err := r.raw.Read(r.readFn)
	n, rerr := r.n, r.err
	r.p, r.err = nil, nil
	if err != nil {
		return 0, err
	}
	return n, rerr
}

// readOnce is RawConn.Read's callback: one read(2) into r.p; false when nothing is there yet.
func (r *SocketReader) readOnce(fd uintptr) bool {
	for {
		k, e := rawRead(fd, r.p)
		switch e {
		case 0:
			r.n = k
			if k == 0 {
				r.err = io.EOF
			}
			return true
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			return false // nothing yet: wait through the poller
		default:
			r.err = e
			return true
		}
	}
}

// socketWriter writes all of a buffer to a connection: to a socket with write(2) issued
// directly, waiting through the runtime poller while the socket buffer is full; to anything
// else with Write. The socket's RawConn and the write callback are bound once (a Conn's, for a
// replica fetcher's request on every fetch): looking them up per write allocated both each
// time. One writer at a time.
type socketWriter struct {
	c   net.Conn
	raw syscall.RawConn // nil: not a socket
	b   []byte          // what is left of the write in progress
	err error
	fn  func(fd uintptr) bool
}

func newSocketWriter(c net.Conn) *socketWriter {
	w := &socketWriter{c: c}
	if sc, ok := c.(syscall.Conn); ok {
		if raw, err := sc.SyscallConn(); err == nil {
			w.raw = raw
			w.fn = w.writeOnce
		}
	}
	return w
}

// write writes all of b.
func (w *socketWriter) write(b []byte) error {
	if w.raw == nil {
		_, err := w.c.Write(b)
		return err
	}
	w.b, w.err = b, nil
	err := w.raw.Write(w.fn)
	werr := w.err
	w.b, w.err = nil, nil
	if err != nil {
		return err
	}
	return werr
}

// writeOnce is RawConn.Write's callback: write(2) until w.b is written; false when the socket
// buffer is full (wait until writable).
func (w *socketWriter) writeOnce(fd uintptr) bool {
	for len(w.b) > 0 {
		n, e := rawWrite(fd, w.b)
		switch e {
		case 0:
			w.b = w.b[n:]
		case syscall.EINTR:
		case syscall.EAGAIN:
			return false
		default:
			w.err = e
			return true
		}
	}
	return true
}

// rawRead is one read(2) of fd into p (not empty) without the scheduler's hooks.
func rawRead(fd uintptr, p []byte) (int, syscall.Errno) {
	if raceEnabled {
		return Errno(syscall.Read(int(fd), p))
	}
	r1, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
	if e != 0 {
		return 0, e
	}
	return int(r1), 0
}

// rawWrite is one write(2) of b (not empty) to fd without the scheduler's hooks.
func rawWrite(fd uintptr, b []byte) (int, syscall.Errno) {
	if raceEnabled {
		return Errno(syscall.Write(int(fd), b))
	}
	r1, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
	if e != 0 {
		return 0, e
	}
	return int(r1), 0
}

// rawSendMore is one send(2) of b (not empty) to fd with MSG_MORE, without the scheduler's
// hooks (under the race detector a plain write: syscall.Sendto does not report partial sends).
func rawSendMore(fd uintptr, b []byte) (int, syscall.Errno) {
	if raceEnabled {
		return rawWrite(fd, b)
	}
	r1, _, e := syscall.RawSyscall6(syscall.SYS_SENDTO, fd, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), syscall.MSG_MORE, 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(r1), 0
}

// Errno converts the syscall package's results (a count and an error) to a count and an
// errno, as the direct calls return them (EIO for an error that is not an errno).
func Errno(n int, err error) (int, syscall.Errno) {
	if err != nil {
		e, _ := err.(syscall.Errno)
		if e == 0 {
			e = syscall.EIO
		}
		return 0, e
	}
	return n, 0
}

// tryWriteBytes is one non-blocking write(2) to raw, or send(2) with MSG_MORE when more (more
// of the frame follows at once: the kernel waits for it before sending); it returns the bytes
// taken (0 when the socket buffer is full or on error: Finish meets the error again and
// reports it).
func tryWriteBytes(raw syscall.RawConn, b []byte, more bool) int64 {
	if len(b) == 0 {
		return 0
	}
	var n int
	_ = raw.Write(func(fd uintptr) bool {
		for {
			var k int
			var e syscall.Errno
			if more {
				k, e = rawSendMore(fd, b)
			} else {
				k, e = rawWrite(fd, b)
			}
			if e == syscall.EINTR {
				continue
			}
			if e == 0 {
				n = k
			}
			return true // never wait for writability here
		}
	})
	return int64(n)
}
