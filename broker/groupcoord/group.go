package groupcoord

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// groupState is a group's place in Kafka's state machine (GroupMetadata.scala, docs/groups.md §3).
type groupState int8

const (
	stateEmpty groupState = iota
	statePreparingRebalance
	stateCompletingRebalance
	stateStable
	stateDead
)

// String is the state's name as DescribeGroups and ListGroups report it.
func (s groupState) String() string {
	switch s {
	case stateEmpty:
		return "Empty"
	case statePreparingRebalance:
		return "PreparingRebalance"
	case stateCompletingRebalance:
		return "CompletingRebalance"
	case stateStable:
		return "Stable"
	case stateDead:
		return "Dead"
	}
	return "Unknown"
}

// validPreviousStates is GroupMetadata.validPreviousStates: the states a group may enter each
// state from.
var validPreviousStates = map[groupState][]groupState{
	stateDead:                {stateStable, statePreparingRebalance, stateCompletingRebalance, stateEmpty, stateDead},
	stateCompletingRebalance: {statePreparingRebalance},
	stateStable:              {stateCompletingRebalance},
	statePreparingRebalance:  {stateStable, stateCompletingRebalance, stateEmpty},
	stateEmpty:               {statePreparingRebalance},
}

func canTransition(from, to groupState) bool {
	for _, s := range validPreviousStates[to] {
		if s == from {
			return true
		}
	}
	return false
}

// consumerProtocolType is ConsumerProtocol.PROTOCOL_TYPE: groups of this type have their
// subscriptions parsed (OffsetDelete's GROUP_SUBSCRIBED_TO_TOPIC, offset expiry).
const consumerProtocolType = "consumer"

// newMemberJoinTimeout is GroupCoordinator.NewMemberJoinTimeoutMs: a new member whose JoinGroup
// is parked is expired after this long (it cannot heartbeat yet).
const newMemberJoinTimeout = 5 * time.Minute

type protocol struct {
	name     string
	metadata []byte
}

// joinResult is Kafka's JoinGroupResult.
type joinResult struct {
	members    []kmsg.JoinGroupResponseMember
	memberID   string
	generation int32
	protocol   *string
	leader     string
	err        int16
}

func joinError(memberID string, code int16) joinResult {
	return joinResult{memberID: memberID, generation: -1, err: code}
}

// syncResult is Kafka's SyncGroupResult.
type syncResult struct {
	assignment []byte
	err        int16
}

// member is Kafka's MemberMetadata.
type member struct {
	id               string
	instanceID       *string // group.instance.id of a static member (KIP-345)
	clientID         string
	clientHost       string
	rebalanceTimeout time.Duration
	sessionTimeout   time.Duration
	protocolType     string
	protocols        []protocol
	assignment       []byte

	awaitingJoin func(joinResult) // the parked JoinGroup's answer, nil when none
	awaitingSync func(syncResult) // the parked SyncGroup's answer, nil when none

	latestHeartbeat time.Time
	isLeaving       bool
	isNew           bool
	hbTimer         Timer
}

func (m *member) isStatic() bool { return m.instanceID != nil }

func (m *member) metadata(protocol string) []byte {
	for _, p := range m.protocols {
		if p.name == protocol {
			return p.metadata
		}
	}
	return nil
}

// matches reports whether protocols equal the member's, in order (MemberMetadata.matches).
func (m *member) matches(protocols []protocol) bool {
	if len(protocols) != len(m.protocols) {
		return false
	}
	for i := range protocols {
		if protocols[i].name != m.protocols[i].name || !bytes.Equal(protocols[i].metadata, m.protocols[i].metadata) {
			return false
		}
	}
	return true
}

// vote is the member's preferred protocol among candidates (the first of its own list).
func (m *member) vote(candidates map[string]bool) string {
	for _, p := range m.protocols {
		if candidates[p.name] {
			return p.name
		}
	}
	return ""
}

// shouldKeepAlive is MemberMetadata.shouldKeepAlive at a heartbeat deadline.
func (m *member) shouldKeepAlive(deadline time.Time) bool {
	switch {
	case m.isNew:
		return m.latestHeartbeat.Add(newMemberJoinTimeout).After(deadline)
	case m.awaitingJoin != nil || m.awaitingSync != nil:
		return true
	default:
		return m.latestHeartbeat.Add(m.sessionTimeout).After(deadline)
	}
}

// offsetAndMetadata is one committed offset (OffsetAndMetadata).
type offsetAndMetadata struct {
	offset          int64
	leaderEpoch     int32 // -1: none
	metadata        string
	commitTimestamp int64 // ms
	expireTimestamp int64 // ms; -1: none (OffsetCommit v1-v4 with a retention time set it)
}

// commitEntry is a cached offset and the log offset of the batch that holds it
// (CommitRecordMetadataAndOffset).
type commitEntry struct {
	om          offsetAndMetadata
	batchOffset int64
}

// group is Kafka's GroupMetadata. Every field is guarded by mu.
type group struct {
	id string
	mu sync.Mutex

	state              groupState
	stateTimestamp     int64 // ms of the last transition; -1 unknown (loaded from an old value version)
	protocolType       *string
	protocol           *string
	generation         int32
	leader             string // "" none
	members            map[string]*member
	static             map[string]string // group.instance.id → member id
	pending            map[string]Timer  // member ids handed out with MEMBER_ID_REQUIRED (KIP-394)
	numAwaitingJoin    int
	supportedProtocols map[string]int
	newMemberAdded     bool

	// join is the pending delayed join (DelayedJoin / InitialDelayedJoin), nil when none.
	join *delayedJoin

	offsets        map[tp]commitEntry
	pendingCommits map[tp]offsetAndMetadata
	// subscribed holds the topics the members of a consumer group subscribe to; nil when
	// unknown (not a consumer group, or a subscription that does not parse).
	subscribed map[string]bool

	// deferred are actions (appends) to run once mu is released; see Coordinator.locked.
	deferred []func()
}

// tp is a topic-partition of a committed offset.
type tp struct {
	topic     string
	partition int32
}

func newGroup(id string, now time.Time) *group {
	return &group{
		id:                 id,
		state:              stateEmpty,
		stateTimestamp:     millis(now),
		members:            make(map[string]*member),
		static:             make(map[string]string),
		pending:            make(map[string]Timer),
		supportedProtocols: make(map[string]int),
		offsets:            make(map[tp]commitEntry),
		pendingCommits:     make(map[tp]offsetAndMetadata),
	}
}

func (g *group) is(s groupState) bool { return g.state == s }

// transitionTo moves the group to s. An invalid transition is a programming error; it is
// refused (and reported) rather than panicking on a request path.
func (g *group) transitionTo(s groupState, now time.Time) error {
	if !canTransition(g.state, s) {
		return fmt.Errorf("group %s: invalid transition %s → %s", g.id, g.state, s)
	}
	g.state = s
	g.stateTimestamp = millis(now)
	return nil
}

func (g *group) has(memberID string) bool { return g.members[memberID] != nil }

func (g *group) isLeader(memberID string) bool { return g.leader != "" && g.leader == memberID }

func (g *group) add(m *member, cb func(joinResult)) {
	if len(g.members) == 0 {
		pt := m.protocolType
		g.protocolType = &pt
	}
	if g.leader == "" {
		g.leader = m.id
	}
	g.members[m.id] = m
	for _, p := range m.protocols {
		g.supportedProtocols[p.name]++
	}
	m.awaitingJoin = cb
	if cb != nil {
		g.numAwaitingJoin++
	}
}

func (g *group) remove(memberID string) {
	m := g.members[memberID]
	if m != nil {
		delete(g.members, memberID)
		for _, p := range m.protocols {
			g.supportedProtocols[p.name]--
		}
		if m.awaitingJoin != nil {
			g.numAwaitingJoin--
		}
		if m.hbTimer != nil {
			m.hbTimer.Stop()
		}
	}
	if g.isLeader(memberID) {
		g.leader = ""
		for _, id := range g.sortedMemberIDs() {
			g.leader = id
			break
		}
	}
}

// sortedMemberIDs gives a deterministic member order (Kafka iterates a hash map).
func (g *group) sortedMemberIDs() []string {
	ids := make([]string, 0, len(g.members))
	for id := range g.members {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

func (g *group) allMembers() []*member {
	out := make([]*member, 0, len(g.members))
	for _, id := range g.sortedMemberIDs() {
		out = append(out, g.members[id])
	}
	return out
}

// maybeElectNewJoinedLeader keeps the leader if it rejoined, else picks any member that did;
// false when none did.
func (g *group) maybeElectNewJoinedLeader() bool {
	if g.leader == "" {
		return false
	}
	if l := g.members[g.leader]; l != nil && l.awaitingJoin != nil {
		return true
	}
	for _, m := range g.allMembers() {
		if m.awaitingJoin != nil {
			g.leader = m.id
			return true
		}
	}
	return false
}

func (g *group) hasStatic(instanceID *string) bool {
	if instanceID == nil {
		return false
	}
	_, ok := g.static[*instanceID]
	return ok
}

// isStaticMemberFenced: the instance id is known with another member id.
func (g *group) isStaticMemberFenced(memberID string, instanceID *string) bool {
	if instanceID == nil {
		return false
	}
	id, ok := g.static[*instanceID]
	return ok && id != memberID
}

func (g *group) isPending(memberID string) bool {
	_, ok := g.pending[memberID]
	return ok && !g.has(memberID)
}

func (g *group) removePending(memberID string) {
	if t, ok := g.pending[memberID]; ok {
		if t != nil {
			t.Stop()
		}
		delete(g.pending, memberID)
	}
}

// replaceGroupInstance gives the static member of instanceID a new member id, fencing any
// request the old id has parked (FENCED_INSTANCE_ID).
func (g *group) replaceGroupInstance(oldID, newID string, instanceID *string) *member {
	m := g.members[oldID]
	delete(g.members, oldID)
	g.maybeInvokeJoin(m, joinError(oldID, errFencedInstanceID))
	g.maybeInvokeSync(m, syncResult{err: errFencedInstanceID})
	m.id = newID
	g.members[newID] = m
	if g.leader == oldID {
		g.leader = newID
	}
	g.static[*instanceID] = newID
	return m
}

func (g *group) hasAllMembersJoined() bool {
	return len(g.members) == g.numAwaitingJoin && len(g.pending) == 0
}

func (g *group) notYetRejoined() []*member {
	var out []*member
	for _, m := range g.allMembers() {
		if m.awaitingJoin == nil {
			out = append(out, m)
		}
	}
	return out
}

// rebalanceTimeout is the largest rebalance timeout of the members.
func (g *group) rebalanceTimeout() time.Duration {
	var d time.Duration
	for _, m := range g.members {
		d = max(d, m.rebalanceTimeout)
	}
	return d
}

// generateMemberID is clientId (or group.instance.id) + "-" + a random UUID, as Kafka.
func generateMemberID(clientID string, instanceID *string) string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	uuid := h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
	prefix := clientID
	if instanceID != nil {
		prefix = *instanceID
	}
	return prefix + "-" + uuid
}

func (g *group) canRebalance() bool { return canTransition(g.state, statePreparingRebalance) }

// selectProtocol: among the protocols every member supports, the one most members list first.
func (g *group) selectProtocol() string {
	candidates := make(map[string]bool)
	for name, n := range g.supportedProtocols {
		if n == len(g.members) {
			candidates[name] = true
		}
	}
	votes := make(map[string]int)
	for _, m := range g.members {
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

// supportsProtocols is GroupMetadata.supportsProtocols: an Empty group takes any non-empty
// protocol type and protocol list; otherwise the type must match and one protocol must be
// supported by every member.
func (g *group) supportsProtocols(protocolType string, protocols []protocol) bool {
	if g.is(stateEmpty) {
		return protocolType != "" && len(protocols) > 0
	}
	if g.protocolType == nil || *g.protocolType != protocolType {
		return false
	}
	for _, p := range protocols {
		if g.supportedProtocols[p.name] == len(g.members) {
			return true
		}
	}
	return false
}

func (g *group) isConsumerGroup() bool {
	return g.protocolType != nil && *g.protocolType == consumerProtocolType
}

func (g *group) isSubscribedToTopic(topic string) bool {
	if g.subscribed == nil {
		return true
	}
	return g.subscribed[topic]
}

// computeSubscribedTopics parses every member's consumer-protocol subscription (version-0
// prefix) for the selected protocol; nil when the group is not a consumer group or a
// subscription does not parse.
func (g *group) computeSubscribedTopics() map[string]bool {
	if !g.isConsumerGroup() {
		return nil
	}
	if len(g.members) == 0 {
		return map[string]bool{}
	}
	if g.protocol == nil {
		return nil
	}
	out := make(map[string]bool)
	for _, m := range g.members {
		var meta kmsg.ConsumerMemberMetadata
		if err := meta.ReadFrom(m.metadata(*g.protocol)); err != nil {
			return nil
		}
		for _, t := range meta.Topics {
			out[t] = true
		}
	}
	return out
}

func (g *group) updateMember(m *member, protocols []protocol, cb func(joinResult)) {
	for _, p := range m.protocols {
		g.supportedProtocols[p.name]--
	}
	for _, p := range protocols {
		g.supportedProtocols[p.name]++
	}
	m.protocols = protocols
	if cb != nil && m.awaitingJoin == nil {
		g.numAwaitingJoin++
	} else if cb == nil && m.awaitingJoin != nil {
		g.numAwaitingJoin--
	}
	m.awaitingJoin = cb
}

func (g *group) maybeInvokeJoin(m *member, res joinResult) {
	if m.awaitingJoin != nil {
		cb := m.awaitingJoin
		m.awaitingJoin = nil
		g.numAwaitingJoin--
		cb(res)
	}
}

func (g *group) maybeInvokeSync(m *member, res syncResult) bool {
	if m.awaitingSync == nil {
		return false
	}
	cb := m.awaitingSync
	m.awaitingSync = nil
	cb(res)
	return true
}

// initNextGeneration starts the next generation: CompletingRebalance with the selected protocol,
// or Empty when no member is left.
func (g *group) initNextGeneration(now time.Time) error {
	g.generation++
	if len(g.members) > 0 {
		p := g.selectProtocol()
		g.protocol = &p
		g.subscribed = g.computeSubscribedTopics()
		return g.transitionTo(stateCompletingRebalance, now)
	}
	g.protocol = nil
	g.subscribed = g.computeSubscribedTopics()
	return g.transitionTo(stateEmpty, now)
}

// currentMemberMetadata is the member list the leader gets in its JoinGroup response.
func (g *group) currentMemberMetadata() []kmsg.JoinGroupResponseMember {
	out := make([]kmsg.JoinGroupResponseMember, 0, len(g.members))
	for _, m := range g.allMembers() {
		jm := kmsg.NewJoinGroupResponseMember()
		jm.MemberID = m.id
		jm.InstanceID = m.instanceID
		if g.protocol != nil {
			jm.ProtocolMetadata = m.metadata(*g.protocol)
		}
		out = append(out, jm)
	}
	return out
}

func (g *group) hasOffsets() bool { return len(g.offsets) > 0 || len(g.pendingCommits) > 0 }

func (g *group) prepareOffsetCommit(offsets map[tp]offsetAndMetadata) {
	for k, v := range offsets {
		g.pendingCommits[k] = v
	}
}

// onOffsetCommitAppend installs a committed offset once its batch is in the log (ISR).
func (g *group) onOffsetCommitAppend(k tp, e commitEntry) {
	if _, pending := g.pendingCommits[k]; pending {
		if cur, ok := g.offsets[k]; !ok || cur.batchOffset < e.batchOffset {
			g.offsets[k] = e
		}
	}
	if staged, ok := g.pendingCommits[k]; ok && staged == e.om {
		delete(g.pendingCommits, k)
	}
}

func (g *group) failPendingOffsetWrite(k tp, om offsetAndMetadata) {
	if staged, ok := g.pendingCommits[k]; ok && staged == om {
		delete(g.pendingCommits, k)
	}
}

func (g *group) removeOffsets(tps []tp) map[tp]offsetAndMetadata {
	out := make(map[tp]offsetAndMetadata)
	for _, k := range tps {
		delete(g.pendingCommits, k)
		if e, ok := g.offsets[k]; ok {
			out[k] = e.om
			delete(g.offsets, k)
		}
	}
	return out
}

func (g *group) removeAllOffsets() map[tp]offsetAndMetadata {
	tps := make([]tp, 0, len(g.offsets))
	for k := range g.offsets {
		tps = append(tps, k)
	}
	return g.removeOffsets(tps)
}

// removeExpiredOffsets is GroupMetadata.removeExpiredOffsets (KIP-211, docs/groups.md §6).
func (g *group) removeExpiredOffsets(nowMs int64, retention time.Duration) map[tp]offsetAndMetadata {
	retMs := retention.Milliseconds()
	expired := func(base func(commitEntry) int64, subscribed map[string]bool) map[tp]offsetAndMetadata {
		out := make(map[tp]offsetAndMetadata)
		for k, e := range g.offsets {
			if subscribed[k.topic] {
				continue
			}
			if _, pending := g.pendingCommits[k]; pending {
				continue
			}
			if e.om.expireTimestamp >= 0 {
				if nowMs >= e.om.expireTimestamp {
					out[k] = e.om
				}
			} else if nowMs-base(e) >= retMs {
				out[k] = e.om
			}
		}
		return out
	}
	commitTS := func(e commitEntry) int64 { return e.om.commitTimestamp }
	var out map[tp]offsetAndMetadata
	switch {
	case g.protocolType != nil && g.is(stateEmpty):
		out = expired(func(e commitEntry) int64 {
			if g.stateTimestamp >= 0 {
				return g.stateTimestamp
			}
			return e.om.commitTimestamp
		}, nil)
	case g.isConsumerGroup() && g.subscribed != nil:
		out = expired(commitTS, g.subscribed)
	case g.protocolType == nil:
		out = expired(commitTS, nil)
	}
	for k := range out {
		delete(g.offsets, k)
	}
	return out
}
