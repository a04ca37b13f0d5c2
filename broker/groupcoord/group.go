package groupcoord

import (
	"fmt"
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

// group is Kafka's GroupMetadata. Every field, those of its membership and offsets included,
// is guarded by mu. The group holds the state machine and the generation; its membership
// (groupMembership, membership.go) is embedded, its offsets cache (groupOffsets,
// group_offsets.go) is the field offsets.
type group struct {
	id string
	mu sync.Mutex

	state          groupState
	stateTimestamp int64 // ms of the last transition; -1 unknown (loaded from an old value version)
	protocol       *string
	generation     int32
	newMemberAdded bool

	groupMembership

	// join is the pending delayed join (DelayedJoin / InitialDelayedJoin), nil when none.
	join *delayedJoin

	offsets groupOffsets
	// subscribed holds the topics the members of a consumer group subscribe to; nil when
	// unknown (not a consumer group, or a subscription that does not parse).
	subscribed map[string]bool

	// deferred are actions (appends) to run once mu is released; see inLock.
	deferred []func()
}

func newGroup(id string, now time.Time) *group {
	return &group{
		id:              id,
		state:           stateEmpty,
		stateTimestamp:  millis(now),
		groupMembership: newGroupMembership(),
		offsets:         newGroupOffsets(),
	}
}

// inLock is GroupMetadata.inLock: it runs fn under g's lock, then, the lock released, the
// actions fn deferred (appends).
func (g *group) inLock(fn func()) {
	g.mu.Lock()
	fn()
	deferred := g.deferred
	g.deferred = nil
	g.mu.Unlock()
	for _, d := range deferred {
		d()
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

func (g *group) canRebalance() bool { return canTransition(g.state, statePreparingRebalance) }

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

// removeExpiredOffsets is GroupMetadata.removeExpiredOffsets (KIP-211, docs/groups.md §6): an
// Empty group's offsets expire offsets.retention.minutes after it became Empty, a consumer
// group's offsets of topics it no longer subscribes to and a group without protocol type's
// offsets that long after their commit; other groups keep theirs.
func (g *group) removeExpiredOffsets(nowMs int64, retention time.Duration) map[tp]offsetAndMetadata {
	retMs := retention.Milliseconds()
	commitTS := func(e commitEntry) int64 { return e.om.commitTimestamp }
	switch {
	case g.protocolType != nil && g.is(stateEmpty):
		return g.offsets.removeExpired(nowMs, retMs, func(e commitEntry) int64 {
			if g.stateTimestamp >= 0 {
				return g.stateTimestamp
			}
			return e.om.commitTimestamp
		}, nil)
	case g.isConsumerGroup() && g.subscribed != nil:
		return g.offsets.removeExpired(nowMs, retMs, commitTS, g.subscribed)
	case g.protocolType == nil:
		return g.offsets.removeExpired(nowMs, retMs, commitTS, nil)
	}
	return nil
}
