// Package replica is the pure replication core of a partition's leader: the ISR, the leader's
// view of each follower's progress, and the rules of Kafka 2.4 (ZooKeeper mode) that decide the
// high watermark (HW), ISR expansion, ISR shrink and the acks=all replica check. In the style of
// etcd raft's tracker.Progress and hashicorp raft's commitment tracker, nothing here locks, logs,
// reads a clock or does I/O: callers pass `now` and the leader's log end offset (LEO), and get
// decisions back. replicamanager.Partition is the shell that locks, logs, writes ZooKeeper and
// calls this core (docs/requirements.md lists the rules by requirement: S5, S7, S10–S12, K2, K4).
//
// Invariants of a Leader (AssertInvariants; checked after every change when Invariants is set,
// which the replicamanager tests do, and a violation panics):
//   - the ISR is not empty, has no duplicates, contains the leader itself and is a subset of the
//     assigned replicas (AR);
//   - the pending ISR (a write under way or with an unknown outcome) is nil or a subset of the
//     AR that contains the leader;
//   - every assigned replica other than the leader has a Progress, and no other replica has;
//   - a follower's LEO is -1 (not fetched in this leader epoch) or >= 0.
//
// The HW rule (AdvanceHW) keeps the HW monotonic: it never goes down while a replica leads.
package replica

import (
	"fmt"
	"slices"
	"time"
)

// Invariants, when set (tests), makes every change of a Leader check its invariants.
var Invariants bool

// Progress is the leader's view of one follower (Kafka's Replica fetch state): its LEO as of
// its last fetch, its log start offset, when it was last caught up, and the leader's LEO and
// the time of its last fetch.
type Progress struct {
	LEO                int64 // -1 until the follower's first fetch in this leader epoch
	LogStartOffset     int64
	LastCaughtUpTime   time.Time // zero: never caught up in this leader epoch
	LastFetchLeaderLEO int64     // -1 before the first fetch
	LastFetchTime      time.Time
}

// caughtUpWithin reports whether the follower was caught up no longer than lag before now.
func (p *Progress) caughtUpWithin(now time.Time, lag time.Duration) bool {
	return !p.LastCaughtUpTime.IsZero() && now.Sub(p.LastCaughtUpTime) <= lag
}

// Leader is the leader's view of one partition during one leader epoch.
type Leader struct {
	self             int32
	epoch            int32
	epochStartOffset int64 // the LEO when this replica became leader (K4, KAFKA-7128)
	lag              time.Duration
	assigned         []int32
	isr              []int32
	pending          []int32 // an ISR write under way or with an unknown outcome
	progress         map[int32]*Progress
}

// NewLeader starts a leader epoch (makeLeader): ISR members count as caught up now, the other
// followers as never caught up, and no follower's LEO is known yet.
func NewLeader(self, epoch int32, epochStartOffset int64, assigned, isr []int32, lag time.Duration, now time.Time) *Leader {
	l := &Leader{self: self, epoch: epoch, epochStartOffset: epochStartOffset, lag: lag, progress: map[int32]*Progress{}}
	l.assigned, l.isr = slices.Clone(assigned), slices.Clone(isr)
	for _, r := range assigned {
		if r == self {
			continue
		}
		p := &Progress{LEO: -1, LastFetchLeaderLEO: -1}
		if slices.Contains(isr, r) {
			p.LastCaughtUpTime = now
		}
		l.progress[r] = p
	}
	l.checked()
	return l
}

// Update applies a LeaderAndIsr for the same leader epoch: the controller's assignment and ISR
// stand; new replicas get a fresh Progress, removed ones lose theirs, and a pending ISR change is
// dropped (the controller's state is ZooKeeper's).
func (l *Leader) Update(assigned, isr []int32) {
	l.assigned, l.isr, l.pending = slices.Clone(assigned), slices.Clone(isr), nil
	for r := range l.progress {
		if !slices.Contains(assigned, r) {
			delete(l.progress, r)
		}
	}
	for _, r := range assigned {
		if r != l.self && l.progress[r] == nil {
			l.progress[r] = &Progress{LEO: -1, LastFetchLeaderLEO: -1}
		}
	}
	l.checked()
}

// Epoch returns the leader epoch.
func (l *Leader) Epoch() int32 { return l.epoch }

// EpochStartOffset returns the leader's LEO when the epoch started.
func (l *Leader) EpochStartOffset() int64 { return l.epochStartOffset }

// ISR returns the ISR as ZooKeeper last confirmed it (a copy).
func (l *Leader) ISR() []int32 { return slices.Clone(l.isr) }

// ISRShared returns the ISR as ISR does, without copying it: the caller must not modify it. It
// stays valid after the ISR changes (a change assigns a new slice, never writes into the one
// handed out), so a snapshot taken on every fetch (the replica manager's partition view) costs no
// allocation.
func (l *Leader) ISRShared() []int32 { return l.isr }

// InISR reports whether id is in the ISR.
func (l *Leader) InISR(id int32) bool { return slices.Contains(l.isr, id) }

// ISRSize returns the number of ISR members.
func (l *Leader) ISRSize() int { return len(l.isr) }

// Assigned returns the assigned replicas (a copy).
func (l *Leader) Assigned() []int32 { return slices.Clone(l.assigned) }

// IsFollower reports whether id is an assigned replica other than the leader: only those may
// read to the LEO and count as followers' progress.
func (l *Leader) IsFollower(id int32) bool { return id != l.self && l.progress[id] != nil }

// Progress returns a copy of follower id's progress.
func (l *Leader) Progress(id int32) (Progress, bool) {
	p := l.progress[id]
	if p == nil {
		return Progress{}, false
	}
	return *p, true
}

// UpdateFollower records a follower fetch at fetchOffset (its LEO) that was read when the
// leader's LEO was leaderLEO (Kafka's updateFetchState): the follower is caught up now if it
// fetched from the leader's LEO, else as of its previous fetch if it reached the leader's LEO of
// that fetch (both only move forward). It returns false for a replica that is not an assigned
// follower.
func (l *Leader) UpdateFollower(id int32, fetchOffset, logStartOffset, leaderLEO int64, now time.Time) bool {
	p := l.progress[id]
	if id == l.self || p == nil {
		return false
	}
	if fetchOffset >= leaderLEO {
		if now.After(p.LastCaughtUpTime) {
			p.LastCaughtUpTime = now
		}
	} else if p.LastFetchLeaderLEO >= 0 && fetchOffset >= p.LastFetchLeaderLEO {
		if p.LastFetchTime.After(p.LastCaughtUpTime) {
			p.LastCaughtUpTime = p.LastFetchTime
		}
	}
	p.LEO = max(fetchOffset, -1)
	p.LogStartOffset = logStartOffset
	p.LastFetchLeaderLEO = leaderLEO
	p.LastFetchTime = now
	l.checked()
	return true
}

// ExpandCandidate reports whether follower id should join the ISR (K4): it is assigned and not
// in the ISR, and its LEO reached both the HW and the start offset of the leader's epoch
// (KAFKA-7128). No lag-time check applies.
func (l *Leader) ExpandCandidate(id int32, hw int64) bool {
	p := l.progress[id]
	if p == nil || slices.Contains(l.isr, id) {
		return false
	}
	return p.LEO >= hw && p.LEO >= l.epochStartOffset
}

// OutOfSync returns the ISR followers whose LEO differs from the leader's and that were last
// caught up longer than the lag time ago (S5b, S10, S11; time only, KIP-16). The leader itself
// is never out of sync. A burst of writes does not make a follower that keeps fetching to the
// end out of sync (S12): its last caught-up time follows its fetches.
func (l *Leader) OutOfSync(leaderLEO int64, now time.Time) []int32 {
	var out []int32
	for _, id := range l.isr {
		if id == l.self {
			continue
		}
		p := l.progress[id]
		if p == nil || (p.LEO != leaderLEO && now.Sub(p.LastCaughtUpTime) > l.lag) {
			out = append(out, id)
		}
	}
	return out
}

// Without returns the ISR without the given replicas (a shrink's new ISR).
func (l *Leader) Without(out []int32) []int32 {
	isr := make([]int32, 0, len(l.isr))
	for _, id := range l.isr {
		if !slices.Contains(out, id) {
			isr = append(isr, id)
		}
	}
	return isr
}

// With returns the ISR with id added (an expansion's new ISR).
func (l *Leader) With(id int32) []int32 { return append(slices.Clone(l.isr), id) }

// HighWatermark returns the HW the followers' progress allows (S7, K4 / KAFKA-4485): the smallest
// LEO among the leader and every follower that is in the maximal ISR (the ISR plus a pending
// change's members: ZooKeeper may already list them) or was caught up within the lag time. The
// caller applies it with AdvanceHW, so the HW never goes down.
func (l *Leader) HighWatermark(leaderLEO int64, now time.Time) int64 {
	hw := leaderLEO
	for id, p := range l.progress {
		if slices.Contains(l.isr, id) || slices.Contains(l.pending, id) || p.caughtUpWithin(now, l.lag) {
			hw = min(hw, p.LEO)
		}
	}
	return hw
}

// AdvanceHW applies the HW rule: the HW only rises. It returns the new HW and whether it moved.
func AdvanceHW(current, candidate int64) (int64, bool) {
	if candidate > current {
		return candidate, true
	}
	return current, false
}

// EnoughReplicas is the acks=all check (K2): the ISR has at least minInsyncReplicas members.
func (l *Leader) EnoughReplicas(minInsyncReplicas int) bool { return len(l.isr) >= minInsyncReplicas }

// Pending returns the ISR of a change under way or with an unknown outcome, or nil.
func (l *Leader) Pending() []int32 { return slices.Clone(l.pending) }

// SetPending records an ISR change about to be written: until it is settled, HighWatermark
// counts its members too.
func (l *Leader) SetPending(isr []int32) {
	l.pending = slices.Clone(isr)
	l.checked()
}

// ClearPending drops a change that did not happen (ZooKeeper refused it).
func (l *Leader) ClearPending() { l.pending = nil }

// ApplyISR adopts an ISR that ZooKeeper holds (a write that committed, or a re-read after an
// unknown outcome) and clears the pending change.
func (l *Leader) ApplyISR(isr []int32) {
	l.isr, l.pending = slices.Clone(isr), nil
	l.checked()
}

func (l *Leader) checked() {
	if Invariants {
		l.AssertInvariants()
	}
}

// AssertInvariants panics when an invariant of the package comment does not hold.
func (l *Leader) AssertInvariants() {
	fail := func(f string, a ...any) {
		panic(fmt.Sprintf("replica: leader %d epoch %d: ", l.self, l.epoch) + fmt.Sprintf(f, a...))
	}
	checkSet := func(name string, s []int32) {
		for i, id := range s {
			if slices.Contains(s[:i], id) {
				fail("%s %v has a duplicate", name, s)
			}
			if !slices.Contains(l.assigned, id) {
				fail("%s %v is not a subset of the assigned replicas %v", name, s, l.assigned)
			}
		}
		if !slices.Contains(s, l.self) {
			fail("%s %v does not contain the leader", name, s)
		}
	}
	checkSet("ISR", l.isr)
	if l.pending != nil {
		checkSet("pending ISR", l.pending)
	}
	for _, r := range l.assigned {
		if r != l.self && l.progress[r] == nil {
			fail("assigned follower %d has no progress", r)
		}
	}
	for id, p := range l.progress {
		if id == l.self || !slices.Contains(l.assigned, id) {
			fail("progress for %d, which is not an assigned follower", id)
		}
		if p.LEO < -1 {
			fail("follower %d LEO %d", id, p.LEO)
		}
	}
}
