package groupcoord

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/isrbroker/isrbroker/broker/security/acl"
)

// DeleteGroups: v0-2 (v2 flexible).
//
// Behavior (GroupCoordinator.handleDeleteGroups):
//   - Per group: status errors (COORDINATOR_NOT_AVAILABLE, COORDINATOR_LOAD_IN_PROGRESS,
//     NOT_COORDINATOR); the empty group id is allowed.
//   - Unknown or Dead group → GROUP_ID_NOT_FOUND (NOT_COORDINATOR if the partition moved away
//     meanwhile); a group with members (Stable, PreparingRebalance, CompletingRebalance) →
//     NON_EMPTY_GROUP.
//   - An Empty group becomes Dead: its offsets are removed and tombstoned, and its metadata
//     tombstoned (not for a generation-0 group that only stored offsets).
//
// Deviations: none.

func init() { register(kmsg.DeleteGroups, 0, 2, handleDeleteGroups) }

func handleDeleteGroups(c *Coordinator, r *Request, kreq kmsg.Request, respond func(kmsg.Response)) {
	req := kreq.(*kmsg.DeleteGroupsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteGroupsResponse)
	var allowed []string // DELETE on the group (docs/acls.md)
	for _, id := range req.Groups {
		if r.allowed(acl.OpDelete, acl.ResourceGroup, id) {
			allowed = append(allowed, id)
		}
	}
	codes := c.DeleteGroups(allowed)
	for _, id := range req.Groups {
		if _, ok := codes[id]; !ok && !r.allowed(acl.OpDelete, acl.ResourceGroup, id) {
			codes[id] = errGroupAuthFailed
		}
	}
	seen := make(map[string]bool)
	for _, id := range req.Groups {
		if seen[id] {
			continue
		}
		seen[id] = true
		rg := kmsg.NewDeleteGroupsResponseGroup()
		rg.Group = id
		rg.ErrorCode = codes[id]
		resp.Groups = append(resp.Groups, rg)
	}
	respond(resp)
}

// DeleteGroups is GroupCoordinator.handleDeleteGroups.
func (c *Coordinator) DeleteGroups(ids []string) map[string]int16 {
	codes := make(map[string]int16, len(ids))
	var eligible []*group
	for _, id := range ids {
		if _, done := codes[id]; done {
			continue
		}
		if code := c.validateGroupStatus(id, true); code != errNone {
			codes[id] = code
			continue
		}
		g := c.groupManager.getGroup(id)
		if g == nil {
			codes[id] = c.notFoundCode(id)
			continue
		}
		var dead bool
		g.inLock(func() {
			switch g.state {
			case stateDead:
				dead = true
			case stateEmpty:
				transition(c.log, g, stateDead, c.now())
				eligible = append(eligible, g)
				codes[id] = errNone
			default:
				codes[id] = errNonEmptyGroup
			}
		})
		if dead {
			codes[id] = c.notFoundCode(id)
		}
	}
	if len(eligible) > 0 {
		n := c.groupManager.cleanupGroupMetadata(eligible, func(g *group) map[tp]offsetAndMetadata { return g.offsets.removeAllOffsets() })
		c.log.WithField("offsets", n).Info("deleted groups")
	}
	return codes
}

func (c *Coordinator) notFoundCode(id string) int16 {
	if c.groupManager.groupNotExists(id) {
		return errGroupIDNotFound
	}
	return errNotCoordinator
}
