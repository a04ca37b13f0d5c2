package logstore

import (
	"errors"
	"io"
	"os"
	"syscall"
	"unsafe"

	"github.com/isrbroker/isrbroker/broker/kproto"
)

// directIO: this platform issues the direct system calls of directio.go.
const directIO = true

// pwriteDirect writes all of b at off of f with pwrite(2) issued directly (directio.go).
func pwriteDirect(f *os.File, b []byte, off int64) (int, error) {
	return rwDirect(f, syscall.SYS_PWRITE64, b, off)
}

// preadDirect reads len(b) bytes at off of f with pread(2) issued directly (directio.go); as
// ReadAt, fewer bytes come with an error (io.EOF at the end of the file).
func preadDirect(f *os.File, b []byte, off int64) (int, error) {
	return rwDirect(f, syscall.SYS_PREAD64, b, off)
}

// threadSleeps is the calling thread's count of voluntary context switches (getrusage(2),
// RUSAGE_THREAD, issued directly): it moves when the thread slept in the kernel.
func threadSleeps() int64 {
	var ru syscall.Rusage
	if _, _, e := syscall.RawSyscall(syscall.SYS_GETRUSAGE, rusageThread, uintptr(unsafe.Pointer(&ru)), 0); e != 0 {
		return 0
	}
	return ru.Nvcsw
}

// rusageThread is RUSAGE_THREAD.
const rusageThread = 1

// rwDirect loops pread or pwrite over b as os.File's ReadAt and WriteAt do. Control holds the
// file open while its descriptor is used (a concurrent Close waits).
func rwDirect(f *os.File, trap uintptr, b []byte, off int64) (int, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return 0, err
	}
	done := 0
	var opErr error
	cerr := rc.Control(func(fd uintptr) {
		for done < len(b) {
			k, e := rawRW(trap, fd, b[done:], off+int64(done))
			if e == syscall.EINTR {
				continue
			}
			if e != 0 {
				opErr = e
				return
			}
			if k == 0 {
				if trap == syscall.SYS_PREAD64 {
					opErr = io.EOF
				} else {
					opErr = io.ErrShortWrite
				}
				return
			}
			done += k
		}
	})
	op := "write"
	if trap == syscall.SYS_PREAD64 {
		op = "read"
	}
	if cerr != nil {
		// Control fails only for a closed file: os.File's own calls say os.ErrClosed.
		return 0, &os.PathError{Op: op, Path: f.Name(), Err: os.ErrClosed}
	}
	if opErr != nil && !errors.Is(opErr, io.EOF) {
		opErr = &os.PathError{Op: op, Path: f.Name(), Err: opErr}
	}
	return done, opErr
}

// rawRW is one pread(2) or pwrite(2) of p (not empty) at off without the scheduler's hooks.
func rawRW(trap, fd uintptr, p []byte, off int64) (int, syscall.Errno) {
	if raceEnabled { // race_on.go
		var n int
		var err error
		if trap == syscall.SYS_PREAD64 {
			n, err = syscall.Pread(int(fd), p, off)
		} else {
			n, err = syscall.Pwrite(int(fd), p, off)
		}
		return kproto.Errno(n, err)
	}
	r1, _, e := syscall.RawSyscall6(trap, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)), uintptr(off), 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(r1), 0
}
