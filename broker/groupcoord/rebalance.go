package groupcoord

import (
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
)

// rebalancer is the rebalance machinery of GroupCoordinator.scala (docs/groups.md §3-4): the
// delayed join (DelayedJoin: complete when every member rejoined, else at the rebalance
// timeout; InitialDelayedJoin: group.initial.rebalance.delay.ms for an Empty group, extended
// while new members arrive), the heartbeat expirations (DelayedHeartbeat), adding, updating
// and removing members, propagating the assignment, and what happens to a group when its
// offsets partition is loaded or unloaded. It has no state of its own: everything it changes
// is the group's. Every method runs with the group's lock held; timer callbacks take it
// through group.inLock.
type rebalancer struct {
	cfg   Config
	clock Clock
	log   logrus.FieldLogger
	// groupManager stores the metadata of a generation that ends Empty.
	groupManager *groupMetadataManager
}

// delayedJoin is a pending DelayedJoin or InitialDelayedJoin of a group.
type delayedJoin struct {
	initial bool
	delay   time.Duration // this operation's delay
	// remaining is InitialDelayedJoin's remaining rebalance timeout.
	remaining time.Duration
	timer     Timer
}

// completeAndScheduleNextHeartbeatExpiration restarts m's session timer.
func (rb *rebalancer) completeAndScheduleNextHeartbeatExpiration(g *group, m *member) {
	rb.completeAndScheduleNextExpiration(g, m, m.sessionTimeout)
}

func (rb *rebalancer) completeAndScheduleNextExpiration(g *group, m *member, timeout time.Duration) {
	now := rb.clock.Now()
	m.latestHeartbeat = now
	if m.hbTimer != nil {
		m.hbTimer.Stop()
	}
	deadline := now.Add(timeout)
	id := m.id
	m.hbTimer = rb.clock.AfterFunc(timeout, func() {
		g.inLock(func() { rb.onExpireHeartbeat(g, id, deadline) })
	})
}

// addPendingMemberExpiration removes a member id handed out with MEMBER_ID_REQUIRED if it does
// not join within the session timeout.
func (rb *rebalancer) addPendingMemberExpiration(g *group, id string, timeout time.Duration) {
	g.pending[id] = rb.clock.AfterFunc(timeout, func() {
		g.inLock(func() {
			if g.is(stateDead) || !g.isPending(id) {
				return
			}
			groupLog(rb.log, g).WithField("member", id).Info("pending member removed after session timeout expiration")
			rb.removePendingMemberAndUpdateGroup(g, id)
		})
	})
}

func (rb *rebalancer) removeHeartbeatForLeavingMember(m *member) {
	m.isLeaving = true
	if m.hbTimer != nil {
		m.hbTimer.Stop()
	}
}

func (rb *rebalancer) onExpireHeartbeat(g *group, id string, deadline time.Time) {
	if g.is(stateDead) {
		return
	}
	m := g.members[id]
	if m == nil || m.isLeaving || m.shouldKeepAlive(deadline) {
		return
	}
	groupLog(rb.log, g).WithField("member", id).Info("member failed (session timeout), removing it from the group")
	rb.removeMemberAndUpdateGroup(g, m, "removing member "+id+" on heartbeat expiration")
}

// addMemberAndRebalance adds a new (or pending, or static) member and rebalances.
func (rb *rebalancer) addMemberAndRebalance(g *group, rebalanceTimeout, sessionTimeout time.Duration, id string, instanceID *string,
	clientID, clientHost, protocolType string, protocols []protocol, cb func(joinResult)) {
	m := &member{
		id: id, instanceID: instanceID, clientID: clientID, clientHost: clientHost,
		rebalanceTimeout: rebalanceTimeout, sessionTimeout: sessionTimeout,
		protocolType: protocolType, protocols: protocols, isNew: true,
	}
	if g.is(statePreparingRebalance) && g.generation == 0 {
		g.newMemberAdded = true
	}
	g.add(m, cb)
	// A new member cannot heartbeat while its JoinGroup is parked: it expires after
	// NewMemberJoinTimeoutMs instead of the session timeout.
	rb.completeAndScheduleNextExpiration(g, m, newMemberJoinTimeout)
	if m.isStatic() {
		g.static[*instanceID] = id
	} else {
		g.removePending(id)
	}
	rb.maybePrepareRebalance(g, "adding new member "+id)
}

func (rb *rebalancer) updateMemberAndRebalance(g *group, m *member, protocols []protocol, cb func(joinResult)) {
	g.updateMember(m, protocols, cb)
	rb.maybePrepareRebalance(g, "updating metadata for member "+m.id)
}

func (rb *rebalancer) maybePrepareRebalance(g *group, reason string) {
	if g.canRebalance() {
		rb.prepareRebalance(g, reason)
	}
}

// prepareRebalance moves the group to PreparingRebalance with a delayed join: the initial delay
// for an Empty group, else the rebalance timeout. Members parked in SyncGroup are answered
// REBALANCE_IN_PROGRESS.
func (rb *rebalancer) prepareRebalance(g *group, reason string) {
	if g.is(stateCompletingRebalance) {
		rb.resetAndPropagateAssignmentError(g, errRebalanceInProgress)
	}
	var dj *delayedJoin
	if g.is(stateEmpty) {
		delay := rb.cfg.GroupInitialRebalanceDelay
		dj = &delayedJoin{initial: true, delay: delay, remaining: max(g.rebalanceTimeout()-delay, 0)}
	} else {
		dj = &delayedJoin{delay: g.rebalanceTimeout()}
	}
	if !transition(rb.log, g, statePreparingRebalance, rb.clock.Now()) {
		return
	}
	groupLog(rb.log, g).WithField("reason", reason).Info("preparing to rebalance group")
	rb.scheduleJoin(g, dj)
}

// scheduleJoin parks dj on the group and completes it at once if it can (tryCompleteElseWatch).
func (rb *rebalancer) scheduleJoin(g *group, dj *delayedJoin) {
	if g.join != nil && g.join.timer != nil {
		g.join.timer.Stop()
	}
	g.join = dj
	dj.timer = rb.clock.AfterFunc(dj.delay, func() {
		g.inLock(func() { rb.onJoinTimer(g, dj) })
	})
	rb.tryCompleteJoin(g)
}

// tryCompleteJoin completes the pending DelayedJoin once every member rejoined and no member id
// is pending; an InitialDelayedJoin only completes on its timer.
func (rb *rebalancer) tryCompleteJoin(g *group) {
	dj := g.join
	if dj == nil || dj.initial || !g.hasAllMembersJoined() {
		return
	}
	dj.timer.Stop()
	g.join = nil
	rb.onCompleteJoin(g)
}

func (rb *rebalancer) onJoinTimer(g *group, dj *delayedJoin) {
	if g.join != dj {
		return // completed or replaced meanwhile
	}
	g.join = nil
	if dj.initial && g.newMemberAdded && dj.remaining != 0 && !g.is(stateDead) {
		g.newMemberAdded = false
		delay := min(rb.cfg.GroupInitialRebalanceDelay, dj.remaining)
		remaining := max(dj.remaining-dj.delay, 0)
		rb.scheduleJoin(g, &delayedJoin{initial: true, delay: delay, remaining: remaining})
		return
	}
	rb.onCompleteJoin(g)
}

// onCompleteJoin is GroupCoordinator.onCompleteJoin: dynamic members that did not rejoin are
// removed, the next generation starts (CompletingRebalance, or Empty and persisted), and every
// parked JoinGroup is answered (the leader gets the member list).
func (rb *rebalancer) onCompleteJoin(g *group) {
	for _, m := range g.notYetRejoined() {
		if m.isStatic() {
			continue
		}
		rb.removeHeartbeatForLeavingMember(m)
		g.remove(m.id)
	}
	if g.is(stateDead) {
		return
	}
	if !g.maybeElectNewJoinedLeader() && len(g.members) > 0 {
		groupLog(rb.log, g).Error("group could not complete rebalance because no members rejoined")
		rb.scheduleJoin(g, &delayedJoin{delay: g.rebalanceTimeout()})
		return
	}
	if err := g.initNextGeneration(rb.clock.Now()); err != nil {
		groupLog(rb.log, g).WithError(err).Error("starting the next generation")
		return
	}
	if g.is(stateEmpty) {
		groupLog(rb.log, g).Info("group is now empty")
		rb.groupManager.storeGroup(g, nil, func(code int16) {
			if code != errNone {
				groupLog(rb.log, g).WithField("error", kerr.ErrorForCode(code)).Warn("failed to write empty group metadata")
			}
		})
		return
	}
	groupLog(rb.log, g).WithField("members", len(g.members)).Info("stabilized group")
	for _, m := range g.allMembers() {
		res := joinResult{
			memberID:   m.id,
			generation: g.generation,
			protocol:   g.protocol,
			leader:     g.leader,
		}
		if g.isLeader(m.id) {
			res.members = g.currentMemberMetadata()
		}
		g.maybeInvokeJoin(m, res)
		rb.completeAndScheduleNextHeartbeatExpiration(g, m)
		m.isNew = false
	}
}

// removeMemberAndUpdateGroup removes m (its parked JoinGroup is answered UNKNOWN_MEMBER_ID) and
// rebalances, or completes a pending join.
func (rb *rebalancer) removeMemberAndUpdateGroup(g *group, m *member, reason string) {
	g.maybeInvokeJoin(m, joinError("", errUnknownMemberID))
	g.remove(m.id)
	if m.instanceID != nil {
		delete(g.static, *m.instanceID)
	}
	switch g.state {
	case stateStable, stateCompletingRebalance:
		rb.maybePrepareRebalance(g, reason)
	case statePreparingRebalance:
		rb.tryCompleteJoin(g)
	}
}

func (rb *rebalancer) removePendingMemberAndUpdateGroup(g *group, id string) {
	g.removePending(id)
	if g.is(statePreparingRebalance) {
		rb.tryCompleteJoin(g)
	}
}

func (rb *rebalancer) setAndPropagateAssignment(g *group, assignment map[string][]byte) {
	for _, m := range g.members {
		m.assignment = assignment[m.id]
	}
	rb.propagateAssignment(g, errNone)
}

func (rb *rebalancer) resetAndPropagateAssignmentError(g *group, code int16) {
	for _, m := range g.members {
		m.assignment = nil
	}
	rb.propagateAssignment(g, code)
}

func (rb *rebalancer) propagateAssignment(g *group, code int16) {
	for _, m := range g.allMembers() {
		if g.maybeInvokeSync(m, syncResult{assignment: m.assignment, err: code}) {
			// Expirations that came due while the assignment was awaited were ignored
			// (shouldKeepAlive); the session starts again now.
			rb.completeAndScheduleNextHeartbeatExpiration(g, m)
		}
	}
}

// onGroupUnloaded is GroupCoordinator.onGroupUnloaded: the group becomes Dead and parked
// requests are answered NOT_COORDINATOR.
func (rb *rebalancer) onGroupUnloaded(g *group) {
	prev := g.state
	if prev != stateDead {
		_ = g.transitionTo(stateDead, rb.clock.Now())
	}
	if g.join != nil {
		g.join.timer.Stop()
		g.join = nil
	}
	for id := range g.pending {
		g.removePending(id)
	}
	for _, m := range g.allMembers() {
		if m.hbTimer != nil {
			m.hbTimer.Stop()
		}
		switch prev {
		case statePreparingRebalance:
			g.maybeInvokeJoin(m, joinError(m.id, errNotCoordinator))
		case stateStable, stateCompletingRebalance:
			g.maybeInvokeSync(m, syncResult{err: errNotCoordinator})
		}
	}
	rb.log.WithFields(logrus.Fields{"group": g.id, "generation": g.generation}).Info("unloaded group metadata")
}

// onGroupLoaded is GroupCoordinator.onGroupLoaded: members' sessions start now; an
// over-capacity group rebalances.
func (rb *rebalancer) onGroupLoaded(g *group) {
	if int32(len(g.members)) > rb.cfg.GroupMaxSize {
		rb.prepareRebalance(g, "freshly-loaded group is over capacity")
	}
	for _, m := range g.allMembers() {
		rb.completeAndScheduleNextHeartbeatExpiration(g, m)
	}
}
