package fetcher

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"sync"

	"github.com/twmb/franz-go/pkg/kmsg"
)

var crc32c = crc32.MakeTable(crc32.Castagnoli)

// makeBatch encodes a real v2 record batch with one record per value.
func makeBatch(base int64, epoch int32, values ...string) []byte {
	var recs []byte
	for i, v := range values {
		r := kmsg.Record{OffsetDelta: int32(i), Value: []byte(v)}
		body := r.AppendTo(nil) // Length 0 encodes as one byte
		r.Length = int32(len(body) - 1)
		recs = r.AppendTo(recs)
	}
	b := kmsg.RecordBatch{
		FirstOffset:          base,
		PartitionLeaderEpoch: epoch,
		Magic:                2,
		LastOffsetDelta:      int32(len(values) - 1),
		FirstTimestamp:       1700000000000,
		MaxTimestamp:         1700000000000,
		ProducerID:           -1,
		ProducerEpoch:        -1,
		FirstSequence:        -1,
		NumRecords:           int32(len(values)),
		Records:              recs,
	}
	raw := b.AppendTo(nil)
	binary.BigEndian.PutUint32(raw[8:], uint32(len(raw)-12))
	binary.BigEndian.PutUint32(raw[17:], crc32.Checksum(raw[21:], crc32c))
	return raw
}

// memBatch is one stored batch.
type memBatch struct {
	base, last int64
	epoch      int32
	raw        []byte
	values     []string
}

type epochEntry struct {
	epoch int32
	start int64
}

// memLog is an in-memory partition log with a leader-epoch cache, used for both the fake leader
// and the fake follower.
type memLog struct {
	start, leo, hw int64
	batches        []memBatch
	epochs         []epochEntry
	noEpochs       bool // an old-format log: LatestEpoch reports none
}

func (l *memLog) latestEpoch() (int32, bool) {
	if l.noEpochs || len(l.epochs) == 0 {
		return -1, false
	}
	return l.epochs[len(l.epochs)-1].epoch, true
}

// assignEpoch records epoch → start if it is newer than the latest (a new leader does this with
// its LEO; appends do it with the batch base offset).
func (l *memLog) assignEpoch(epoch int32, start int64) {
	if e, ok := l.latestEpoch(); ok && e >= epoch {
		return
	}
	if l.noEpochs {
		return
	}
	l.epochs = append(l.epochs, epochEntry{epoch, start})
}

// appendLeader appends one batch of values at epoch (as a leader does).
func (l *memLog) appendLeader(epoch int32, values ...string) {
	raw := makeBatch(l.leo, epoch, values...)
	if err := l.appendRaw(raw); err != nil {
		panic(err)
	}
}

// appendRaw appends v2 batches as a follower: offsets and epochs are kept.
func (l *memLog) appendRaw(records []byte) error {
	for len(records) > 0 {
		if len(records) < 61 {
			return errors.New("memlog: short batch")
		}
		length := int(binary.BigEndian.Uint32(records[8:]))
		if length < 49 || 12+length > len(records) {
			return errors.New("memlog: bad batch length")
		}
		raw := records[:12+length]
		records = records[12+length:]
		if crc32.Checksum(raw[21:], crc32c) != binary.BigEndian.Uint32(raw[17:]) {
			return errors.New("memlog: CRC mismatch")
		}
		var b kmsg.RecordBatch
		if err := b.ReadFrom(raw); err != nil {
			return err
		}
		if b.FirstOffset < l.leo {
			// as logstore.Log.AppendAsFollower: only a first offset below the LEO is refused;
			// above it lies a compaction gap of the leader's cleaned log
			return fmt.Errorf("memlog: batch base %d below LEO %d", b.FirstOffset, l.leo)
		}
		mb := memBatch{base: b.FirstOffset, last: b.FirstOffset + int64(b.LastOffsetDelta), epoch: b.PartitionLeaderEpoch, raw: append([]byte(nil), raw...)}
		rs := b.Records
		for i := int32(0); i < b.NumRecords; i++ {
			var r kmsg.Record
			n, k := binary.Varint(rs)
			if k <= 0 || int(n)+k > len(rs) {
				return errors.New("memlog: bad record")
			}
			if err := r.ReadFrom(rs[:k+int(n)]); err != nil {
				return err
			}
			rs = rs[k+int(n):]
			mb.values = append(mb.values, string(r.Value))
		}
		l.assignEpoch(mb.epoch, mb.base)
		l.batches = append(l.batches, mb)
		l.leo = mb.last + 1
	}
	return nil
}

// read returns raw batches from offset: the first always, then more while within maxBytes.
func (l *memLog) read(from int64, maxBytes int32) []byte {
	var out []byte
	for _, b := range l.batches {
		if b.last < from {
			continue
		}
		if len(out) > 0 && len(out)+len(b.raw) > int(maxBytes) {
			break
		}
		out = append(out, b.raw...)
	}
	return out
}

// endOffsetForEpoch has KIP-279 semantics.
func (l *memLog) endOffsetForEpoch(epoch int32) (int32, int64) {
	if l.noEpochs {
		return -1, -1
	}
	for i := len(l.epochs) - 1; i >= 0; i-- {
		if l.epochs[i].epoch <= epoch {
			if i == len(l.epochs)-1 {
				return l.epochs[i].epoch, l.leo
			}
			return l.epochs[i].epoch, l.epochs[i+1].start
		}
	}
	return -1, -1
}

func (l *memLog) truncateTo(off int64) {
	if off >= l.leo {
		// as logstore.Log.TruncateTo: the log stays, epoch entries from the LEO on go (KAFKA-10706)
		es := l.epochs[:0]
		for _, e := range l.epochs {
			if e.start < l.leo {
				es = append(es, e)
			}
		}
		l.epochs = es
		return
	}
	keep := l.batches[:0]
	for _, b := range l.batches {
		if b.last < off {
			keep = append(keep, b)
		}
	}
	l.batches = keep
	l.leo = l.start
	if n := len(l.batches); n > 0 {
		l.leo = l.batches[n-1].last + 1
	}
	es := l.epochs[:0]
	for _, e := range l.epochs {
		if e.start < l.leo {
			es = append(es, e)
		}
	}
	l.epochs = es
	l.hw = min(l.hw, l.leo)
}

func (l *memLog) truncateFullyAndStartAt(off int64) {
	l.batches, l.epochs = nil, nil
	l.start, l.leo, l.hw = off, off, off
}

// clean drops whole batches, as a leader's log cleaner does for a compacted topic (offsets
// below the LEO are left with gaps; the log start and LEO stay).
func (l *memLog) clean(drop func(b memBatch) bool) {
	keep := l.batches[:0]
	for _, b := range l.batches {
		if !drop(b) {
			keep = append(keep, b)
		}
	}
	l.batches = keep
}

// deleteBefore drops whole batches below off (retention) and raises the log start.
func (l *memLog) deleteBefore(off int64) {
	keep := l.batches[:0]
	for _, b := range l.batches {
		if b.last >= off {
			keep = append(keep, b)
		}
	}
	l.batches = keep
	l.start = off
	es := l.epochs[:0]
	for i, e := range l.epochs {
		if i+1 < len(l.epochs) && l.epochs[i+1].start <= off {
			continue
		}
		es = append(es, epochEntry{e.epoch, max(e.start, off)})
	}
	l.epochs = es
}

// entry is one record as a test sees it.
type entry struct {
	offset int64
	epoch  int32
	value  string
}

func (l *memLog) entries() []entry {
	var out []entry
	for _, b := range l.batches {
		for i, v := range b.values {
			out = append(out, entry{b.base + int64(i), b.epoch, v})
		}
	}
	return out
}

// fakeLocal is the follower side: Local over memLogs, recording truncations.
type fakeLocal struct {
	mu          sync.Mutex
	logs        map[TopicPartition]*memLog
	notFollower map[TopicPartition]bool
	truncations []string // "TruncateTo t-0 5", "TruncateFullyAndStartAt t-0 100"
}

func newFakeLocal() *fakeLocal {
	return &fakeLocal{logs: make(map[TopicPartition]*memLog), notFollower: make(map[TopicPartition]bool)}
}

func (f *fakeLocal) log(tp TopicPartition) *memLog {
	f.mu.Lock()
	defer f.mu.Unlock()
	l := f.logs[tp]
	if l == nil {
		l = &memLog{}
		f.logs[tp] = l
	}
	return l
}

func (f *fakeLocal) get(tp TopicPartition) (*memLog, error) {
	if f.notFollower[tp] {
		return nil, fmt.Errorf("%v: %w", tp, ErrNotFollower)
	}
	l := f.logs[tp]
	if l == nil {
		return nil, fmt.Errorf("%v: %w", tp, ErrNotFollower)
	}
	return l, nil
}

func (f *fakeLocal) snapshot(tp TopicPartition) (entries []entry, start, leo, hw int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	l := f.logs[tp]
	return l.entries(), l.start, l.leo, l.hw
}

func (f *fakeLocal) truncationLog() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.truncations...)
}

func (f *fakeLocal) LogEndOffset(tp TopicPartition) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	l, err := f.get(tp)
	if err != nil {
		return 0, err
	}
	return l.leo, nil
}

func (f *fakeLocal) LogStartOffset(tp TopicPartition) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	l, err := f.get(tp)
	if err != nil {
		return 0, err
	}
	return l.start, nil
}

func (f *fakeLocal) LatestEpoch(tp TopicPartition) (int32, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	l, err := f.get(tp)
	if err != nil {
		return 0, false, err
	}
	e, ok := l.latestEpoch()
	return e, ok, nil
}

func (f *fakeLocal) EndOffsetForEpoch(tp TopicPartition, epoch int32) (int32, int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	l, err := f.get(tp)
	if err != nil {
		return 0, 0, err
	}
	e, off := l.endOffsetForEpoch(epoch)
	return e, off, nil
}

func (f *fakeLocal) HighWatermark(tp TopicPartition) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	l, err := f.get(tp)
	if err != nil {
		return 0, err
	}
	return l.hw, nil
}

func (f *fakeLocal) TruncateTo(tp TopicPartition, offset int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	l, err := f.get(tp)
	if err != nil {
		return err
	}
	f.truncations = append(f.truncations, fmt.Sprintf("TruncateTo %s-%d %d", tp.Topic, tp.Partition, offset))
	l.truncateTo(offset)
	return nil
}

func (f *fakeLocal) TruncateFullyAndStartAt(tp TopicPartition, offset int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	l, err := f.get(tp)
	if err != nil {
		return err
	}
	f.truncations = append(f.truncations, fmt.Sprintf("TruncateFullyAndStartAt %s-%d %d", tp.Topic, tp.Partition, offset))
	l.truncateFullyAndStartAt(offset)
	return nil
}

func (f *fakeLocal) ProcessPartitionData(tp TopicPartition, fetchOffset int64, records []byte, leaderHW, leaderLogStart int64) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	l, err := f.get(tp)
	if err != nil {
		return 0, err
	}
	if fetchOffset != l.leo {
		return 0, fmt.Errorf("fetch offset %d != LEO %d", fetchOffset, l.leo)
	}
	if err := l.appendRaw(records); err != nil {
		return 0, err
	}
	l.hw = max(l.hw, min(leaderHW, l.leo))
	if leaderLogStart > l.start {
		l.deleteBefore(leaderLogStart)
	}
	return l.leo, nil
}
