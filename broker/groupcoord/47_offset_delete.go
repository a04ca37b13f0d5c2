package groupcoord

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/isrbroker/isrbroker/broker/security/acl"
)

// OffsetDelete: v0 (KIP-496).
//
// Behavior (GroupCoordinator.handleDeleteOffsets):
//   - Group status errors are top-level (the empty group id is INVALID_GROUP_ID). Unknown or
//     Dead group → GROUP_ID_NOT_FOUND (NOT_COORDINATOR if the partition moved away).
//   - Empty group: every named partition's offset is removed and tombstoned.
//   - A consumer group with members: partitions of topics its members subscribe to →
//     GROUP_SUBSCRIBED_TO_TOPIC, the others are deleted. Any other group with members →
//     NON_EMPTY_GROUP (top-level).
//   - Partitions the metadata cache does not know → UNKNOWN_TOPIC_OR_PARTITION.
//
// Deviations: none.

func init() { register(kmsg.OffsetDelete, 0, 0, handleOffsetDelete) }

func handleOffsetDelete(c *Coordinator, r *Request, kreq kmsg.Request, respond func(kmsg.Response)) {
	req := kreq.(*kmsg.OffsetDeleteRequest)
	resp := req.ResponseKind().(*kmsg.OffsetDeleteResponse)
	// DELETE on the group, READ on each topic (docs/acls.md).
	if !r.allowed(acl.OpDelete, acl.ResourceGroup, req.Group) {
		resp.ErrorCode = errGroupAuthFailed
		respond(resp)
		return
	}
	codes := make(map[tp]int16)
	var tps []tp
	for _, t := range req.Topics {
		readable := r.allowed(acl.OpRead, acl.ResourceTopic, t.Topic)
		for _, p := range t.Partitions {
			k := tp{t.Topic, p.Partition}
			if !readable {
				codes[k] = errTopicAuthFailed
				continue
			}
			if c.meta != nil && !c.meta.HasPartition(t.Topic, p.Partition) {
				codes[k] = errUnknownTopicOrPartition
				continue
			}
			tps = append(tps, k)
		}
	}
	top, partCodes := c.DeleteOffsets(req.Group, tps)
	if top != errNone {
		resp.ErrorCode = top
		respond(resp)
		return
	}
	for k, v := range partCodes {
		codes[k] = v
	}
	for _, t := range req.Topics {
		rt := kmsg.NewOffsetDeleteResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetDeleteResponseTopicPartition()
			rp.Partition = p.Partition
			rp.ErrorCode = codes[tp{t.Topic, p.Partition}]
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	respond(resp)
}

// DeleteOffsets is GroupCoordinator.handleDeleteOffsets.
func (c *Coordinator) DeleteOffsets(groupID string, tps []tp) (int16, map[tp]int16) {
	if code := c.validateGroupStatus(groupID, false); code != errNone {
		return code, nil
	}
	g := c.groupManager.getGroup(groupID)
	if g == nil {
		return c.notFoundCode(groupID), nil
	}
	codes := make(map[tp]int16)
	var eligible []tp
	top := errNone
	g.inLock(func() {
		switch {
		case g.is(stateDead):
			top = -1
		case g.is(stateEmpty):
			eligible = tps
		case g.isConsumerGroup():
			for _, k := range tps {
				if g.isSubscribedToTopic(k.topic) {
					codes[k] = errGroupSubscribedToTopic
				} else {
					eligible = append(eligible, k)
				}
			}
		default:
			top = errNonEmptyGroup
		}
	})
	if top == -1 {
		return c.notFoundCode(groupID), nil
	}
	if top != errNone {
		return top, nil
	}
	if len(eligible) > 0 {
		n := c.groupManager.cleanupGroupMetadata([]*group{g}, func(g *group) map[tp]offsetAndMetadata { return g.offsets.removeOffsets(eligible) })
		c.metrics.offsetDeletions.Mark(int64(n))
		for _, k := range eligible {
			codes[k] = errNone
		}
	}
	return errNone, codes
}
