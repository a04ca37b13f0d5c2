package groupcoord

import (
	"time"

	"github.com/sirupsen/logrus"
)

// This file holds the rebalance machinery of GroupCoordinator.scala (docs/groups.md §3-4): the
// delayed join (DelayedJoin: complete when every member rejoined, else at the rebalance
// timeout; InitialDelayedJoin: group.initial.rebalance.delay.ms for an Empty group, extended
// while new members arrive) and the heartbeat expirations (DelayedHeartbeat). Every function
// here runs with the group's lock held; timer callbacks take it through Coordinator.locked.

// delayedJoin is a pending DelayedJoin or InitialDelayedJoin of a group.
type delayedJoin struct {
	initial bool
	delay   time.Duration // this operation's delay
	// remaining is InitialDelayedJoin's remaining rebalance timeout.
	remaining time.Duration
	timer     Timer
}

// completeAndScheduleNextHeartbeatExpiration restarts m's session timer.
func (c *Coordinator) completeAndScheduleNextHeartbeatExpiration(g *group, m *member) {
	c.completeAndScheduleNextExpiration(g, m, m.sessionTimeout)
}

func (c *Coordinator) completeAndScheduleNextExpiration(g *group, m *member, timeout time.Duration) {
	now := c.now()
	m.latestHeartbeat = now
	if m.hbTimer != nil {
		m.hbTimer.Stop()
	}
	deadline := now.Add(timeout)
	id := m.id
	m.hbTimer = c.clock.AfterFunc(timeout, func() {
		c.locked(g, func() { c.onExpireHeartbeat(g, id, deadline) })
	})
}

// addPendingMemberExpiration removes a member id handed out with MEMBER_ID_REQUIRED if it does
// not join within the session timeout.
func (c *Coordinator) addPendingMemberExpiration(g *group, id string, timeout time.Duration) {
	g.pending[id] = c.clock.AfterFunc(timeout, func() {
		c.locked(g, func() {
			if g.is(stateDead) || !g.isPending(id) {
				return
			}
			c.groupLog(g).WithField("member", id).Info("pending member removed after session timeout expiration")
			c.removePendingMemberAndUpdateGroup(g, id)
		})
	})
}

func (c *Coordinator) removeHeartbeatForLeavingMember(m *member) {
	m.isLeaving = true
	if m.hbTimer != nil {
		m.hbTimer.Stop()
	}
}

func (c *Coordinator) onExpireHeartbeat(g *group, id string, deadline time.Time) {
	if g.is(stateDead) {
		return
	}
	m := g.members[id]
	if m == nil || m.isLeaving || m.shouldKeepAlive(deadline) {
		return
	}
	c.groupLog(g).WithField("member", id).Info("member failed (session timeout), removing it from the group")
	c.removeMemberAndUpdateGroup(g, m, "removing member "+id+" on heartbeat expiration")
}

// addMemberAndRebalance adds a new (or pending, or static) member and rebalances.
func (c *Coordinator) addMemberAndRebalance(g *group, rebalanceTimeout, sessionTimeout time.Duration, id string, instanceID *string,
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
	c.completeAndScheduleNextExpiration(g, m, newMemberJoinTimeout)
	if m.isStatic() {
		g.static[*instanceID] = id
	} else {
		g.removePending(id)
	}
	c.maybePrepareRebalance(g, "adding new member "+id)
}

func (c *Coordinator) updateMemberAndRebalance(g *group, m *member, protocols []protocol, cb func(joinResult)) {
	g.updateMember(m, protocols, cb)
	c.maybePrepareRebalance(g, "updating metadata for member "+m.id)
}

func (c *Coordinator) maybePrepareRebalance(g *group, reason string) {
	if g.canRebalance() {
		c.prepareRebalance(g, reason)
	}
}

// prepareRebalance moves the group to PreparingRebalance with a delayed join: the initial delay
// for an Empty group, else the rebalance timeout. Members parked in SyncGroup are answered
// REBALANCE_IN_PROGRESS.
func (c *Coordinator) prepareRebalance(g *group, reason string) {
	if g.is(stateCompletingRebalance) {
		c.resetAndPropagateAssignmentError(g, errRebalanceInProgress)
	}
	var dj *delayedJoin
	if g.is(stateEmpty) {
		delay := c.cfg.GroupInitialRebalanceDelay
		dj = &delayedJoin{initial: true, delay: delay, remaining: max(g.rebalanceTimeout()-delay, 0)}
	} else {
		dj = &delayedJoin{delay: g.rebalanceTimeout()}
	}
	if !c.transition(g, statePreparingRebalance) {
		return
	}
	c.groupLog(g).WithField("reason", reason).Info("preparing to rebalance group")
	c.scheduleJoin(g, dj)
}

// scheduleJoin parks dj on the group and completes it at once if it can (tryCompleteElseWatch).
func (c *Coordinator) scheduleJoin(g *group, dj *delayedJoin) {
	if g.join != nil && g.join.timer != nil {
		g.join.timer.Stop()
	}
	g.join = dj
	dj.timer = c.clock.AfterFunc(dj.delay, func() {
		c.locked(g, func() { c.onJoinTimer(g, dj) })
	})
	c.tryCompleteJoin(g)
}

// tryCompleteJoin completes the pending DelayedJoin once every member rejoined and no member id
// is pending; an InitialDelayedJoin only completes on its timer.
func (c *Coordinator) tryCompleteJoin(g *group) {
	dj := g.join
	if dj == nil || dj.initial || !g.hasAllMembersJoined() {
		return
	}
	dj.timer.Stop()
	g.join = nil
	c.onCompleteJoin(g)
}

func (c *Coordinator) onJoinTimer(g *group, dj *delayedJoin) {
	if g.join != dj {
		return // completed or replaced meanwhile
	}
	g.join = nil
	if dj.initial && g.newMemberAdded && dj.remaining != 0 && !g.is(stateDead) {
		g.newMemberAdded = false
		delay := min(c.cfg.GroupInitialRebalanceDelay, dj.remaining)
		remaining := max(dj.remaining-dj.delay, 0)
		c.scheduleJoin(g, &delayedJoin{initial: true, delay: delay, remaining: remaining})
		return
	}
	c.onCompleteJoin(g)
}

// onCompleteJoin is GroupCoordinator.onCompleteJoin: dynamic members that did not rejoin are
// removed, the next generation starts (CompletingRebalance, or Empty and persisted), and every
// parked JoinGroup is answered (the leader gets the member list).
func (c *Coordinator) onCompleteJoin(g *group) {
	for _, m := range g.notYetRejoined() {
		if m.isStatic() {
			continue
		}
		c.removeHeartbeatForLeavingMember(m)
		g.remove(m.id)
	}
	if g.is(stateDead) {
		return
	}
	if !g.maybeElectNewJoinedLeader() && len(g.members) > 0 {
		c.groupLog(g).Error("group could not complete rebalance because no members rejoined")
		c.scheduleJoin(g, &delayedJoin{delay: g.rebalanceTimeout()})
		return
	}
	if err := g.initNextGeneration(c.now()); err != nil {
		c.groupLog(g).WithError(err).Error("starting the next generation")
		return
	}
	if g.is(stateEmpty) {
		c.groupLog(g).Info("group is now empty")
		c.storeGroup(g, nil, func(code int16) {
			if code != errNone {
				c.groupLog(g).WithField("errorCode", code).Warn("failed to write empty group metadata")
			}
		})
		return
	}
	c.groupLog(g).WithField("members", len(g.members)).Info("stabilized group")
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
		c.completeAndScheduleNextHeartbeatExpiration(g, m)
		m.isNew = false
	}
}

// removeMemberAndUpdateGroup removes m (its parked JoinGroup is answered UNKNOWN_MEMBER_ID) and
// rebalances, or completes a pending join.
func (c *Coordinator) removeMemberAndUpdateGroup(g *group, m *member, reason string) {
	g.maybeInvokeJoin(m, joinError("", errUnknownMemberID))
	g.remove(m.id)
	if m.instanceID != nil {
		delete(g.static, *m.instanceID)
	}
	switch g.state {
	case stateStable, stateCompletingRebalance:
		c.maybePrepareRebalance(g, reason)
	case statePreparingRebalance:
		c.tryCompleteJoin(g)
	}
}

func (c *Coordinator) removePendingMemberAndUpdateGroup(g *group, id string) {
	g.removePending(id)
	if g.is(statePreparingRebalance) {
		c.tryCompleteJoin(g)
	}
}

func (c *Coordinator) setAndPropagateAssignment(g *group, assignment map[string][]byte) {
	for _, m := range g.members {
		m.assignment = assignment[m.id]
	}
	c.propagateAssignment(g, errNone)
}

func (c *Coordinator) resetAndPropagateAssignmentError(g *group, code int16) {
	for _, m := range g.members {
		m.assignment = nil
	}
	c.propagateAssignment(g, code)
}

func (c *Coordinator) propagateAssignment(g *group, code int16) {
	for _, m := range g.allMembers() {
		if g.maybeInvokeSync(m, syncResult{assignment: m.assignment, err: code}) {
			// Expirations that came due while the assignment was awaited were ignored
			// (shouldKeepAlive); the session starts again now.
			c.completeAndScheduleNextHeartbeatExpiration(g, m)
		}
	}
}

// onGroupUnloaded is GroupCoordinator.onGroupUnloaded: the group becomes Dead and parked
// requests are answered NOT_COORDINATOR.
func (c *Coordinator) onGroupUnloaded(g *group) {
	prev := g.state
	if prev != stateDead {
		_ = g.transitionTo(stateDead, c.now())
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
	c.log.WithFields(logrus.Fields{"group": g.id, "generation": g.generation}).Info("unloaded group metadata")
}

// onGroupLoaded is GroupCoordinator.onGroupLoaded: members' sessions start now; an
// over-capacity group rebalances.
func (c *Coordinator) onGroupLoaded(g *group) {
	if int32(len(g.members)) > c.cfg.GroupMaxSize {
		c.prepareRebalance(g, "freshly-loaded group is over capacity")
	}
	for _, m := range g.allMembers() {
		c.completeAndScheduleNextHeartbeatExpiration(g, m)
	}
}
