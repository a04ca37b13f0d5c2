package logstore

// segmentList is a log's segments sorted by base offset; the last is the active segment
// (Kafka's LogSegments). It answers lookups over the segments and cuts their tail; it neither
// locks nor logs: the Log holds mu around every call (for writing when the call changes a
// segment) and assigns a returned list to its own under mu.
type segmentList []*segment

// active is the segment appends go to.
func (sl segmentList) active() *segment { return sl[len(sl)-1] }

// totalSize is the sum of the segments' sizes.
func (sl segmentList) totalSize() int64 {
	var total int64
	for _, s := range sl {
		total += s.size
	}
	return total
}

// endOf is the offset after segment i: the next segment's base offset, or leo for the active
// segment.
func (sl segmentList) endOf(i int, leo int64) int64 {
	if i+1 < len(sl) {
		return sl[i+1].base
	}
	return leo
}

// closeFiles closes every segment's file.
func (sl segmentList) closeFiles() {
	for _, s := range sl {
		if s.f != nil {
			s.f.Close()
		}
	}
}

// read returns the bytes of readRegions' regions, read from the segment files (the copying
// path: ReadLocal, and fetches whose record sets are not sent from the files). One walk over the
// batches serves both.
func (sl segmentList) read(startOffset, budget, maxOffset, leo int64, minOneBatch bool, recent *recentBatches) ([]byte, error) {
	fr, err := sl.readRegions(startOffset, budget, maxOffset, leo, minOneBatch, recent)
	if fr.Len == 0 {
		return nil, err
	}
	out, rerr := fr.ReadAll(nil)
	if rerr != nil {
		return nil, rerr
	}
	return out, err // whole batches before a corrupt one, and the error
}

// offsetForTimestamp finds the first record at or after logStart whose timestamp is >= ts,
// through the time indexes; see Log.OffsetForTimestamp.
func (sl segmentList) offsetForTimestamp(ts, logStart int64) (offset int64, timestamp int64, found bool) {
	for _, s := range sl {
		if s.size == 0 || s.ix.maxTs < ts {
			continue
		}
		startOff := s.lookupTime(ts)
		if startOff < logStart {
			startOff = logStart
		}
		pos := s.lookup(startOff)
		var hdr [batchHeaderSize]byte
		for pos+batchHeaderSize <= s.size {
			if _, err := s.f.ReadAt(hdr[:], pos); err != nil {
				return -1, -1, false
			}
			h := parseHeader(hdr[:])
			if h.Length < minBatchLength || pos+int64(h.Size()) > s.size {
				return -1, -1, false
			}
			if h.MaxTimestamp >= ts && h.LastOffset() >= logStart {
				b := make([]byte, h.Size())
				if _, err := s.f.ReadAt(b, pos); err == nil {
					if off, rts, ok := firstRecordAtOrAfter(b, h, ts); ok && off >= logStart {
						return off, rts, true
					}
				}
				off := h.BaseOffset
				if off < logStart {
					off = logStart
				}
				return off, h.MaxTimestamp, true
			}
			pos += int64(h.Size())
		}
	}
	return -1, -1, false
}

// flushJob is one segment to fsync up to size, with the index entries published so far.
type flushJob struct {
	s    *segment
	size int64
	idx  []offsetEntry
	tidx []timeEntry
}

// flushJobs lists the segments holding offsets below offset that are not wholly below the
// recovery point, with their sizes and indexes as published now (mu held).
func (sl segmentList) flushJobs(offset, recoveryPoint int64) []flushJob {
	var jobs []flushJob
	for i, s := range sl {
		if s.base >= offset && i > 0 {
			break
		}
		if i+1 < len(sl) && sl[i+1].base <= recoveryPoint {
			continue
		}
		jobs = append(jobs, flushJob{s: s, size: s.size, idx: s.ix.idx[:len(s.ix.idx):len(s.ix.idx)], tidx: s.ix.tidx[:len(s.ix.tidx):len(s.ix.tidx)]})
	}
	return jobs
}
