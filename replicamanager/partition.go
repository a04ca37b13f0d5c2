package replicamanager

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/isrbroker/isrbroker/broker/ratelog"
	"github.com/isrbroker/isrbroker/logstore"
	"github.com/isrbroker/isrbroker/replicamanager/replevents"
	"github.com/isrbroker/isrbroker/replicamanager/replica"
)

// Partition is one hosted replica (S13): a leader or a follower of its partition. It is the
// shell around the pure core (replica.Leader): it locks, logs, writes ZooKeeper through the
// IsrWriter and calls the core for every decision.
//
// Locking (Kafka's leaderIsrUpdateLock): appends as leader run under mu's read side, so produces
// to one partition proceed concurrently (the log serialises the appends themselves); follower
// progress updates, ISR changes, role changes and follower-side log changes run under its write
// side. The HW moves under the read side too (after an append), so it has its own leaf lock (highWatermark).
type Partition struct {
	tp  TopicPartition
	env *partitionEnv
	log *logstore.Log

	mu              sync.RWMutex    // Kafka's leaderIsrUpdateLock
	leaderID        int32           // -1: none known
	leaderEpoch     int32           // -1 before the first LeaderAndIsr
	controllerEpoch int32           // epoch of the controller that elected the current leader (K3)
	zkVersion       int32           // version of the partition state znode, for the ISR CAS (K3)
	assigned        []int32         // AR (S6)
	leader          *replica.Leader // the leader's core; nil while following (a follower tracks no ISR, S14.2)
	cfg             topicConfig

	isrUpdateInFlight bool // an ISR write to ZooKeeper is under way (at most one per partition)
	// isrOutcomeUnknown: the last ISR write gave up without knowing whether it committed. No
	// other ISR change is written until the partition state was re-read (reconcileIsr); the
	// core keeps the written ISR as pending, so the HW counts its members.
	isrOutcomeUnknown bool
	// offline: the log's dir is offline (logdir_failure.go); the partition serves nothing and
	// answers KAFKA_STORAGE_ERROR until the broker restarts.
	offline bool

	hw highWatermark // S7; moves under either side of mu
}

// partitionEnv is what the hosted partitions share: this broker's id and
// replica.lag.time.max.ms, the clock, the logger and the rate limiter of repeated warnings, the
// ISR metrics, the ISR writer (K3) and the replication page's event recorder. The replica
// manager builds one; a partition holds it, not the replica manager.
type partitionEnv struct {
	brokerID   int32
	lagTimeMax time.Duration
	now        func() time.Time
	log        *logrus.Entry
	warnings   *ratelog.Limiter
	metrics    *rmMetrics
	isr        IsrWriter // nil in tests that never change the ISR
	events     *replevents.Recorder
}

// highWatermark is a partition's HW (S7) behind its own leaf lock: the HW moves under either
// side of Partition.mu (after an append, under the read side).
type highWatermark struct {
	mu sync.Mutex
	v  int64
}

// get returns the HW (any lock or none).
func (h *highWatermark) get() int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.v
}

// set sets a follower's HW, which follows the leader's and its own log (it may go down with a
// truncation). Called with Partition.mu's write side held.
func (h *highWatermark) set(v int64) {
	h.mu.Lock()
	h.v = v
	h.mu.Unlock()
}

// advance moves a leader's HW to candidate, never down (replica.AdvanceHW); it reports whether
// the HW moved.
func (h *highWatermark) advance(candidate int64) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	v, moved := replica.AdvanceHW(h.v, candidate)
	h.v = v
	return moved
}

// isrUpdate is an ISR change prepared under p.mu and written to ZooKeeper without holding it,
// so that a slow or unreachable ZooKeeper (fault row 9) does not stall produce and fetch on the
// partition while the write retries. The local ISR changes only once ZooKeeper has the new one.
type isrUpdate struct {
	newIsr          []int32
	leaderEpoch     int32
	controllerEpoch int32
	zkVersion       int32
}

func (p *Partition) logger() *logrus.Entry {
	return p.env.log.WithFields(logrus.Fields{"topic": p.tp.Topic, "partition": p.tp.Partition, "leaderEpoch": p.leaderEpoch})
}

func (p *Partition) isLeaderLocked() bool { return p.leaderID == p.env.brokerID }

// IsLeader reports whether this broker leads the partition.
func (p *Partition) IsLeader() bool {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.isLeaderLocked()
}

// makeLeader applies a LeaderAndIsr naming this broker leader (S14's counterpart, makeLeaders).
// A new leader epoch records (epoch → LEO) in the leader epoch cache (K1) and starts a new core
// (follower progress reset: ISR members caught up now, the others never); the same epoch only
// takes the controller's assignment and ISR. The HW may move. It returns true when this broker
// was not already the leader at this epoch.
func (p *Partition) makeLeader(st PartitionState, now time.Time) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	wasLeader := p.isLeaderLocked() && p.leaderEpoch == st.LeaderEpoch && p.leader != nil
	p.controllerEpoch = st.ControllerEpoch
	p.assigned = slices.Clone(st.Replicas)
	p.zkVersion = st.ZkVersion
	p.isrOutcomeUnknown = false // the controller's state is ZooKeeper's
	if wasLeader {
		p.leader.Update(st.Replicas, st.ISR)
	} else {
		leo := p.log.LogEndOffset()
		p.leaderEpoch = st.LeaderEpoch
		p.log.LeaderEpochCache().Assign(st.LeaderEpoch, leo)
		p.leader = replica.NewLeader(p.env.brokerID, st.LeaderEpoch, leo, st.Replicas, st.ISR, p.env.lagTimeMax, now)
	}
	p.leaderID = p.env.brokerID
	p.maybeIncrementHWLocked(now)
	p.logger().WithFields(logrus.Fields{"isr": st.ISR, "replicas": p.assigned, "highWatermark": p.hw.get(), "logEndOffset": p.log.LogEndOffset()}).Info("became leader")
	if !wasLeader {
		p.record(replevents.Event{Kind: replevents.BecomeLeader, Leader: p.leaderID, LeaderEpoch: st.LeaderEpoch,
			ISR: slices.Clone(st.ISR), HighWatermark: p.hw.get(), ToOffset: p.log.LogEndOffset()})
	}
	return !wasLeader
}

// makeFollower applies a LeaderAndIsr naming another broker leader (S14.2). It returns false only
// when the leader and the leader epoch are both unchanged (KIP-320 rule), so
// every epoch bump restarts the fetcher in Truncating state.
func (p *Partition) makeFollower(st PartitionState) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	unchanged := p.leaderID == st.Leader && p.leaderEpoch == st.LeaderEpoch
	p.controllerEpoch = st.ControllerEpoch
	p.assigned = slices.Clone(st.Replicas)
	p.leader = nil // S14.2: a follower does not maintain the ISR
	p.isrOutcomeUnknown = false
	p.zkVersion = st.ZkVersion
	p.leaderEpoch = st.LeaderEpoch
	p.leaderID = st.Leader
	if !unchanged {
		p.logger().WithFields(logrus.Fields{"leader": st.Leader, "highWatermark": p.hw.get(), "logEndOffset": p.log.LogEndOffset()}).Info("became follower")
		p.record(replevents.Event{Kind: replevents.BecomeFollower, Leader: st.Leader, LeaderEpoch: st.LeaderEpoch,
			HighWatermark: p.hw.get(), ToOffset: p.log.LogEndOffset()})
	}
	return !unchanged
}

// isrLocked returns the leader's ISR, nil while following. Callers hold mu (either side).
func (p *Partition) isrLocked() []int32 {
	if p.leader == nil {
		return nil
	}
	return p.leader.ISR()
}

// isrSharedLocked is isrLocked without the copy (replica.Leader.ISRShared): read-only. Callers
// hold mu (either side).
func (p *Partition) isrSharedLocked() []int32 {
	if p.leader == nil {
		return nil
	}
	return p.leader.ISRShared()
}

// checkLeaderEpoch validates a client's current_leader_epoch (KIP-320): -1 skips the check.
func (p *Partition) checkLeaderEpochLocked(current int32) int16 {
	switch {
	case current < 0 || current == p.leaderEpoch:
		return 0
	case current < p.leaderEpoch:
		return kerr.FencedLeaderEpoch.Code
	default:
		return kerr.UnknownLeaderEpoch.Code
	}
}

// appendAsLeader appends a produce's batches under the read
// side of the partition lock, as Kafka's appendRecordsToLeader does: concurrent produces to one
// partition only serialise inside the log. For acks=-1 an ISR smaller than min.insync.replicas
// rejects the write before anything is appended (K2). It returns the leader epoch the batches
// were appended in (a delayed produce checks that the log still holds them in it), and the
// log's error when it refused the batch (a *logstore.RecordError names the record).
func (p *Partition) appendAsLeader(records []byte, acks int16, now time.Time) (logstore.AppendInfo, int32, int16, error) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.offline {
		return logstore.AppendInfo{}, -1, storageErrorCode, nil
	}
	if !p.isLeaderLocked() || p.leader == nil {
		return logstore.AppendInfo{}, -1, kerr.NotLeaderForPartition.Code, nil
	}
	if acks == -1 && !p.leader.EnoughReplicas(p.cfg.minInsyncReplicas) {
		p.env.warnings.Warn(p.logger().WithFields(logrus.Fields{"isr": p.leader.ISR(), "minIsr": p.cfg.minInsyncReplicas}),
			fmt.Sprint(p.tp.Topic, "-", p.tp.Partition), "rejecting acks=all produce: ISR below min.insync.replicas") // K2, once per 10 s per partition
		return logstore.AppendInfo{}, -1, kerr.NotEnoughReplicas.Code, nil
	}
	info, err := p.log.AppendAsLeader(records, p.leaderEpoch)
	if err != nil {
		return info, -1, logErrorCode(err), err
	}
	p.maybeIncrementHWLocked(now)
	return info, p.leaderEpoch, 0, nil
}

// logErrorCode maps logstore sentinels to Kafka error codes (the one protocol error table is kerr).
func logErrorCode(err error) int16 {
	switch {
	case errors.Is(err, logstore.ErrCorruptMessage):
		return kerr.CorruptMessage.Code
	case errors.Is(err, logstore.ErrMessageTooLarge):
		return kerr.MessageTooLarge.Code
	case errors.Is(err, logstore.ErrInvalidRecord):
		return kerr.InvalidRecord.Code
	case errors.Is(err, logstore.ErrInvalidTimestamp):
		return kerr.InvalidTimestamp.Code
	case errors.Is(err, logstore.ErrOffsetOutOfRange):
		return kerr.OffsetOutOfRange.Code
	case errors.Is(err, logstore.ErrLogDirOffline):
		return kerr.KafkaStorageError.Code
	default:
		return kerr.KafkaStorageError.Code
	}
}

// maybeIncrementHWLocked moves the HW to what the core allows (S7, K4 / KAFKA-4485); it never
// goes down. Callers hold mu (either side: the core's state changes only under the write side).
// It returns true when the HW moved.
func (p *Partition) maybeIncrementHWLocked(now time.Time) bool {
	if !p.isLeaderLocked() || p.leader == nil {
		return false
	}
	return p.hw.advance(p.leader.HighWatermark(p.log.LogEndOffset(), now))
}

// updateFollowerFetchState records a follower fetch at fetchOffset (its LEO) in the core
// (Kafka's updateFollowerFetchState), then tries to expand the ISR (K4) and move the HW. leaderLEO is the
// leader's LEO when the fetch was read. It returns whether the HW moved.
func (p *Partition) updateFollowerFetchState(id int32, fetchOffset, followerLogStart, leaderLEO int64, now time.Time) bool {
	p.mu.Lock()
	if !p.isLeaderLocked() || p.leader == nil || !p.leader.UpdateFollower(id, fetchOffset, followerLogStart, leaderLEO, now) {
		p.mu.Unlock()
		return false // not leading, or not an assigned follower
	}
	var expand *isrUpdate
	if p.leader.ExpandCandidate(id, p.hw.get()) {
		expand = p.prepareIsrUpdateLocked(p.leader.With(id))
	}
	moved := p.maybeIncrementHWLocked(now)
	p.mu.Unlock()
	if expand != nil {
		p.writeIsr(expand, func() {
			p.env.metrics.isrExpands.Mark(1)
			p.logger().WithFields(logrus.Fields{"follower": id, "isr": p.leader.ISR()}).Info("expanded ISR")
			p.record(replevents.Event{Kind: replevents.IsrExpand, Leader: p.leaderID, LeaderEpoch: p.leaderEpoch,
				ISR: p.leader.ISR(), Changed: []int32{id}, HighWatermark: p.hw.get()})
			if p.maybeIncrementHWLocked(p.env.now()) {
				moved = true
			}
		})
	}
	return moved
}

// maybeShrinkIsr is the leader's ISR-shrink step (S10), run every replica.lag.time.max.ms/2; it
// first reconciles an ISR write whose outcome is unknown. It returns whether the HW moved.
func (p *Partition) maybeShrinkIsr(now time.Time) bool {
	p.mu.RLock()
	unknown := p.isrOutcomeUnknown
	p.mu.RUnlock()
	moved := false
	if unknown {
		moved = p.reconcileIsr()
	}
	p.mu.Lock()
	if !p.isLeaderLocked() || p.leader == nil {
		p.mu.Unlock()
		return moved
	}
	out := p.leader.OutOfSync(p.log.LogEndOffset(), now)
	if len(out) == 0 {
		p.mu.Unlock()
		return moved
	}
	u := p.prepareIsrUpdateLocked(p.leader.Without(out))
	p.mu.Unlock()
	if u == nil {
		return moved
	}
	p.writeIsr(u, func() {
		p.env.metrics.isrShrinks.Mark(1)
		p.logger().WithFields(logrus.Fields{"removed": out, "isr": p.leader.ISR(), "highWatermark": p.hw.get(), "logEndOffset": p.log.LogEndOffset()}).Info("shrank ISR")
		p.record(replevents.Event{Kind: replevents.IsrShrink, Leader: p.leaderID, LeaderEpoch: p.leaderEpoch,
			ISR: p.leader.ISR(), Changed: slices.Clone(out), HighWatermark: p.hw.get()})
		moved = p.maybeIncrementHWLocked(p.env.now()) || moved
	})
	return moved
}

// prepareIsrUpdateLocked starts an ISR change from the current leader state (recorded as the
// core's pending ISR), or returns nil when there is no ISR writer, another change is still being
// written, or the last one's outcome is unknown. Callers hold mu's write side.
func (p *Partition) prepareIsrUpdateLocked(newIsr []int32) *isrUpdate {
	if p.env.isr == nil || p.isrUpdateInFlight || p.isrOutcomeUnknown {
		return nil
	}
	p.isrUpdateInFlight = true
	p.leader.SetPending(newIsr)
	return &isrUpdate{newIsr: newIsr, leaderEpoch: p.leaderEpoch, controllerEpoch: p.controllerEpoch, zkVersion: p.zkVersion}
}

// writeIsr writes a prepared ISR change to ZooKeeper as a compare-and-set on the partition
// state's zkVersion, keeping the leader epoch and the electing controller's epoch (K3, pre-2.7
// rule). It is called without p.mu. On success the new ISR and zkVersion are applied under p.mu
// and applied runs (still under p.mu), unless a LeaderAndIsr has meanwhile changed the leader
// epoch or the zkVersion: then the controller's newer state stands. On a version conflict the
// leader does not retry: it waits for the controller's next LeaderAndIsr. When the outcome is
// unknown (IsOutcomeUnknown), the leader re-reads the partition state and reconciles
// (reconcileIsr); until it could, the HW counts the members of both ISRs and no other change is
// written.
func (p *Partition) writeIsr(u *isrUpdate, applied func()) bool {
	v, err := p.env.isr.UpdateLeaderAndIsr(p.tp.Topic, p.tp.Partition, p.env.brokerID, u.leaderEpoch, u.newIsr, u.controllerEpoch, u.zkVersion)
	p.mu.Lock()
	p.isrUpdateInFlight = false
	superseded := !p.isLeaderLocked() || p.leader == nil || p.leaderEpoch != u.leaderEpoch || p.zkVersion != u.zkVersion
	if err != nil && IsOutcomeUnknown(err) && !superseded {
		p.env.metrics.failedIsrUpdates.Mark(1)
		p.isrOutcomeUnknown = true
		p.logger().WithFields(logrus.Fields{"zkVersion": u.zkVersion, "newIsr": u.newIsr}).WithError(err).
			Warn("ISR write outcome unknown; re-reading the partition state")
		p.mu.Unlock()
		p.reconcileIsr()
		return false
	}
	defer p.mu.Unlock()
	if !superseded {
		p.leader.ClearPending()
	}
	if err != nil {
		p.env.metrics.failedIsrUpdates.Mark(1)
		p.logger().WithFields(logrus.Fields{"zkVersion": u.zkVersion, "newIsr": u.newIsr, "controllerEpoch": u.controllerEpoch}).WithError(err).
			Warn("cached zkVersion not equal to that in ZooKeeper, skip updating ISR")
		return false
	}
	if superseded {
		p.logger().WithFields(logrus.Fields{"newIsr": u.newIsr, "zkVersion": v}).Info("ISR write superseded by a LeaderAndIsr received meanwhile")
		return false
	}
	p.leader.ApplyISR(u.newIsr)
	p.zkVersion = v
	applied()
	return true
}

// reconcileIsr re-reads the partition state after an ISR write with an unknown outcome (called
// without p.mu). While the state still names this broker leader at the current leader epoch,
// the leader adopts ZooKeeper's ISR and zkVersion; otherwise the controller changed the state,
// and the leader keeps counting both ISRs for the HW and waits for its LeaderAndIsr. A failed
// read leaves the outcome unknown: the ISR-shrink task tries again. It reports whether the HW
// moved.
func (p *Partition) reconcileIsr() bool {
	leader, epoch, isr, zkv, err := p.env.isr.ReadLeaderAndIsr(p.tp.Topic, p.tp.Partition)
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.isrOutcomeUnknown || !p.isLeaderLocked() || p.leader == nil {
		return false
	}
	log := p.logger()
	if err != nil {
		log.WithError(err).Warn("re-reading the partition state failed; the ISR write outcome stays unknown")
		return false
	}
	if leader != p.env.brokerID || epoch != p.leaderEpoch {
		log.WithFields(logrus.Fields{"zkLeader": leader, "zkLeaderEpoch": epoch}).
			Warn("partition state changed by the controller; waiting for its LeaderAndIsr")
		return false
	}
	old := p.leader.ISR()
	p.leader.ApplyISR(isr)
	p.zkVersion, p.isrOutcomeUnknown = zkv, false
	log.WithFields(logrus.Fields{"isr": isr, "previousIsr": old, "zkVersion": zkv}).Info("reconciled ISR with ZooKeeper")
	return p.maybeIncrementHWLocked(p.env.now())
}

// checkEnoughReplicasReachOffset decides a parked acks=-1 produce (K2) whose records end before
// requiredOffset and were appended in appendEpoch: done once the HW passed requiredOffset; then
// NOT_ENOUGH_REPLICAS_AFTER_APPEND if the ISR shrank below min.insync.replicas. Done with
// NOT_LEADER_FOR_PARTITION when this broker does not lead, or when it leads in a later epoch and
// its log no longer holds the records in appendEpoch (they were truncated while it followed and
// replaced by another leader's: the HW passing requiredOffset would acknowledge those).
func (p *Partition) checkEnoughReplicasReachOffset(requiredOffset int64, appendEpoch int32) (bool, int16) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.offline {
		return true, storageErrorCode
	}
	if !p.isLeaderLocked() || p.leader == nil {
		return true, kerr.NotLeaderForPartition.Code
	}
	if p.leaderEpoch != appendEpoch && !p.holdsEpochBeforeLocked(appendEpoch, requiredOffset) {
		return true, kerr.NotLeaderForPartition.Code
	}
	if p.hw.get() >= requiredOffset {
		if !p.leader.EnoughReplicas(p.cfg.minInsyncReplicas) {
			return true, kerr.NotEnoughReplicasAfterAppend.Code
		}
		return true, 0
	}
	return false, 0
}

// holdsEpochBeforeLocked reports whether the offset before end is in epoch's range of the leader
// epoch cache: an entry for epoch itself starting before end, whose epoch ends (the next entry's
// start, or the LEO) at or after end. A leader that kept its log across an epoch bump (the
// controller's ISR shrink) still holds its records; one that truncated them as a follower does
// not, even after copying records of a later epoch at the same offsets (K1: one leader per epoch,
// so records of an epoch at an offset are the same on every replica). Callers hold mu.
func (p *Partition) holdsEpochBeforeLocked(epoch int32, end int64) bool {
	entries := p.log.LeaderEpochCache().EpochEntries()
	for i, e := range entries {
		if e.Epoch != epoch {
			continue
		}
		epochEnd := p.log.LogEndOffset()
		if i+1 < len(entries) {
			epochEnd = entries[i+1].StartOffset
		}
		return e.StartOffset < end && epochEnd >= end
	}
	return false
}

// snapshot of the fields a reader needs.
type partitionView struct {
	isLeader    bool
	leaderEpoch int32
	hw          int64
	leo         int64
	logStart    int64
	isr         []int32 // shared with the leader state (ISRShared): read, never written
	assigned    []int32
	minIsr      int
}

func (p *Partition) view() partitionView {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.viewLocked()
}

func (p *Partition) viewLocked() partitionView {
	return partitionView{
		isLeader:    p.isLeaderLocked(),
		leaderEpoch: p.leaderEpoch,
		hw:          p.hw.get(),
		leo:         p.log.LogEndOffset(),
		logStart:    p.log.LogStartOffset(),
		isr:         p.isrSharedLocked(),
		assigned:    p.assigned,
		minIsr:      p.cfg.minInsyncReplicas,
	}
}

// HighWatermark returns the partition's HW.
func (p *Partition) HighWatermark() int64 { return p.hw.get() }
