package zkcoord

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/isrbroker/isrbroker/broker/wire"
	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Request versions the controller sends (Kafka 2.4, kafka-zk-reference §2).
const (
	leaderAndIsrVersion   = 4
	updateMetadataVersion = 6
	stopReplicaVersion    = 2
	sendBackoff           = 100 * time.Millisecond
)

// brokerSender is Kafka's RequestSendThread: one goroutine and an unbounded queue per live
// broker. It sends the queued requests in order and retries the head request with a 100 ms
// backoff until it gets a response or the broker is removed.
type brokerSender struct {
	id        int32
	addr      string
	localAddr string
	timeout   time.Duration
	log       logrus.FieldLogger
	q         *queue[kmsg.Request]
	stop      chan struct{}
	done      chan struct{}
	onResp    func(brokerID int32, req kmsg.Request, resp kmsg.Response)
}

func newBrokerSender(ct *controller, b BrokerInfo) (*brokerSender, error) {
	ep, ok := b.Endpoint(ct.c.cfg.InterBrokerListener)
	if !ok {
		return nil, fmt.Errorf("zkcoord: broker %d has no endpoint for listener %q", b.ID, ct.c.cfg.InterBrokerListener)
	}
	s := &brokerSender{
		id:        b.ID,
		addr:      net.JoinHostPort(ep.Host, strconv.Itoa(int(ep.Port))),
		localAddr: ct.c.cfg.LocalAddr,
		timeout:   ct.c.cfg.ControllerSocketTimeout,
		log:       ct.c.log.WithField("targetBroker", b.ID),
		q:         newQueue[kmsg.Request](),
		stop:      make(chan struct{}),
		done:      make(chan struct{}),
		onResp:    ct.onResponse,
	}
	go s.run(ct.c.cfg.BrokerID)
	return s, nil
}

func (s *brokerSender) enqueue(r kmsg.Request) { s.q.put(r) }

// close stops the sender without waiting for queued requests.
func (s *brokerSender) close() {
	close(s.stop)
	<-s.done
}

func (s *brokerSender) run(controllerID int32) {
	defer close(s.done)
	clientID := fmt.Sprintf("controller-%d-to-broker-%d", controllerID, s.id)
	var conn *wire.Conn
	defer func() {
		if conn != nil {
			conn.Close()
		}
	}()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-s.stop
		cancel()
	}()
	for {
		req, ok := s.q.get(s.stop)
		if !ok {
			return
		}
		for attempt := 0; ; attempt++ {
			if conn == nil {
				c, err := wire.Dial(ctx, s.addr, s.localAddr, clientID, s.timeout)
				if err != nil {
					if attempt%50 == 0 {
						s.log.WithError(err).WithField("addr", s.addr).Warn("controller cannot connect to broker; retrying")
					}
					if !s.backoff() {
						return
					}
					continue
				}
				conn = c
			}
			rctx, rcancel := context.WithTimeout(ctx, s.timeout)
			resp, err := conn.Request(rctx, req)
			rcancel()
			if err != nil {
				conn.Close()
				conn = nil
				select {
				case <-s.stop:
					return // removed while the request was in flight
				default:
				}
				if attempt%50 == 0 {
					s.log.WithError(err).WithField("apiKey", req.Key()).Warn("controller request to broker failed; retrying")
				}
				if !s.backoff() {
					return
				}
				continue
			}
			s.onResp(s.id, req, resp)
			break
		}
	}
}

func (s *brokerSender) backoff() bool {
	t := time.NewTimer(sendBackoff)
	defer t.Stop()
	select {
	case <-s.stop:
		return false
	case <-t.C:
		return true
	}
}

func securityProtocolID(p string) int16 {
	switch p {
	case "SSL":
		return 1
	case "SASL_PLAINTEXT":
		return 2
	case "SASL_SSL":
		return 3
	default:
		return 0 // PLAINTEXT
	}
}
