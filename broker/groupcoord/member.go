package groupcoord

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// This file holds a group member (Kafka's MemberMetadata) and the answers its parked JoinGroup
// and SyncGroup get (JoinGroupResult, SyncGroupResult).

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
