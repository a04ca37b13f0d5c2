package broker

import (
	"context"
	"fmt"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/isrbroker/isrbroker/broker/config/configdef"
	"github.com/isrbroker/isrbroker/broker/security/acl"
	"github.com/isrbroker/isrbroker/zkcoord"
)

// CreateTopics: v0-6 (v5+ flexible).
//
// Behavior:
//   - Per topic: an invalid name → INVALID_TOPIC_EXCEPTION; a name listed twice →
//     INVALID_REQUEST; a replica assignment together with num_partitions or
//     replication_factor other than -1 → INVALID_REQUEST; v4+ -1 means the broker default
//     (num.partitions, default.replication.factor).
//   - The coordinator validates and writes ZooKeeper; its errors map to
//     TOPIC_ALREADY_EXISTS, INVALID_PARTITIONS, INVALID_REPLICATION_FACTOR,
//     INVALID_REPLICA_ASSIGNMENT, INVALID_TOPIC_EXCEPTION.
//   - Unless validate_only or timeout_ms <= 0, the answer waits until the metadata cache
//     shows a leader for every new partition (the controller's LeaderAndIsr/UpdateMetadata
//     went round), or the timeout → REQUEST_TIMED_OUT for the topics still waiting.
//
//   - A topic of more than zkcoord.MaxTopicPartitions partitions, or one taking the request
//     above maxRequestPartitions new partitions, → INVALID_PARTITIONS naming the limit, with
//     validate_only too (partition_limits.go; Kafka 2.4 has no limit).
//   - Per-topic configs are checked against configdef's topic keys: an unknown key, a bad
//     value or an unsupported non-default value → INVALID_CONFIG naming the key.
//   - v5+ (KIP-525) answers a created (or validated) topic's num_partitions,
//     replication_factor and every topic config with its value, source, read-only and
//     sensitive flags, as DescribeConfigs would list it (configs_resolve.go, without
//     synonyms, as Kafka 2.4's AdminManager.createTopics); when the broker's config sources
//     cannot be read, topic_config_error_code says why and the configs are left out.
//     A failed topic keeps num_partitions and replication_factor at -1.
//
// Deviations: v6 adds only THROTTLING_QUOTA_EXCEEDED, which isrbroker never answers (no
// controller mutation quota).

func init() { regKey(kmsg.CreateTopics, 0, 6, handleCreateTopics) }

// adminWriteTimeout bounds the ZooKeeper writes of one admin request when the request's
// own timeout is shorter (the write must not be cut half-way because a client is impatient).
const adminWriteTimeout = 30 * time.Second

func handleCreateTopics(s *Server, r *request, kreq kmsg.Request) {
	req := kreq.(*kmsg.CreateTopicsRequest)
	if !s.goHandler(r.log(), func() { createTopics(s, r, req) }) {
		r.respond(createTopicsFailAll(req, kerr.RequestTimedOut.Code))
	}
}

func createTopicsFailAll(req *kmsg.CreateTopicsRequest, code int16) *kmsg.CreateTopicsResponse {
	resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewCreateTopicsResponseTopic()
		rt.Topic, rt.ErrorCode = t.Topic, code
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

func createTopics(s *Server, r *request, req *kmsg.CreateTopicsRequest) {
	resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
	count := map[string]int{}
	for _, t := range req.Topics {
		count[t.Topic]++
	}
	deadline := time.Now().Add(time.Duration(max(req.TimeoutMillis, 0)) * time.Millisecond)
	wctx, wcancel := context.WithTimeout(s.ctx, adminWriteTimeout)
	defer wcancel()

	budget := newPartitionBudget()
	created := map[string]int32{} // topic → partitions, waiting for leaders
	// Authorization (docs/acls.md): CREATE on the cluster, else CREATE on each topic; v5's
	// configs need DESCRIBE_CONFIGS on the topic.
	createAny := s.authz.authorizedCluster(r, acl.OpCreate)
	resp.Topics = make([]kmsg.CreateTopicsResponseTopic, 0, len(req.Topics))
	for i := range req.Topics {
		t := &req.Topics[i]
		rt := kmsg.NewCreateTopicsResponseTopic()
		rt.Topic = t.Topic
		setErr := func(code int16, msg string) {
			rt.ErrorCode = code
			if req.Version >= 1 && msg != "" {
				rt.ErrorMessage = &msg
			}
		}
		spec, code, msg := topicSpec(s, req.Version, t)
		if code == 0 && count[t.Topic] == 1 {
			code, msg = budget.take(t.Topic, int64(spec.NumPartitions), int64(spec.NumPartitions))
		}
		switch {
		case count[t.Topic] > 1:
			setErr(kerr.InvalidRequest.Code, "topic listed more than once in the request")
		case !createAny && !s.authz.authorized(r, acl.OpCreate, acl.ResourceTopic, t.Topic):
			if code == 0 && count[t.Topic] == 1 {
				budget.refund(int64(spec.NumPartitions))
			}
			setErr(kerr.TopicAuthorizationFailed.Code, "")
		case code != 0:
			setErr(code, msg)
		default:
			assign, err := s.deps.Admin.CreateTopic(wctx, spec, req.ValidateOnly)
			if err != nil {
				budget.refund(int64(spec.NumPartitions))
				code, msg := adminErrorCode(err)
				setErr(code, msg)
				r.log().WithField("topic", t.Topic).WithError(err).Info("create topic failed")
				break
			}
			rt.NumPartitions = int32(len(assign))
			if a, ok := assign[0]; ok {
				rt.ReplicationFactor = int16(len(a))
			} else {
				rt.ReplicationFactor = spec.ReplicationFactor
			}
			if req.Version >= 5 {
				if s.authz.authorized(r, acl.OpDescribeConfigs, acl.ResourceTopic, t.Topic) {
					s.createdTopicConfigs(&rt, spec.Configs)
				} else {
					rt.ConfigErrorCode = kerr.TopicAuthorizationFailed.Code
				}
			}
			if !req.ValidateOnly {
				created[t.Topic] = int32(len(assign))
				r.log().WithFields(logrus.Fields{"topic": t.Topic, "partitions": len(assign)}).Info("created topic")
			}
		}
		resp.Topics = append(resp.Topics, rt)
	}

	if len(created) > 0 && req.TimeoutMillis > 0 && !req.ValidateOnly {
		ctx, cancel := context.WithDeadline(s.ctx, deadline)
		defer cancel()
		_ = s.cache.WaitFor(ctx, func(snap *MetadataSnapshot) bool {
			return len(topicsWithoutLeaders(snap, created)) == 0
		})
		pending := topicsWithoutLeaders(s.cache.Snapshot(), created)
		for i := range resp.Topics {
			if pending[resp.Topics[i].Topic] {
				resp.Topics[i].ErrorCode = kerr.RequestTimedOut.Code
				if req.Version >= 1 {
					m := "topic created; its partitions have no leader yet"
					resp.Topics[i].ErrorMessage = &m
				}
			}
		}
	}
	r.respond(resp)
}

// createdTopicConfigs fills a v5+ answer's configs of a topic created with overrides.
func (s *Server) createdTopicConfigs(rt *kmsg.CreateTopicsResponseTopic, overrides map[string]string) {
	ca, err := s.configAdmin()
	var cs *configSources
	if err == nil {
		cs, err = s.configSources(ca)
	}
	if err != nil {
		rt.ConfigErrorCode, _ = configErrorCode(err)
		return
	}
	if overrides == nil {
		overrides = map[string]string{}
	}
	for _, d := range describeTopicConfigs(overrides, cs) {
		c := kmsg.NewCreateTopicsResponseTopicConfig()
		c.Name, c.Value, c.ReadOnly, c.IsSensitive = d.name, d.value, d.readOnly, d.sensitive
		c.Source = int8(d.source)
		rt.Configs = append(rt.Configs, c)
	}
}

// topicsWithoutLeaders returns the topics of want (topic → partition count) some of whose
// partitions the cache does not show with a leader.
func topicsWithoutLeaders(snap *MetadataSnapshot, want map[string]int32) map[string]bool {
	out := map[string]bool{}
	for t, n := range want {
		parts := snap.Topics[t]
		for p := int32(0); p < n; p++ {
			if pi, ok := parts[p]; !ok || pi.Leader < 0 {
				out[t] = true
				break
			}
		}
	}
	return out
}

// topicSpec converts one requested topic, applying broker defaults (v4+ -1) and the
// request-level checks Kafka does before the admin manager.
func topicSpec(s *Server, version int16, t *kmsg.CreateTopicsRequestTopic) (zkcoord.TopicSpec, int16, string) {
	spec := zkcoord.TopicSpec{Name: t.Topic, NumPartitions: t.NumPartitions, ReplicationFactor: t.ReplicationFactor}
	if !validTopicName(t.Topic) {
		return spec, kerr.InvalidTopicException.Code, "invalid topic name"
	}
	if len(t.ReplicaAssignment) > 0 {
		if t.NumPartitions != -1 || t.ReplicationFactor != -1 {
			return spec, kerr.InvalidRequest.Code, "both replica assignment and num_partitions/replication_factor are set"
		}
		if n := len(t.ReplicaAssignment); n > zkcoord.MaxTopicPartitions {
			return spec, kerr.InvalidPartitions.Code, fmt.Sprintf("a replica assignment of %d partitions is above isrbroker's limit of %d partitions per topic.", n, zkcoord.MaxTopicPartitions)
		}
		spec.Assignment = make(map[int32][]int32, len(t.ReplicaAssignment))
		for _, a := range t.ReplicaAssignment {
			if _, dup := spec.Assignment[a.Partition]; dup {
				return spec, kerr.InvalidReplicaAssignment.Code, "partition listed twice in the replica assignment"
			}
			spec.Assignment[a.Partition] = append([]int32(nil), a.Replicas...)
		}
		spec.NumPartitions = int32(len(spec.Assignment))
		spec.ReplicationFactor = int16(len(t.ReplicaAssignment[0].Replicas))
	} else if version >= 4 {
		if spec.NumPartitions == -1 {
			spec.NumPartitions = s.cfg.NumPartitions
		}
		if spec.ReplicationFactor == -1 {
			spec.ReplicationFactor = s.cfg.DefaultReplicationFactor
		}
	}
	if len(t.Configs) > 0 {
		spec.Configs = make(map[string]string, len(t.Configs))
		for _, c := range t.Configs {
			if c.Value == nil {
				return spec, kerr.InvalidRequest.Code, "null value for config " + c.Name
			}
			spec.Configs[c.Name] = *c.Value
		}
		if err := configdef.ValidateTopicConfigs(spec.Configs); err != nil {
			return spec, kerr.InvalidConfig.Code, err.Error()
		}
	}
	return spec, 0, ""
}
