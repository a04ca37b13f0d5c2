// Package zkcoord owns everything isrbroker keeps in ZooKeeper: the session (chroot,
// persistent paths, /cluster/id), the broker's ephemeral registration under /brokers/ids,
// admin writes (topic creation and deletion requests), the partition leader's own ISR
// compare-and-set (K3) with its /isr_change_notification propagation (K5), and the
// controller: election through /controller and a fenced /controller_epoch increment, one
// event goroutine fed by ZooKeeper watches, partition and replica state handling, and one
// request queue per live broker carrying LeaderAndIsr, UpdateMetadata and StopReplica, and
// the controller's side of controlled shutdown (K7, ControlledShutdown), preferred leader
// election through /admin/preferred_replica_election and the automatic leader rebalance
// (K7, preferred.go), and the broker's dynamic config listener on /config/changes, which feeds
// the replication throttles to the replica manager (issue 4, dynconfig.go).
//
// It is the only package that knows znode paths and their JSON; the layout and JSON match
// Kafka 2.4 in ZooKeeper mode exactly (kafka-zk-reference §1–§2), so Kafka's own tools can
// read a cluster's state.
package zkcoord

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"github.com/isrbroker/isrbroker/zkcoord/zkdata"
	"net"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/rcrowley/go-metrics"
	"github.com/sirupsen/logrus"
)

// Types of the znodes, shared with zkcoord/zkdata.
type (
	TopicPartition         = zkdata.TopicPartition
	Endpoint               = zkdata.Endpoint
	BrokerInfo             = zkdata.BrokerInfo
	PartitionState         = zkdata.PartitionState
	PartitionReassignment  = zkdata.PartitionReassignment
	ReassignmentFieldError = zkdata.ReassignmentFieldError
)

// ProducerIDBlockSize is the number of producer ids a broker takes at once.
const ProducerIDBlockSize = zkdata.ProducerIDBlockSize

// EncodeReassignment and DecodeReassignment are zkdata's reassignment JSON codec.
var (
	EncodeReassignment = zkdata.EncodeReassignment
	DecodeReassignment = zkdata.DecodeReassignment
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

	// AutoLeaderRebalance, LeaderImbalanceCheckInterval and LeaderImbalancePerBrokerPercentage
	// are auto.leader.rebalance.enable, leader.imbalance.check.interval.seconds (default
	// 300 s) and leader.imbalance.per.broker.percentage (K7, preferred.go).
	AutoLeaderRebalance                bool
	LeaderImbalanceCheckInterval       time.Duration
	LeaderImbalancePerBrokerPercentage int

	// IsrChangePropagationInterval, IsrChangePropagationBlackOut and IsrChangeMaxDelay tune the
	// leader-side /isr_change_notification batching (K5; Kafka's 2500 ms / 5000 ms / 60000 ms
	// constants, the defaults). Tests shorten them.
	IsrChangePropagationInterval time.Duration
	IsrChangePropagationBlackOut time.Duration
	IsrChangeMaxDelay            time.Duration

	dialer zk.Dialer // tests: cut the session's TCP connection
}

// Sentinel errors. Admin errors map 1:1 to Kafka protocol errors at the broker edge.
var (
	ErrTopicExists              = errors.New("zkcoord: topic already exists")
	ErrUnknownTopic             = errors.New("zkcoord: unknown topic")
	ErrInvalidPartitions        = errors.New("zkcoord: invalid number of partitions")
	ErrInvalidReplicationFactor = errors.New("zkcoord: invalid replication factor")
	ErrInvalidReplicaAssignment = errors.New("zkcoord: invalid replica assignment")
	ErrInvalidTopic             = errors.New("zkcoord: invalid topic name")
	ErrBrokerIDInUse            = errors.New("zkcoord: broker id is registered by another live broker")
	ErrControllerMoved          = errors.New("zkcoord: controller moved")
	ErrBadVersion               = errors.New("zkcoord: partition state zkVersion does not match")
	ErrTopicDeletionDisabled    = errors.New("zkcoord: topic deletion is disabled (delete.topic.enable=false)")
	errClosed                   = errors.New("zkcoord: closed")
)

// Coordinator is one broker's view of ZooKeeper. All methods are safe for concurrent use.
type Coordinator struct {
	cfg    Config
	log    logrus.FieldLogger
	reg    metrics.Registry
	conn   *zk.Conn
	chroot string

	clusterID string

	sessQ    *queue[zk.State]
	firstSes chan struct{}

	mu            sync.Mutex
	sessionID     int64   // current session, 0 while expired
	oldSessionIDs []int64 // our expired sessions: their lingering ephemerals may be replaced
	registered    bool    // Register succeeded: re-register after session expiry
	brokerEpoch   int64
	ctl           *controller
	closed        bool

	isr *isrPropagator
	dyn dynConfig // dynamic config listener (dynconfig.go)

	done chan struct{}
	wg   sync.WaitGroup
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
	if cfg.IsrChangePropagationInterval <= 0 {
		cfg.IsrChangePropagationInterval = 2500 * time.Millisecond
	}
	if cfg.IsrChangePropagationBlackOut <= 0 {
		cfg.IsrChangePropagationBlackOut = 5000 * time.Millisecond
	}
	if cfg.IsrChangeMaxDelay <= 0 {
		cfg.IsrChangeMaxDelay = 60000 * time.Millisecond
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
	servers, chroot, err := parseConnect(cfg.Connect)
	if err != nil {
		return nil, err
	}
	c := &Coordinator{
		cfg:      cfg,
		log:      cfg.Log.WithField("broker", cfg.BrokerID),
		reg:      cfg.Registry,
		chroot:   chroot,
		sessQ:    newQueue[zk.State](),
		firstSes: make(chan struct{}),
		done:     make(chan struct{}),
	}
	dialer := cfg.dialer
	if dialer == nil {
		dialer = net.DialTimeout
		if cfg.LocalAddr != "" {
			// The ZooKeeper session leaves from the broker's own address too, so a fault test
			// can cut broker↔ZooKeeper alone (reliability.md §6 row 9).
			dialer = localDialer(cfg.LocalAddr)
		}
	}
	conn, _, err := zk.Connect(servers, cfg.SessionTimeout, zk.WithDialer(dialer),
		zk.WithLogger(zkLogger{c.log}), zk.WithLogInfo(false),
		// The callback runs on go-zookeeper's connection goroutine: it only enqueues, so
		// session handling can never block the client (KAFKA-8532).
		zk.WithEventCallback(func(ev zk.Event) {
			if ev.Type == zk.EventSession {
				c.sessQ.put(ev.State)
			}
		}))
	if err != nil {
		return nil, fmt.Errorf("zkcoord: connect %s: %w", cfg.Connect, err)
	}
	c.conn = conn
	c.wg.Add(1)
	go c.sessionLoop()

	tctx, cancel := context.WithTimeout(ctx, cfg.ConnectionTimeout)
	defer cancel()
	select {
	case <-c.firstSes:
	case <-tctx.Done():
		c.Close()
		return nil, fmt.Errorf("zkcoord: no ZooKeeper session with %s within %v", cfg.Connect, cfg.ConnectionTimeout)
	}
	if err := c.setup(); err != nil {
		c.Close()
		return nil, err
	}
	c.isr = newIsrPropagator(c)
	c.wg.Add(1)
	go c.isr.run()
	c.log.WithField("clusterID", c.clusterID).Info("connected to ZooKeeper")
	return c, nil
}

func parseConnect(s string) (servers []string, chroot string, err error) {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '/'); i >= 0 {
		chroot = strings.TrimRight(s[i:], "/")
		s = s[:i]
	}
	for _, h := range strings.Split(s, ",") {
		if h = strings.TrimSpace(h); h != "" {
			servers = append(servers, h)
		}
	}
	if len(servers) == 0 {
		return nil, "", fmt.Errorf("zkcoord: zookeeper.connect %q names no server", s)
	}
	return servers, chroot, nil
}

func (c *Coordinator) p(path string) string { return c.chroot + path }

// setup creates the chroot and persistent paths and the cluster id.
func (c *Coordinator) setup() error {
	if c.chroot != "" {
		if err := c.createRecursiveRaw(c.chroot); err != nil {
			return fmt.Errorf("zkcoord: create chroot %s: %w", c.chroot, err)
		}
	}
	for _, path := range zkdata.PersistentPaths {
		if err := c.createRecursiveRaw(c.p(path)); err != nil {
			return fmt.Errorf("zkcoord: create %s: %w", path, err)
		}
	}
	for {
		data, _, err := c.get(zkdata.PathClusterID)
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
		_, err = c.create(zkdata.PathClusterID, zkdata.EncodeClusterID(base64.RawURLEncoding.EncodeToString(u[:])), 0)
		if err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return err
		}
	}
}

// createRecursiveRaw creates full (absolute, chroot included) and its parents, tolerating
// existing nodes.
func (c *Coordinator) createRecursiveRaw(full string) error {
	parts := strings.Split(strings.Trim(full, "/"), "/")
	cur := ""
	for _, part := range parts {
		cur += "/" + part
		err := retry(c, func() error {
			_, err := c.conn.Create(cur, nil, 0, zk.WorldACL(zk.PermAll))
			return err
		})
		if err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return err
		}
	}
	return nil
}

// retry runs op again while the connection is lost (Kafka's retryRequestUntilConnected),
// for at most the session timeout.
func retry(c *Coordinator, op func() error) error {
	deadline := time.Now().Add(c.cfg.SessionTimeout)
	for {
		err := op()
		if !errors.Is(err, zk.ErrConnectionClosed) && !errors.Is(err, zk.ErrNoServer) {
			return err
		}
		if c.isClosed() || time.Now().After(deadline) {
			return err
		}
		select {
		case <-c.done:
			return err
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (c *Coordinator) isClosed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

// Thin chroot-aware wrappers.

func (c *Coordinator) get(path string) (data []byte, st *zk.Stat, err error) {
	err = retry(c, func() error { data, st, err = c.conn.Get(c.p(path)); return err })
	return
}

func (c *Coordinator) children(path string) (ch []string, err error) {
	err = retry(c, func() error { ch, _, err = c.conn.Children(c.p(path)); return err })
	return
}

func (c *Coordinator) exists(path string) (ok bool, st *zk.Stat, err error) {
	err = retry(c, func() error { ok, st, err = c.conn.Exists(c.p(path)); return err })
	return
}

func (c *Coordinator) create(path string, data []byte, flags int32) (string, error) {
	var out string
	err := retry(c, func() error {
		var err error
		out, err = c.conn.Create(c.p(path), data, flags, zk.WorldACL(zk.PermAll))
		return err
	})
	return strings.TrimPrefix(out, c.chroot), err
}

func (c *Coordinator) set(path string, data []byte, version int32) (st *zk.Stat, err error) {
	err = retry(c, func() error { st, err = c.conn.Set(c.p(path), data, version); return err })
	return
}

// ---- session handling ----

// sessionLoop consumes session state changes. On expiry it tells the controller to resign
// (without waiting for it); on a new session it re-registers the broker and asks the
// controller to re-elect (Kafka's RegisterBrokerAndReelect).
func (c *Coordinator) sessionLoop() {
	defer c.wg.Done()
	first := true
	var last int64
	for {
		st, ok := c.sessQ.get(c.done)
		if !ok {
			return
		}
		switch st {
		case zk.StateExpired:
			c.mu.Lock()
			if c.sessionID != 0 {
				c.oldSessionIDs = append(c.oldSessionIDs, c.sessionID)
			}
			c.sessionID = 0
			ctl := c.ctl
			c.mu.Unlock()
			c.log.Warn("ZooKeeper session expired")
			if ctl != nil {
				ctl.expire()
			}
		case zk.StateHasSession:
			sid := c.conn.SessionID()
			c.mu.Lock()
			c.sessionID = sid
			registered := c.registered
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
			c.log.WithField("session", fmt.Sprintf("0x%x", sid)).Info("new ZooKeeper session established")
			if registered {
				c.reregister()
			}
			if ctl != nil {
				ctl.enqueue(event{kind: evElect})
			}
		}
	}
}

func (c *Coordinator) reregister() {
	for !c.isClosed() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*c.cfg.SessionTimeout)
		_, err := c.register(ctx)
		cancel()
		if err == nil {
			return
		}
		c.log.WithError(err).Error("re-registration of the broker after session expiry failed; retrying")
		select {
		case <-c.done:
			return
		case <-time.After(time.Second):
		}
	}
}

// ClusterID returns the id stored in /cluster/id.
func (c *Coordinator) ClusterID() string { return c.clusterID }

// BrokerEpoch returns the broker epoch of the current registration (0 before Register).
func (c *Coordinator) BrokerEpoch() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.brokerEpoch
}

// Register creates the broker's ephemeral /brokers/ids/<id> (Kafka's CheckedEphemeral) and
// arranges re-registration after every session expiry. When the znode of an earlier, killed
// process of this broker still exists, it waits up to the session timeout for that session
// to expire; if the znode outlives it, another live broker holds the id: ErrBrokerIDInUse.
func (c *Coordinator) Register(ctx context.Context) (int64, error) {
	epoch, err := c.register(ctx)
	if err != nil {
		return 0, err
	}
	c.mu.Lock()
	c.registered = true
	c.mu.Unlock()
	return epoch, nil
}

func (c *Coordinator) register(ctx context.Context) (int64, error) {
	path := zkdata.BrokerIDPath(c.cfg.BrokerID)
	data := zkdata.EncodeBroker(c.cfg.Endpoints, c.cfg.Rack)
	var waitUntil time.Time
	for {
		if c.isClosed() {
			return 0, errClosed
		}
		epoch, err := c.checkedEphemeral(path, data)
		if err == nil {
			c.mu.Lock()
			c.brokerEpoch = epoch
			cb := c.cfg.OnBrokerEpoch
			c.mu.Unlock()
			c.log.WithField("brokerEpoch", epoch).Info("registered broker in ZooKeeper")
			if cb != nil {
				cb(epoch)
			}
			return epoch, nil
		}
		if !errors.Is(err, zk.ErrNodeExists) {
			return 0, fmt.Errorf("zkcoord: register %s: %w", path, err)
		}
		// Someone else's session owns the znode: a killed earlier process of this broker
		// (its session expires within the session timeout) or a live broker with our id.
		if waitUntil.IsZero() {
			// ZooKeeper expires sessions on tick boundaries: allow one extra second.
			waitUntil = time.Now().Add(c.cfg.SessionTimeout + time.Second)
			c.log.WithField("timeout", c.cfg.SessionTimeout).Warn("broker znode of an earlier session still exists; waiting for that session to expire")
		}
		if time.Now().After(waitUntil) {
			return 0, fmt.Errorf("%w: %s still owned by another session after %v", ErrBrokerIDInUse, path, c.cfg.SessionTimeout)
		}
		ok, _, ch, err := c.conn.ExistsW(c.p(path))
		if err != nil {
			ch = nil
		} else if !ok {
			continue
		}
		t := time.NewTimer(time.Until(waitUntil))
		select {
		case <-ch:
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return 0, ctx.Err()
		case <-c.done:
			t.Stop()
			return 0, errClosed
		}
		t.Stop()
		if ch == nil { // ExistsW failed: poll
			select {
			case <-time.After(100 * time.Millisecond):
			case <-ctx.Done():
				return 0, ctx.Err()
			}
		}
	}
}

// checkedEphemeral is Kafka's CheckedEphemeral: create + setData(v0) in one multi, so the
// result carries the czxid. On NODEEXISTS: owned by the current session → success; owned
// by one of our expired sessions (ZOOKEEPER-2985, KAFKA-7165) → delete and re-create; else
// zk.ErrNodeExists.
func (c *Coordinator) checkedEphemeral(path string, data []byte) (int64, error) {
	for attempt := 0; attempt < 5; attempt++ {
		var res []zk.MultiResponse
		err := retry(c, func() error {
			var err error
			res, err = c.conn.Multi(
				&zk.CreateRequest{Path: c.p(path), Data: data, Acl: zk.WorldACL(zk.PermAll), Flags: zk.FlagEphemeral},
				&zk.SetDataRequest{Path: c.p(path), Data: data, Version: 0})
			return err
		})
		if err == nil && len(res) == 2 && res[1].Stat != nil {
			return res[1].Stat.Czxid, nil
		}
		if err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return 0, err
		}
		_, st, gerr := c.get(path)
		if errors.Is(gerr, zk.ErrNoNode) {
			continue
		}
		if gerr != nil {
			return 0, gerr
		}
		sid := c.conn.SessionID()
		if st.EphemeralOwner == sid {
			return st.Czxid, nil // a retried create after connection loss
		}
		c.mu.Lock()
		ours := false
		for _, old := range c.oldSessionIDs {
			ours = ours || old == st.EphemeralOwner
		}
		c.mu.Unlock()
		if !ours {
			return 0, zk.ErrNodeExists
		}
		c.log.WithField("path", path).Info("deleting ephemeral znode of our expired session")
		if err := retry(c, func() error { return c.conn.Delete(c.p(path), st.Version) }); err != nil && !errors.Is(err, zk.ErrNoNode) && !errors.Is(err, zk.ErrBadVersion) {
			return 0, err
		}
	}
	return 0, zk.ErrNodeExists
}

// StartController starts the controller: election, then the controller event loop until
// Close. Calling it twice has no effect.
func (c *Coordinator) StartController() {
	c.mu.Lock()
	if c.ctl != nil || c.closed {
		c.mu.Unlock()
		return
	}
	ct := newController(c)
	c.ctl = ct
	c.mu.Unlock()
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		ct.run()
	}()
	ct.enqueue(event{kind: evElect})
}

// IsController reports whether this broker is the active controller.
func (c *Coordinator) IsController() bool {
	c.mu.Lock()
	ct := c.ctl
	c.mu.Unlock()
	return ct != nil && ct.active.Load()
}

// Close stops the controller, the ISR propagation task and closes the session, so the
// broker's ephemeral znodes (registration, /controller) vanish.
func (c *Coordinator) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	ct := c.ctl
	c.mu.Unlock()
	if ct != nil {
		ct.enqueue(event{kind: evShutdown})
	}
	close(c.done)
	if c.conn != nil {
		c.conn.Close()
	}
	c.wg.Wait()
	return nil
}

// ---- read helpers (tests, operator tools) ----

// LiveBrokers returns the registered brokers sorted by id.
func (c *Coordinator) LiveBrokers() ([]BrokerInfo, error) {
	ids, err := c.children(zkdata.PathBrokerIDs)
	if err != nil {
		return nil, err
	}
	var out []BrokerInfo
	for _, s := range ids {
		id, err := strconv.ParseInt(s, 10, 32)
		if err != nil {
			continue
		}
		data, st, err := c.get(zkdata.BrokerIDPath(int32(id)))
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return nil, err
		}
		bi, err := zkdata.DecodeBroker(int32(id), data)
		if err != nil {
			c.log.WithError(err).Warn("skipping undecodable broker znode")
			continue
		}
		bi.Epoch = st.Czxid
		out = append(out, bi)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// Topics returns all topics, sorted.
func (c *Coordinator) Topics() ([]string, error) {
	ts, err := c.children(zkdata.PathBrokerTopics)
	if err != nil {
		return nil, err
	}
	sort.Strings(ts)
	return ts, nil
}

// TopicAssignment returns the replica assignment of topic.
func (c *Coordinator) TopicAssignment(topic string) (map[int32][]int32, error) {
	if !zkdata.ValidTopicName(topic) {
		return nil, ErrUnknownTopic
	}
	data, _, err := c.get(zkdata.TopicPath(topic))
	if errors.Is(err, zk.ErrNoNode) {
		return nil, ErrUnknownTopic
	}
	if err != nil {
		return nil, err
	}
	return zkdata.DecodeTopic(topic, data)
}

// PartitionState reads a partition's state znode.
func (c *Coordinator) PartitionState(topic string, partition int32) (PartitionState, error) {
	if !zkdata.ValidTopicName(topic) {
		return PartitionState{}, ErrUnknownTopic
	}
	data, st, err := c.get(zkdata.PartitionStatePath(topic, partition))
	if errors.Is(err, zk.ErrNoNode) {
		return PartitionState{}, ErrUnknownTopic
	}
	if err != nil {
		return PartitionState{}, err
	}
	ps, err := zkdata.DecodeState(data)
	if err != nil {
		return PartitionState{}, err
	}
	ps.ZkVersion = st.Version
	return ps, nil
}

// ControllerID returns the broker id in /controller, -1 if there is none.
func (c *Coordinator) ControllerID() (int32, error) {
	data, _, err := c.get(zkdata.PathController)
	if errors.Is(err, zk.ErrNoNode) {
		return -1, nil
	}
	if err != nil {
		return -1, err
	}
	return zkdata.DecodeController(data)
}

// ControllerEpoch returns /controller_epoch and its zkVersion (0, -1 when missing).
func (c *Coordinator) ControllerEpoch() (int32, int32, error) {
	data, st, err := c.get(zkdata.PathControllerEpoch)
	if errors.Is(err, zk.ErrNoNode) {
		return zkdata.InitialControllerEpoch, -1, nil
	}
	if err != nil {
		return 0, 0, err
	}
	e, err := zkdata.DecodeControllerEpoch(data)
	return e, st.Version, err
}

// TopicConfig returns the "config" map of /config/topics/<t>.
func (c *Coordinator) TopicConfig(topic string) (map[string]string, error) {
	if !zkdata.ValidTopicName(topic) {
		return nil, ErrUnknownTopic
	}
	data, _, err := c.get(zkdata.TopicConfigPath(topic))
	if errors.Is(err, zk.ErrNoNode) {
		ok, _, err := c.exists(zkdata.TopicPath(topic))
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, ErrUnknownTopic
		}
		return map[string]string{}, nil
	}
	if err != nil {
		return nil, err
	}
	return zkdata.DecodeConfig(data)
}

// zkLogger routes go-zookeeper's messages to logrus at debug level.
type zkLogger struct{ l logrus.FieldLogger }

func (z zkLogger) Printf(format string, a ...interface{}) {
	z.l.WithField("component", "zk").Debugf(format, a...)
}

// ---- unbounded queue ----

// queue is an unbounded FIFO with a wake-up channel; put never blocks.
type queue[T any] struct {
	mu    sync.Mutex
	items []T
	wake  chan struct{}
}

func newQueue[T any]() *queue[T] { return &queue[T]{wake: make(chan struct{}, 1)} }

func (q *queue[T]) put(v T) {
	q.mu.Lock()
	q.items = append(q.items, v)
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// clearAndPut drops everything queued and puts v (Kafka's ControllerEventManager.clearAndPut).
func (q *queue[T]) clearAndPut(v T) {
	q.mu.Lock()
	q.items = append(q.items[:0], v)
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// get blocks until an item is available or done is closed.
func (q *queue[T]) get(done <-chan struct{}) (T, bool) {
	for {
		q.mu.Lock()
		if len(q.items) > 0 {
			v := q.items[0]
			var zero T
			q.items[0] = zero
			q.items = q.items[1:]
			q.mu.Unlock()
			return v, true
		}
		q.mu.Unlock()
		select {
		case <-q.wake:
		case <-done:
			var zero T
			return zero, false
		}
	}
}

func (q *queue[T]) len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.items)
}

// localDialer is a zk.Dialer whose connections bind localIP as their source address.
func localDialer(localIP string) zk.Dialer {
	return func(network, address string, timeout time.Duration) (net.Conn, error) {
		d := net.Dialer{Timeout: timeout, LocalAddr: &net.TCPAddr{IP: net.ParseIP(localIP)}}
		return d.Dial(network, address)
	}
}
