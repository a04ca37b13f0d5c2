package groupcoord

// offsetAndMetadata is one committed offset (OffsetAndMetadata).
type offsetAndMetadata struct {
	offset          int64
	leaderEpoch     int32 // -1: none
	metadata        string
	commitTimestamp int64 // ms
	expireTimestamp int64 // ms; -1: none (OffsetCommit v1-v4 with a retention time set it)
}

// commitEntry is a cached offset and the log offset of the batch that holds it
// (CommitRecordMetadataAndOffset).
type commitEntry struct {
	om          offsetAndMetadata
	batchOffset int64
}

// tp is a topic-partition of a committed offset.
type tp struct {
	topic     string
	partition int32
}

// groupOffsets is the offsets side of Kafka's GroupMetadata: the committed offsets of a group
// (those whose append the ISR acknowledged, the only ones OffsetFetch sees) and the commits
// whose append is under way. It is a field of group and guarded by the group's lock.
type groupOffsets struct {
	committed      map[tp]commitEntry
	pendingCommits map[tp]offsetAndMetadata
}

func newGroupOffsets() groupOffsets {
	return groupOffsets{committed: make(map[tp]commitEntry), pendingCommits: make(map[tp]offsetAndMetadata)}
}

func (o *groupOffsets) hasOffsets() bool { return len(o.committed) > 0 || len(o.pendingCommits) > 0 }

func (o *groupOffsets) prepareOffsetCommit(offsets map[tp]offsetAndMetadata) {
	for k, v := range offsets {
		o.pendingCommits[k] = v
	}
}

// onOffsetCommitAppend installs a committed offset once its batch is in the log (ISR).
func (o *groupOffsets) onOffsetCommitAppend(k tp, e commitEntry) {
	if _, pending := o.pendingCommits[k]; pending {
		if cur, ok := o.committed[k]; !ok || cur.batchOffset < e.batchOffset {
			o.committed[k] = e
		}
	}
	if staged, ok := o.pendingCommits[k]; ok && staged == e.om {
		delete(o.pendingCommits, k)
	}
}

func (o *groupOffsets) failPendingOffsetWrite(k tp, om offsetAndMetadata) {
	if staged, ok := o.pendingCommits[k]; ok && staged == om {
		delete(o.pendingCommits, k)
	}
}

func (o *groupOffsets) removeOffsets(tps []tp) map[tp]offsetAndMetadata {
	out := make(map[tp]offsetAndMetadata)
	for _, k := range tps {
		delete(o.pendingCommits, k)
		if e, ok := o.committed[k]; ok {
			out[k] = e.om
			delete(o.committed, k)
		}
	}
	return out
}

func (o *groupOffsets) removeAllOffsets() map[tp]offsetAndMetadata {
	tps := make([]tp, 0, len(o.committed))
	for k := range o.committed {
		tps = append(tps, k)
	}
	return o.removeOffsets(tps)
}

// removeExpired removes and returns the committed offsets that expired at nowMs: those with an
// expire timestamp once it passed, the others retMs after base(entry). Offsets of subscribed
// topics and offsets with a commit under way are kept. The group picks base and subscribed
// (group.removeExpiredOffsets).
func (o *groupOffsets) removeExpired(nowMs, retMs int64, base func(commitEntry) int64, subscribed map[string]bool) map[tp]offsetAndMetadata {
	out := make(map[tp]offsetAndMetadata)
	for k, e := range o.committed {
		if subscribed[k.topic] {
			continue
		}
		if _, pending := o.pendingCommits[k]; pending {
			continue
		}
		if e.om.expireTimestamp >= 0 {
			if nowMs >= e.om.expireTimestamp {
				out[k] = e.om
			}
		} else if nowMs-base(e) >= retMs {
			out[k] = e.om
		}
	}
	for k := range out {
		delete(o.committed, k)
	}
	return out
}
