package groupcoord

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

// LeaveGroup: v0-4 (v4 flexible).
//
// Behavior (GroupCoordinator.handleLeaveGroup):
//   - v0-2 name one member; v3+ (KIP-345) a batch of members, each by member id and/or
//     group.instance.id, each answered with its own error.
//   - Group status errors are top-level. Unknown group → UNKNOWN_MEMBER_ID per member; Dead →
//     COORDINATOR_NOT_AVAILABLE (top-level).
//   - Per member: a known member id of another static member → FENCED_INSTANCE_ID; a pending
//     member id (KIP-394) is dropped; an unknown member and instance id → UNKNOWN_MEMBER_ID;
//     otherwise the member (found by instance id first) leaves: a parked JoinGroup is answered
//     UNKNOWN_MEMBER_ID, and a Stable or CompletingRebalance group rebalances, a
//     PreparingRebalance group may complete its join.
//   - v0-2 carry a single error: the top-level one, else the member's.
//
// Deviations: none.

func init() { register(kmsg.LeaveGroup, 0, 4, handleLeaveGroup) }

type leavingMember struct {
	memberID   string
	instanceID *string
}

func handleLeaveGroup(c *Coordinator, r *Request, kreq kmsg.Request, respond func(kmsg.Response)) {
	req := kreq.(*kmsg.LeaveGroupRequest)
	if r.groupReadDenied(req.Group) {
		resp := req.ResponseKind().(*kmsg.LeaveGroupResponse)
		resp.ErrorCode = errGroupAuthFailed
		respond(resp)
		return
	}
	var leaving []leavingMember
	if req.Version <= 2 {
		leaving = []leavingMember{{memberID: req.MemberID}}
	} else {
		for _, m := range req.Members {
			leaving = append(leaving, leavingMember{memberID: m.MemberID, instanceID: m.InstanceID})
		}
	}
	top, codes := c.LeaveGroup(req.Group, leaving)
	resp := req.ResponseKind().(*kmsg.LeaveGroupResponse)
	if req.Version <= 2 {
		resp.ErrorCode = top
		if top == errNone && len(codes) > 0 {
			resp.ErrorCode = codes[0]
		}
		respond(resp)
		return
	}
	resp.ErrorCode = top
	for i, code := range codes {
		rm := kmsg.NewLeaveGroupResponseMember()
		rm.MemberID = leaving[i].memberID
		rm.InstanceID = leaving[i].instanceID
		rm.ErrorCode = code
		resp.Members = append(resp.Members, rm)
	}
	respond(resp)
}

// LeaveGroup is GroupCoordinator.handleLeaveGroup: a top-level error, or one code per member.
func (c *Coordinator) LeaveGroup(groupID string, leaving []leavingMember) (int16, []int16) {
	if code := c.validateGroupStatus(groupID, false); code != errNone {
		return code, nil
	}
	codes := make([]int16, len(leaving))
	g := c.groupManager.getGroup(groupID)
	if g == nil {
		for i := range codes {
			codes[i] = errUnknownMemberID
		}
		return errNone, codes
	}
	top := errNone
	g.inLock(func() {
		if g.is(stateDead) {
			top = errCoordinatorNotAvailable
			codes = nil
			return
		}
		for i, l := range leaving {
			switch {
			case l.memberID != "" && g.isStaticMemberFenced(l.memberID, l.instanceID):
				codes[i] = errFencedInstanceID
			case g.isPending(l.memberID):
				groupLog(c.log, g).WithField("member", l.memberID).Info("pending member is leaving the group")
				c.rebalancer.removePendingMemberAndUpdateGroup(g, l.memberID)
			case !g.has(l.memberID) && !g.hasStatic(l.instanceID):
				codes[i] = errUnknownMemberID
			default:
				id := l.memberID
				if g.hasStatic(l.instanceID) {
					id = g.static[*l.instanceID]
				}
				m := g.members[id]
				c.rebalancer.removeHeartbeatForLeavingMember(m)
				groupLog(c.log, g).WithField("member", id).Info("member has left, removing it from the group")
				c.rebalancer.removeMemberAndUpdateGroup(g, m, "removing member "+id+" on LeaveGroup")
			}
		}
	})
	return top, codes
}
