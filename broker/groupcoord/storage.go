package groupcoord

import (
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"

	rm "github.com/isrbroker/isrbroker/replicamanager"
)

// This file is GroupMetadataManager's storage side (docs/groups.md §5-6): appends of group
// metadata and offset commits through the replica manager, loading and unloading of offsets
// partitions on leadership changes, and offset expiry.

// appendToOffsetsPartition appends one batch to __consumer_offsets-p; done gets the result.
// It must be called without any group lock held.
func (c *Coordinator) appendToOffsetsPartition(p int32, batch []byte, acks int16, done func(rm.ProduceResult)) {
	key := rm.TopicPartition{Topic: OffsetsTopic, Partition: p}
	c.replicas.AppendRecords(c.cfg.OffsetsCommitTimeout, acks, map[rm.TopicPartition][]byte{key: batch}, func(res map[rm.TopicPartition]rm.ProduceResult) {
		r, ok := res[key]
		if !ok {
			r = rm.ProduceResult{ErrorCode: errUnknownServer, BaseOffset: -1}
		}
		done(r)
	})
}

// storeGroupError maps a log append error of group metadata as GroupMetadataManager.storeGroup.
func storeGroupError(code int16) int16 {
	switch code {
	case errNone:
		return errNone
	case kerr.UnknownTopicOrPartition.Code, kerr.NotEnoughReplicas.Code, kerr.NotEnoughReplicasAfterAppend.Code:
		return errCoordinatorNotAvailable
	case kerr.NotLeaderForPartition.Code, kerr.KafkaStorageError.Code:
		return errNotCoordinator
	case kerr.RequestTimedOut.Code:
		return errRebalanceInProgress
	case kerr.MessageTooLarge.Code, kerr.RecordListTooLarge.Code, kerr.InvalidFetchSize.Code:
		return errUnknownServer
	}
	return code
}

// storeOffsetsError maps a log append error of offset commits as GroupMetadataManager.storeOffsets.
func storeOffsetsError(code int16) int16 {
	switch code {
	case errNone:
		return errNone
	case kerr.UnknownTopicOrPartition.Code, kerr.NotEnoughReplicas.Code, kerr.NotEnoughReplicasAfterAppend.Code:
		return errCoordinatorNotAvailable
	case kerr.NotLeaderForPartition.Code, kerr.KafkaStorageError.Code:
		return errNotCoordinator
	case kerr.MessageTooLarge.Code, kerr.RecordListTooLarge.Code, kerr.InvalidFetchSize.Code:
		return errInvalidCommitOffsetSize
	}
	return code
}

// storeGroup persists g's metadata with assignment (member id → bytes). Called with g's lock
// held; the append runs once it is released, and cb runs under the lock again with the
// mapped error.
func (c *Coordinator) storeGroup(g *group, assignment map[string][]byte, cb func(code int16)) {
	batch := encodeBatch(millis(c.now()), []kv{{key: groupMetadataKey(g.id), value: groupMetadataValue(g, assignment)}})
	p := c.PartitionFor(g.id)
	g.deferred = append(g.deferred, func() {
		c.appendToOffsetsPartition(p, batch, c.cfg.OffsetsCommitRequiredAcks, func(r rm.ProduceResult) {
			code := storeGroupError(r.ErrorCode)
			c.locked(g, func() { cb(code) })
		})
	})
}

// storeOffsets persists a commit (GroupMetadataManager.storeOffsets). Called with g's lock held;
// cb runs under the lock with a code per partition once the ISR has the batch (acks
// offsets.commit.required.acks), and only then are the offsets visible to OffsetFetch.
func (c *Coordinator) storeOffsets(g *group, memberID string, offsets map[tp]offsetAndMetadata, cb func(map[tp]int16)) {
	valid := make(map[tp]offsetAndMetadata, len(offsets))
	for k, om := range offsets {
		if len(om.metadata) <= int(c.cfg.OffsetMetadataMaxBytes) {
			valid[k] = om
		}
	}
	status := func(code int16) map[tp]int16 {
		out := make(map[tp]int16, len(offsets))
		for k := range offsets {
			if _, ok := valid[k]; ok {
				out[k] = code
			} else {
				out[k] = errOffsetMetadataTooLarge
			}
		}
		return out
	}
	if len(valid) == 0 {
		cb(status(errNone))
		return
	}
	now := millis(c.now())
	records := make([]kv, 0, len(valid))
	for _, k := range sortedTPs(valid) {
		records = append(records, kv{key: offsetCommitKey(g.id, k), value: offsetCommitValue(valid[k])})
	}
	batch := encodeBatch(now, records)
	p := c.PartitionFor(g.id)
	g.offsets.prepareOffsetCommit(valid)
	g.deferred = append(g.deferred, func() {
		c.appendToOffsetsPartition(p, batch, c.cfg.OffsetsCommitRequiredAcks, func(r rm.ProduceResult) {
			c.metrics.offsetCommits.Mark(int64(len(valid)))
			c.locked(g, func() {
				code := storeOffsetsError(r.ErrorCode)
				if !g.is(stateDead) {
					for k, om := range valid {
						if code == errNone {
							g.offsets.onOffsetCommitAppend(k, commitEntry{om: om, batchOffset: r.BaseOffset})
						} else {
							g.offsets.failPendingOffsetWrite(k, om)
						}
					}
				}
				if code != errNone {
					c.groupLog(g).WithFields(logrus.Fields{"member": memberID, "appendError": r.ErrorCode}).Debug("offset commit failed when appending to the log")
				}
				cb(status(code))
			})
		})
	})
}

// OnLeadershipChange is the replica manager's leadership callback (KafkaApis
// onLeadershipChange): partitions of __consumer_offsets this broker now leads are loaded,
// those it follows or stopped hosting are unloaded. It only schedules; the work runs on the
// loader goroutine.
func (c *Coordinator) OnLeadershipChange(leaders, followers []rm.TopicPartition) {
	for _, t := range leaders {
		if t.Topic == OffsetsTopic {
			c.onElection(t.Partition)
		}
	}
	for _, t := range followers {
		if t.Topic == OffsetsTopic {
			c.onResignation(t.Partition)
		}
	}
}

func (c *Coordinator) onElection(p int32) {
	c.mu.Lock()
	if c.owned[p] && !c.loading[p] {
		c.mu.Unlock()
		return // still the leader: the cache is current
	}
	c.leaderEpochs[p]++
	gen := c.leaderEpochs[p]
	c.loading[p] = true
	c.mu.Unlock()
	c.log.WithField("partition", p).Info("scheduling loading of offsets and group metadata")
	c.enqueueLoad(func() { c.loadPartition(p, gen) })
}

func (c *Coordinator) onResignation(p int32) {
	c.mu.Lock()
	was := c.owned[p] || c.loading[p]
	c.leaderEpochs[p]++
	delete(c.owned, p)
	delete(c.loading, p)
	c.mu.Unlock()
	if was {
		c.log.WithField("partition", p).Info("scheduling unloading of offsets and group metadata")
	}
	c.enqueueLoad(func() { c.unloadPartition(p) })
}

func (c *Coordinator) enqueueLoad(fn func()) {
	c.loadMu.Lock()
	c.loadQueue = append(c.loadQueue, fn)
	c.loadMu.Unlock()
	select {
	case c.loadWake <- struct{}{}:
	default:
	}
}

// loader runs loads and unloads one at a time, in the order they were scheduled.
func (c *Coordinator) loader() {
	defer c.wg.Done()
	for {
		c.loadMu.Lock()
		var fn func()
		if len(c.loadQueue) > 0 {
			fn = c.loadQueue[0]
			c.loadQueue = c.loadQueue[1:]
		}
		c.loadMu.Unlock()
		if fn != nil {
			fn()
			continue
		}
		select {
		case <-c.loadWake:
		case <-c.ctx.Done():
			return
		}
	}
}

// loadedPartition is what reading one offsets partition yields.
type loadedPartition struct {
	offsets map[offsetKey]commitEntry
	groups  map[string]*group
	removed map[string]bool
}

// readPartition reads the local log of __consumer_offsets-p from its log start offset to its
// LEO: the last value per key wins, a null value (tombstone) deletes (docs/groups.md §6).
func (c *Coordinator) readPartition(p int32) (*loadedPartition, error) {
	key := rm.TopicPartition{Topic: OffsetsTopic, Partition: p}
	out := &loadedPartition{offsets: map[offsetKey]commitEntry{}, groups: map[string]*group{}, removed: map[string]bool{}}
	log := c.log.WithField("partition", p)
	offset := int64(0)
	for c.ctx.Err() == nil {
		res, err := c.replicas.ReadLocal(key, offset, c.cfg.OffsetsLoadBufferSize)
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
				c.applyLoadedRecord(out, r, b.baseOffset, log)
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

func (c *Coordinator) applyLoadedRecord(out *loadedPartition, r kv, batchOffset int64, log logrus.FieldLogger) {
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
func (c *Coordinator) loadPartition(p int32, gen uint64) {
	start := time.Now()
	log := c.log.WithField("partition", p)
	loaded, err := c.readPartition(p)
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
	now := c.now()
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

	c.mu.Lock()
	if c.leaderEpochs[p] != gen {
		c.mu.Unlock()
		log.Info("leadership changed while loading; discarding the loaded groups")
		return
	}
	installed := make([]*group, 0, len(groups))
	for _, g := range groups {
		if cur := c.groups[g.id]; cur != nil {
			continue // a group created meanwhile wins (GroupMetadataManager.loadGroup)
		}
		c.groups[g.id] = g
		installed = append(installed, g)
	}
	c.owned[p] = true
	delete(c.loading, p)
	c.mu.Unlock()
	for _, g := range installed {
		c.locked(g, func() { c.onGroupLoaded(g) })
	}
	log.WithFields(logrus.Fields{"groups": len(installed), "offsets": len(loaded.offsets), "ms": time.Since(start).Milliseconds()}).
		Info("finished loading offsets and group metadata")
}

// unloadPartition drops the groups of partition p (removeGroupsForPartition) unless the
// partition is owned again.
func (c *Coordinator) unloadPartition(p int32) {
	c.mu.Lock()
	if c.owned[p] || c.loading[p] {
		c.mu.Unlock()
		return
	}
	var gone []*group
	for id, g := range c.groups {
		if c.PartitionFor(id) == p {
			gone = append(gone, g)
			delete(c.groups, id)
		}
	}
	c.mu.Unlock()
	offsets := 0
	for _, g := range gone {
		c.locked(g, func() {
			offsets += len(g.offsets.committed)
			c.onGroupUnloaded(g)
		})
	}
	l := c.log.WithFields(logrus.Fields{"partition": p, "groups": len(gone), "offsets": offsets})
	if len(gone) == 0 {
		l.Debug("finished unloading offsets partition")
		return
	}
	l.Info("finished unloading offsets partition")
}

func (c *Coordinator) isOwned(p int32) bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.owned[p]
}

// scheduleExpiry runs the expiry task every offsets.retention.check.interval.ms.
func (c *Coordinator) scheduleExpiry() {
	t := c.clock.AfterFunc(c.cfg.OffsetsRetentionCheckInterval, func() {
		if c.ctx.Err() != nil {
			return
		}
		c.ExpireOffsets()
		c.scheduleExpiry()
	})
	c.mu.Lock()
	c.expiryTimer = t
	c.mu.Unlock()
}

// ExpireOffsets is GroupMetadataManager.cleanupGroupMetadata: expired offsets (KIP-211) are
// removed and tombstoned; an Empty group left without offsets becomes Dead and its metadata is
// tombstoned. It returns the number of offsets removed.
func (c *Coordinator) ExpireOffsets() int {
	now := c.now()
	n := c.cleanupGroupMetadata(c.allGroups(), func(g *group) map[tp]offsetAndMetadata {
		return g.removeExpiredOffsets(millis(now), c.cfg.OffsetsRetention)
	})
	c.metrics.offsetExpired.Mark(int64(n))
	if n > 0 {
		c.log.WithField("offsets", n).Info("removed expired offsets")
	}
	return n
}

func (c *Coordinator) allGroups() []*group {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make([]*group, 0, len(c.groups))
	for _, g := range c.groups {
		out = append(out, g)
	}
	return out
}

// cleanupGroupMetadata removes what selector picks from each group, writes the tombstones, and
// drops groups that end up Empty without offsets (Dead). It returns the offsets removed.
func (c *Coordinator) cleanupGroupMetadata(groups []*group, selector func(*group) map[tp]offsetAndMetadata) int {
	removedTotal := 0
	for _, g := range groups {
		var (
			removed map[tp]offsetAndMetadata
			dead    bool
			gen     int32
		)
		c.locked(g, func() {
			removed = selector(g)
			if g.is(stateEmpty) && !g.offsets.hasOffsets() {
				c.groupLog(g).Info("group transitioned to Dead")
				c.transition(g, stateDead)
			}
			dead = g.is(stateDead)
			gen = g.generation
		})
		p := c.PartitionFor(g.id)
		if !c.isOwned(p) {
			continue
		}
		var tombstones []kv
		for _, k := range sortedTPs(removed) {
			tombstones = append(tombstones, kv{key: offsetCommitKey(g.id, k)})
		}
		// No group tombstone for generation 0: such a group only stored offsets.
		if dead && c.removeGroupIf(g) && gen > 0 {
			tombstones = append(tombstones, kv{key: groupMetadataKey(g.id)})
		}
		if len(tombstones) == 0 {
			continue
		}
		removedTotal += len(removed)
		id := g.id
		// Kafka appends tombstones without waiting for the ISR: a lost one is written again
		// by the next expiry pass.
		c.appendToOffsetsPartition(p, encodeBatch(millis(c.now()), tombstones), 1, func(r rm.ProduceResult) {
			if r.ErrorCode != errNone {
				c.log.WithFields(logrus.Fields{"group": id, "errorCode": r.ErrorCode}).Warn("failed to append tombstones")
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
