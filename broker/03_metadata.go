package broker

import (
	"context"
	"errors"
	"sort"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/isrbroker/isrbroker/broker/security/acl"
	"github.com/isrbroker/isrbroker/zkcoord"
)

// Metadata: v0-9 (v9 flexible).
//
// Behavior:
//   - Answers from the metadata cache only (fed by UpdateMetadata, like Kafka), never
//     blocking on an update.
//   - Topics: v0 empty list = all topics; v1+ null = all, empty = none.
//   - Brokers: every live broker's endpoint for the listener this request came in on
//     (brokers without that listener are left out). cluster_id from the config,
//     controller_id from the last UpdateMetadata (-1 before the first).
//   - A partition without a live leader → LEADER_NOT_AVAILABLE on the partition, leader -1.
//   - Internal topics (__consumer_offsets) are reported with is_internal=true, named or in an
//     all-topics answer, as Kafka 2.4 does (clients skip them by that flag: franz-go's regex
//     consumers, `isrbroker topics --list --exclude-internal`); they are never auto-created
//     here (FindCoordinator creates __consumer_offsets with the offsets.topic.* settings).
//   - An unknown topic is auto-created (num.partitions, default.replication.factor) when
//     auto.create.topics.enable and (v < 4 or allow_auto_topic_creation) and the name is
//     valid; it is answered LEADER_NOT_AVAILABLE (the client retries). Otherwise
//     UNKNOWN_TOPIC_OR_PARTITION; an invalid name → INVALID_TOPIC_EXCEPTION.
//
// Deviations: a request naming __consumer_offsets before it exists gets
// UNKNOWN_TOPIC_OR_PARTITION (Kafka 2.4 would create it with the offsets.topic.* settings;
// here only FindCoordinator does). v10+ (topic ids)
// is not advertised: isrbroker has no topic ids (docs/compatibility.md).
//
// Authorized operations (v8+): isrbroker has no authorizer, so, like Kafka 2.4 without
// one, a request that includes them gets every operation the resource type supports
// (AuthorizerUtils.supportedOperations), and 0 for the cluster when not requested.

func init() { regKey(kmsg.Metadata, 0, 9, handleMetadata) }

// autoCreateTimeout bounds the ZooKeeper writes of one auto-creation.
const autoCreateTimeout = 10 * time.Second

func handleMetadata(s *Server, r *request, kreq kmsg.Request) {
	req := kreq.(*kmsg.MetadataRequest)
	snap := s.cache.Snapshot()

	allTopics := req.Topics == nil || (req.Version == 0 && len(req.Topics) == 0)
	// Authorization (docs/acls.md): an all-topics answer leaves out the topics the caller may
	// not DESCRIBE; a named one answers them TOPIC_AUTHORIZATION_FAILED (denied), as does a
	// topic to auto-create without CREATE on the cluster or on the topic.
	describe := s.authz.topicCheck(r, acl.OpDescribe)
	var names []*string
	if allTopics {
		for _, t := range snap.TopicNames() {
			if describe(t) {
				names = append(names, &t) // internal topics too, with is_internal=true (Kafka 2.4)
			}
		}
	} else {
		for i := range req.Topics {
			names = append(names, req.Topics[i].Topic)
		}
	}
	allowCreate := s.cfg.AutoCreateTopics && s.deps.Admin != nil && (req.Version < 4 || req.AllowAutoTopicCreation)
	var denied map[string]bool
	if !allTopics && s.deps.ACLs != nil {
		createAny := allowCreate && s.authz.authorizedCluster(r, acl.OpCreate)
		denied = map[string]bool{}
		for _, n := range names {
			switch {
			case n == nil:
			case !describe(*n):
				denied[*n] = true
			case allowCreate && !createAny && snap.Topics[*n] == nil && validTopicName(*n) && !s.authz.authorized(r, acl.OpCreate, acl.ResourceTopic, *n):
				denied[*n] = true
			}
		}
	}
	var toCreate []string
	if !allTopics && allowCreate {
		for _, n := range names {
			if n != nil && validTopicName(*n) && !isInternalTopic(*n) && snap.Topics[*n] == nil && !denied[*n] {
				toCreate = append(toCreate, *n)
			}
		}
	}
	if len(toCreate) == 0 {
		r.respond(metadataResponse(s, r, req, snap, names, nil, denied))
		return
	}
	// Creating writes ZooKeeper: let the connection's reader go on meanwhile.
	ok := s.goHandler(r.log(), func() {
		created := make(map[string]int16, len(toCreate))
		for _, name := range toCreate {
			created[name] = s.autoCreate(r.log(), name)
		}
		r.respond(metadataResponse(s, r, req, snap, names, created, denied))
	})
	if !ok {
		r.respond(metadataResponse(s, r, req, snap, names, nil, denied))
	}
}

// autoCreate creates topic with the broker defaults and returns the error code to answer
// for it: LEADER_NOT_AVAILABLE when created (or created concurrently), else the failure.
func (s *Server) autoCreate(log logrus.FieldLogger, topic string) int16 {
	ctx, cancel := context.WithTimeout(s.ctx, autoCreateTimeout)
	defer cancel()
	_, err := s.deps.Admin.CreateTopic(ctx, zkcoord.TopicSpec{
		Name:              topic,
		NumPartitions:     s.cfg.NumPartitions,
		ReplicationFactor: s.cfg.DefaultReplicationFactor,
	}, false)
	if err == nil || errors.Is(err, zkcoord.ErrTopicExists) {
		log.WithField("topic", topic).Info("auto-created topic")
		return kerr.LeaderNotAvailable.Code
	}
	code, _ := adminErrorCode(err)
	requestWarnings.Warn(log.WithField("topic", topic).WithError(err), topic, "auto-creating topic failed")
	return code
}

func metadataResponse(s *Server, r *request, req *kmsg.MetadataRequest, snap *MetadataSnapshot, names []*string, created map[string]int16, denied map[string]bool) *kmsg.MetadataResponse {
	resp := req.ResponseKind().(*kmsg.MetadataResponse)
	if s.cfg.ClusterID != "" {
		cid := s.cfg.ClusterID
		resp.ClusterID = &cid
	}
	resp.ControllerID = snap.ControllerID
	resp.AuthorizedOperations = 0
	if req.Version >= 8 && req.IncludeClusterAuthorizedOperations && s.authz.authorizedCluster(r, acl.OpDescribe) {
		resp.AuthorizedOperations = s.authz.authorizedOps(r, acl.ResourceCluster, acl.ClusterName) // KIP-430
	}
	for _, b := range snap.AliveBrokers() {
		ep, ok := b.Endpoint(r.c.listener)
		if !ok {
			continue
		}
		rb := kmsg.NewMetadataResponseBroker()
		rb.NodeID, rb.Host, rb.Port, rb.Rack = b.ID, ep.Host, ep.Port, b.Rack
		resp.Brokers = append(resp.Brokers, rb)
	}
	resp.Topics = make([]kmsg.MetadataResponseTopic, 0, len(names))
	for _, n := range names {
		rt := kmsg.NewMetadataResponseTopic()
		rt.Topic = n
		switch {
		case n == nil:
			rt.ErrorCode = kerr.UnknownTopicOrPartition.Code
		case denied[*n]:
			rt.ErrorCode = kerr.TopicAuthorizationFailed.Code // is_internal false, no partitions, existing or not
		case snap.Topics[*n] != nil:
			rt.IsInternal = isInternalTopic(*n)
			rt.Partitions = metadataPartitions(snap, snap.Topics[*n])
		case !validTopicName(*n):
			rt.ErrorCode = kerr.InvalidTopicException.Code
		default:
			if code, ok := created[*n]; ok {
				rt.ErrorCode = code
			} else {
				rt.ErrorCode = kerr.UnknownTopicOrPartition.Code
			}
		}
		if req.Version >= 8 && req.IncludeTopicAuthorizedOperations && n != nil && !denied[*n] {
			rt.AuthorizedOperations = s.authz.authorizedOps(r, acl.ResourceTopic, *n) // KIP-430
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

func metadataPartitions(snap *MetadataSnapshot, parts map[int32]PartitionInfo) []kmsg.MetadataResponseTopicPartition {
	out := make([]kmsg.MetadataResponseTopicPartition, 0, len(parts))
	for _, p := range parts {
		rp := kmsg.NewMetadataResponseTopicPartition()
		rp.Partition = p.Partition
		rp.Leader = p.Leader
		rp.LeaderEpoch = p.LeaderEpoch
		rp.Replicas = nonNil(p.Replicas)
		rp.ISR = nonNil(p.ISR)
		rp.OfflineReplicas = nonNil(p.OfflineReplicas)
		if _, alive := snap.Brokers[p.Leader]; p.Leader < 0 || !alive {
			rp.ErrorCode = kerr.LeaderNotAvailable.Code
			rp.Leader = NoLeader
		}
		out = append(out, rp)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Partition < out[j].Partition })
	return out
}

func nonNil(s []int32) []int32 {
	if s == nil {
		return []int32{}
	}
	return s
}
