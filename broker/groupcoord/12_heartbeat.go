package groupcoord

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Heartbeat: v0-4 (v4 flexible).
//
// Behavior (GroupCoordinator.handleHeartbeat, docs/groups.md §4):
//   - Group status as JoinGroup, except that COORDINATOR_LOAD_IN_PROGRESS is answered with no
//     error (the group is still loading; the member keeps going).
//   - Unknown group or member → UNKNOWN_MEMBER_ID; Dead → COORDINATOR_NOT_AVAILABLE; a fenced
//     static member → FENCED_INSTANCE_ID; another generation → ILLEGAL_GENERATION.
//   - Empty → UNKNOWN_MEMBER_ID; CompletingRebalance → REBALANCE_IN_PROGRESS (session not
//     extended); PreparingRebalance → REBALANCE_IN_PROGRESS with the session extended (the
//     member must rejoin); Stable → the session extended, no error.
//
// Deviations: none.

func init() { register(kmsg.Heartbeat, 0, 4, handleHeartbeat) }

func handleHeartbeat(c *Coordinator, r *Request, kreq kmsg.Request, respond func(kmsg.Response)) {
	req := kreq.(*kmsg.HeartbeatRequest)
	if r.groupReadDenied(req.Group) {
		resp := req.ResponseKind().(*kmsg.HeartbeatResponse)
		resp.ErrorCode = errGroupAuthFailed
		respond(resp)
		return
	}
	var instanceID *string
	if req.Version >= 3 {
		instanceID = req.InstanceID
	}
	resp := req.ResponseKind().(*kmsg.HeartbeatResponse)
	resp.ErrorCode = c.Heartbeat(req.Group, req.MemberID, instanceID, req.Generation)
	respond(resp)
}

// Heartbeat is GroupCoordinator.handleHeartbeat.
func (c *Coordinator) Heartbeat(groupID, memberID string, instanceID *string, generation int32) int16 {
	switch code := c.validateGroupStatus(groupID, false); code {
	case errNone:
	case errCoordinatorLoadInProgress:
		return errNone
	default:
		return code
	}
	g := c.groupManager.getGroup(groupID)
	if g == nil {
		return errUnknownMemberID
	}
	var code int16
	g.inLock(func() {
		switch {
		case g.is(stateDead):
			code = errCoordinatorNotAvailable
			return
		case g.isStaticMemberFenced(memberID, instanceID):
			code = errFencedInstanceID
			return
		case !g.has(memberID):
			code = errUnknownMemberID
			return
		case generation != g.generation:
			code = errIllegalGeneration
			return
		}
		switch g.state {
		case stateEmpty:
			code = errUnknownMemberID
		case stateCompletingRebalance:
			code = errRebalanceInProgress
		case statePreparingRebalance:
			c.rebalancer.completeAndScheduleNextHeartbeatExpiration(g, g.members[memberID])
			code = errRebalanceInProgress
		case stateStable:
			c.rebalancer.completeAndScheduleNextHeartbeatExpiration(g, g.members[memberID])
		}
	})
	return code
}
