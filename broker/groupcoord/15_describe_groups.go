package groupcoord

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/isrbroker/isrbroker/broker/security/acl"
)

// DescribeGroups: v0-5 (v5 flexible).
//
// Behavior (GroupCoordinator.handleDescribeGroup, GroupMetadata.summary):
//   - Per group: status errors (COORDINATOR_NOT_AVAILABLE, COORDINATOR_LOAD_IN_PROGRESS,
//     NOT_COORDINATOR) with empty fields; the empty group id is allowed.
//   - An unknown group is described as state "Dead", no error.
//   - A Stable group lists its members with their metadata for the selected protocol and their
//     assignments, and names the protocol; other states list members without metadata and
//     assignment, and no protocol. group.instance.id is reported from v4.
//
//   - Authorization (docs/acls.md): a group the caller may not DESCRIBE answers
//     GROUP_AUTHORIZATION_FAILED with empty fields. Authorized operations (v3+), when asked:
//     the group operations (READ, DESCRIBE, DELETE) the caller may perform, all three
//     without an authorizer, as Kafka 2.4; otherwise 0.
//
// Deviations: none.

func init() { register(kmsg.DescribeGroups, 0, 5, handleDescribeGroups) }

func handleDescribeGroups(c *Coordinator, r *Request, kreq kmsg.Request, respond func(kmsg.Response)) {
	req := kreq.(*kmsg.DescribeGroupsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeGroupsResponse)
	for _, id := range req.Groups {
		if !r.allowed(acl.OpDescribe, acl.ResourceGroup, id) { // docs/acls.md
			g := kmsg.NewDescribeGroupsResponseGroup()
			g.Group, g.ErrorCode = id, errGroupAuthFailed
			resp.Groups = append(resp.Groups, g)
			continue
		}
		g := c.DescribeGroup(id)
		g.AuthorizedOperations = 0
		if req.Version >= 3 && req.IncludeAuthorizedOperations && g.ErrorCode == errNone {
			g.AuthorizedOperations = r.authorizedGroupOps(id) // KIP-430
		}
		resp.Groups = append(resp.Groups, g)
	}
	respond(resp)
}

// DescribeGroup is GroupCoordinator.handleDescribeGroup.
func (c *Coordinator) DescribeGroup(groupID string) kmsg.DescribeGroupsResponseGroup {
	out := kmsg.NewDescribeGroupsResponseGroup()
	out.Group = groupID
	if code := c.validateGroupStatus(groupID, true); code != errNone {
		out.ErrorCode = code
		return out
	}
	g := c.groupManager.getGroup(groupID)
	if g == nil {
		out.State = stateDead.String()
		return out
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	out.State = g.state.String()
	if g.protocolType != nil {
		out.ProtocolType = *g.protocolType
	}
	stable := g.is(stateStable) && g.protocol != nil
	if stable {
		out.Protocol = *g.protocol
	}
	for _, m := range g.allMembers() {
		dm := kmsg.NewDescribeGroupsResponseGroupMember()
		dm.MemberID = m.id
		dm.InstanceID = m.instanceID
		dm.ClientID = m.clientID
		dm.ClientHost = m.clientHost
		dm.ProtocolMetadata = []byte{}
		dm.MemberAssignment = []byte{}
		if stable {
			dm.ProtocolMetadata = nonNilBytes(m.metadata(*g.protocol))
			dm.MemberAssignment = nonNilBytes(m.assignment)
		}
		out.Members = append(out.Members, dm)
	}
	return out
}
