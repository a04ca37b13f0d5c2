package groupcoord

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/isrbroker/isrbroker/broker/security/acl"
	"github.com/isrbroker/isrbroker/zkcoord"
)

// FindCoordinator: v0-3 (v3 flexible).
//
// Behavior (KafkaApis.handleFindCoordinatorRequest, docs/groups.md §1):
//   - Key type 0 (group, the only one of v0): the coordinator is the leader of
//     __consumer_offsets partition Utils.abs(key.hashCode) % partitions, answered with its
//     endpoint on the listener the request came in on. No live leader yet →
//     COORDINATOR_NOT_AVAILABLE (node -1); clients retry.
//   - __consumer_offsets does not exist: it is created here, and only here, through the
//     Admin with offsets.topic.num.partitions partitions, replication factor
//     offsets.topic.replication.factor and the configs cleanup.policy=compact,
//     segment.bytes=offsets.topic.segment.bytes, compression.type=producer; the answer is
//     COORDINATOR_NOT_AVAILABLE until its partitions have leaders. While fewer brokers are
//     alive than the replication factor it is not created and the answer is
//     COORDINATOR_NOT_AVAILABLE (Kafka 2.4's createInternalTopic).
//   - Any other key type → INVALID_REQUEST.
//
// Deviations: key type 1 (transaction) → TRANSACTIONAL_ID_AUTHORIZATION_FAILED: isrbroker has
// no transaction coordinator, and this is what Kafka 2.4 answers a client that may not use the
// transactional id; it is not retriable, so a transactional producer fails at once instead of
// looping on COORDINATOR_NOT_AVAILABLE (the same answer InitProducerId gives).

func init() { register(kmsg.FindCoordinator, 0, 3, handleFindCoordinator) }

// createOffsetsTopicTimeout bounds the ZooKeeper writes of the offsets topic's creation.
const createOffsetsTopicTimeout = 10 * time.Second

func handleFindCoordinator(c *Coordinator, r *Request, kreq kmsg.Request, respond func(kmsg.Response)) {
	req := kreq.(*kmsg.FindCoordinatorRequest)
	answer := func(code int16, n Node) {
		resp := req.ResponseKind().(*kmsg.FindCoordinatorResponse)
		resp.ErrorCode = code
		resp.NodeID, resp.Host, resp.Port = n.ID, n.Host, n.Port
		if e := kerr.ErrorForCode(code); e != nil {
			msg := e.Error()
			resp.ErrorMessage = &msg
		}
		respond(resp)
	}
	noNode := Node{ID: -1, Host: "", Port: -1}
	keyType := int8(0)
	if req.Version >= 1 {
		keyType = req.CoordinatorType
	}
	switch keyType {
	case 0:
		if !r.allowed(acl.OpDescribe, acl.ResourceGroup, req.CoordinatorKey) { // docs/acls.md
			answer(errGroupAuthFailed, noNode)
			return
		}
	case 1:
		answer(errTransactionalIDAuthFailed, noNode)
		return
	default:
		answer(errInvalidRequest, noNode)
		return
	}
	n, code := c.FindCoordinator(req.CoordinatorKey, r.Listener, r.Log, func(code int16) { answer(code, noNode) })
	if code < 0 {
		return // answered once the creation attempt is over
	}
	if code != errNone {
		answer(code, noNode)
		return
	}
	answer(errNone, n)
}

// FindCoordinator returns the coordinator of groupID on listener, or an error code. When it
// starts creating __consumer_offsets it returns code -1 and calls later(code) when done.
func (c *Coordinator) FindCoordinator(groupID, listener string, log logrus.FieldLogger, later func(int16)) (Node, int16) {
	if c.meta.PartitionCount(OffsetsTopic) > 0 {
		n, ok := c.meta.Leader(OffsetsTopic, c.PartitionFor(groupID), listener)
		if !ok {
			return Node{}, errCoordinatorNotAvailable
		}
		return n, errNone
	}
	rf := c.cfg.OffsetsTopicReplicationFactor
	if alive := c.meta.AliveBrokers(); alive < int(rf) {
		log.WithFields(logrus.Fields{"liveBrokers": alive, "replicationFactor": rf}).
			Error("number of alive brokers does not meet the required replication factor for the offsets topic " +
				"(offsets.topic.replication.factor); this can be ignored while the cluster is starting up")
		return Node{}, errCoordinatorNotAvailable
	}
	c.mu.Lock()
	if !c.active || c.creating || c.admin == nil {
		c.mu.Unlock()
		return Node{}, errCoordinatorNotAvailable
	}
	c.creating = true
	c.wg.Add(1)
	c.mu.Unlock()
	go func() {
		defer c.wg.Done()
		defer func() {
			c.mu.Lock()
			c.creating = false
			c.mu.Unlock()
		}()
		ctx, cancel := context.WithTimeout(c.ctx, createOffsetsTopicTimeout)
		defer cancel()
		_, err := c.admin.CreateTopic(ctx, c.offsetsTopicSpec(), false)
		switch {
		case err == nil:
			log.WithFields(logrus.Fields{"partitions": c.cfg.OffsetsTopicNumPartitions, "replicationFactor": rf}).Info("created " + OffsetsTopic)
		case errors.Is(err, zkcoord.ErrTopicExists):
		default:
			log.WithError(err).Warn("creating " + OffsetsTopic + " failed")
		}
		later(errCoordinatorNotAvailable)
	}()
	return Node{}, -1
}

// offsetsTopicSpec is __consumer_offsets as GroupCoordinator.offsetsTopicConfigs describes it.
func (c *Coordinator) offsetsTopicSpec() zkcoord.TopicSpec {
	return zkcoord.TopicSpec{
		Name:              OffsetsTopic,
		NumPartitions:     c.cfg.OffsetsTopicNumPartitions,
		ReplicationFactor: c.cfg.OffsetsTopicReplicationFactor,
		Configs: map[string]string{
			"cleanup.policy":   "compact",
			"segment.bytes":    strconv.FormatInt(int64(c.cfg.OffsetsTopicSegmentBytes), 10),
			"compression.type": "producer",
		},
	}
}
