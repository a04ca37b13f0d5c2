//go:build !linux

package kproto

import (
	"io"
	"syscall"

	"github.com/isrbroker/isrbroker/logstore/record"
)

// WriteFileRegion writes r to w by copying (sendfile with an explicit offset is used on Linux
// only; sendfile_linux.go).
func WriteFileRegion(w io.Writer, r record.FileRegion) error {
	if r.Len == 0 {
		return nil
	}
	return copyRegion(w, r)
}

// trySendfile sends nothing where sendfile with an explicit offset is not used: FrameWrite's
// Finish copies the region.
func trySendfile(raw syscall.RawConn, r record.FileRegion) int64 { return 0 }
