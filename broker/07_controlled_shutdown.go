package broker

import (
	"context"
	"errors"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/isrbroker/isrbroker/broker/security/acl"
	"github.com/isrbroker/isrbroker/zkcoord"
)

// ControlledShutdown: v0-3 (v3 flexible). Broker → controller (K7).
//
// Behavior:
//   - The v0 request header has no client_id (kproto.ParseHeader knows); broker_epoch comes
//     with v2+ (-1 before, which the controller does not check).
//   - Only the active controller answers: the request goes to the controller's event
//     goroutine through ControlledShutdowner (the Admin, *zkcoord.Coordinator, implements
//     it), which moves the broker's leaderships and takes it out of the ISRs it follows in.
//     The answer lists the partitions the broker still leads.
//   - Errors: NOT_CONTROLLER on any other broker or when the controller moved meanwhile,
//     BROKER_NOT_AVAILABLE for a broker that is not live, STALE_BROKER_EPOCH for an older
//     registration, REQUEST_TIMED_OUT when the controller does not answer in time.
//
// Deviations: none known.

func init() { regKey(kmsg.ControlledShutdown, 0, 3, handleControlledShutdown) }

// ControlledShutdowner is the controller side of ControlledShutdown (Deps.ControlledShutdown);
// *zkcoord.Coordinator implements it.
type ControlledShutdowner interface {
	ControlledShutdown(ctx context.Context, brokerID int32, brokerEpoch int64) ([]zkcoord.TopicPartition, error)
}

// controlledShutdownTimeout bounds the wait for the controller's answer; the requesting
// broker waits controller.socket.timeout.ms (30 s by default) for the response.
const controlledShutdownTimeout = 25 * time.Second

func handleControlledShutdown(s *Server, r *request, kreq kmsg.Request) {
	req := kreq.(*kmsg.ControlledShutdownRequest)
	resp := req.ResponseKind().(*kmsg.ControlledShutdownResponse)
	if s.authz.deniedCluster(r, acl.OpClusterAction) { // docs/acls.md
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		r.respond(resp)
		return
	}
	cs := s.deps.ControlledShutdown
	if cs == nil {
		resp.ErrorCode = kerr.NotController.Code
		r.respond(resp)
		return
	}
	epoch := int64(-1)
	if req.Version >= 2 {
		epoch = req.BrokerEpoch
	}
	log := r.log().WithFields(logrus.Fields{"shuttingDownBroker": req.BrokerID, "brokerEpoch": epoch})
	if !s.goHandler(r.log(), func() {
		ctx, cancel := context.WithTimeout(s.ctx, controlledShutdownTimeout)
		defer cancel()
		remaining, err := cs.ControlledShutdown(ctx, req.BrokerID, epoch)
		resp.ErrorCode = controlledShutdownErrorCode(err)
		if err != nil {
			log.WithError(err).Info("controlled shutdown refused")
		} else {
			log.WithField("remaining", len(remaining)).Info("controlled shutdown processed")
		}
		for _, tp := range remaining {
			p := kmsg.NewControlledShutdownResponsePartitionsRemaining()
			p.Topic, p.Partition = tp.Topic, tp.Partition
			resp.PartitionsRemaining = append(resp.PartitionsRemaining, p)
		}
		r.respond(resp)
	}) {
		resp.ErrorCode = kerr.RequestTimedOut.Code
		r.respond(resp)
	}
}

func controlledShutdownErrorCode(err error) int16 {
	switch {
	case err == nil:
		return 0
	case errors.Is(err, zkcoord.ErrNotController):
		return kerr.NotController.Code
	case errors.Is(err, zkcoord.ErrBrokerNotAvailable):
		return kerr.BrokerNotAvailable.Code
	case errors.Is(err, zkcoord.ErrStaleBrokerEpoch):
		return kerr.StaleBrokerEpoch.Code
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return kerr.RequestTimedOut.Code
	}
	return kerr.UnknownServerError.Code
}
