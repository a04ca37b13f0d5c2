package logstore

import (
	"os"

	"golang.org/x/sys/unix"
)

// startWriteback starts the kernel's writeback of the dirty pages of f in [off, off+n) and
// waits for nothing (SYNC_FILE_RANGE_WRITE alone). Errors are ignored: the pages stay dirty and
// the kernel writes them back as it would have; a file closed meanwhile is skipped (Control
// keeps the descriptor valid while it is used).
func startWriteback(f *os.File, off, n int64) {
	raw, err := f.SyscallConn()
	if err != nil {
		return
	}
	_ = raw.Control(func(fd uintptr) {
		_ = unix.SyncFileRange(int(fd), off, n, unix.SYNC_FILE_RANGE_WRITE)
	})
}
