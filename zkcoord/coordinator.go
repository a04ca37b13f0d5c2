// Package zkcoord is everything isrbroker keeps in ZooKeeper, as a thin facade over its
// sub-packages: one broker's ZooKeeper session (chroot, persistent paths, /cluster/id, session
// expiry handling) and the parts that use it:
//
//   - zkdata: the one place that knows every znode path and its JSON (Kafka 2.4's layout);
//   - zkclient: the small ZooKeeper interface the parts use, over a real session;
//   - zkmem: an in-memory ZooKeeper implementing that interface, for unit tests;
//   - controller: the controller (S9): election, event loop, partition and replica state
//     machines, elections, per-broker request batching, topic deletion, reassignment,
//     preferred elections, controlled shutdown (K7);
//   - agent: the broker-side agents: registration (K1), the leader's ISR write and its
//     change propagation (K3, K5), the dynamic config listener, producer-id blocks, the log
//     dir event notifications (KIP-112);
//   - admin: the admin API (topic creation and deletion, partitions, reassignment and
//     throttles, preferred election requests), the reads of the cluster state, and an
//     operator tool's session (admin.Connect: the admin API alone, no controller).
//
// Coordinator exposes the agents and the admin API as fields, one per role (it embeds
// none), so each consumer is handed the roles it needs (main's wiring.go); it declares only
// the session's lifecycle and the controller's entry points. docs/design.md, "Controller",
// describes the controller and the znodes.
package zkcoord

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/isrbroker/isrbroker/broker/kproto"
	"github.com/isrbroker/isrbroker/zkcoord/admin"
	"github.com/isrbroker/isrbroker/zkcoord/agent"
	"github.com/isrbroker/isrbroker/zkcoord/controller"
	"github.com/isrbroker/isrbroker/zkcoord/internal/queue"
	"github.com/isrbroker/isrbroker/zkcoord/zkclient"
	"github.com/isrbroker/isrbroker/zkcoord/zkdata"
	"github.com/rcrowley/go-metrics"
	"github.com/sirupsen/logrus"
)

// Config configures a Coordinator.
type Config struct {
	Connect                 string        // zookeeper.connect "h:p[,h:p][/chroot]"; the chroot is created if missing
	SessionTimeout          time.Duration // zookeeper.session.timeout.ms
	ConnectionTimeout       time.Duration // zookeeper.connection.timeout.ms (defaults to SessionTimeout)
	BrokerID                int32
	Endpoints               []Endpoint // advertised listeners, written to /brokers/ids/<id>
	Rack                    string
	InterBrokerListener     string        // listener used by the controller to reach brokers (default: first endpoint)
	LocalAddr               string        // optional local IP for outgoing inter-broker and ZooKeeper connections (fault tests)
	ControllerSocketTimeout time.Duration // controller.socket.timeout.ms
	UncleanLeaderElection   bool          // broker default; a topic's /config/topics override wins (K6)
	DeleteTopicEnable       bool
	Registry                metrics.Registry  // go-metrics; nil -> metrics.DefaultRegistry
	OnBrokerEpoch           func(epoch int64) // called after every (re-)registration with the new broker epoch (czxid)
	Log                     logrus.FieldLogger

	// OnControllerChange, when set, is told each time this broker's controller wins the
	// election (elected, with the epoch won) or resigns (controller.Config.OnRoleChange, for the
	// replication page's journal). It runs on the controller's event goroutine: it must return
	// at once.
	OnControllerChange func(elected bool, epoch int32)

	// AutoLeaderRebalance, LeaderImbalanceCheckInterval and LeaderImbalancePerBrokerPercentage
	// are auto.leader.rebalance.enable, leader.imbalance.check.interval.seconds (default
	// 300 s) and leader.imbalance.per.broker.percentage (K7).
	AutoLeaderRebalance                bool
	LeaderImbalanceCheckInterval       time.Duration
	LeaderImbalancePerBrokerPercentage int

	// IsrChangePropagationInterval, IsrChangePropagationBlackOut and IsrChangeMaxDelay tune the
	// leader-side /isr_change_notification batching (K5; Kafka's 2500 ms / 5000 ms / 60000 ms
	// constants, the defaults). Tests shorten them.
	IsrChangePropagationInterval time.Duration
	IsrChangePropagationBlackOut time.Duration
	IsrChangeMaxDelay            time.Duration

	// InterBrokerSecurity secures the controller's connections to the brokers (TLS, SASL of
	// the inter-broker listener); the zero value is PLAINTEXT.
	InterBrokerSecurity kproto.Security

	dialer zk.Dialer // tests: cut the session's TCP connection
}

// Types of the znodes (zkcoord/zkdata) and of the admin API used by the broker. The
// operator tools use zkcoord/admin and zkcoord/zkdata themselves.
type (
	TopicPartition        = zkdata.TopicPartition
	Endpoint              = zkdata.Endpoint
	BrokerInfo            = zkdata.BrokerInfo
	PartitionState        = zkdata.PartitionState
	PartitionReassignment = zkdata.PartitionReassignment
	TopicSpec             = admin.TopicSpec
)

// MaxTopicPartitions bounds one topic's partition count (admin.MaxTopicPartitions).
const MaxTopicPartitions = admin.MaxTopicPartitions

// Sentinel errors of the sub-packages used by the broker. Admin errors map 1:1 to Kafka
// protocol errors at the broker edge.
var (
	ErrTopicExists              = admin.ErrTopicExists
	ErrUnknownTopic             = admin.ErrUnknownTopic
	ErrInvalidPartitions        = admin.ErrInvalidPartitions
	ErrInvalidReplicationFactor = admin.ErrInvalidReplicationFactor
	ErrInvalidReplicaAssignment = admin.ErrInvalidReplicaAssignment
	ErrInvalidTopic             = admin.ErrInvalidTopic
	ErrTopicDeletionDisabled    = admin.ErrTopicDeletionDisabled
	ErrReassignmentInProgress   = admin.ErrReassignmentInProgress
	ErrBrokerIDInUse            = agent.ErrBrokerIDInUse
	ErrControllerMoved          = controller.ErrControllerMoved
	ErrNotController            = controller.ErrNotController
	ErrStaleBrokerEpoch         = controller.ErrStaleBrokerEpoch
	ErrBrokerNotAvailable       = controller.ErrBrokerNotAvailable
)

// Coordinator is one broker's view of ZooKeeper. All methods are safe for concurrent use.
type Coordinator struct {
	// The roles over the session, set by Connect and never replaced (callers only read
	// them); the composition root hands each consumer the roles it needs.
	Reader         *admin.Reader         // the reads of the cluster state
	Admin          *admin.Admin          // topics, partitions, configs, reassignment, preferred elections
	Registrar      *agent.Registrar      // /brokers/ids/<id> and the broker epoch (K1)
	IsrWriter      *agent.IsrWriter      // the leader's ISR write and its propagation (K3, K5)
	ConfigListener *agent.ConfigListener // /config/changes
	ProducerIDs    *agent.ProducerIDs    // producer-id blocks
	LogDirEvents   *agent.LogDirEvents   // log dir failure notifications (KIP-112)
	ACLs           *agent.ACLStore       // the ACL znodes and their change notifications (docs/acls.md)
	// Credentials is the SCRAM credential cache (/config/users), loaded by Connect and kept
	// current through /config/changes: the sasl.CredentialStore of the SCRAM listeners.
	Credentials *agent.CredentialCache

	cfg       Config
	log       logrus.FieldLogger
	zk        *zkclient.Client
	clusterID string
	sessQ     *queue.Queue[zk.State]
	firstSes  chan struct{}

	mu        sync.Mutex
	sessionID int64 // current session, 0 while expired
	ctl       *controller.Controller
	closed    bool

	done chan struct{}
	wg   sync.WaitGroup
}

// dial opens the session and builds the parts; it waits for the first session.
func dial(ctx context.Context, cfg Config, dialer zk.Dialer) (*Coordinator, error) {
	servers, chroot, err := zkclient.ParseConnect(cfg.Connect)
	if err != nil {
		return nil, err
	}
	c := &Coordinator{
		cfg:      cfg,
		log:      cfg.Log.WithField("brokerId", cfg.BrokerID),
		sessQ:    queue.New[zk.State](),
		firstSes: make(chan struct{}),
		done:     make(chan struct{}),
	}
	c.zk, err = zkclient.Dial(zkclient.Options{Servers: servers, Chroot: chroot, SessionTimeout: cfg.SessionTimeout,
		Dialer: dialer, Log: c.log, OnSession: c.sessQ.Put, Registry: cfg.Registry})
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", zkclient.ErrNoSession, cfg.Connect, err)
	}
	c.Reader = admin.NewReader(c.zk, c.log)
	c.Admin = admin.New(c.zk, c.Reader, cfg.DeleteTopicEnable, c.log)
	c.Registrar = agent.NewRegistrar(c.zk, agent.RegistrarConfig{BrokerID: cfg.BrokerID, Endpoints: cfg.Endpoints,
		Rack: cfg.Rack, SessionTimeout: cfg.SessionTimeout, OnBrokerEpoch: cfg.OnBrokerEpoch, Log: c.log})
	c.IsrWriter = agent.NewIsrWriter(c.zk, agent.IsrConfig{PropagationInterval: cfg.IsrChangePropagationInterval,
		PropagationBlackOut: cfg.IsrChangePropagationBlackOut, MaxDelay: cfg.IsrChangeMaxDelay, Log: c.log})
	c.ConfigListener = agent.NewConfigListener(c.zk, cfg.BrokerID, c.log)
	c.ProducerIDs = agent.NewProducerIDs(c.zk, cfg.BrokerID, c.log)
	c.LogDirEvents = agent.NewLogDirEvents(c.zk, cfg.BrokerID)
	c.ACLs = agent.NewACLStore(c.zk, c.log)
	c.Credentials = agent.NewCredentialCache(c.zk, c.log)
	c.wg.Add(1)
	go c.sessionLoop()
	tctx, cancel := context.WithTimeout(ctx, cfg.ConnectionTimeout)
	defer cancel()
	select {
	case <-c.firstSes:
		return c, nil
	case <-tctx.Done():
		c.Close()
		return nil, fmt.Errorf("%w with %s within %v", zkclient.ErrNoSession, cfg.Connect, cfg.ConnectionTimeout)
	}
}

// Connect opens the ZooKeeper session, creates the chroot and Kafka's persistent paths
// when missing, and reads (or creates) the cluster id.
func Connect(ctx context.Context, cfg Config) (*Coordinator, error) {
	if cfg.SessionTimeout <= 0 {
		cfg.SessionTimeout = 18 * time.Second
	}
	if cfg.ConnectionTimeout <= 0 {
		cfg.ConnectionTimeout = cfg.SessionTimeout
	}
	if cfg.ControllerSocketTimeout <= 0 {
		cfg.ControllerSocketTimeout = 30 * time.Second
	}
	if cfg.LeaderImbalanceCheckInterval <= 0 {
		cfg.LeaderImbalanceCheckInterval = 300 * time.Second
	}
	if cfg.InterBrokerListener == "" && len(cfg.Endpoints) > 0 {
		cfg.InterBrokerListener = cfg.Endpoints[0].Listener
	}
	if cfg.Log == nil {
		cfg.Log = logrus.StandardLogger()
	}
	if cfg.Registry == nil {
		cfg.Registry = metrics.DefaultRegistry
	}
	dialer := cfg.dialer
	if dialer == nil {
		dialer = net.DialTimeout
		if cfg.LocalAddr != "" {
			// The ZooKeeper session leaves from the broker's own address too, so a fault test
			// can cut broker↔ZooKeeper alone (docs/reliability.md).
			dialer = localDialer(cfg.LocalAddr)
		}
	}
	c, err := dial(ctx, cfg, dialer)
	if err != nil {
		return nil, err
	}
	if err := c.setup(); err != nil {
		c.Close()
		return nil, err
	}
	// SCRAM users can log in from the first connection on (Kafka's CredentialProvider is filled
	// before the listeners start); later changes arrive through the config listener.
	if err := c.Credentials.Load(); err != nil {
		c.Close()
		return nil, fmt.Errorf("zkcoord: load SCRAM credentials from %s: %w", zkdata.PathConfigUsers, err)
	}
	c.Credentials.Follow(c.ConfigListener)
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		c.IsrWriter.Run(c.done)
	}()
	c.log.WithField("clusterId", c.clusterID).Info("connected to ZooKeeper")
	return c, nil
}

// setup creates the chroot and persistent paths and the cluster id.
func (c *Coordinator) setup() error {
	if err := c.zk.EnsureChroot(); err != nil {
		return err
	}
	for _, path := range zkdata.PersistentPaths {
		if err := zkclient.CreateRecursive(c.zk, path); err != nil {
			return fmt.Errorf("zkcoord: create %s: %w", path, err)
		}
	}
	for {
		data, _, err := c.zk.Get(zkdata.PathClusterID)
		if err == nil {
			id, err := zkdata.DecodeClusterID(data)
			if err != nil {
				return err
			}
			c.clusterID = id
			return nil
		}
		if !errors.Is(err, zk.ErrNoNode) {
			return err
		}
		// Kafka's CoreUtils.generateUuidAsBase64: 16 random bytes, URL-safe base64 unpadded.
		var u [16]byte
		_, _ = rand.Read(u[:])
		u[6] = (u[6] & 0x0f) | 0x40
		u[8] = (u[8] & 0x3f) | 0x80
		_, err = c.zk.Create(zkdata.PathClusterID, zkdata.EncodeClusterID(base64.RawURLEncoding.EncodeToString(u[:])), 0)
		if err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return err
		}
	}
}

// sessionLoop consumes session state changes. On expiry it tells the controller to resign
// (without waiting for it); on a new session it re-registers the broker and asks the
// controller to re-elect (Kafka's RegisterBrokerAndReelect).
func (c *Coordinator) sessionLoop() {
	defer c.wg.Done()
	first := true
	var last int64
	for {
		st, ok := c.sessQ.Get(c.done)
		if !ok {
			return
		}
		switch st {
		case zk.StateExpired:
			c.mu.Lock()
			old := c.sessionID
			c.sessionID = 0
			ctl := c.ctl
			c.mu.Unlock()
			c.Registrar.SessionExpired(old)
			c.log.Warn("ZooKeeper session expired")
			if ctl != nil {
				ctl.Expire()
			}
		case zk.StateHasSession:
			sid := c.zk.SessionID()
			c.mu.Lock()
			c.sessionID = sid
			ctl := c.ctl
			c.mu.Unlock()
			if first {
				first = false
				last = sid
				close(c.firstSes)
				continue
			}
			if sid == last {
				continue // reconnected within the same session: watches were re-set by the client
			}
			last = sid
			c.log.WithField("sessionId", fmt.Sprintf("0x%x", sid)).Info("new ZooKeeper session established")
			c.Registrar.OnNewSession()
			if ctl != nil {
				ctl.Reelect()
			}
		}
	}
}

// ClusterID returns the id stored in /cluster/id.
func (c *Coordinator) ClusterID() string { return c.clusterID }

// StartController starts the controller: election, then the controller event loop until
// Close. Calling it twice has no effect.
func (c *Coordinator) StartController() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ctl != nil || c.closed {
		return
	}
	c.ctl = controller.New(c.zk, controller.Config{
		BrokerID:                           c.cfg.BrokerID,
		InterBrokerListener:                c.cfg.InterBrokerListener,
		LocalAddr:                          c.cfg.LocalAddr,
		ControllerSocketTimeout:            c.cfg.ControllerSocketTimeout,
		UncleanLeaderElection:              c.cfg.UncleanLeaderElection,
		DeleteTopicEnable:                  c.cfg.DeleteTopicEnable,
		AutoLeaderRebalance:                c.cfg.AutoLeaderRebalance,
		LeaderImbalanceCheckInterval:       c.cfg.LeaderImbalanceCheckInterval,
		LeaderImbalancePerBrokerPercentage: c.cfg.LeaderImbalancePerBrokerPercentage,
		Registry:                           c.cfg.Registry,
		Log:                                c.log,
		OnRoleChange:                       c.cfg.OnControllerChange,
		Security:                           c.cfg.InterBrokerSecurity,
	})
	c.ctl.Start()
	c.watchUncleanEnable(c.ctl)
}

// IsController reports whether this broker is the active controller.
func (c *Coordinator) IsController() bool {
	c.mu.Lock()
	ct := c.ctl
	c.mu.Unlock()
	return ct != nil && ct.IsActive()
}

// ControlledShutdown asks this broker's controller to prepare brokerID's shutdown (K7; see
// controller.Controller.ControlledShutdown). ErrNotController when this broker is not the
// active controller.
func (c *Coordinator) ControlledShutdown(ctx context.Context, brokerID int32, brokerEpoch int64) ([]TopicPartition, error) {
	c.mu.Lock()
	ct, closed := c.ctl, c.closed
	c.mu.Unlock()
	if ct == nil || closed {
		return nil, ErrNotController
	}
	return ct.ControlledShutdown(ctx, brokerID, brokerEpoch)
}

// Close stops the controller, the ISR propagation and the config listener, and closes the
// session, so the broker's ephemeral znodes (registration, /controller) vanish.
func (c *Coordinator) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	ct := c.ctl
	c.mu.Unlock()
	close(c.done)
	if c.zk != nil {
		c.zk.Close()
	}
	if ct != nil {
		ct.Close()
	}
	if c.ConfigListener != nil {
		c.ConfigListener.Close()
	}
	if c.ACLs != nil {
		c.ACLs.Close()
	}
	c.wg.Wait()
	return nil
}

// localDialer is a zk.Dialer whose connections bind localIP as their source address.
func localDialer(localIP string) zk.Dialer {
	return func(network, address string, timeout time.Duration) (net.Conn, error) {
		d := net.Dialer{Timeout: timeout, LocalAddr: &net.TCPAddr{IP: net.ParseIP(localIP)}}
		return d.Dial(network, address)
	}
}
