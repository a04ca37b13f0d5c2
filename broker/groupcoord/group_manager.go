package groupcoord

import (
	"context"
	"sync"

	"github.com/sirupsen/logrus"

	"github.com/isrbroker/isrbroker/broker/kproto"
)

// groupMetadataManager is Kafka's GroupMetadataManager: the cache of the groups whose
// __consumer_offsets partition this broker leads (their metadata and committed offsets), the
// owned and loading offsets partitions, the appends that persist groups and offsets
// (storage.go), the loading and unloading of offsets partitions (loading.go) and the offset
// expiry (expiry.go). The Coordinator reaches the cache only through it.
//
// Concurrency: mu guards groups, owned, loading, leaderEpochs and expiryTimer; it is taken
// while holding no group lock only. Each group's state is guarded by the group's own lock.
type groupMetadataManager struct {
	cfg      Config
	clock    Clock
	log      logrus.FieldLogger
	replicas Replicas
	meta     Metadata
	metrics  *coordMetrics

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.RWMutex
	groups  map[string]*group
	owned   map[int32]bool
	loading map[int32]bool
	// leaderEpochs counts leadership changes per offsets partition, so that a load finishing
	// after a resignation is discarded.
	leaderEpochs map[int32]uint64
	expiryTimer  Timer

	// scheduler runs loads and unloads one at a time, in order.
	scheduler *loadScheduler
}

func newGroupMetadataManager(cfg Config, log logrus.FieldLogger, replicas Replicas, meta Metadata) *groupMetadataManager {
	ctx, cancel := context.WithCancel(context.Background())
	return &groupMetadataManager{
		cfg:          cfg,
		clock:        cfg.Clock,
		log:          log,
		replicas:     replicas,
		meta:         meta,
		ctx:          ctx,
		cancel:       cancel,
		groups:       make(map[string]*group),
		owned:        make(map[int32]bool),
		loading:      make(map[int32]bool),
		leaderEpochs: make(map[int32]uint64),
		scheduler:    newLoadScheduler(),
	}
}

// startup starts the scheduler's goroutine and the offset-expiry task
// (offsets.retention.check.interval.ms).
func (gm *groupMetadataManager) startup() {
	gm.wg.Add(1)
	go func() {
		defer gm.wg.Done()
		gm.scheduler.run(gm.ctx)
	}()
	gm.scheduleExpiry()
}

// shutdown empties the cache (onGroupUnloaded runs under the lock of each group dropped),
// stops the expiry task and waits for the scheduler's goroutine.
func (gm *groupMetadataManager) shutdown(onGroupUnloaded func(*group)) {
	gm.mu.Lock()
	groups := make([]*group, 0, len(gm.groups))
	for _, g := range gm.groups {
		groups = append(groups, g)
	}
	gm.groups = make(map[string]*group)
	gm.owned = make(map[int32]bool)
	gm.loading = make(map[int32]bool)
	if gm.expiryTimer != nil {
		gm.expiryTimer.Stop()
	}
	gm.mu.Unlock()
	gm.cancel()
	for _, g := range groups {
		g.inLock(func() { onGroupUnloaded(g) })
	}
	gm.wg.Wait()
}

// numPartitions is the partition count of __consumer_offsets: the topic's when the metadata
// knows it, else offsets.topic.num.partitions (GroupMetadataManager reads it from ZooKeeper).
func (gm *groupMetadataManager) numPartitions() int32 {
	if gm.meta != nil {
		if n := gm.meta.PartitionCount(OffsetsTopic); n > 0 {
			return n
		}
	}
	return gm.cfg.OffsetsTopicNumPartitions
}

// partitionFor is Utils.abs(groupId.hashCode) % partitions (docs/groups.md §1).
func (gm *groupMetadataManager) partitionFor(groupID string) int32 {
	return partitionFor(groupID, gm.numPartitions())
}

func partitionFor(groupID string, n int32) int32 {
	return kproto.JavaAbs(kproto.JavaStringHashCode(groupID)) % n
}

// partitionState reports whether this broker owns offsets partition p (its groups are served)
// and whether p is loading (isPartitionOwned, isPartitionLoading).
func (gm *groupMetadataManager) partitionState(p int32) (owned, loading bool) {
	gm.mu.RLock()
	defer gm.mu.RUnlock()
	return gm.owned[p], gm.loading[p]
}

// isLoading reports whether any offsets partition is loading.
func (gm *groupMetadataManager) isLoading() bool {
	gm.mu.RLock()
	defer gm.mu.RUnlock()
	return len(gm.loading) > 0
}

func (gm *groupMetadataManager) isOwned(p int32) bool {
	gm.mu.RLock()
	defer gm.mu.RUnlock()
	return gm.owned[p]
}

func (gm *groupMetadataManager) getGroup(id string) *group {
	gm.mu.RLock()
	defer gm.mu.RUnlock()
	return gm.groups[id]
}

// addGroup puts g in the cache unless a group of that id is there; it returns the cached one,
// or nil when this broker no longer owns the group's partition (a resignation raced with the
// request: the group must not outlive the unload).
func (gm *groupMetadataManager) addGroup(g *group) *group {
	p := gm.partitionFor(g.id)
	gm.mu.Lock()
	defer gm.mu.Unlock()
	if cur := gm.groups[g.id]; cur != nil {
		return cur
	}
	if !gm.owned[p] || gm.loading[p] {
		return nil
	}
	gm.groups[g.id] = g
	return g
}

// removeGroupIf drops g from the cache if it is the cached group of its id.
func (gm *groupMetadataManager) removeGroupIf(g *group) bool {
	gm.mu.Lock()
	defer gm.mu.Unlock()
	if gm.groups[g.id] == g {
		delete(gm.groups, g.id)
		return true
	}
	return false
}

// groupNotExists: the group is local and absent or Dead (GroupMetadataManager.groupNotExists).
func (gm *groupMetadataManager) groupNotExists(id string) bool {
	p := gm.partitionFor(id)
	gm.mu.RLock()
	owned := gm.owned[p]
	g := gm.groups[id]
	gm.mu.RUnlock()
	if !owned {
		return false
	}
	if g == nil {
		return true
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.is(stateDead)
}

func (gm *groupMetadataManager) allGroups() []*group {
	gm.mu.RLock()
	defer gm.mu.RUnlock()
	out := make([]*group, 0, len(gm.groups))
	for _, g := range gm.groups {
		out = append(out, g)
	}
	return out
}

// getOffsets is GroupMetadataManager.getOffsets: the committed offsets of wanted (all: every
// offset of the group); a partition without one, or an unknown or Dead group, gets offset -1.
func (gm *groupMetadataManager) getOffsets(groupID string, all bool, wanted []tp) map[tp]fetchedOffset {
	out := make(map[tp]fetchedOffset, len(wanted))
	for _, k := range wanted {
		out[k] = fetchedOffset{offset: -1, leaderEpoch: -1}
	}
	g := gm.getGroup(groupID)
	if g == nil {
		return out
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.is(stateDead) {
		return out
	}
	if all {
		for k, e := range g.offsets.committed {
			out[k] = fetchedOffset{offset: e.om.offset, leaderEpoch: e.om.leaderEpoch, metadata: e.om.metadata}
		}
		return out
	}
	for _, k := range wanted {
		if e, ok := g.offsets.committed[k]; ok {
			out[k] = fetchedOffset{offset: e.om.offset, leaderEpoch: e.om.leaderEpoch, metadata: e.om.metadata}
		}
	}
	return out
}
