package logstore

import (
	"encoding/binary"
	"fmt"
	"sort"

	"github.com/isrbroker/isrbroker/logstore/record"
)

// ReadRegions is Read without reading the records: the same whole batches, as regions of the
// segment files (record.FileRecords), for a fetch response that sends them with sendfile
// (Kafka's FileRecords.slice; docs/performance.md, "Zero-copy reads"). Only batch headers are
// read. The regions stay valid while the segments' files are open: a region whose segment is
// deleted, truncated or closed before it is sent fails to send (record.ErrShortFile, or a
// closed file).
func (l *Log) ReadRegions(startOffset int64, maxBytes int32, maxOffset int64, minOneBatch bool) (record.FileRecords, error) {
	fr, err := func() (record.FileRecords, error) {
		l.mu.RLock()
		defer l.mu.RUnlock()
		if empty, err := l.readableLocked(startOffset, maxOffset); empty || err != nil {
			return record.FileRecords{}, err
		}
		return l.segs.readRegions(startOffset, max(int64(maxBytes), 0), maxOffset, l.leo, minOneBatch, l.recent)
	}()
	if err = l.corrupt.check(err); err != nil { // a bad batch below the recovery point (verify.go)
		return record.FileRecords{}, err
	}
	return fr, nil
}

// batchEndHeader is the part of a batch header that delimits it: base offset, length and
// last offset delta.
const batchEndHeader = offLastOffsetDelta + 4

// readRegions finds the whole batches from the batch that contains startOffset, within budget
// bytes (the first batch whole when minOneBatch), stopping before a batch whose last offset
// reaches maxOffset, reading only their headers; see Log.ReadRegions, which checks startOffset.
// leo is the log end offset read with the segments (under Log.mu): when every batch after the
// first one found in a segment ends below maxOffset (the segment ends at its successor's base,
// the active one at leo) and the rest of the segment fits the budget, the rest is taken whole
// without reading its headers (Kafka's slice to the segment's end), so a follower's fetch at the
// log's tail costs one header read, not one per batch, and none when recent (the Log's
// recentBatches, recent.go) knows where the first batch starts.
// read copies its regions' bytes.
func (sl segmentList) readRegions(startOffset, budget, maxOffset, leo int64, minOneBatch bool, recent *recentBatches) (record.FileRecords, error) {
	var out record.FileRecords
	i := sort.Search(len(sl), func(i int) bool { return sl[i].base > startOffset }) - 1
	if i < 0 {
		i = 0
	}
	var hdr [batchEndHeader]byte
	// resident: the position lies in the active segment's data whose writeback has not been
	// started (dirty pages the kernel cannot evict), so reading it cannot wait for the disk
	// (directio.go). Segments before the active one were flushed when it rolled.
	resident := func(i int, pos int64) bool { return i == len(sl)-1 && pos >= sl[i].writebackFrom }
	header := func(i int, pos int64) (base int64, size int64, last int64, err error) {
		s := sl[i]
		if _, err := readAtResident(s.f, hdr[:], pos, resident(i, pos)); err != nil {
			return 0, 0, 0, fmt.Errorf("logstore: read %s: %w", s.logPath(), err)
		}
		base = int64(binary.BigEndian.Uint64(hdr[offBaseOffset:]))
		length := int64(int32(binary.BigEndian.Uint32(hdr[offLength:])))
		last = base + int64(int32(binary.BigEndian.Uint32(hdr[offLastOffsetDelta:])))
		return base, length + batchLengthShift, last, nil
	}
	for ; i < len(sl); i++ {
		s := sl[i]
		// The batch holding startOffset: known without reading its header when it was
		// appended a moment ago (recent.go); otherwise found from the offset index, skipping
		// the batches that end before startOffset.
		var pos, firstSize, firstLast int64
		b, found := recent.find(s, startOffset)
		if found {
			pos, firstSize, firstLast = b.pos, b.size, b.last
		} else if s.base <= startOffset {
			pos = s.lookup(startOffset)
		}
		for !found && pos < s.size {
			if pos+batchHeaderSize > s.size {
				return out, fmt.Errorf("%w: truncated header at %d in %s", ErrCorruptMessage, pos, s.logPath())
			}
			_, size, last, err := header(i, pos)
			if err != nil {
				return out, err
			}
			if size-batchLengthShift < minBatchLength || pos+size > s.size {
				return out, fmt.Errorf("%w: bad batch length %d at %d in %s", ErrCorruptMessage, size-batchLengthShift, pos, s.logPath())
			}
			if last >= startOffset {
				firstSize, firstLast, found = size, last, true
				break
			}
			pos += size
		}
		if !found {
			continue
		}
		if firstLast >= maxOffset {
			break
		}
		limit := budget
		if len(out.Regions) == 0 && minOneBatch && firstSize > limit {
			limit = firstSize
		}
		if avail := s.size - pos; limit > avail {
			limit = avail
		}
		if limit < firstSize {
			break
		}
		p := firstSize // the first batch fits and ends below maxOffset
		stop := false
		segEnd := leo // the offset after the segment's last batch, or above it (a compacted gap)
		if i+1 < len(sl) {
			segEnd = sl[i+1].base
		}
		if segEnd <= maxOffset && s.size-pos <= limit {
			p = s.size - pos // the rest of the segment, whole batches that all end below maxOffset
		}
		for p+batchHeaderSize <= limit {
			_, size, last, err := header(i, pos+p)
			if err != nil {
				return out, err
			}
			if size < batchHeaderSize {
				return out, fmt.Errorf("%w: bad batch length at %d in %s", ErrCorruptMessage, pos+p, s.logPath())
			}
			if last >= maxOffset || p+size > limit {
				stop = true
				break
			}
			p += size
		}
		if p < limit {
			stop = true
		}
		if err := s.verifyRange(pos, p); err != nil {
			return out, err // a segment loaded without recovery: checked before served (verify.go)
		}
		out.Regions = append(out.Regions, record.FileRegion{File: s.f.OSFile(), Pos: pos, Len: p, Resident: resident(i, pos)})
		out.Len += p
		budget -= p
		if stop || budget <= 0 {
			break
		}
	}
	return out, nil
}
