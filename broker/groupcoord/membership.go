package groupcoord

import (
	"sort"
	"time"
)

// groupMembership is the member side of Kafka's GroupMetadata: the members, the leader, the
// static members' instance ids (KIP-345), the member ids handed out with MEMBER_ID_REQUIRED
// (KIP-394), the parked JoinGroups and the protocols the members support. It is embedded in
// group and guarded by the group's lock.
type groupMembership struct {
	protocolType       *string
	leader             string // "" none
	members            map[string]*member
	static             map[string]string // group.instance.id → member id
	pending            map[string]Timer  // member ids handed out with MEMBER_ID_REQUIRED (KIP-394)
	numAwaitingJoin    int
	supportedProtocols map[string]int
}

func newGroupMembership() groupMembership {
	return groupMembership{
		members:            make(map[string]*member),
		static:             make(map[string]string),
		pending:            make(map[string]Timer),
		supportedProtocols: make(map[string]int),
	}
}

func (ms *groupMembership) has(memberID string) bool { return ms.members[memberID] != nil }

func (ms *groupMembership) isLeader(memberID string) bool {
	return ms.leader != "" && ms.leader == memberID
}

func (ms *groupMembership) add(m *member, cb func(joinResult)) {
	if len(ms.members) == 0 {
		pt := m.protocolType
		ms.protocolType = &pt
	}
	if ms.leader == "" {
		ms.leader = m.id
	}
	ms.members[m.id] = m
	for _, p := range m.protocols {
		ms.supportedProtocols[p.name]++
	}
	m.awaitingJoin = cb
	if cb != nil {
		ms.numAwaitingJoin++
	}
}

func (ms *groupMembership) remove(memberID string) {
	m := ms.members[memberID]
	if m != nil {
		delete(ms.members, memberID)
		for _, p := range m.protocols {
			ms.supportedProtocols[p.name]--
		}
		if m.awaitingJoin != nil {
			ms.numAwaitingJoin--
		}
		if m.hbTimer != nil {
			m.hbTimer.Stop()
		}
	}
	if ms.isLeader(memberID) {
		ms.leader = ""
		for _, id := range ms.sortedMemberIDs() {
			ms.leader = id
			break
		}
	}
}

// sortedMemberIDs gives a deterministic member order (Kafka iterates a hash map).
func (ms *groupMembership) sortedMemberIDs() []string {
	ids := make([]string, 0, len(ms.members))
	for id := range ms.members {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

func (ms *groupMembership) allMembers() []*member {
	out := make([]*member, 0, len(ms.members))
	for _, id := range ms.sortedMemberIDs() {
		out = append(out, ms.members[id])
	}
	return out
}

// maybeElectNewJoinedLeader keeps the leader if it rejoined, else picks any member that did;
// false when none did.
func (ms *groupMembership) maybeElectNewJoinedLeader() bool {
	if ms.leader == "" {
		return false
	}
	if l := ms.members[ms.leader]; l != nil && l.awaitingJoin != nil {
		return true
	}
	for _, m := range ms.allMembers() {
		if m.awaitingJoin != nil {
			ms.leader = m.id
			return true
		}
	}
	return false
}

func (ms *groupMembership) hasStatic(instanceID *string) bool {
	if instanceID == nil {
		return false
	}
	_, ok := ms.static[*instanceID]
	return ok
}

// isStaticMemberFenced: the instance id is known with another member id.
func (ms *groupMembership) isStaticMemberFenced(memberID string, instanceID *string) bool {
	if instanceID == nil {
		return false
	}
	id, ok := ms.static[*instanceID]
	return ok && id != memberID
}

func (ms *groupMembership) isPending(memberID string) bool {
	_, ok := ms.pending[memberID]
	return ok && !ms.has(memberID)
}

func (ms *groupMembership) removePending(memberID string) {
	if t, ok := ms.pending[memberID]; ok {
		if t != nil {
			t.Stop()
		}
		delete(ms.pending, memberID)
	}
}

// replaceGroupInstance gives the static member of instanceID a new member id, fencing any
// request the old id has parked (FENCED_INSTANCE_ID).
func (ms *groupMembership) replaceGroupInstance(oldID, newID string, instanceID *string) *member {
	m := ms.members[oldID]
	delete(ms.members, oldID)
	ms.maybeInvokeJoin(m, joinError(oldID, errFencedInstanceID))
	ms.maybeInvokeSync(m, syncResult{err: errFencedInstanceID})
	m.id = newID
	ms.members[newID] = m
	if ms.leader == oldID {
		ms.leader = newID
	}
	ms.static[*instanceID] = newID
	return m
}

func (ms *groupMembership) hasAllMembersJoined() bool {
	return len(ms.members) == ms.numAwaitingJoin && len(ms.pending) == 0
}

func (ms *groupMembership) notYetRejoined() []*member {
	var out []*member
	for _, m := range ms.allMembers() {
		if m.awaitingJoin == nil {
			out = append(out, m)
		}
	}
	return out
}

// rebalanceTimeout is the largest rebalance timeout of the members.
func (ms *groupMembership) rebalanceTimeout() time.Duration {
	var d time.Duration
	for _, m := range ms.members {
		d = max(d, m.rebalanceTimeout)
	}
	return d
}

// selectProtocol: among the protocols every member supports, the one most members list first.
func (ms *groupMembership) selectProtocol() string {
	candidates := make(map[string]bool)
	for name, n := range ms.supportedProtocols {
		if n == len(ms.members) {
			candidates[name] = true
		}
	}
	votes := make(map[string]int)
	for _, m := range ms.members {
		votes[m.vote(candidates)]++
	}
	best, bestN := "", -1
	names := make([]string, 0, len(votes))
	for n := range votes {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if votes[n] > bestN {
			best, bestN = n, votes[n]
		}
	}
	return best
}

func (ms *groupMembership) isConsumerGroup() bool {
	return ms.protocolType != nil && *ms.protocolType == consumerProtocolType
}

func (ms *groupMembership) updateMember(m *member, protocols []protocol, cb func(joinResult)) {
	for _, p := range m.protocols {
		ms.supportedProtocols[p.name]--
	}
	for _, p := range protocols {
		ms.supportedProtocols[p.name]++
	}
	m.protocols = protocols
	if cb != nil && m.awaitingJoin == nil {
		ms.numAwaitingJoin++
	} else if cb == nil && m.awaitingJoin != nil {
		ms.numAwaitingJoin--
	}
	m.awaitingJoin = cb
}

func (ms *groupMembership) maybeInvokeJoin(m *member, res joinResult) {
	if m.awaitingJoin != nil {
		cb := m.awaitingJoin
		m.awaitingJoin = nil
		ms.numAwaitingJoin--
		cb(res)
	}
}

func (ms *groupMembership) maybeInvokeSync(m *member, res syncResult) bool {
	if m.awaitingSync == nil {
		return false
	}
	cb := m.awaitingSync
	m.awaitingSync = nil
	cb(res)
	return true
}
