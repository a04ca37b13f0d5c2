package controller

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/isrbroker/isrbroker/broker/kproto"
	"github.com/isrbroker/isrbroker/zkcoord/internal/queue"
	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Request versions the controller sends (Kafka 2.4).
const (
	leaderAndIsrVersion   = 4
	updateMetadataVersion = 6
	stopReplicaVersion    = 2
	sendBackoff           = 100 * time.Millisecond
)

// BrokerConn is the controller's connection to one broker.
type BrokerConn interface {
	Request(ctx context.Context, req kmsg.Request) (kmsg.Response, error)
	Close() error
}

// DialFunc opens a BrokerConn to addr ("host:port") from localAddr (optional source IP).
type DialFunc func(ctx context.Context, addr, localAddr, clientID string, timeout time.Duration) (BrokerConn, error)

// secureDial is the default DialFunc: the Kafka protocol over TCP (broker/kproto), secured by sec.
func secureDial(sec kproto.Security) DialFunc {
	return func(ctx context.Context, addr, localAddr, clientID string, timeout time.Duration) (BrokerConn, error) {
		c, err := kproto.DialSecurity(ctx, addr, localAddr, clientID, timeout, sec)
		if err != nil {
			return nil, err
		}
		return c, nil
	}
}

// channelManager is Kafka's ControllerChannelManager: one brokerSender per live broker.
type channelManager struct {
	ct      *Controller
	senders map[int32]*brokerSender
}

func (m *channelManager) startSender(b BrokerInfo) {
	m.stopSender(b.ID)
	ct := m.ct
	ep, ok := b.Endpoint(ct.cfg.InterBrokerListener)
	if !ok {
		ct.log.WithField("targetBroker", b.ID).WithField("listener", ct.cfg.InterBrokerListener).Error("cannot reach broker: no endpoint for the inter-broker listener")
		return
	}
	s := &brokerSender{
		id:      b.ID,
		addr:    net.JoinHostPort(ep.Host, strconv.Itoa(int(ep.Port))),
		cfg:     ct.cfg,
		log:     ct.cfg.Log.WithField("targetBroker", b.ID),
		q:       queue.New[kmsg.Request](),
		stop:    make(chan struct{}),
		done:    make(chan struct{}),
		onResp:  m.onResponse,
		control: ct.cfg.BrokerID,
	}
	go s.run()
	m.senders[b.ID] = s
}

func (m *channelManager) stopSender(id int32) {
	if s, ok := m.senders[id]; ok {
		s.close()
		delete(m.senders, id)
	}
}

func (m *channelManager) stopAll() {
	for id := range m.senders {
		m.stopSender(id)
	}
}

// send queues req for broker id; nothing happens when the broker has no sender (not live).
func (m *channelManager) send(id int32, req kmsg.Request) bool {
	s := m.senders[id]
	if s == nil {
		return false
	}
	s.q.Put(req)
	return true
}

// onResponse runs on a sender goroutine: it only inspects the answer and enqueues events.
func (m *channelManager) onResponse(brokerID int32, req kmsg.Request, resp kmsg.Response) {
	var code int16
	var epoch int32
	l := m.ct.cfg.Log.WithField("component", "controller").WithField("targetBroker", brokerID)
	switch r := resp.(type) {
	case *kmsg.LeaderAndISRResponse:
		code = r.ErrorCode
		epoch = req.(*kmsg.LeaderAndISRRequest).ControllerEpoch
		// One warning per error code and response, with a count and an example, not one per
		// partition: a new controller's LeaderAndIsr to a broker that has every partition
		// already at that leader epoch is answered STALE_CONTROLLER_EPOCH for each of them.
		counts := map[int16]int{}
		var codes []int16
		first := map[int16]kmsg.LeaderAndISRResponseTopicPartition{}
		for _, p := range r.Partitions {
			if p.ErrorCode != 0 {
				if counts[p.ErrorCode] == 0 {
					codes = append(codes, p.ErrorCode)
					first[p.ErrorCode] = p
				}
				counts[p.ErrorCode]++
			}
		}
		for _, c := range codes {
			l.WithField("error", kerr.ErrorForCode(c)).WithField("partitions", counts[c]).
				WithField("topic", first[c].Topic).WithField("partition", first[c].Partition).
				Warn("LeaderAndIsr partition errors (topic and partition: the first)")
		}
		m.ct.logDirs.onLeaderAndIsrResponse(brokerID, r) // offline replicas (logdir.go)
	case *kmsg.UpdateMetadataResponse:
		code = r.ErrorCode
		epoch = req.(*kmsg.UpdateMetadataRequest).ControllerEpoch
	case *kmsg.StopReplicaResponse:
		code = r.ErrorCode
		sr := req.(*kmsg.StopReplicaRequest)
		epoch = sr.ControllerEpoch
		if sr.DeletePartitions {
			// The deletion manager decides on the answer (Kafka's StopReplica callback).
			m.ct.enqueue(event{kind: evStopReplicaAnswer, epoch: epoch, stop: newStopReplicaAnswer(brokerID, sr, r)})
		}
	}
	if code == 0 {
		return
	}
	responseWarnings.Warn(l.WithField("apiKey", kmsg.NameForKey(req.Key())).WithField("error", kerr.ErrorForCode(code)),
		fmt.Sprint(brokerID, "/", req.Key(), "/", code), "broker rejected controller request")
	if code == kerr.StaleControllerEpoch.Code {
		m.ct.enqueue(event{kind: evStaleEpoch, epoch: epoch})
	}
}

// newStopReplicaAnswer collects the per-partition codes of a StopReplica(delete=true) answer.
func newStopReplicaAnswer(brokerID int32, req *kmsg.StopReplicaRequest, resp *kmsg.StopReplicaResponse) *stopReplicaAnswer {
	a := &stopReplicaAnswer{broker: brokerID, brokerEpoch: req.BrokerEpoch, code: resp.ErrorCode, errs: map[TopicPartition]int16{}}
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			a.partitions = append(a.partitions, TopicPartition{Topic: t.Topic, Partition: p})
		}
	}
	for _, p := range resp.Partitions {
		a.errs[TopicPartition{Topic: p.Topic, Partition: p.Partition}] = p.ErrorCode
	}
	return a
}

// brokerSender is Kafka's RequestSendThread: one goroutine and an unbounded queue per live
// broker. It sends the queued requests in order and retries the head request with a 100 ms
// backoff until it gets a response or the broker is removed.
type brokerSender struct {
	id      int32
	addr    string
	cfg     Config
	control int32 // the controller's broker id
	log     logrus.FieldLogger
	q       *queue.Queue[kmsg.Request]
	stop    chan struct{}
	done    chan struct{}
	onResp  func(brokerID int32, req kmsg.Request, resp kmsg.Response)
}

// close stops the sender without waiting for queued requests.
func (s *brokerSender) close() {
	close(s.stop)
	<-s.done
}

func (s *brokerSender) run() {
	defer close(s.done)
	clientID := fmt.Sprintf("controller-%d-to-broker-%d", s.control, s.id)
	var conn BrokerConn
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
	var lastUsed time.Time
	for {
		req, ok := s.q.Get(s.stop)
		if !ok {
			return
		}
		if conn != nil && time.Since(lastUsed) > connMaxIdle {
			// The broker closes connections idle for connections.max.idle.ms (10 min by
			// default); close ours first, as Kafka's clients do, rather than fail a send on it.
			conn.Close()
			conn = nil
		}
		for attempt := 0; ; attempt++ {
			if conn == nil {
				c, err := s.cfg.Dial(ctx, s.addr, s.cfg.LocalAddr, clientID, s.cfg.ControllerSocketTimeout)
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
			rctx, rcancel := context.WithTimeout(ctx, s.cfg.ControllerSocketTimeout)
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
					s.log.WithError(err).WithField("apiKey", kmsg.NameForKey(req.Key())).Warn("controller request to broker failed; retrying")
				}
				if !s.backoff() {
					return
				}
				continue
			}
			lastUsed = time.Now()
			s.onResp(s.id, req, resp)
			break
		}
	}
}

// connMaxIdle is the connections.max.idle.ms of Kafka's clients (9 min): below the broker's
// default (10 min), so an idle controller connection is closed by its sender first.
const connMaxIdle = 540000 * time.Millisecond

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
