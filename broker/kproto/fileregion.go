package kproto

import (
	"encoding/binary"
	"fmt"
	"io"

	"github.com/isrbroker/isrbroker/logstore/record"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// SplicedFetch is a fetch response whose record sets are (partly) file regions: Resp is encoded
// by kmsg with an empty record set (length 0) for each spliced partition, and Files[k] holds
// the records of the k-th spliced partition in response order (Topic, Partition index).
type SplicedFetch struct {
	Resp  *kmsg.FetchResponse
	Files []SplicedPartition
}

// SplicedPartition names one partition of SplicedFetch.Resp and its file records.
type SplicedPartition struct {
	Topic, Partition int // indexes into Resp.Topics and Resp.Topics[Topic].Partitions
	Records          record.FileRecords
}

// Len is the number of record bytes in the file regions.
func (sf *SplicedFetch) Len() int64 {
	var n int64
	for _, f := range sf.Files {
		n += f.Records.Len
	}
	return n
}

// AppendSplicedFetch encodes sf's response frame (size, correlation id, body, all by
// AppendResponse and so kmsg) into dst, then sets each spliced partition's record-set length and
// the frame size to include the file regions. It returns the frame and, for each spliced
// partition in order, the position in the frame after which its regions go. Written with the
// regions spliced in at those points, the frame is byte for byte what AppendResponse writes for
// the same response with the records in memory.
func AppendSplicedFetch(dst []byte, correlationID int32, sf *SplicedFetch) (frame []byte, cuts []int, err error) {
	if sf.Resp.IsFlexible() {
		return dst, nil, fmt.Errorf("kproto: spliced fetch responses are non-flexible only (v%d)", sf.Resp.Version)
	}
	for _, f := range sf.Files {
		if f.Topic < 0 || f.Topic >= len(sf.Resp.Topics) || f.Partition < 0 || f.Partition >= len(sf.Resp.Topics[f.Topic].Partitions) {
			return dst, nil, fmt.Errorf("kproto: spliced partition %d/%d outside the response", f.Topic, f.Partition)
		}
		if rb := sf.Resp.Topics[f.Topic].Partitions[f.Partition].RecordBatches; rb == nil || len(rb) != 0 {
			return dst, nil, fmt.Errorf("kproto: spliced partition %d/%d must have an empty (not null) record set", f.Topic, f.Partition)
		}
		if f.Records.Len > 1<<31-1 {
			return dst, nil, fmt.Errorf("kproto: spliced record set of %d bytes", f.Records.Len)
		}
	}
	start := len(dst)
	dst = AppendResponse(dst, correlationID, sf.Resp)
	frame = dst[start:]
	ends, err := fetchRecordSetEnds(frame[8:], sf.Resp.Version) // after size and correlation id
	if err != nil {
		return dst[:start], nil, err
	}
	cuts = make([]int, 0, len(sf.Files))
	var extra int64
	for _, f := range sf.Files {
		k := ends[f.Topic][f.Partition] + 8
		// The record set's int32 length is the 4 bytes before its (empty) bytes.
		binary.BigEndian.PutUint32(frame[k-4:], uint32(f.Records.Len))
		cuts = append(cuts, k)
		extra += f.Records.Len
	}
	size := int64(binary.BigEndian.Uint32(frame)) + extra
	if size > 1<<31-1 {
		return dst[:start], nil, fmt.Errorf("kproto: fetch response of %d bytes", size)
	}
	binary.BigEndian.PutUint32(frame, uint32(size))
	return dst, cuts, nil
}

// fetchRecordSetEnds walks a non-flexible FetchResponse body (v4-v11) as kmsg encodes it and
// returns, per topic and partition, the position just after each partition's record set
// (RecordBatches is the last field of a partition). It reads only the fields' lengths.
func fetchRecordSetEnds(b []byte, version int16) ([][]int, error) {
	if version < 4 || version > 11 {
		return nil, fmt.Errorf("kproto: fetch response v%d is not walked (v4-v11)", version)
	}
	pos := 0
	bad := func(what string) error {
		return fmt.Errorf("kproto: fetch response v%d: %s at byte %d of %d", version, what, pos, len(b))
	}
	skip := func(n int) bool {
		if n < 0 || pos+n > len(b) {
			return false
		}
		pos += n
		return true
	}
	i32 := func() (int32, bool) {
		if pos+4 > len(b) {
			return 0, false
		}
		v := int32(binary.BigEndian.Uint32(b[pos:]))
		pos += 4
		return v, true
	}
	head := 4 // ThrottleMillis
	if version >= 7 {
		head += 2 + 4 // ErrorCode, SessionID
	}
	if !skip(head) {
		return nil, bad("truncated header")
	}
	nt, ok := i32()
	if !ok || nt < 0 {
		return nil, bad("topic count")
	}
	ends := make([][]int, nt)
	for t := range ends {
		if pos+2 > len(b) {
			return nil, bad("topic name")
		}
		nl := int(int16(binary.BigEndian.Uint16(b[pos:])))
		pos += 2
		if !skip(max(nl, 0)) {
			return nil, bad("topic name")
		}
		np, ok := i32()
		if !ok || np < 0 {
			return nil, bad("partition count")
		}
		ends[t] = make([]int, np)
		for p := range ends[t] {
			fixed := 4 + 2 + 8 + 8 // Partition, ErrorCode, HighWatermark, LastStableOffset
			if version >= 5 {
				fixed += 8 // LogStartOffset
			}
			if !skip(fixed) {
				return nil, bad("partition fields")
			}
			na, ok := i32() // AbortedTransactions, nullable
			if !ok || (na > 0 && !skip(int(na)*16)) {
				return nil, bad("aborted transactions")
			}
			if version >= 11 && !skip(4) { // PreferredReadReplica
				return nil, bad("preferred read replica")
			}
			nr, ok := i32()
			if !ok || (nr > 0 && !skip(int(nr))) {
				return nil, bad("record set")
			}
			ends[t][p] = pos
		}
	}
	if pos != len(b) {
		return nil, bad("trailing bytes")
	}
	return ends, nil
}

// WriteSplicedFetch writes a frame of AppendSplicedFetch to w with each spliced partition's
// regions at its cut: the frame's bytes with w.Write, the regions with sendfile(2) when w is a
// socket on Linux (WriteFileRegion), so record bytes never enter user space. An error leaves
// a partial response on w: the caller closes the connection.
func WriteSplicedFetch(w io.Writer, frame []byte, cuts []int, sf *SplicedFetch) error {
	return NewSplicedWrite(frame, cuts, sf).Finish(w)
}

// copyRegion is WriteFileRegion's copying path: pread through a small pooled buffer.
func copyRegion(w io.Writer, r record.FileRegion) error {
	n, err := io.Copy(w, io.NewSectionReader(r.File, r.Pos, r.Len))
	if err == nil && n < r.Len {
		err = record.ErrShortFile
	}
	return err
}
