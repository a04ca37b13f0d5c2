package agent

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/isrbroker/isrbroker/zkcoord/zkdata"
	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ControllerLocator is what the controlled shutdown needs from ZooKeeper;
// the coordinator's Reader and Registrar implement it together.
type ControllerLocator interface {
	ControllerID() (int32, error)
	LiveBrokers() ([]zkdata.BrokerInfo, error)
	BrokerEpoch() int64
}

// Requester is one Kafka-protocol connection (broker/kproto's Conn).
type Requester interface {
	Request(ctx context.Context, req kmsg.Request) (kmsg.Response, error)
	Close() error
}

// ShutdownSettings are the controlled.shutdown.* settings (K7) plus what reaching the
// controller needs.
type ShutdownSettings struct {
	BrokerID     int32
	Listener     string        // inter.broker.listener.name
	MaxRetries   int           // controlled.shutdown.max.retries: the number of attempts, as in Kafka
	RetryBackoff time.Duration // controlled.shutdown.retry.backoff.ms
	Timeout      time.Duration // controller.socket.timeout.ms: connect + answer of one attempt
	// Dial connects to the controller (broker/kproto's Dial, passed in by main.go; unit
	// tests pass a fake).
	Dial func(ctx context.Context, addr, clientID string, timeout time.Duration) (Requester, error)
}

// ControlledShutdown is the broker side of K7 (Kafka's KafkaServer.controlledShutdown): it
// finds the controller through ZooKeeper and sends it ControlledShutdown with this
// broker's id and epoch, up to MaxRetries attempts RetryBackoff apart, until the answer has
// no error and no remaining partitions. The broker keeps serving meanwhile, so followers
// fetch from it until the leadership has moved. It returns whether the shutdown was
// acknowledged; the whole call takes at most MaxRetries × (2 × Timeout + RetryBackoff).
func ControlledShutdown(ctx context.Context, zk ControllerLocator, s ShutdownSettings, log logrus.FieldLogger) bool {
	if s.MaxRetries <= 0 {
		log.Warn("controlled shutdown skipped: controlled.shutdown.max.retries is 0")
		return false
	}
	for attempt := 1; attempt <= s.MaxRetries; attempt++ {
		l := log.WithField("attempt", attempt)
		remaining, err := controlledShutdownOnce(ctx, zk, s, l)
		switch {
		case err == nil && len(remaining) == 0:
			l.Info("controlled shutdown succeeded: the controller moved this broker's leaderships")
			return true
		case err != nil:
			l.WithError(err).Warn("controlled shutdown attempt failed")
		default:
			l.WithField("remaining", fmtPartitions(remaining)).
				Warn("controlled shutdown attempt left partitions led by this broker (no other in-sync replica)")
		}
		if attempt == s.MaxRetries {
			break
		}
		t := time.NewTimer(s.RetryBackoff)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			log.WithError(ctx.Err()).Warn("controlled shutdown interrupted")
			return false
		}
	}
	log.WithField("attempts", s.MaxRetries).Warn("controlled shutdown did not complete; proceeding to an unclean shutdown")
	return false
}

// controlledShutdownOnce sends one ControlledShutdown to the current controller.
func controlledShutdownOnce(ctx context.Context, zk ControllerLocator, s ShutdownSettings, log logrus.FieldLogger) ([]kmsg.ControlledShutdownResponsePartitionsRemaining, error) {
	id, err := zk.ControllerID()
	if err != nil {
		return nil, fmt.Errorf("reading /controller: %w", err)
	}
	if id < 0 {
		return nil, errors.New("no controller elected")
	}
	brokers, err := zk.LiveBrokers()
	if err != nil {
		return nil, fmt.Errorf("reading /brokers/ids: %w", err)
	}
	var ep zkdata.Endpoint
	found := false
	for _, b := range brokers {
		if b.ID == id {
			ep, found = b.Endpoint(s.Listener)
			break
		}
	}
	if !found {
		return nil, fmt.Errorf("controller %d has no registered %s endpoint", id, s.Listener)
	}
	addr := net.JoinHostPort(ep.Host, strconv.Itoa(int(ep.Port)))
	log = log.WithFields(logrus.Fields{"controllerId": id, "addr": addr})
	log.Info("sending ControlledShutdown to the controller")
	dctx, cancel := context.WithTimeout(ctx, s.Timeout)
	defer cancel()
	conn, err := s.Dial(dctx, addr, "broker-"+strconv.Itoa(int(s.BrokerID))+"-controlled-shutdown", s.Timeout)
	if err != nil {
		return nil, fmt.Errorf("connecting to controller %d at %s: %w", id, addr, err)
	}
	defer conn.Close()
	req := kmsg.NewPtrControlledShutdownRequest()
	req.Version = 3
	req.BrokerID = s.BrokerID
	req.BrokerEpoch = zk.BrokerEpoch()
	rctx, rcancel := context.WithTimeout(ctx, s.Timeout)
	defer rcancel()
	kresp, err := conn.Request(rctx, req)
	if err != nil {
		return nil, fmt.Errorf("ControlledShutdown to controller %d: %w", id, err)
	}
	resp := kresp.(*kmsg.ControlledShutdownResponse)
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return nil, fmt.Errorf("controller %d answered: %w", id, err)
	}
	return resp.PartitionsRemaining, nil
}

func fmtPartitions(ps []kmsg.ControlledShutdownResponsePartitionsRemaining) string {
	out := ""
	for i, p := range ps {
		if i == 10 {
			return out + fmt.Sprintf(" … (%d in all)", len(ps))
		}
		if i > 0 {
			out += ","
		}
		out += p.Topic + "-" + strconv.Itoa(int(p.Partition))
	}
	return out
}
