package replicamanager

import (
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/isrbroker/isrbroker/logstore"
)

// followerState is the leader's view of one remote replica (kafka-zk-reference §3).
type followerState struct {
	leo                int64 // -1 until the follower's first fetch in this leader epoch
	logStartOffset     int64
	lastCaughtUpTime   time.Time
	lastFetchLeaderLEO int64
	lastFetchTime      time.Time
}

// Partition is one hosted replica (S13): a leader or a follower of its partition.
type Partition struct {
	tp  TopicPartition
	rm  *ReplicaManager
	log *logstore.Log

	mu                     sync.RWMutex // Kafka's leaderIsrUpdateLock
	leaderID               int32        // -1: none known
	leaderEpoch            int32        // -1 before the first LeaderAndIsr
	leaderEpochStartOffset int64        // LEO when this broker became leader (K4)
	controllerEpoch        int32        // epoch of the controller that elected the current leader (K3)
	zkVersion              int32        // version of the partition state znode, for the ISR CAS (K3)
	assigned               []int32      // AR (S6)
	isr                    []int32      // leader only; a follower does not track the ISR
	hw                     int64        // high watermark (S7)
	followers              map[int32]*followerState
	cfg                    topicConfig
	isrUpdateInFlight      bool // an ISR write to ZooKeeper is under way (at most one per partition)
	// pendingIsr is the ISR of a write that is under way or whose outcome is unknown:
	// ZooKeeper may hold it, so the HW counts its members too (the maximal ISR).
	pendingIsr []int32
	// isrOutcomeUnknown: the last ISR write gave up without knowing whether it committed. No
	// other ISR change is written until the partition state was re-read (reconcileIsr).
	isrOutcomeUnknown bool
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
	return p.rm.log.WithFields(logrus.Fields{"topic": p.tp.Topic, "partition": p.tp.Partition, "leaderEpoch": p.leaderEpoch})
}

func (p *Partition) isLeaderLocked() bool { return p.leaderID == p.rm.cfg.BrokerID }

// IsLeader reports whether this broker leads the partition.
func (p *Partition) IsLeader() bool {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.isLeaderLocked()
}

// makeLeader applies a LeaderAndIsr naming this broker leader (S14's counterpart, makeLeaders).
// It records (epoch → LEO) in the leader epoch cache (K1), resets follower states
// (lastCaughtUpTime = now for ISR members, zero for the others) and may move the HW.
// It returns true when this broker was not already the leader at this epoch.
func (p *Partition) makeLeader(st PartitionState, now time.Time) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	wasLeader := p.isLeaderLocked() && p.leaderEpoch == st.LeaderEpoch
	p.controllerEpoch = st.ControllerEpoch
	p.pendingIsr, p.isrOutcomeUnknown = nil, false // the controller's state is ZooKeeper's
	p.assigned = slices.Clone(st.Replicas)
	p.isr = slices.Clone(st.ISR)
	p.zkVersion = st.ZkVersion
	if !wasLeader {
		leo := p.log.LogEndOffset()
		p.leaderEpoch = st.LeaderEpoch
		p.leaderEpochStartOffset = leo
		p.log.AssignEpochStartOffset(st.LeaderEpoch, leo)
		p.followers = make(map[int32]*followerState)
		for _, r := range st.Replicas {
			if r == p.rm.cfg.BrokerID {
				continue
			}
			fs := &followerState{leo: -1, lastFetchLeaderLEO: -1}
			if slices.Contains(st.ISR, r) {
				fs.lastCaughtUpTime = now
			}
			p.followers[r] = fs
		}
	} else {
		for _, r := range st.Replicas {
			if r != p.rm.cfg.BrokerID && p.followers[r] == nil {
				p.followers[r] = &followerState{leo: -1, lastFetchLeaderLEO: -1}
			}
		}
	}
	p.leaderID = p.rm.cfg.BrokerID
	p.maybeIncrementHWLocked(now)
	p.logger().WithFields(logrus.Fields{"isr": p.isr, "replicas": p.assigned, "hw": p.hw, "leo": p.log.LogEndOffset()}).Info("became leader")
	return !wasLeader
}

// makeFollower applies a LeaderAndIsr naming another broker leader (S14.2). It returns false only
// when the leader and the leader epoch are both unchanged (KIP-320 rule, kafka-zk-reference §4), so
// every epoch bump restarts the fetcher in Truncating state.
func (p *Partition) makeFollower(st PartitionState) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	unchanged := p.leaderID == st.Leader && p.leaderEpoch == st.LeaderEpoch
	p.controllerEpoch = st.ControllerEpoch
	p.pendingIsr, p.isrOutcomeUnknown = nil, false
	p.assigned = slices.Clone(st.Replicas)
	p.isr = nil // S14.2: a follower does not maintain the ISR
	p.zkVersion = st.ZkVersion
	p.leaderEpoch = st.LeaderEpoch
	p.leaderID = st.Leader
	p.followers = nil
	if !unchanged {
		p.logger().WithFields(logrus.Fields{"leader": st.Leader, "hw": p.hw, "leo": p.log.LogEndOffset()}).Info("became follower")
	}
	return !unchanged
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

// appendAsLeader appends a produce's batches (architecture: produce path step 2–3). For acks=-1 an
// ISR smaller than min.insync.replicas rejects the write before anything is appended (K2).
func (p *Partition) appendAsLeader(records []byte, acks int16, now time.Time) (logstore.AppendInfo, int16) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.isLeaderLocked() {
		return logstore.AppendInfo{}, kerr.NotLeaderForPartition.Code
	}
	if acks == -1 && len(p.isr) < p.cfg.minInsyncReplicas {
		p.logger().WithFields(logrus.Fields{"isr": p.isr, "minIsr": p.cfg.minInsyncReplicas}).Warn("rejecting acks=all produce: ISR below min.insync.replicas")
		return logstore.AppendInfo{}, kerr.NotEnoughReplicas.Code
	}
	info, err := p.log.AppendAsLeader(records, p.leaderEpoch)
	if err != nil {
		return info, logErrorCode(err)
	}
	p.maybeIncrementHWLocked(now)
	return info, 0
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
	case errors.Is(err, logstore.ErrOffsetOutOfRange):
		return kerr.OffsetOutOfRange.Code
	default:
		return kerr.KafkaStorageError.Code
	}
}

// maybeIncrementHWLocked moves the HW to the smallest LEO among the leader and every follower that
// is in the ISR or caught up within replica.lag.time.max.ms (S7, K4 / KAFKA-4485). The HW never
// goes down. It returns true when the HW moved.
func (p *Partition) maybeIncrementHWLocked(now time.Time) bool {
	if !p.isLeaderLocked() {
		return false
	}
	newHW := p.log.LogEndOffset()
	for id, fs := range p.followers {
		inIsr := slices.Contains(p.isr, id) || slices.Contains(p.pendingIsr, id)
		caughtUp := !fs.lastCaughtUpTime.IsZero() && now.Sub(fs.lastCaughtUpTime) <= p.rm.cfg.ReplicaLagTimeMax
		if inIsr || caughtUp {
			if fs.leo < newHW {
				newHW = fs.leo
			}
		}
	}
	if newHW > p.hw {
		p.hw = newHW
		return true
	}
	return false
}

// updateFollowerFetchState records a follower fetch at fetchOffset (its LEO), applying the
// lastCaughtUpTime rule of kafka-zk-reference §3, then tries to expand the ISR (K4) and move the
// HW. leaderLEO is the leader's LEO when the fetch was read. It returns whether the HW moved.
func (p *Partition) updateFollowerFetchState(id int32, fetchOffset, followerLogStart, leaderLEO int64, now time.Time) bool {
	p.mu.Lock()
	if !p.isLeaderLocked() {
		p.mu.Unlock()
		return false
	}
	fs := p.followers[id]
	if fs == nil {
		p.mu.Unlock()
		return false // not an assigned replica
	}
	if fetchOffset >= leaderLEO {
		if now.After(fs.lastCaughtUpTime) {
			fs.lastCaughtUpTime = now
		}
	} else if fs.lastFetchLeaderLEO >= 0 && fetchOffset >= fs.lastFetchLeaderLEO {
		if fs.lastFetchTime.After(fs.lastCaughtUpTime) {
			fs.lastCaughtUpTime = fs.lastFetchTime
		}
	}
	fs.leo = fetchOffset
	fs.logStartOffset = followerLogStart
	fs.lastFetchLeaderLEO = leaderLEO
	fs.lastFetchTime = now
	expand := p.maybeExpandIsrLocked(id, fs)
	moved := p.maybeIncrementHWLocked(now)
	p.mu.Unlock()
	if expand != nil {
		p.writeIsr(expand, func() {
			p.rm.metrics.isrExpands.Mark(1)
			p.logger().WithFields(logrus.Fields{"follower": id, "isr": p.isr}).Info("expanded ISR")
			if p.maybeIncrementHWLocked(p.rm.now()) {
				moved = true
			}
		})
	}
	return moved
}

// maybeExpandIsrLocked prepares adding a follower to the ISR once its LEO reaches the HW and the
// start offset of the leader's epoch (K4, KAFKA-7128). No lag-time check applies here. The caller
// writes the returned update with writeIsr after releasing p.mu.
func (p *Partition) maybeExpandIsrLocked(id int32, fs *followerState) *isrUpdate {
	if slices.Contains(p.isr, id) || !slices.Contains(p.assigned, id) {
		return nil
	}
	if fs.leo < p.hw || fs.leo < p.leaderEpochStartOffset {
		return nil
	}
	return p.prepareIsrUpdateLocked(append(slices.Clone(p.isr), id))
}

// outOfSyncReplicasLocked returns the ISR followers that are behind the leader's LEO and have not
// been caught up for longer than replica.lag.time.max.ms (S5b, S11, S12): a burst of writes does
// not evict a follower that keeps fetching to the end, since lastCaughtUpTime follows its fetches.
func (p *Partition) outOfSyncReplicasLocked(now time.Time) []int32 {
	leo := p.log.LogEndOffset()
	var out []int32
	for _, id := range p.isr {
		if id == p.rm.cfg.BrokerID {
			continue // the leader is never removed
		}
		fs := p.followers[id]
		if fs == nil {
			out = append(out, id)
			continue
		}
		if fs.leo != leo && now.Sub(fs.lastCaughtUpTime) > p.rm.cfg.ReplicaLagTimeMax {
			out = append(out, id)
		}
	}
	return out
}

// maybeShrinkIsr is the leader's ISR-shrink step (S10), run every replica.lag.time.max.ms/2.
// It returns whether the HW moved.
func (p *Partition) maybeShrinkIsr(now time.Time) bool {
	p.mu.RLock()
	unknown := p.isrOutcomeUnknown
	p.mu.RUnlock()
	reconciled := false
	if unknown {
		reconciled = p.reconcileIsr()
	}
	p.mu.Lock()
	if !p.isLeaderLocked() {
		p.mu.Unlock()
		return false
	}
	out := p.outOfSyncReplicasLocked(now)
	if len(out) == 0 {
		p.mu.Unlock()
		return reconciled
	}
	newIsr := make([]int32, 0, len(p.isr))
	for _, id := range p.isr {
		if !slices.Contains(out, id) {
			newIsr = append(newIsr, id)
		}
	}
	u := p.prepareIsrUpdateLocked(newIsr)
	p.mu.Unlock()
	if u == nil {
		return reconciled
	}
	moved := reconciled
	p.writeIsr(u, func() {
		p.rm.metrics.isrShrinks.Mark(1)
		p.logger().WithFields(logrus.Fields{"removed": out, "isr": p.isr, "hw": p.hw, "leo": p.log.LogEndOffset()}).Info("shrank ISR")
		moved = p.maybeIncrementHWLocked(p.rm.now()) || moved
	})
	return moved
}

// prepareIsrUpdateLocked starts an ISR change from the current leader state, or returns nil when
// there is no ISR writer or another change is still being written.
func (p *Partition) prepareIsrUpdateLocked(newIsr []int32) *isrUpdate {
	if p.rm.isr == nil || p.isrUpdateInFlight || p.isrOutcomeUnknown {
		return nil
	}
	p.isrUpdateInFlight = true
	p.pendingIsr = slices.Clone(newIsr)
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
	v, err := p.rm.isr.UpdateLeaderAndIsr(p.tp.Topic, p.tp.Partition, p.rm.cfg.BrokerID, u.leaderEpoch, u.newIsr, u.controllerEpoch, u.zkVersion)
	p.mu.Lock()
	p.isrUpdateInFlight = false
	superseded := !p.isLeaderLocked() || p.leaderEpoch != u.leaderEpoch || p.zkVersion != u.zkVersion
	if err != nil && IsOutcomeUnknown(err) && !superseded {
		p.rm.metrics.failedIsrUpdates.Mark(1)
		p.isrOutcomeUnknown = true
		p.logger().WithFields(logrus.Fields{"zkVersion": u.zkVersion, "newIsr": u.newIsr}).WithError(err).
			Warn("ISR write outcome unknown; re-reading the partition state")
		p.mu.Unlock()
		p.reconcileIsr()
		return false
	}
	defer p.mu.Unlock()
	if !superseded {
		p.pendingIsr = nil
	}
	if err != nil {
		p.rm.metrics.failedIsrUpdates.Mark(1)
		p.logger().WithFields(logrus.Fields{"zkVersion": u.zkVersion, "newIsr": u.newIsr, "controllerEpoch": u.controllerEpoch}).WithError(err).
			Warn("cached zkVersion not equal to that in ZooKeeper, skip updating ISR")
		return false
	}
	if superseded {
		p.logger().WithFields(logrus.Fields{"newIsr": u.newIsr, "zkVersion": v}).Info("ISR write superseded by a LeaderAndIsr received meanwhile")
		return false
	}
	p.isr = u.newIsr
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
	leader, epoch, isr, zkv, err := p.rm.isr.ReadLeaderAndIsr(p.tp.Topic, p.tp.Partition)
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.isrOutcomeUnknown || !p.isLeaderLocked() {
		return false
	}
	log := p.logger()
	if err != nil {
		log.WithError(err).Warn("re-reading the partition state failed; the ISR write outcome stays unknown")
		return false
	}
	if leader != p.rm.cfg.BrokerID || epoch != p.leaderEpoch {
		log.WithFields(logrus.Fields{"zkLeader": leader, "zkLeaderEpoch": epoch}).
			Warn("partition state changed by the controller; waiting for its LeaderAndIsr")
		return false
	}
	old := p.isr
	p.isr, p.zkVersion = slices.Clone(isr), zkv
	p.pendingIsr, p.isrOutcomeUnknown = nil, false
	log.WithFields(logrus.Fields{"isr": p.isr, "previousIsr": old, "zkVersion": zkv}).Info("reconciled ISR with ZooKeeper")
	return p.maybeIncrementHWLocked(p.rm.now())
}

// checkEnoughReplicasReachOffset decides a parked acks=-1 produce (K2): done once the HW passed
// requiredOffset; then NOT_ENOUGH_REPLICAS_AFTER_APPEND if the ISR shrank below min.insync.replicas.
func (p *Partition) checkEnoughReplicasReachOffset(requiredOffset int64) (bool, int16) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if !p.isLeaderLocked() {
		return true, kerr.NotLeaderForPartition.Code
	}
	if p.hw >= requiredOffset {
		if len(p.isr) < p.cfg.minInsyncReplicas {
			return true, kerr.NotEnoughReplicasAfterAppend.Code
		}
		return true, 0
	}
	return false, 0
}

// snapshot of the fields a reader needs.
type partitionView struct {
	isLeader    bool
	leaderEpoch int32
	hw          int64
	leo         int64
	logStart    int64
	isr         []int32
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
		hw:          p.hw,
		leo:         p.log.LogEndOffset(),
		logStart:    p.log.LogStartOffset(),
		isr:         p.isr,
		assigned:    p.assigned,
		minIsr:      p.cfg.minInsyncReplicas,
	}
}

// HighWatermark returns the partition's HW.
func (p *Partition) HighWatermark() int64 {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.hw
}
