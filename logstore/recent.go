package logstore

// recentBatches remembers where the last batches appended to the active segment start, so that
// a fetch at the log's tail finds its first batch without reading that batch's header from
// the segment file. A follower's fetch asks for its LEO, which is where a batch the leader
// appended a moment ago starts; it used to cost a pread of the batch header per fetch (about
// 1,300 a second per broker at 20 MiB/s with RF=3; docs/performance.md, "Fourth look").
//
// It belongs to one segment (seg); an append to another segment (a roll) starts a new one, and
// a truncation drops it (Log.recent = nil), since the positions after the cut change. Written
// under appendMu and mu, read under mu.
type recentBatches struct {
	seg     *segment
	entries [recentBatchCount]recentBatch
	next    int // where the next entry goes
	n       int // entries held (up to recentBatchCount)
}

// recentBatchCount covers the appends between two fetches of a follower that keeps up.
const recentBatchCount = 16

// recentBatch is one batch of the segment: its offsets and where its bytes lie.
type recentBatch struct {
	base, last int64 // first and last offset
	pos, size  int64 // position in the segment file and length in bytes
}

// add notes a batch just appended.
func (r *recentBatches) add(b recentBatch) {
	r.entries[r.next] = b
	r.next = (r.next + 1) % recentBatchCount
	if r.n < recentBatchCount {
		r.n++
	}
}

// find returns the remembered batch of segment s that holds offset, newest first.
func (r *recentBatches) find(s *segment, offset int64) (recentBatch, bool) {
	if r == nil || r.seg != s {
		return recentBatch{}, false
	}
	for k := 1; k <= r.n; k++ {
		b := r.entries[(r.next-k+recentBatchCount)%recentBatchCount]
		if b.base <= offset && offset <= b.last {
			return b, b.pos+b.size <= s.size
		}
		if b.last < offset {
			return recentBatch{}, false // older entries end lower still
		}
	}
	return recentBatch{}, false
}
