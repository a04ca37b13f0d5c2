package broker

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rcrowley/go-metrics"
	"github.com/sirupsen/logrus"

	"github.com/isrbroker/isrbroker/broker/clientquota"
	"github.com/isrbroker/isrbroker/broker/fetchsession"
	"github.com/isrbroker/isrbroker/broker/ratelog"
	rm "github.com/isrbroker/isrbroker/replicamanager"
)

// Listener is one entry of `listeners` (PLAINTEXT://127.0.0.1:9092). Port 0 binds an
// ephemeral port (tests).
type Listener struct {
	Name string
	Host string
	Port int32
	// Security is the listener's TLS and SASL (listener_security.go); nil is PLAINTEXT.
	Security *ListenerSecurity
}

// Config is the part of server.properties the wire server needs.
type Config struct {
	BrokerID                 int32
	ClusterID                string
	Listeners                []Listener
	SocketRequestMaxBytes    int32 // socket.request.max.bytes (104857600)
	AutoCreateTopics         bool  // auto.create.topics.enable
	NumPartitions            int32 // num.partitions
	DefaultReplicationFactor int16 // default.replication.factor
	// ClientWaitForMetadata holds client requests that arrive before the first UpdateMetadata
	// for up to this long (0: no wait). Kafka serves clients only once the broker is registered
	// and known to the controller; without the wait a restarting broker would answer clients
	// from an empty metadata cache (UNKNOWN_TOPIC_OR_PARTITION for every topic).
	ClientWaitForMetadata time.Duration
	// StaticConfig is server.properties with --override (config.Config.Props), the
	// STATIC_BROKER_CONFIG source of DescribeConfigs.
	StaticConfig map[string]string
	// Connections are the connection limits and idle timeout (nil: DefaultConnectionLimits).
	Connections *ConnectionLimits
	// FailedAuthenticationDelay is connection.failed.authentication.delay.ms: how long a
	// connection whose SASL authentication failed stays open, reading nothing, after its
	// answer (0: closed at once).
	FailedAuthenticationDelay time.Duration
	Registry                  metrics.Registry
	Log                       logrus.FieldLogger

	// FetchSessionCacheSlots is max.incremental.fetch.session.cache.slots (KIP-227,
	// broker/fetch_sessions.go): 0 is Kafka's default 1000, negative no sessions.
	FetchSessionCacheSlots int32

	// ClientQuotas are quota.window.num, quota.window.size.seconds and the deprecated static
	// defaults (docs/quotas.md); zero values are Kafka's defaults.
	ClientQuotas clientquota.Settings
}

// Defaults of the Kafka 2.4 broker for the fields above.
const (
	DefaultSocketRequestMaxBytes = 104857600
	// maxInFlight bounds the requests of one connection that are decoded but not yet
	// answered; the reader stops reading when it is reached.
	maxInFlight = 64
)

// Server is the Kafka wire server of one broker.
type Server struct {
	cfg   Config
	deps  Deps  // the collaborators (interfaces.go); set by New, never changed
	authz authz // the handlers' authorization checks over deps.ACLs (authz.go)
	log   logrus.FieldLogger
	cache *MetadataCache

	ctx    context.Context // cancelled by Close; bounds handler goroutines
	cancel context.CancelFunc

	mu     sync.Mutex
	lns    []boundListener
	conns  map[*conn]struct{}
	closed bool
	wg     sync.WaitGroup // accept loops, connection goroutines, handler goroutines

	replBytesOut metrics.Meter
	reqMetrics   *requestMetrics      // per-API RequestsPerSec and TotalTimeMs (request_metrics.go)
	topicStats   *rm.BrokerTopicStats // per-topic BrokerTopicMetrics (topic_metrics.go)

	pids producerIDs // InitProducerId's current producer-id block

	quotas *connQuotas // max.connections, max.connections.per.ip (conn_quotas.go)

	groups GroupCoordinator // the group API keys (groups.go); nil in unit tests

	fetchSessions *fetchsession.Cache // KIP-227 incremental fetch sessions (fetch_sessions.go)

	clientQuotas *clientquota.Quotas // producer_byte_rate, consumer_byte_rate, request_percentage (client_quotas.go)

	// acceptWarnings rate-limits the accept loops' failure lines (one per listener per 10 s,
	// with suppressed=<n>): out of file descriptors, Accept fails on every attempt.
	acceptWarnings *ratelog.Limiter

	// reauthentications counts the completed KIP-368 re-authentications.
	reauthentications atomic.Int64
}

type boundListener struct {
	name string
	ln   net.Listener
	sec  *ListenerSecurity
}

// New returns a server over deps (deps.Replicas is required); Listen binds it and Serve
// runs it.
func New(cfg Config, deps Deps) *Server {
	if cfg.SocketRequestMaxBytes <= 0 {
		cfg.SocketRequestMaxBytes = DefaultSocketRequestMaxBytes
	}
	if cfg.NumPartitions <= 0 {
		cfg.NumPartitions = 1
	}
	if cfg.DefaultReplicationFactor <= 0 {
		cfg.DefaultReplicationFactor = 1
	}
	if cfg.Registry == nil {
		cfg.Registry = metrics.NewRegistry()
	}
	if cfg.Log == nil {
		l := logrus.New()
		l.SetOutput(io.Discard)
		cfg.Log = l
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{
		cfg:          cfg,
		deps:         deps,
		authz:        authz{acls: deps.ACLs},
		log:          cfg.Log.WithField("brokerId", cfg.BrokerID),
		cache:        NewMetadataCache(),
		ctx:          ctx,
		cancel:       cancel,
		conns:        make(map[*conn]struct{}),
		replBytesOut: metrics.GetOrRegisterMeter(MetricReplicationBytesOut, cfg.Registry),
		reqMetrics:   newRequestMetrics(cfg.Registry),

		fetchSessions: newFetchSessionCache(cfg),

		acceptWarnings: ratelog.New(ratelog.DefaultInterval, nil),
	}
	lim := DefaultConnectionLimits()
	if cfg.Connections != nil {
		lim = *cfg.Connections
	}
	s.cfg.Connections = &lim
	s.quotas = newConnQuotas(lim, len(cfg.Listeners), s.log)
	s.topicStats = topicStatsOf(deps.TopicStats, cfg.Registry)
	registerIdleGauge(cfg.Registry)
	s.clientQuotas = newClientQuotas(cfg, deps, s.log)
	return s
}

// Metadata returns the metadata cache (read-only for everyone but the UpdateMetadata handler).
func (s *Server) Metadata() *MetadataCache { return s.cache }

// Listen binds every configured listener. It is idempotent.
func (s *Server) Listen() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return net.ErrClosed
	}
	if len(s.lns) > 0 {
		return nil
	}
	if len(s.cfg.Listeners) == 0 {
		return errors.New("broker: no listeners configured")
	}
	for _, l := range s.cfg.Listeners {
		addr := net.JoinHostPort(l.Host, strconv.Itoa(int(l.Port)))
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			for _, b := range s.lns {
				_ = b.ln.Close()
			}
			s.lns = nil
			return fmt.Errorf("broker: listen %s://%s: %w", l.Name, addr, err)
		}
		s.lns = append(s.lns, boundListener{name: l.Name, ln: ln, sec: l.Security})
		s.log.WithFields(logrus.Fields{"listener": l.Name, "addr": ln.Addr().String()}).Info("listening")
	}
	return nil
}

// Addrs returns the bound addresses, in the order of Config.Listeners.
func (s *Server) Addrs() []net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]net.Addr, 0, len(s.lns))
	for _, b := range s.lns {
		out = append(out, b.ln.Addr())
	}
	return out
}

// Serve runs the accept loops (binding first if Listen was not called) and returns after
// Close.
func (s *Server) Serve() error {
	if err := s.Listen(); err != nil {
		return err
	}
	s.mu.Lock()
	lns := append([]boundListener(nil), s.lns...)
	s.mu.Unlock()
	var wg sync.WaitGroup
	if idle := s.cfg.Connections.IdleTimeout; idle > 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.reapIdle(idle)
		}()
	}
	for _, b := range lns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.acceptLoop(b)
		}()
	}
	wg.Wait()
	return nil
}

// acceptLoop accepts the listener's connections until Close. A failed Accept (EMFILE or
// ENFILE when out of file descriptors, ECONNABORTED, ...) is retried after acceptBackoff's
// wait, logged rate-limited: retrying at once would spin a core while the descriptors stay
// exhausted.
func (s *Server) acceptLoop(b boundListener) {
	var backoff acceptBackoff
	for {
		if !s.quotas.waitForSlot(b.name) { // max.connections
			return
		}
		nc, err := b.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) || s.ctx.Err() != nil {
				return
			}
			wait := backoff.next()
			s.acceptWarnings.Warn(s.log.WithFields(logrus.Fields{"listener": b.name, "backoff": wait.String()}).WithError(err), b.name, "accept failed; retrying")
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-s.ctx.Done():
				t.Stop()
				return
			}
			continue
		}
		backoff.reset()
		ip := remoteIP(nc)
		if limit, ok := s.quotas.inc(b.name, ip); !ok {
			// Kafka 2.4's Acceptor: accepted, then closed at once (TooManyConnectionsException).
			s.acceptWarnings.Info(s.log.WithFields(logrus.Fields{"listener": b.name, "remote": ip}), "max.connections.per.ip/"+ip,
				fmt.Sprintf("Rejected connection from %s, address already has the configured maximum of %d connections.", ip, limit))
			_ = nc.Close()
			s.quotas.dec(b.name, ip)
			continue
		}
		if tc, ok := nc.(*net.TCPConn); ok {
			_ = tc.SetNoDelay(true)
		}
		if b.sec.usesTLS() {
			nc = tls.Server(nc, b.sec.tlsServerConfig()) // the handshake runs on the connection's goroutine
		}
		c := newConn(s, nc, b.name)
		c.setSecurity(b.sec)
		if !s.track(c) {
			_ = nc.Close()
			s.quotas.dec(b.name, ip)
			return
		}
		go func() {
			defer s.wg.Done()
			defer s.quotas.dec(b.name, ip)
			defer s.untrack(c)
			c.serve()
		}()
	}
}

// track registers c and accounts for its goroutine; false once the server is closed.
func (s *Server) track(c *conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.conns[c] = struct{}{}
	s.wg.Add(1)
	return true
}

func (s *Server) untrack(c *conn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
}

// goHandler runs fn on its own goroutine, accounted for by Close. Handlers that wait
// (CreateTopics, DeleteTopics, Metadata with auto-creation) use it so the connection's
// reader goes on. It returns false (fn not run) once the server is closed.
func (s *Server) goHandler(log logrus.FieldLogger, fn func()) bool {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return false
	}
	s.wg.Add(1)
	s.mu.Unlock()
	go func() {
		defer s.wg.Done()
		defer recoverLog(log, "handler")
		fn()
	}()
	return true
}

// Close stops accepting, closes every connection and waits for the server's goroutines.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		s.wg.Wait()
		return nil
	}
	s.closed = true
	s.cancel()
	s.quotas.close()
	for _, b := range s.lns {
		_ = b.ln.Close()
	}
	conns := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	for _, c := range conns {
		c.close()
	}
	s.wg.Wait()
	return nil
}

// tp is a short constructor for a TopicPartition.
func tp(topic string, partition int32) rm.TopicPartition {
	return rm.TopicPartition{Topic: topic, Partition: partition}
}

// acceptBackoff is the accept loop's wait after a failed Accept (EMFILE, ENFILE, ...): 5 ms,
// doubling up to 1 s, reset by a successful one, as Go's net/http server does.
type acceptBackoff struct{ d time.Duration }

const (
	acceptBackoffMin = 5 * time.Millisecond
	acceptBackoffMax = time.Second
)

func (b *acceptBackoff) next() time.Duration {
	if b.d == 0 {
		b.d = acceptBackoffMin
	} else {
		b.d = min(2*b.d, acceptBackoffMax)
	}
	return b.d
}

func (b *acceptBackoff) reset() { b.d = 0 }
