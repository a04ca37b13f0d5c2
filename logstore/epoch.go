package logstore

import "fmt"

// EpochEntry is one leader-epoch-checkpoint line: the first offset written in Epoch (K1).
type EpochEntry struct {
	Epoch       int32
	StartOffset int64
}

// epochCache is Kafka's LeaderEpochFileCache without its own lock (Log.mu guards it) and without
// I/O (the Log persists snapshot() to leader-epoch-checkpoint after a change). Its methods are
// the cache's decisions, with Kafka 2.4's semantics:
//   - assign(epoch, start): record that epoch starts at start. Nothing changes when the latest
//     entry already is that epoch at or below start (every batch of a leader's epoch calls it).
//     Otherwise every entry that conflicts with the new one — an epoch at or above it, or a start
//     offset at or above it — is removed from the end before it is appended
//     (assign/truncateAndAppend). A batch of an older epoch than the latest entry (a follower
//     copying records its cache wrongly claims for a later epoch) therefore replaces the later
//     entries instead of being ignored.
//   - truncateFromEnd(end): drop the entries starting at or after end (a log truncation to end,
//     including one to end >= LEO, which truncates nothing but the cache: KAFKA-10706).
//   - truncateFromStart(start): the log start moved to start: the last entry starting at or
//     before it is kept with its start moved up to start; the entries before it go.
//
// Invariant (checked by assertInvariants in tests): epochs are >= 0 and start offsets >= 0, and
// both strictly increase from one entry to the next.
type epochCache struct {
	entries []EpochEntry
}

// epochInvariants, when set (tests), makes every change check the invariant and panic on a
// violation.
var epochInvariants bool

func (c *epochCache) assertInvariants() {
	for i, e := range c.entries {
		if e.Epoch < 0 || e.StartOffset < 0 {
			panic(fmt.Sprintf("logstore: epoch cache entry %d is negative: %+v", i, c.entries))
		}
		if i > 0 && (e.Epoch <= c.entries[i-1].Epoch || e.StartOffset <= c.entries[i-1].StartOffset) {
			panic(fmt.Sprintf("logstore: epoch cache not strictly increasing at %d: %+v", i, c.entries))
		}
	}
}

func (c *epochCache) checked() {
	if epochInvariants {
		c.assertInvariants()
	}
}

func (c *epochCache) latest() (EpochEntry, bool) {
	if len(c.entries) == 0 {
		return EpochEntry{}, false
	}
	return c.entries[len(c.entries)-1], true
}

// assign records (epoch -> startOffset), removing the conflicting later entries first (see the
// type comment). It reports whether the cache changed. A negative epoch or offset (a batch of an
// old message format) is ignored.
func (c *epochCache) assign(epoch int32, startOffset int64) bool {
	if epoch < 0 || startOffset < 0 {
		return false
	}
	if last, ok := c.latest(); ok && last.Epoch == epoch && startOffset >= last.StartOffset {
		return false
	}
	n := len(c.entries)
	for n > 0 && (c.entries[n-1].Epoch >= epoch || c.entries[n-1].StartOffset >= startOffset) {
		n--
	}
	c.entries = append(c.entries[:n], EpochEntry{Epoch: epoch, StartOffset: startOffset})
	c.checked()
	return true
}

// assignTracked is assign that also reports whether it removed entries (rather than only
// appending one): a change that only adds may wait for a flush to be written, one that removes
// may not (leaderEpochs.persistChange).
func (c *epochCache) assignTracked(epoch int32, startOffset int64) (changed, removed bool) {
	n := len(c.entries)
	changed = c.assign(epoch, startOffset)
	return changed, changed && len(c.entries) != n+1
}

// truncateFromEnd drops entries whose start offset is >= endOffset (after a log truncation).
func (c *epochCache) truncateFromEnd(endOffset int64) bool {
	n := len(c.entries)
	for n > 0 && c.entries[n-1].StartOffset >= endOffset {
		n--
	}
	changed := n != len(c.entries)
	c.entries = c.entries[:n]
	c.checked()
	return changed
}

// truncateFromStart applies a new log start offset: the last entry starting at or before
// startOffset is kept with its start moved up to startOffset; the entries before it are dropped.
func (c *epochCache) truncateFromStart(startOffset int64) bool {
	i := 0
	for i < len(c.entries) && c.entries[i].StartOffset <= startOffset {
		i++
	}
	if i == 0 || (i == 1 && c.entries[0].StartOffset == startOffset) {
		return false
	}
	kept := c.entries[i-1]
	kept.StartOffset = startOffset
	c.entries = append([]EpochEntry{kept}, c.entries[i:]...)
	c.checked()
	return true
}

// endOffsetFor answers OffsetsForLeaderEpoch (KIP-101, KIP-279), as
// LeaderEpochFileCache.endOffsetFor in Kafka 2.4: for the latest epoch its end is the LEO;
// otherwise the largest cached epoch <= requested with the start offset of the next larger
// epoch as its end. An epoch below every cached one answers (requested, first start offset),
// as Kafka does, so a follower whose old epochs were removed by retention still converges; an
// epoch above the latest, an undefined epoch or an empty cache answer (-1, -1).
func (c *epochCache) endOffsetFor(requested int32, leo int64) (int32, int64) {
	last, ok := c.latest()
	if requested < 0 || !ok {
		return -1, -1
	}
	if requested == last.Epoch {
		return requested, leo
	}
	// first entry with Epoch > requested
	i := 0
	for i < len(c.entries) && c.entries[i].Epoch <= requested {
		i++
	}
	if i == len(c.entries) {
		return -1, -1
	}
	if i == 0 {
		return requested, c.entries[0].StartOffset
	}
	return c.entries[i-1].Epoch, c.entries[i].StartOffset
}

func (c *epochCache) snapshot() []EpochEntry {
	return append([]EpochEntry(nil), c.entries...)
}
