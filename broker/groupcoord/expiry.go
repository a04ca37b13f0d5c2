package groupcoord

import (
	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"

	rm "github.com/isrbroker/isrbroker/replicamanager"
)

// This file is GroupMetadataManager's cleanup (docs/groups.md §6): the periodic offset expiry
// (offsets.retention.check.interval.ms) and the removal of offsets and groups with their
// tombstones, which DeleteGroups and OffsetDelete use too.

// scheduleExpiry runs the expiry task every offsets.retention.check.interval.ms.
func (gm *groupMetadataManager) scheduleExpiry() {
	t := gm.clock.AfterFunc(gm.cfg.OffsetsRetentionCheckInterval, func() {
		if gm.ctx.Err() != nil {
			return
		}
		gm.expireOffsets()
		gm.scheduleExpiry()
	})
	gm.mu.Lock()
	gm.expiryTimer = t
	gm.mu.Unlock()
}

// expireOffsets is GroupMetadataManager.cleanupGroupMetadata: expired offsets (KIP-211) are
// removed and tombstoned; an Empty group left without offsets becomes Dead and its metadata is
// tombstoned. It returns the number of offsets removed.
func (gm *groupMetadataManager) expireOffsets() int {
	now := gm.clock.Now()
	n := gm.cleanupGroupMetadata(gm.allGroups(), func(g *group) map[tp]offsetAndMetadata {
		return g.removeExpiredOffsets(millis(now), gm.cfg.OffsetsRetention)
	})
	gm.metrics.offsetExpired.Mark(int64(n))
	if n > 0 {
		gm.log.WithField("offsets", n).Info("removed expired offsets")
	}
	return n
}

// cleanupGroupMetadata removes what selector picks from each group, writes the tombstones, and
// drops groups that end up Empty without offsets (Dead). It returns the offsets removed.
func (gm *groupMetadataManager) cleanupGroupMetadata(groups []*group, selector func(*group) map[tp]offsetAndMetadata) int {
	removedTotal := 0
	for _, g := range groups {
		var (
			removed map[tp]offsetAndMetadata
			dead    bool
			gen     int32
		)
		g.inLock(func() {
			removed = selector(g)
			if g.is(stateEmpty) && !g.offsets.hasOffsets() {
				groupLog(gm.log, g).Info("group transitioned to Dead")
				transition(gm.log, g, stateDead, gm.clock.Now())
			}
			dead = g.is(stateDead)
			gen = g.generation
		})
		p := gm.partitionFor(g.id)
		if !gm.isOwned(p) {
			continue
		}
		var tombstones []kv
		for _, k := range sortedTPs(removed) {
			tombstones = append(tombstones, kv{key: offsetCommitKey(g.id, k)})
		}
		// No group tombstone for generation 0: such a group only stored offsets.
		if dead && gm.removeGroupIf(g) && gen > 0 {
			tombstones = append(tombstones, kv{key: groupMetadataKey(g.id)})
		}
		if len(tombstones) == 0 {
			continue
		}
		removedTotal += len(removed)
		id := g.id
		// Kafka appends tombstones without waiting for the ISR: a lost one is written again
		// by the next expiry pass.
		gm.appendToOffsetsPartition(p, encodeBatch(millis(gm.clock.Now()), tombstones), 1, func(r rm.ProduceResult) {
			if r.ErrorCode != errNone {
				gm.log.WithFields(logrus.Fields{"group": id, "error": kerr.ErrorForCode(r.ErrorCode)}).Warn("failed to append tombstones")
			}
		})
	}
	return removedTotal
}

func sortedTPs[V any](m map[tp]V) []tp {
	out := make([]tp, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && (out[j].topic < out[j-1].topic || out[j].topic == out[j-1].topic && out[j].partition < out[j-1].partition); j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}
