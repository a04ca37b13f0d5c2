package groupcoord

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/isrbroker/isrbroker/broker/security/acl"
)

// OffsetCommit: v0-8 (v8 flexible).
//
// Behavior (KafkaApis.handleOffsetCommitRequest, GroupCoordinator.handleCommitOffsets,
// docs/groups.md §5):
//   - Partitions the metadata cache does not know → UNKNOWN_TOPIC_OR_PARTITION; the rest go
//     to the coordinator. Group status errors (COORDINATOR_NOT_AVAILABLE,
//     COORDINATOR_LOAD_IN_PROGRESS, NOT_COORDINATOR) apply to every partition; the empty group
//     id is allowed (older clients).
//   - No group and generation < 0 (a "simple consumer", v0-style commit with generation -1):
//     the group is created Empty and the offsets are stored. No group with generation >= 0 →
//     ILLEGAL_GENERATION. Dead → COORDINATOR_NOT_AVAILABLE; a fenced static member →
//     FENCED_INSTANCE_ID; generation < 0 on an Empty group → stored; unknown member →
//     UNKNOWN_MEMBER_ID; another generation → ILLEGAL_GENERATION; Stable or PreparingRebalance
//     → stored (and the member's session extended); CompletingRebalance →
//     REBALANCE_IN_PROGRESS.
//   - Stored = one batch of offset commit records (key v1, value v3; value v1 when a v2-v4
//     retention time gives an expire timestamp) appended with offsets.commit.required.acks
//     and offsets.commit.timeout.ms; the answer (and OffsetFetch's view) waits for the ISR.
//     Metadata longer than offset.metadata.max.bytes → OFFSET_METADATA_TOO_LARGE for that
//     partition. Append errors are mapped as GroupMetadataManager.storeOffsets
//     (COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR, INVALID_COMMIT_OFFSET_SIZE, REQUEST_TIMED_OUT).
//   - Commit timestamp: v1's per-partition timestamp when set, else now.
//
// Deviations: v0 commits are stored in __consumer_offsets like v1+ (Kafka 2.4 writes them to
// ZooKeeper under /consumers; isrbroker keeps one offset store). No throttling.

func init() { register(kmsg.OffsetCommit, 0, 8, handleOffsetCommit) }

func handleOffsetCommit(c *Coordinator, r *Request, kreq kmsg.Request, respond func(kmsg.Response)) {
	req := kreq.(*kmsg.OffsetCommitRequest)
	now := millis(c.now())
	codes := make(map[tp]int16)
	offsets := make(map[tp]offsetAndMetadata)
	// Authorization (docs/acls.md): READ on the group, else every partition fails; READ on
	// each topic.
	groupOK := r.allowed(acl.OpRead, acl.ResourceGroup, req.Group)
	for _, t := range req.Topics {
		topicOK := groupOK && r.allowed(acl.OpRead, acl.ResourceTopic, t.Topic)
		for _, p := range t.Partitions {
			k := tp{t.Topic, p.Partition}
			if !groupOK {
				codes[k] = errGroupAuthFailed
				continue
			}
			if !topicOK {
				codes[k] = errTopicAuthFailed
				continue
			}
			if c.meta != nil && !c.meta.HasPartition(t.Topic, p.Partition) {
				codes[k] = errUnknownTopicOrPartition
				continue
			}
			om := offsetAndMetadata{offset: p.Offset, leaderEpoch: -1, commitTimestamp: now, expireTimestamp: -1}
			if p.Metadata != nil {
				om.metadata = *p.Metadata
			}
			if req.Version >= 6 && p.LeaderEpoch >= 0 {
				om.leaderEpoch = p.LeaderEpoch
			}
			if req.Version == 1 && p.Timestamp != -1 {
				om.commitTimestamp = p.Timestamp
			}
			if req.Version >= 2 && req.Version <= 4 && req.RetentionTimeMillis != -1 {
				om.expireTimestamp = now + req.RetentionTimeMillis
			}
			offsets[k] = om
		}
	}
	reply := func(status map[tp]int16) {
		for k, v := range status {
			codes[k] = v
		}
		resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
		for _, t := range req.Topics {
			rt := kmsg.NewOffsetCommitResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewOffsetCommitResponseTopicPartition()
				rp.Partition = p.Partition
				code, ok := codes[tp{t.Topic, p.Partition}]
				if !ok {
					code = errUnknownServer
				}
				rp.ErrorCode = code
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		respond(resp)
	}
	if len(offsets) == 0 {
		reply(nil)
		return
	}
	generation, memberID := int32(-1), ""
	var instanceID *string
	if req.Version >= 1 {
		generation, memberID = req.Generation, req.MemberID
	}
	if req.Version >= 7 {
		instanceID = req.InstanceID
	}
	c.CommitOffsets(req.Group, memberID, instanceID, generation, offsets, reply)
}

// CommitOffsets is GroupCoordinator.handleCommitOffsets; cb is called exactly once.
func (c *Coordinator) CommitOffsets(groupID, memberID string, instanceID *string, generation int32, offsets map[tp]offsetAndMetadata, cb func(map[tp]int16)) {
	all := func(code int16) map[tp]int16 {
		out := make(map[tp]int16, len(offsets))
		for k := range offsets {
			out[k] = code
		}
		return out
	}
	if code := c.validateGroupStatus(groupID, true); code != errNone {
		cb(all(code))
		return
	}
	g := c.groupManager.getGroup(groupID)
	if g == nil {
		if generation >= 0 {
			// A request from an older generation of a group that is gone.
			cb(all(errIllegalGeneration))
			return
		}
		// The group does not use Kafka's group management: offsets only.
		if g = c.groupManager.addGroup(newGroup(groupID, c.now())); g == nil {
			cb(all(errNotCoordinator))
			return
		}
	}
	g.inLock(func() {
		switch {
		case g.is(stateDead):
			cb(all(errCoordinatorNotAvailable))
		case g.isStaticMemberFenced(memberID, instanceID):
			cb(all(errFencedInstanceID))
		case generation < 0 && g.is(stateEmpty):
			c.groupManager.storeOffsets(g, memberID, offsets, cb)
		case !g.has(memberID):
			cb(all(errUnknownMemberID))
		case generation != g.generation:
			cb(all(errIllegalGeneration))
		case g.is(stateStable) || g.is(statePreparingRebalance):
			// PreparingRebalance still takes commits: the heartbeat answer tells the member
			// to rejoin.
			c.rebalancer.completeAndScheduleNextHeartbeatExpiration(g, g.members[memberID])
			c.groupManager.storeOffsets(g, memberID, offsets, cb)
		default: // CompletingRebalance
			cb(all(errRebalanceInProgress))
		}
	})
}
