package broker

import (
	"context"
	"math"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/isrbroker/isrbroker/broker/security/acl"
)

// InitProducerId: v0-4 (v2+ flexible). Producer ids for idempotent producers (kgo is
// idempotent by default and sends v4; docs/kafka-facts.md §10).
//
// Behavior:
//   - A null or empty transactional id gets the next producer id of this broker's current
//     block, epoch 0. Blocks of 1000 ids come from /latest_producer_id_block through
//     ProducerIDAllocator (zkcoord/agent's ProducerIDs implements it), like Kafka 2.4's
//     ProducerIdManager; a new block is taken when the current one is exhausted, so ids
//     are unique across brokers and restarts.
//   - v3+ (KIP-360): a request carrying its current producer id and epoch gets the same id
//     with epoch+1 (a new id, epoch 0, when the epoch is exhausted); the idempotent-dedup
//     state of the partitions restarts at the new epoch. Only one of id / epoch set is
//     INVALID_REQUEST. (Kafka itself hands a null-transactional-id producer a fresh id;
//     either way the client gets a usable id/epoch pair.)
//   - Errors: COORDINATOR_NOT_AVAILABLE when no allocator is wired or ZooKeeper fails
//     (retriable: clients retry), REQUEST_TIMED_OUT when the block allocation times out.
//
// Deviations: transactions are not supported. A non-null, non-empty transactional id is
// answered TRANSACTIONAL_ID_AUTHORIZATION_FAILED (53): it is non-retriable, so kgo and
// librdkafka fail the transactional producer at once with an error naming the transactional
// id instead of retrying forever (a retriable COORDINATOR_NOT_AVAILABLE would loop). In
// practice transactional clients stop earlier: FindCoordinator (key 10) is not advertised.

func init() { regKey(kmsg.InitProducerID, 0, 4, handleInitProducerID) }

// ProducerIDAllocator hands out blocks of producer ids [start, end] that no other broker
// gets (Deps.ProducerIDs); *zkcoord/agent.ProducerIDs implements it.
type ProducerIDAllocator interface {
	AllocateProducerIDBlock(ctx context.Context) (start, end int64, err error)
}

// producerIDAllocTimeout bounds one block allocation in ZooKeeper.
const producerIDAllocTimeout = 10 * time.Second

// producerIDs is the broker's current producer-id block. mu is held across a block
// allocation so that concurrent InitProducerId requests never take two blocks at once.
type producerIDs struct {
	mu        sync.Mutex
	next, end int64 // next id to hand out; last id of the block (next > end: none left)
	valid     bool
}

func (p *producerIDs) nextID(ctx context.Context, alloc ProducerIDAllocator) (int64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.valid || p.next > p.end {
		start, end, err := alloc.AllocateProducerIDBlock(ctx)
		if err != nil {
			return -1, err
		}
		p.next, p.end, p.valid = start, end, true
	}
	id := p.next
	p.next++
	return id, nil
}

func handleInitProducerID(s *Server, r *request, kreq kmsg.Request) {
	req := kreq.(*kmsg.InitProducerIDRequest)
	resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	if req.TransactionalID != nil && *req.TransactionalID != "" {
		resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
		r.respond(resp)
		return
	}
	if s.authz.deniedCluster(r, acl.OpIdempotentWrite) { // an idempotent producer (docs/acls.md)
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		r.respond(resp)
		return
	}
	pid, epoch := int64(-1), int16(-1)
	if req.Version >= 3 {
		pid, epoch = req.ProducerID, req.ProducerEpoch
	}
	if (pid < 0) != (epoch < 0) {
		resp.ErrorCode = kerr.InvalidRequest.Code
		r.respond(resp)
		return
	}
	if pid >= 0 && epoch < math.MaxInt16-1 {
		// KIP-360 epoch bump of an existing idempotent producer.
		resp.ProducerID, resp.ProducerEpoch = pid, epoch+1
		r.respond(resp)
		return
	}
	alloc := s.deps.ProducerIDs
	if alloc == nil {
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		r.respond(resp)
		return
	}
	if !s.goHandler(r.log(), func() {
		ctx, cancel := context.WithTimeout(s.ctx, producerIDAllocTimeout)
		defer cancel()
		id, err := s.pids.nextID(ctx, alloc)
		switch {
		case err == nil:
			resp.ProducerID, resp.ProducerEpoch = id, 0
		case ctx.Err() != nil:
			resp.ErrorCode = kerr.RequestTimedOut.Code
		default:
			resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		}
		if err != nil {
			r.log().WithError(err).Warn("producer id block allocation failed")
		} else {
			r.log().WithFields(logrus.Fields{"producerId": id}).Debug("producer id assigned")
		}
		r.respond(resp)
	}) {
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		r.respond(resp)
	}
}
