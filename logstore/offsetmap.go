package logstore

import (
	"crypto/md5"
	"encoding/binary"
)

// offsetMap is the cleaner's key -> latest offset map (Kafka's SkimpyOffsetMap, OffsetMap.scala):
// a fixed-size open-addressing table of (MD5 of the key, offset) entries, 24 bytes each, sized
// from log.cleaner.dedupe.buffer.size divided among the cleaner threads. Two keys with the
// same MD5 would be treated as one (Kafka accepts the same risk). The table is filled to at
// most dedupeLoadFactor of its slots (log.cleaner.io.buffer.load.factor, 0.9); a cleaning
// that would pass that stops and cleans up to the last offset mapped.
type offsetMap struct {
	hashes  [][md5.Size]byte
	offsets []int64 // offset+1; 0 marks an empty slot
	entries int
	latest  int64 // largest offset put or declared mapped; -1 when empty
	lookups int64
	probes  int64
}

const (
	offsetMapEntryBytes = md5.Size + 8
	dedupeLoadFactor    = 0.9
)

// newOffsetMap sizes a map for memory bytes.
func newOffsetMap(memory int64) *offsetMap {
	slots := int(memory / offsetMapEntryBytes)
	if slots < 2 {
		slots = 2
	}
	return &offsetMap{hashes: make([][md5.Size]byte, slots), offsets: make([]int64, slots), latest: -1}
}

func (m *offsetMap) slots() int { return len(m.offsets) }

// maxEntries is how many keys the map takes before it counts as full.
func (m *offsetMap) maxEntries() int { return int(float64(m.slots()) * dedupeLoadFactor) }

// clear empties the map for the next cleaning.
func (m *offsetMap) clear() {
	if m.entries > 0 {
		clear(m.offsets)
	}
	m.entries, m.latest, m.lookups, m.probes = 0, -1, 0, 0
}

func (m *offsetMap) slotOf(h *[md5.Size]byte) int {
	m.lookups++
	i := int(binary.BigEndian.Uint64(h[:8]) % uint64(m.slots()))
	for {
		if m.offsets[i] == 0 || m.hashes[i] == *h {
			return i
		}
		m.probes++
		i++
		if i == m.slots() {
			i = 0
		}
	}
}

// put records offset as the latest offset of key. The caller keeps entries below maxEntries.
func (m *offsetMap) put(key []byte, offset int64) {
	h := md5.Sum(key)
	i := m.slotOf(&h)
	if m.offsets[i] == 0 {
		m.hashes[i] = h
		m.entries++
	}
	m.offsets[i] = offset + 1
	m.latest = max(m.latest, offset)
}

// get returns the latest offset of key, or -1.
func (m *offsetMap) get(key []byte) int64 {
	h := md5.Sum(key)
	return m.offsets[m.slotOf(&h)] - 1
}

// updateLatest declares every offset up to offset mapped (the map covers gaps up to the next
// segment, OffsetMap.updateLatestOffset).
func (m *offsetMap) updateLatest(offset int64) { m.latest = max(m.latest, offset) }

// utilization is the fraction of slots in use (max-buffer-utilization-percent).
func (m *offsetMap) utilization() float64 { return float64(m.entries) / float64(m.slots()) }
