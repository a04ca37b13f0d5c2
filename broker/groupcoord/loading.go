package groupcoord

import (
	"context"
	"sync"
	"time"

	"github.com/sirupsen/logrus"

	rm "github.com/isrbroker/isrbroker/replicamanager"
)

// This file is GroupMetadataManager's read side (docs/groups.md §6): loading an offsets
// partition's groups and offsets when this broker becomes its leader, and unloading them when
// it stops leading it. Both run in order on one goroutine (loadScheduler), off the LeaderAndIsr
// path, like Kafka's group-metadata-manager scheduler thread.

// loadScheduler runs loads and unloads one at a time, in the order they were scheduled.
type loadScheduler struct {
	mu    sync.Mutex
	queue []func()
	wake  chan struct{}
}

func newLoadScheduler() *loadScheduler { return &loadScheduler{wake: make(chan struct{}, 1)} }

// schedule queues fn behind the loads and unloads already scheduled.
func (s *loadScheduler) schedule(fn func()) {
	s.mu.Lock()
	s.queue = append(s.queue, fn)
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// run runs the queued functions until ctx is done.
func (s *loadScheduler) run(ctx context.Context) {
	for {
		s.mu.Lock()
		var fn func()
		if len(s.queue) > 0 {
			fn = s.queue[0]
			s.queue = s.queue[1:]
		}
		s.mu.Unlock()
		if fn != nil {
			fn()
			continue
		}
		select {
		case <-s.wake:
		case <-ctx.Done():
			return
		}
	}
}

// scheduleLoadGroupAndOffsets is GroupMetadataManager.scheduleLoadGroupAndOffsets: this broker
// now leads offsets partition p; unless it already did, p is loading from now on and its
// groups and offsets are loaded on the scheduler.
func (gm *groupMetadataManager) scheduleLoadGroupAndOffsets(p int32, onGroupLoaded func(*group)) {
	gm.mu.Lock()
	if gm.owned[p] && !gm.loading[p] {
		gm.mu.Unlock()
		return // still the leader: the cache is current
	}
	gm.leaderEpochs[p]++
	gen := gm.leaderEpochs[p]
	gm.loading[p] = true
	gm.mu.Unlock()
	gm.log.WithField("partition", p).Info("scheduling loading of offsets and group metadata")
	gm.scheduler.schedule(func() { gm.loadPartition(p, gen, onGroupLoaded) })
}

// removeGroupsForPartition is GroupMetadataManager.removeGroupsForPartition: this broker no
// longer leads offsets partition p; it stops being owned at once and its groups are unloaded
// on the scheduler.
func (gm *groupMetadataManager) removeGroupsForPartition(p int32, onGroupUnloaded func(*group)) {
	gm.mu.Lock()
	was := gm.owned[p] || gm.loading[p]
	gm.leaderEpochs[p]++
	delete(gm.owned, p)
	delete(gm.loading, p)
	gm.mu.Unlock()
	if was {
		gm.log.WithField("partition", p).Info("scheduling unloading of offsets and group metadata")
	}
	gm.scheduler.schedule(func() { gm.unloadPartition(p, onGroupUnloaded) })
}

// loadedPartition is what reading one offsets partition yields.
type loadedPartition struct {
	offsets map[offsetKey]commitEntry
	groups  map[string]*group
	removed map[string]bool
}

// readPartition reads the local log of __consumer_offsets-p from its log start offset to its
// LEO: the last value per key wins, a null value (tombstone) deletes (docs/groups.md §6).
func (gm *groupMetadataManager) readPartition(p int32) (*loadedPartition, error) {
	key := rm.TopicPartition{Topic: OffsetsTopic, Partition: p}
	out := &loadedPartition{offsets: map[offsetKey]commitEntry{}, groups: map[string]*group{}, removed: map[string]bool{}}
	log := gm.log.WithField("partition", p)
	offset := int64(0)
	for gm.ctx.Err() == nil {
		res, err := gm.replicas.ReadLocal(key, offset, gm.cfg.OffsetsLoadBufferSize)
		if err != nil {
			return out, err
		}
		offset = max(offset, res.LogStartOffset)
		if offset >= res.LogEndOffset || len(res.Records) == 0 {
			break
		}
		batches, skipped, derr := decodeBatches(res.Records)
		for _, s := range skipped {
			log.WithError(s).Warn("skipping a batch of __consumer_offsets that isrbroker cannot decode")
		}
		for _, b := range batches {
			offset = b.nextOffset
			if b.control {
				continue
			}
			for _, r := range b.records {
				out.apply(r, b.baseOffset, log)
			}
		}
		if derr != nil {
			return out, derr
		}
		if len(batches) == 0 {
			break
		}
	}
	return out, nil
}

// apply is one record of the log: the last value per key wins, a null value (tombstone)
// deletes.
func (out *loadedPartition) apply(r kv, batchOffset int64, log logrus.FieldLogger) {
	k, err := parseKey(r.key)
	if err != nil {
		log.WithError(err).Warn("skipping a record of __consumer_offsets with an unknown key")
		return
	}
	switch k := k.(type) {
	case offsetKey:
		if r.value == nil {
			delete(out.offsets, k)
			return
		}
		om, err := parseOffsetValue(r.value)
		if err != nil {
			log.WithError(err).WithField("group", k.group).Warn("skipping an offset commit value that does not decode")
			return
		}
		out.offsets[k] = commitEntry{om: om, batchOffset: batchOffset}
	case string:
		if r.value == nil {
			delete(out.groups, k)
			out.removed[k] = true
			return
		}
		g, err := parseGroupValue(k, r.value)
		if err != nil {
			log.WithError(err).WithField("group", k).Warn("skipping a group metadata value that does not decode")
			return
		}
		delete(out.removed, k)
		out.groups[k] = g
	}
}

// loadPartition is GroupMetadataManager.loadGroupsAndOffsets for partition p; gen is the
// leadership generation it was scheduled for (a resignation meanwhile discards the result).
// onGroupLoaded runs under the lock of each group installed.
func (gm *groupMetadataManager) loadPartition(p int32, gen uint64, onGroupLoaded func(*group)) {
	start := time.Now()
	log := gm.log.WithField("partition", p)
	loaded, err := gm.readPartition(p)
	if err != nil {
		log.WithError(err).Error("error loading offsets; serving what was read")
	}
	byGroup := make(map[string]map[tp]commitEntry)
	for k, e := range loaded.offsets {
		m := byGroup[k.group]
		if m == nil {
			m = make(map[tp]commitEntry)
			byGroup[k.group] = m
		}
		m[k.tp] = e
	}
	now := gm.clock.Now()
	var groups []*group
	for id, g := range loaded.groups {
		for k, e := range byGroup[id] {
			g.offsets.committed[k] = e
		}
		groups = append(groups, g)
	}
	// Groups that only store offsets (no metadata record: never had members, "simple consumers").
	for id, offs := range byGroup {
		if loaded.groups[id] != nil {
			continue
		}
		g := newGroup(id, now)
		for k, e := range offs {
			g.offsets.committed[k] = e
		}
		groups = append(groups, g)
	}

	gm.mu.Lock()
	if gm.leaderEpochs[p] != gen {
		gm.mu.Unlock()
		log.Info("leadership changed while loading; discarding the loaded groups")
		return
	}
	installed := make([]*group, 0, len(groups))
	for _, g := range groups {
		if cur := gm.groups[g.id]; cur != nil {
			continue // a group created meanwhile wins (GroupMetadataManager.loadGroup)
		}
		gm.groups[g.id] = g
		installed = append(installed, g)
	}
	gm.owned[p] = true
	delete(gm.loading, p)
	gm.mu.Unlock()
	for _, g := range installed {
		g.inLock(func() { onGroupLoaded(g) })
	}
	log.WithFields(logrus.Fields{"groups": len(installed), "offsets": len(loaded.offsets), "duration": time.Since(start).Round(time.Millisecond).String()}).
		Info("finished loading offsets and group metadata")
}

// unloadPartition drops the groups of partition p (removeGroupsForPartition's
// removeGroupsAndOffsets); onGroupUnloaded runs under the lock of each group dropped.
//
// It drops them even when p is loading again by now (leadership came back while this unload
// was queued): another leader may have moved the groups on meanwhile (commits, rebalances,
// deletions) and the load queued behind this unload rebuilds them from the log, as Kafka's
// GroupMetadataManager does. Keeping them would serve the offsets and generations from
// before the flip. p cannot be owned here: removeGroupsForPartition disowned it and bumped its
// leadership generation, so only a load scheduled after this unload (and run after it, the
// scheduler keeping their order) owns it again.
func (gm *groupMetadataManager) unloadPartition(p int32, onGroupUnloaded func(*group)) {
	gm.mu.Lock()
	var gone []*group
	for id, g := range gm.groups {
		if gm.partitionFor(id) == p {
			gone = append(gone, g)
			delete(gm.groups, id)
		}
	}
	gm.mu.Unlock()
	offsets := 0
	for _, g := range gone {
		g.inLock(func() {
			offsets += len(g.offsets.committed)
			onGroupUnloaded(g)
		})
	}
	l := gm.log.WithFields(logrus.Fields{"partition": p, "groups": len(gone), "offsets": offsets})
	if len(gone) == 0 {
		l.Debug("finished unloading offsets partition")
		return
	}
	l.Info("finished unloading offsets partition")
}
