package logstore

// EpochEntry is one leader-epoch-checkpoint line: the first offset written in Epoch (K1).
type EpochEntry struct {
	Epoch       int32
	StartOffset int64
}

// epochCache is Kafka's LeaderEpochFileCache without its own lock (Log.mu guards it).
// Invariant: epochs and start offsets both strictly increase.
type epochCache struct {
	entries []EpochEntry
}

func (c *epochCache) latest() (EpochEntry, bool) {
	if len(c.entries) == 0 {
		return EpochEntry{}, false
	}
	return c.entries[len(c.entries)-1], true
}

// assign records (epoch -> startOffset) when epoch is larger than the latest cached one. Any
// entry whose start offset is not below startOffset is dropped first, keeping the invariant
// (LeaderEpochFileCache.truncateAndAppend). It reports whether the cache changed.
func (c *epochCache) assign(epoch int32, startOffset int64) bool {
	if epoch < 0 || startOffset < 0 {
		return false
	}
	if last, ok := c.latest(); ok && epoch <= last.Epoch {
		return false
	}
	n := len(c.entries)
	for n > 0 && c.entries[n-1].StartOffset >= startOffset {
		n--
	}
	c.entries = append(c.entries[:n], EpochEntry{Epoch: epoch, StartOffset: startOffset})
	return true
}

// truncateFromEnd drops entries whose start offset is >= endOffset (after a log truncation).
func (c *epochCache) truncateFromEnd(endOffset int64) bool {
	n := len(c.entries)
	for n > 0 && c.entries[n-1].StartOffset >= endOffset {
		n--
	}
	changed := n != len(c.entries)
	c.entries = c.entries[:n]
	return changed
}

// truncateFromStart drops entries that lie wholly below startOffset (the new log start);
// the last of them is kept with its start moved up to startOffset.
func (c *epochCache) truncateFromStart(startOffset int64) bool {
	i := 0
	for i < len(c.entries) && c.entries[i].StartOffset < startOffset {
		i++
	}
	if i == 0 {
		return false
	}
	kept := c.entries[i-1]
	kept.StartOffset = startOffset
	rest := append([]EpochEntry{kept}, c.entries[i:]...)
	c.entries = rest
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
