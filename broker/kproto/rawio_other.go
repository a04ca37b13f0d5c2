//go:build !linux

package kproto

import (
	"io"
	"net"
	"syscall"
)

// Where the direct system calls of rawio_linux.go are not used, sockets are read and written
// through net.Conn, and FrameWrite's non-blocking attempt uses syscall.Write.

// directSockets: not on this platform.
const directSockets = false

// NewSocketReader returns c.
func NewSocketReader(c net.Conn) io.Reader { return c }

// socketWriter writes all of a buffer to a connection with Write.
type socketWriter struct{ c net.Conn }

func newSocketWriter(c net.Conn) *socketWriter { return &socketWriter{c} }

func (w *socketWriter) write(b []byte) error {
	_, err := w.c.Write(b)
	return err
}

// tryWriteBytes is one non-blocking write(2) to raw; it returns the bytes taken (0 when the
// socket buffer is full or on error: Finish meets the error again and reports it).
func tryWriteBytes(raw syscall.RawConn, b []byte, _ bool) int64 {
	var n int
	_ = raw.Write(func(fd uintptr) bool {
		for {
			var err error
			n, err = syscall.Write(int(fd), b)
			if err == syscall.EINTR {
				continue
			}
			if err != nil || n < 0 {
				n = 0
			}
			return true // never wait for writability here
		}
	})
	return int64(n)
}
