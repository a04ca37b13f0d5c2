package kproto

import (
	"errors"
	"io"
	"syscall"
	"unsafe"

	"github.com/isrbroker/isrbroker/logstore/record"
	"golang.org/x/sys/unix"
)

// WriteFileRegion writes r to w. When w is a socket (a syscall.Conn such as *net.TCPConn) it
// uses sendfile(2) with an explicit offset, so the file's own position is untouched and many
// connections can send from one segment file at once; Go's own sendfile path (TCPConn.ReadFrom)
// takes only an *os.File at its current position, not a section of it. The socket's write
// deadline and the runtime poller apply (the write waits for the socket to drain). Other
// writers, and kernels that refuse sendfile for the pair, get the copying path.
func WriteFileRegion(w io.Writer, r record.FileRegion) error {
	if r.Len == 0 {
		return nil
	}
	sc, ok := w.(syscall.Conn)
	if !ok {
		return copyRegion(w, r)
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return copyRegion(w, r)
	}
	fraw, err := r.File.SyscallConn()
	if err != nil {
		return err
	}
	off, remain := r.Pos, r.Len
	var opErr error
	unsupported := false
	// Control keeps the file descriptor open (a concurrent Close waits) while it is used.
	cerr := fraw.Control(func(ffd uintptr) {
		werr := raw.Write(func(sfd uintptr) bool {
			for remain > 0 {
				n, err := unix.Sendfile(int(sfd), int(ffd), &off, int(min(remain, 1<<30)))
				if n > 0 {
					remain -= int64(n)
				}
				switch {
				case err == nil && n == 0:
					opErr = record.ErrShortFile // the file ends before the region does
					return true
				case err == nil || errors.Is(err, unix.EINTR):
				case errors.Is(err, unix.EAGAIN):
					return false // socket buffer full: wait until writable
				case remain == r.Len && (errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EOPNOTSUPP)):
					unsupported = true
					return true
				default:
					opErr = err
					return true
				}
			}
			return true
		})
		if opErr == nil {
			opErr = werr
		}
	})
	if cerr != nil {
		return cerr
	}
	if unsupported {
		return copyRegion(w, r)
	}
	return opErr
}

// trySendfile is sendfile(2) of r to raw's socket without waiting for room: it returns the
// bytes sent, 0 when the socket buffer is full or on anything else (an error, a kernel that
// refuses sendfile for the pair, a file shorter than r), which FrameWrite.Finish then meets
// and handles through WriteFileRegion. A resident region is sent with the system call issued
// directly (rawio_linux.go): the socket is non-blocking and the pages are in memory, so the
// call cannot block; any other region may wait for the disk and goes through unix.Sendfile,
// which lets the scheduler hand the P on.
func trySendfile(raw syscall.RawConn, r record.FileRegion) int64 {
	fraw, err := r.File.SyscallConn()
	if err != nil {
		return 0
	}
	var sent int64
	// Control keeps the file descriptor open (a concurrent Close waits) while it is used.
	_ = fraw.Control(func(ffd uintptr) {
		_ = raw.Write(func(sfd uintptr) bool {
			off := r.Pos
			for sent < r.Len {
				n, err := sendfile(sfd, ffd, &off, min(r.Len-sent, 1<<30), r.Resident)
				if n > 0 {
					sent += int64(n)
				}
				if errors.Is(err, unix.EINTR) {
					continue
				}
				if err != nil || n <= 0 {
					break
				}
			}
			return true // never wait for writability here
		})
	})
	return sent
}

// sendfile is one sendfile(2) of n bytes from in at *off to out, issued directly when direct
// (see trySendfile).
func sendfile(out, in uintptr, off *int64, n int64, direct bool) (int, error) {
	if !direct || raceEnabled {
		return unix.Sendfile(int(out), int(in), off, int(n))
	}
	r1, _, e := syscall.RawSyscall6(syscall.SYS_SENDFILE, out, in, uintptr(unsafe.Pointer(off)), uintptr(n), 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(r1), nil
}
