package record

import (
	"errors"
	"fmt"
	"io"
	"os"
)

// FileRegion is Len bytes of a segment file from position Pos: whole record batches exactly as
// stored (S1), to be written to a socket without passing through user space (Kafka's
// FileRecords.writeTo, which uses sendfile through FileChannel.transferTo).
type FileRegion struct {
	File     *os.File
	Pos, Len int64
	// Resident says the region's pages are in the page cache for certain: data whose writeback
	// the log has not started yet, which the kernel cannot evict while it is dirty. Sending it
	// cannot wait for the disk, so FrameWrite's attempt issues sendfile(2) directly (rawio_linux.go).
	Resident bool
}

// FileRecords is the record set of one partition of a fetch response as regions of segment
// files (more than one when the read crosses a segment boundary); Len is their total.
type FileRecords struct {
	Regions []FileRegion
	Len     int64
}

// ErrShortFile is returned when a segment file holds fewer bytes than a region promised: the
// log was truncated or the segment deleted after the read. A response being written is then
// incomplete and its connection must be closed.
var ErrShortFile = errors.New("record: segment file shorter than the region read")

// ReadAll appends the regions' bytes to dst with pread (the copying path: a response that must
// be cut inside the set, or a connection sendfile cannot write to).
func (fr FileRecords) ReadAll(dst []byte) ([]byte, error) {
	start := len(dst)
	dst = append(dst, make([]byte, fr.Len)...)
	p := start
	for _, r := range fr.Regions {
		n, err := r.File.ReadAt(dst[p:p+int(r.Len)], r.Pos)
		if int64(n) < r.Len {
			if err == nil || errors.Is(err, io.EOF) {
				err = ErrShortFile
			}
			return dst[:start], fmt.Errorf("record: reading %d bytes at %d of %s: %w", r.Len, r.Pos, r.File.Name(), err)
		}
		p += n
	}
	return dst, nil
}
