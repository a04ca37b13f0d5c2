package groupcoord

import (
	"sort"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/isrbroker/isrbroker/broker/security/acl"
)

// ListGroups: v0-3 (v3 flexible).
//
// Behavior (GroupCoordinator.handleListGroups): the groups this broker coordinates, each with
// its protocol type ("" for groups that only store offsets). Coordinator inactive →
// COORDINATOR_NOT_AVAILABLE; while any offsets partition is loading the groups known so far
// come with COORDINATOR_LOAD_IN_PROGRESS.
//
// Deviations: the states filter (v4) does not exist in 2.4 and is not served.

func init() { register(kmsg.ListGroups, 0, 3, handleListGroups) }

func handleListGroups(c *Coordinator, r *Request, kreq kmsg.Request, respond func(kmsg.Response)) {
	req := kreq.(*kmsg.ListGroupsRequest)
	resp := req.ResponseKind().(*kmsg.ListGroupsResponse)
	code, groups := c.ListGroups()
	// DESCRIBE on the cluster lists every group, else those with DESCRIBE on the group
	// (docs/acls.md).
	if !r.allowed(acl.OpDescribe, acl.ResourceCluster, acl.ClusterName) {
		kept := groups[:0]
		for _, g := range groups {
			if r.allowed(acl.OpDescribe, acl.ResourceGroup, g.Group) {
				kept = append(kept, g)
			}
		}
		groups = kept
	}
	resp.ErrorCode = code
	resp.Groups = groups
	respond(resp)
}

// ListGroups is GroupCoordinator.handleListGroups.
func (c *Coordinator) ListGroups() (int16, []kmsg.ListGroupsResponseGroup) {
	c.mu.RLock()
	active := c.active
	c.mu.RUnlock()
	if !active {
		return errCoordinatorNotAvailable, nil
	}
	code := errNone
	if c.groupManager.isLoading() {
		code = errCoordinatorLoadInProgress
	}
	var out []kmsg.ListGroupsResponseGroup
	for _, g := range c.groupManager.allGroups() {
		lg := kmsg.NewListGroupsResponseGroup()
		lg.Group = g.id
		g.mu.Lock()
		if g.protocolType != nil {
			lg.ProtocolType = *g.protocolType
		}
		g.mu.Unlock()
		out = append(out, lg)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Group < out[j].Group })
	return code, out
}
