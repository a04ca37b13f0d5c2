package groupcoord

import (
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// JoinGroup: v0-6 (v6 flexible).
//
// Behavior (GroupCoordinator.handleJoinGroup, docs/groups.md §3-4):
//   - Group status first: empty group id → INVALID_GROUP_ID; coordinator inactive →
//     COORDINATOR_NOT_AVAILABLE; partition loading → COORDINATOR_LOAD_IN_PROGRESS; not the
//     coordinator → NOT_COORDINATOR. A session timeout outside group.min/max.session.timeout.ms
//     → INVALID_SESSION_TIMEOUT.
//   - Unknown group: created (Empty) for a member without id; a member with an id gets
//     UNKNOWN_MEMBER_ID. group.max.size reached → GROUP_MAX_SIZE_REACHED for new members.
//   - Member without id: v4+ (KIP-394) gets MEMBER_ID_REQUIRED with a generated id
//     (clientId-UUID) and must rejoin with it within the session timeout; v0-3 is added at once.
//     A static member (v5+ group.instance.id, KIP-345) already known gets a new member id, the
//     old id is fenced (its parked request answered FENCED_INSTANCE_ID) and, in Stable or
//     CompletingRebalance, it keeps its assignment: the answer carries the current generation
//     and the old leader id, and no rebalance starts.
//   - Known member: a static member whose instance id maps to another member id →
//     FENCED_INSTANCE_ID. In PreparingRebalance its JoinGroup parks; in CompletingRebalance
//     the same metadata gets the current generation back (the leader with the member list),
//     changed metadata rebalances; in Stable the leader or changed metadata rebalances,
//     a follower with unchanged metadata gets the current generation.
//   - A protocol type or protocol set the group does not share → INCONSISTENT_GROUP_PROTOCOL.
//   - The parked JoinGroup is answered when every member rejoined, or at the rebalance timeout
//     (members that did not rejoin are removed), or after group.initial.rebalance.delay.ms for
//     a group that was Empty (extended while new members keep arriving, up to the rebalance
//     timeout). The protocol is the one every member supports with most first-choice votes.
//
// Deviations: v0 takes the session timeout as rebalance timeout (as Kafka). No throttling.

func init() { register(kmsg.JoinGroup, 0, 6, handleJoinGroup) }

type joinParams struct {
	groupID          string
	memberID         string
	instanceID       *string
	requireKnownID   bool
	clientID         string
	clientHost       string
	rebalanceTimeout time.Duration
	sessionTimeout   time.Duration
	protocolType     string
	protocols        []protocol
}

func handleJoinGroup(c *Coordinator, r *Request, kreq kmsg.Request, respond func(kmsg.Response)) {
	req := kreq.(*kmsg.JoinGroupRequest)
	if r.groupReadDenied(req.Group) {
		resp := req.ResponseKind().(*kmsg.JoinGroupResponse)
		resp.ErrorCode, resp.Generation = errGroupAuthFailed, -1
		proto := ""
		resp.Protocol = &proto
		respond(resp)
		return
	}
	p := joinParams{
		groupID:          req.Group,
		memberID:         req.MemberID,
		requireKnownID:   req.Version >= 4,
		clientID:         r.ClientID,
		clientHost:       r.ClientHost,
		rebalanceTimeout: msDuration(req.RebalanceTimeoutMillis),
		sessionTimeout:   msDuration(req.SessionTimeoutMillis),
		protocolType:     req.ProtocolType,
	}
	if req.Version == 0 {
		p.rebalanceTimeout = p.sessionTimeout
	}
	if req.Version >= 5 {
		p.instanceID = req.InstanceID
	}
	// KIP-394 applies to dynamic members only: a static member is known by its instance id.
	p.requireKnownID = req.Version >= 4 && p.instanceID == nil
	for _, pr := range req.Protocols {
		p.protocols = append(p.protocols, protocol{name: pr.Name, metadata: pr.Metadata})
	}
	c.JoinGroup(p, func(res joinResult) {
		resp := req.ResponseKind().(*kmsg.JoinGroupResponse)
		resp.ErrorCode = res.err
		resp.Generation = res.generation
		proto := ""
		if res.protocol != nil {
			proto = *res.protocol
		}
		resp.Protocol = &proto
		resp.LeaderID = res.leader
		resp.MemberID = res.memberID
		resp.Members = res.members
		if res.err != errNone {
			r.Log.WithFields(logrus.Fields{"group": req.Group, "member": req.MemberID, "error": kerr.ErrorForCode(res.err)}).Debug("JoinGroup failed")
		}
		respond(resp)
	})
}

// JoinGroup is GroupCoordinator.handleJoinGroup; cb is called exactly once.
func (c *Coordinator) JoinGroup(p joinParams, cb func(joinResult)) {
	if code := c.validateGroupStatus(p.groupID, false); code != errNone {
		cb(joinError(p.memberID, code))
		return
	}
	if p.sessionTimeout < c.cfg.GroupMinSessionTimeout || p.sessionTimeout > c.cfg.GroupMaxSessionTimeout {
		cb(joinError(p.memberID, errInvalidSessionTimeout))
		return
	}
	unknown := p.memberID == ""
	g := c.groupManager.getGroup(p.groupID)
	if g == nil {
		if !unknown {
			cb(joinError(p.memberID, errUnknownMemberID))
			return
		}
		if g = c.groupManager.addGroup(newGroup(p.groupID, c.now())); g == nil {
			cb(joinError(p.memberID, errNotCoordinator))
			return
		}
	}
	g.inLock(func() {
		overCapacity := int32(len(g.members)) > c.cfg.GroupMaxSize
		if m := g.members[p.memberID]; (overCapacity && m != nil && m.awaitingJoin == nil) ||
			(unknown && int32(len(g.members)) >= c.cfg.GroupMaxSize) {
			g.remove(p.memberID)
			if p.instanceID != nil {
				delete(g.static, *p.instanceID)
			}
			cb(joinError("", errGroupMaxSizeReached))
		} else if unknown {
			c.doUnknownJoinGroup(g, p, cb)
		} else {
			c.doJoinGroup(g, p, cb)
		}
		if g.is(statePreparingRebalance) {
			c.rebalancer.tryCompleteJoin(g)
		}
	})
}

func (c *Coordinator) doUnknownJoinGroup(g *group, p joinParams, cb func(joinResult)) {
	switch {
	case g.is(stateDead):
		// Unloaded or deleted meanwhile: find the coordinator again.
		cb(joinError("", errCoordinatorNotAvailable))
	case !g.supportsProtocols(p.protocolType, p.protocols):
		cb(joinError("", errInconsistentGroupProtocol))
	default:
		newID := generateMemberID(p.clientID, p.instanceID)
		if g.hasStatic(p.instanceID) {
			oldID := g.static[*p.instanceID]
			groupLog(c.log, g).WithFields(logrus.Fields{"instance": *p.instanceID, "oldMember": oldID, "member": newID}).
				Info("static member with unknown member id rejoins; replacing its member id")
			leader := g.leader
			m := g.replaceGroupInstance(oldID, newID, p.instanceID)
			c.rebalancer.completeAndScheduleNextHeartbeatExpiration(g, m)
			g.updateMember(m, p.protocols, cb)
			switch g.state {
			case stateStable, stateCompletingRebalance:
				// KIP-345: no rebalance; the old leader id keeps the current leader from
				// computing a trivial assignment.
				g.maybeInvokeJoin(m, joinResult{memberID: newID, generation: g.generation, protocol: g.protocol, leader: leader})
			case statePreparingRebalance:
				// Parked with the others.
			}
			return
		}
		if p.requireKnownID {
			g.pending[newID] = nil
			c.rebalancer.addPendingMemberExpiration(g, newID, p.sessionTimeout)
			cb(joinError(newID, errMemberIDRequired))
			return
		}
		c.rebalancer.addMemberAndRebalance(g, p.rebalanceTimeout, p.sessionTimeout, newID, p.instanceID, p.clientID, p.clientHost, p.protocolType, p.protocols, cb)
	}
}

func (c *Coordinator) doJoinGroup(g *group, p joinParams, cb func(joinResult)) {
	switch {
	case g.is(stateDead):
		cb(joinError(p.memberID, errCoordinatorNotAvailable))
		return
	case !g.supportsProtocols(p.protocolType, p.protocols):
		cb(joinError(p.memberID, errInconsistentGroupProtocol))
		return
	case g.isPending(p.memberID):
		if p.instanceID != nil {
			// A pending member is never static (KIP-394 ids are for dynamic members).
			cb(joinError(p.memberID, errUnknownMemberID))
			return
		}
		c.rebalancer.addMemberAndRebalance(g, p.rebalanceTimeout, p.sessionTimeout, p.memberID, nil, p.clientID, p.clientHost, p.protocolType, p.protocols, cb)
		return
	case g.isStaticMemberFenced(p.memberID, p.instanceID):
		cb(joinError(p.memberID, errFencedInstanceID))
		return
	case !g.has(p.memberID) || (p.instanceID != nil && !g.hasStatic(p.instanceID)):
		cb(joinError(p.memberID, errUnknownMemberID))
		return
	}
	m := g.members[p.memberID]
	switch g.state {
	case statePreparingRebalance:
		c.rebalancer.updateMemberAndRebalance(g, m, p.protocols, cb)
	case stateCompletingRebalance:
		if m.matches(p.protocols) {
			// Same metadata (it may have missed the JoinGroup response): the current generation.
			res := joinResult{memberID: m.id, generation: g.generation, protocol: g.protocol, leader: g.leader}
			if g.isLeader(m.id) {
				res.members = g.currentMemberMetadata()
			}
			cb(res)
		} else {
			c.rebalancer.updateMemberAndRebalance(g, m, p.protocols, cb)
		}
	case stateStable:
		if g.isLeader(m.id) || !m.matches(p.protocols) {
			// The leader may rejoin to force a rebalance (e.g. topic metadata changed).
			c.rebalancer.updateMemberAndRebalance(g, m, p.protocols, cb)
		} else {
			cb(joinResult{memberID: m.id, generation: g.generation, protocol: g.protocol, leader: g.leader})
		}
	default: // Empty, Dead
		groupLog(c.log, g).WithField("member", m.id).Warn("rejoining member in an unexpected group state")
		cb(joinError(p.memberID, errUnknownMemberID))
	}
}
