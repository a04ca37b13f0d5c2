package groupcoord

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

// SyncGroup: v0-4 (v4 flexible).
//
// Behavior (GroupCoordinator.handleSyncGroup, docs/groups.md §3-4):
//   - Group status as JoinGroup, except that COORDINATOR_LOAD_IN_PROGRESS is answered
//     REBALANCE_IN_PROGRESS (the rebalance state was lost; older clients do not expect the
//     loading error) and an empty group id is INVALID_GROUP_ID.
//   - Unknown group or member → UNKNOWN_MEMBER_ID; a fenced static member → FENCED_INSTANCE_ID;
//     another generation → ILLEGAL_GENERATION; Dead → COORDINATOR_NOT_AVAILABLE; Empty →
//     UNKNOWN_MEMBER_ID; PreparingRebalance → REBALANCE_IN_PROGRESS.
//   - CompletingRebalance: the request parks. The leader's assignment (members it left out get
//     an empty one) is written to __consumer_offsets (group metadata value v3) with
//     offsets.commit.required.acks; once the ISR has it the group is Stable and every parked
//     SyncGroup gets its member's assignment. An append error is mapped as
//     GroupMetadataManager.storeGroup (NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE,
//     REBALANCE_IN_PROGRESS on a timeout, ...) and the group rebalances.
//   - Stable: the member's current assignment at once.
//   - Assignment bytes are opaque (eager and cooperative assignors alike).
//
// Deviations: v5's protocol type / name checks do not exist in 2.4 and are not served.

func init() { register(kmsg.SyncGroup, 0, 4, handleSyncGroup) }

func handleSyncGroup(c *Coordinator, r *Request, kreq kmsg.Request, respond func(kmsg.Response)) {
	req := kreq.(*kmsg.SyncGroupRequest)
	if r.groupReadDenied(req.Group) {
		resp := req.ResponseKind().(*kmsg.SyncGroupResponse)
		resp.ErrorCode, resp.MemberAssignment = errGroupAuthFailed, []byte{}
		respond(resp)
		return
	}
	var instanceID *string
	if req.Version >= 3 {
		instanceID = req.InstanceID
	}
	assignment := make(map[string][]byte, len(req.GroupAssignment))
	for _, a := range req.GroupAssignment {
		assignment[a.MemberID] = a.MemberAssignment
	}
	c.SyncGroup(req.Group, req.Generation, req.MemberID, instanceID, assignment, func(res syncResult) {
		resp := req.ResponseKind().(*kmsg.SyncGroupResponse)
		resp.ErrorCode = res.err
		resp.MemberAssignment = nonNilBytes(res.assignment)
		respond(resp)
	})
}

// SyncGroup is GroupCoordinator.handleSyncGroup; cb is called exactly once.
func (c *Coordinator) SyncGroup(groupID string, generation int32, memberID string, instanceID *string, assignment map[string][]byte, cb func(syncResult)) {
	switch code := c.validateGroupStatus(groupID, false); code {
	case errNone:
	case errCoordinatorLoadInProgress:
		cb(syncResult{err: errRebalanceInProgress})
		return
	default:
		cb(syncResult{err: code})
		return
	}
	g := c.groupManager.getGroup(groupID)
	if g == nil {
		cb(syncResult{err: errUnknownMemberID})
		return
	}
	g.inLock(func() {
		switch {
		case g.is(stateDead):
			cb(syncResult{err: errCoordinatorNotAvailable})
			return
		case g.isStaticMemberFenced(memberID, instanceID):
			cb(syncResult{err: errFencedInstanceID})
			return
		case !g.has(memberID):
			cb(syncResult{err: errUnknownMemberID})
			return
		case generation != g.generation:
			cb(syncResult{err: errIllegalGeneration})
			return
		}
		switch g.state {
		case stateEmpty:
			cb(syncResult{err: errUnknownMemberID})
		case statePreparingRebalance:
			cb(syncResult{err: errRebalanceInProgress})
		case stateCompletingRebalance:
			g.members[memberID].awaitingSync = cb
			if !g.isLeader(memberID) {
				return
			}
			groupLog(c.log, g).Info("assignment received from leader")
			full := make(map[string][]byte, len(g.members))
			for id := range g.members {
				full[id] = nonNilBytes(assignment[id])
			}
			gen := g.generation
			c.groupManager.storeGroup(g, full, func(code int16) {
				// Another member may have joined meanwhile: only the same generation, still
				// completing, takes this result.
				if !g.is(stateCompletingRebalance) || gen != g.generation {
					return
				}
				if code != errNone {
					c.rebalancer.resetAndPropagateAssignmentError(g, code)
					c.rebalancer.maybePrepareRebalance(g, "error when storing group assignment during SyncGroup")
					return
				}
				c.rebalancer.setAndPropagateAssignment(g, full)
				transition(c.log, g, stateStable, c.now())
			})
			c.metrics.completedRebalances.Mark(1)
		case stateStable:
			m := g.members[memberID]
			cb(syncResult{assignment: m.assignment})
			c.rebalancer.completeAndScheduleNextHeartbeatExpiration(g, m)
		}
	})
}
