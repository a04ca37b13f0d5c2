//go:build !linux

package kproto

import "io"

// WriteFileRegion writes r to w by copying (sendfile with an explicit offset is used on Linux
// only; sendfile_linux.go).
func WriteFileRegion(w io.Writer, r FileRegion) error {
	if r.Len == 0 {
		return nil
	}
	return copyRegion(w, r)
}
