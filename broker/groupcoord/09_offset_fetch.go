package groupcoord

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/isrbroker/isrbroker/broker/security/acl"
)

// OffsetFetch: v0-6 (v6 flexible).
//
// Behavior (KafkaApis.handleOffsetFetchRequest, GroupCoordinator.handleFetchOffsets,
// GroupMetadataManager.getOffsets):
//   - Group status errors (COORDINATOR_NOT_AVAILABLE, COORDINATOR_LOAD_IN_PROGRESS,
//     NOT_COORDINATOR): v2+ as the top-level error with no partitions, v0-1 on every requested
//     partition. The empty group id is allowed.
//   - Null topics (v2+) = every partition the group has an offset for.
//   - A partition without a committed offset (or an unknown or Dead group) → offset -1,
//     metadata "", no error. Offsets are returned whatever the group's state (groups that only
//     store offsets have no members). Only offsets whose append the ISR acknowledged are
//     visible.
//
// Deviations: v0 reads __consumer_offsets like v1+ (Kafka 2.4 reads ZooKeeper for v0; see
// OffsetCommit). require_stable (v7) is not served.

func init() { register(kmsg.OffsetFetch, 0, 6, handleOffsetFetch) }

func handleOffsetFetch(c *Coordinator, r *Request, kreq kmsg.Request, respond func(kmsg.Response)) {
	req := kreq.(*kmsg.OffsetFetchRequest)
	resp := req.ResponseKind().(*kmsg.OffsetFetchResponse)
	var wanted, denied []tp
	all := req.Topics == nil && req.Version >= 2
	// Authorization (docs/acls.md): DESCRIBE on the group; DESCRIBE on each topic, else the
	// partition answers TOPIC_AUTHORIZATION_FAILED (the all-partitions form leaves it out).
	for _, t := range req.Topics {
		ok := r.allowed(acl.OpDescribe, acl.ResourceTopic, t.Topic)
		for _, p := range t.Partitions {
			if ok {
				wanted = append(wanted, tp{t.Topic, p})
			} else {
				denied = append(denied, tp{t.Topic, p})
			}
		}
	}
	code, offsets := errGroupAuthFailed, map[tp]fetchedOffset(nil)
	if r.allowed(acl.OpDescribe, acl.ResourceGroup, req.Group) {
		code, offsets = c.FetchOffsets(req.Group, all, wanted)
	}
	if all {
		for k := range offsets {
			if !r.allowed(acl.OpDescribe, acl.ResourceTopic, k.topic) {
				delete(offsets, k)
			}
		}
	}
	if code == errNone && len(denied) > 0 {
		for _, k := range denied {
			offsets[k] = fetchedOffset{offset: -1, leaderEpoch: -1, err: errTopicAuthFailed}
		}
		wanted = requestPartitions(req)
	}
	if code != errNone {
		wanted = append(wanted, denied...)
		if req.Version >= 2 {
			resp.ErrorCode = code
			respond(resp)
			return
		}
		offsets = make(map[tp]fetchedOffset, len(wanted))
		for _, k := range wanted {
			offsets[k] = fetchedOffset{offset: -1, leaderEpoch: -1, err: code}
		}
	}
	byTopic := make(map[string]int)
	for _, k := range orderedFetch(wanted, offsets, all) {
		f := offsets[k]
		i, ok := byTopic[k.topic]
		if !ok {
			i = len(resp.Topics)
			byTopic[k.topic] = i
			rt := kmsg.NewOffsetFetchResponseTopic()
			rt.Topic = k.topic
			resp.Topics = append(resp.Topics, rt)
		}
		rp := kmsg.NewOffsetFetchResponseTopicPartition()
		rp.Partition = k.partition
		rp.Offset = f.offset
		rp.LeaderEpoch = f.leaderEpoch
		md := f.metadata
		rp.Metadata = &md
		rp.ErrorCode = f.err
		resp.Topics[i].Partitions = append(resp.Topics[i].Partitions, rp)
	}
	respond(resp)
}

// requestPartitions lists the request's partitions in its order.
func requestPartitions(req *kmsg.OffsetFetchRequest) []tp {
	var out []tp
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			out = append(out, tp{t.Topic, p})
		}
	}
	return out
}

func orderedFetch(wanted []tp, offsets map[tp]fetchedOffset, all bool) []tp {
	if !all {
		return wanted
	}
	return sortedTPs(offsets)
}

type fetchedOffset struct {
	offset      int64
	leaderEpoch int32
	metadata    string
	err         int16
}

// FetchOffsets is GroupCoordinator.handleFetchOffsets: the group-level error, or the offsets of
// wanted (all: every offset of the group).
func (c *Coordinator) FetchOffsets(groupID string, all bool, wanted []tp) (int16, map[tp]fetchedOffset) {
	if code := c.validateGroupStatus(groupID, true); code != errNone {
		return code, nil
	}
	return errNone, c.groupManager.getOffsets(groupID, all, wanted)
}
