package groupcoord

import (
	"context"
	"io"
	"sort"
	"sync"
	"time"

	"github.com/rcrowley/go-metrics"
	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/isrbroker/isrbroker/fetcher"
	"github.com/isrbroker/isrbroker/logstore/configdef"
	rm "github.com/isrbroker/isrbroker/replicamanager"
	"github.com/isrbroker/isrbroker/zkcoord"
)

// OffsetsTopic is Kafka's GROUP_METADATA_TOPIC_NAME.
const OffsetsTopic = "__consumer_offsets"

// Error codes, in Kafka's words.
var (
	errNone                      int16 = 0
	errUnknownServer                   = kerr.UnknownServerError.Code
	errCoordinatorNotAvailable         = kerr.CoordinatorNotAvailable.Code
	errNotCoordinator                  = kerr.NotCoordinator.Code
	errCoordinatorLoadInProgress       = kerr.CoordinatorLoadInProgress.Code
	errInvalidGroupID                  = kerr.InvalidGroupID.Code
	errUnknownMemberID                 = kerr.UnknownMemberID.Code
	errInvalidSessionTimeout           = kerr.InvalidSessionTimeout.Code
	errRebalanceInProgress             = kerr.RebalanceInProgress.Code
	errIllegalGeneration               = kerr.IllegalGeneration.Code
	errInconsistentGroupProtocol       = kerr.InconsistentGroupProtocol.Code
	errMemberIDRequired                = kerr.MemberIDRequired.Code
	errFencedInstanceID                = kerr.FencedInstanceID.Code
	errGroupMaxSizeReached             = kerr.GroupMaxSizeReached.Code
	errGroupIDNotFound                 = kerr.GroupIDNotFound.Code
	errNonEmptyGroup                   = kerr.NonEmptyGroup.Code
	errGroupSubscribedToTopic          = kerr.GroupSubscribedToTopic.Code
	errOffsetMetadataTooLarge          = kerr.OffsetMetadataTooLarge.Code
	errUnknownTopicOrPartition         = kerr.UnknownTopicOrPartition.Code
	errInvalidCommitOffsetSize         = kerr.InvalidCommitOffsetSize.Code
	errTransactionalIDAuthFailed       = kerr.TransactionalIDAuthorizationFailed.Code
	errInvalidRequest                  = kerr.InvalidRequest.Code
)

// Config is the part of server.properties the coordinator uses (docs/groups.md §1).
type Config struct {
	BrokerID                      int32
	OffsetsTopicNumPartitions     int32         // offsets.topic.num.partitions
	OffsetsTopicReplicationFactor int16         // offsets.topic.replication.factor
	OffsetsTopicSegmentBytes      int32         // offsets.topic.segment.bytes
	OffsetsCommitRequiredAcks     int16         // offsets.commit.required.acks
	OffsetsCommitTimeout          time.Duration // offsets.commit.timeout.ms
	OffsetsRetention              time.Duration // offsets.retention.minutes
	OffsetsRetentionCheckInterval time.Duration // offsets.retention.check.interval.ms
	OffsetsLoadBufferSize         int32         // offsets.load.buffer.size
	OffsetMetadataMaxBytes        int32         // offset.metadata.max.bytes
	GroupMinSessionTimeout        time.Duration // group.min.session.timeout.ms
	GroupMaxSessionTimeout        time.Duration // group.max.session.timeout.ms
	GroupInitialRebalanceDelay    time.Duration // group.initial.rebalance.delay.ms
	GroupMaxSize                  int32         // group.max.size

	Clock    Clock // nil: the wall clock
	Registry metrics.Registry
	Log      logrus.FieldLogger
}

// setDefaults fills unset settings with the configdef table's defaults (main passes every
// setting from server.properties; tests only some). offsets.commit.required.acks 0 is "unset"
// here, as in Kafka's OffsetConfig a 0 would never be acknowledged.
func (c *Config) setDefaults() {
	b := configdef.Broker
	i32 := func(v *int32, key string) {
		if *v <= 0 {
			*v = int32(configdef.IntDefault(key, b))
		}
	}
	dur := func(d *time.Duration, key string) {
		if *d <= 0 {
			*d = configdef.DurationDefault(key, b)
		}
	}
	i32(&c.OffsetsTopicNumPartitions, "offsets.topic.num.partitions")
	i32(&c.OffsetsTopicSegmentBytes, "offsets.topic.segment.bytes")
	i32(&c.OffsetsLoadBufferSize, "offsets.load.buffer.size")
	i32(&c.GroupMaxSize, "group.max.size")
	if c.OffsetsTopicReplicationFactor <= 0 {
		c.OffsetsTopicReplicationFactor = int16(configdef.IntDefault("offsets.topic.replication.factor", b))
	}
	if c.OffsetsCommitRequiredAcks == 0 {
		c.OffsetsCommitRequiredAcks = int16(configdef.IntDefault("offsets.commit.required.acks", b))
	}
	dur(&c.OffsetsCommitTimeout, "offsets.commit.timeout.ms")
	dur(&c.OffsetsRetention, "offsets.retention.minutes")
	dur(&c.OffsetsRetentionCheckInterval, "offsets.retention.check.interval.ms")
	dur(&c.GroupMaxSessionTimeout, "group.max.session.timeout.ms")
	if c.Clock == nil {
		c.Clock = RealClock
	}
	if c.Registry == nil {
		c.Registry = metrics.NewRegistry()
	}
	if c.Log == nil {
		l := logrus.New()
		l.SetOutput(io.Discard)
		c.Log = l
	}
}

// Replicas is what the coordinator needs from the replica manager.
type Replicas interface {
	// AppendRecords appends to partitions this broker leads; done is called exactly once,
	// maybe on another goroutine, maybe before AppendRecords returns.
	AppendRecords(timeout time.Duration, acks int16, entries map[rm.TopicPartition][]byte, done func(map[rm.TopicPartition]rm.ProduceResult))
	// ReadLocal reads whole batches of the local log of tp from offset (clamped to the log
	// start offset) up to its LEO.
	ReadLocal(tp rm.TopicPartition, offset int64, maxBytes int32) (rm.LocalRead, error)
}

// Admin creates topics (*zkcoord.Coordinator).
type Admin interface {
	CreateTopic(ctx context.Context, spec zkcoord.TopicSpec, validateOnly bool) (map[int32][]int32, error)
}

// Node is a broker endpoint on one listener.
type Node struct {
	ID   int32
	Host string
	Port int32
}

// Metadata is the coordinator's view of the broker's metadata cache.
type Metadata interface {
	// PartitionCount is the number of partitions of topic, 0 when the topic is unknown.
	PartitionCount(topic string) int32
	// HasPartition reports whether the cluster knows topic-partition.
	HasPartition(topic string, partition int32) bool
	// Leader returns the live leader of topic-partition with its endpoint on listener.
	Leader(topic string, partition int32, listener string) (Node, bool)
	// AliveBrokers is the number of live brokers.
	AliveBrokers() int
}

// Request is what a handler knows of the request besides its body.
type Request struct {
	ClientID   string
	ClientHost string // the client's address, without the port
	Listener   string // the listener the request came in on
	Log        logrus.FieldLogger
}

// handlerFunc serves one request; respond must be called exactly once, now or later.
type handlerFunc func(c *Coordinator, r *Request, req kmsg.Request, respond func(kmsg.Response))

type handler struct {
	key      kmsg.Key
	min, max int16
	fn       handlerFunc
}

var handlers = map[int16]*handler{}

func register(key kmsg.Key, min, max int16, fn handlerFunc) {
	handlers[int16(key)] = &handler{key: key, min: min, max: max, fn: fn}
}

// KeyRange is one served API key and its version range.
type KeyRange struct {
	Key      kmsg.Key
	Min, Max int16
}

// Keys lists the API keys the coordinator serves, by key (Kafka 2.4's ranges, docs/groups.md §2).
func Keys() []KeyRange {
	out := make([]KeyRange, 0, len(handlers))
	for _, h := range handlers {
		out = append(out, KeyRange{Key: h.key, Min: h.min, Max: h.max})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// Coordinator is the group coordinator of one broker.
type Coordinator struct {
	cfg      Config
	clock    Clock
	log      logrus.FieldLogger
	replicas Replicas
	meta     Metadata
	admin    Admin
	metrics  *coordMetrics

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu       sync.RWMutex
	active   bool
	groups   map[string]*group
	owned    map[int32]bool
	loading  map[int32]bool
	creating bool // a __consumer_offsets creation is under way
	// leaderEpochs counts leadership changes per offsets partition, so that a load finishing
	// after a resignation is discarded.
	leaderEpochs map[int32]uint64
	expiryTimer  Timer

	// loadCh feeds the loader goroutine: loads and unloads run one at a time, in order.
	loadMu    sync.Mutex
	loadQueue []func()
	loadWake  chan struct{}
}

// New builds a coordinator; Start activates it.
func New(cfg Config, replicas Replicas, meta Metadata, admin Admin) *Coordinator {
	cfg.setDefaults()
	ctx, cancel := context.WithCancel(context.Background())
	c := &Coordinator{
		cfg:      cfg,
		clock:    cfg.Clock,
		log:      cfg.Log.WithField("component", "group-coordinator"),
		replicas: replicas,
		meta:     meta,
		admin:    admin,
		ctx:      ctx,
		cancel:   cancel,
		groups:   make(map[string]*group),
		owned:    make(map[int32]bool),
		loading:  make(map[int32]bool),
		loadWake: make(chan struct{}, 1),

		leaderEpochs: make(map[int32]uint64),
	}
	c.metrics = newCoordMetrics(c, cfg.Registry)
	return c
}

// Start activates the coordinator: the loader goroutine and the offset-expiry task
// (offsets.retention.check.interval.ms).
func (c *Coordinator) Start() {
	c.mu.Lock()
	c.active = true
	c.mu.Unlock()
	c.wg.Add(1)
	go c.loader()
	c.scheduleExpiry()
	c.log.Info("group coordinator started")
}

// Close deactivates the coordinator (COORDINATOR_NOT_AVAILABLE afterwards), unloads every
// group (parked joins and syncs are answered NOT_COORDINATOR) and waits for its goroutines.
func (c *Coordinator) Close() {
	c.mu.Lock()
	c.active = false
	groups := make([]*group, 0, len(c.groups))
	for _, g := range c.groups {
		groups = append(groups, g)
	}
	c.groups = make(map[string]*group)
	c.owned = make(map[int32]bool)
	c.loading = make(map[int32]bool)
	if c.expiryTimer != nil {
		c.expiryTimer.Stop()
	}
	c.mu.Unlock()
	c.cancel()
	for _, g := range groups {
		c.locked(g, func() { c.onGroupUnloaded(g) })
	}
	c.wg.Wait()
}

// Handle serves one decoded request of a key listed by Keys.
func (c *Coordinator) Handle(r *Request, req kmsg.Request, respond func(kmsg.Response)) {
	h := handlers[req.Key()]
	if h == nil {
		respond(nil)
		return
	}
	if r.Log == nil {
		r.Log = c.log
	}
	h.fn(c, r, req, respond)
}

// numPartitions is the partition count of __consumer_offsets: the topic's when the metadata
// knows it, else offsets.topic.num.partitions (GroupMetadataManager reads it from ZooKeeper).
func (c *Coordinator) numPartitions() int32 {
	if c.meta != nil {
		if n := c.meta.PartitionCount(OffsetsTopic); n > 0 {
			return n
		}
	}
	return c.cfg.OffsetsTopicNumPartitions
}

// PartitionFor is Utils.abs(groupId.hashCode) % partitions (docs/groups.md §1).
func (c *Coordinator) PartitionFor(groupID string) int32 {
	return partitionFor(groupID, c.numPartitions())
}

func partitionFor(groupID string, n int32) int32 {
	h := fetcher.JavaStringHashCode(groupID)
	if h == -1<<31 {
		h = 0
	} else if h < 0 {
		h = -h
	}
	return h % n
}

// validateGroupStatus is GroupCoordinator.validateGroupStatus: 0 or the error to answer.
// allowEmpty: OffsetCommit, OffsetFetch, DescribeGroups and DeleteGroups accept the empty
// group id (older clients).
func (c *Coordinator) validateGroupStatus(groupID string, allowEmpty bool) int16 {
	if groupID == "" && !allowEmpty {
		return errInvalidGroupID
	}
	p := c.PartitionFor(groupID)
	c.mu.RLock()
	defer c.mu.RUnlock()
	switch {
	case !c.active:
		return errCoordinatorNotAvailable
	case c.loading[p]:
		return errCoordinatorLoadInProgress
	case !c.owned[p]:
		return errNotCoordinator
	}
	return errNone
}

func (c *Coordinator) getGroup(id string) *group {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.groups[id]
}

// addGroup puts g in the cache unless a group of that id is there; it returns the cached one,
// or nil when this broker no longer owns the group's partition (a resignation raced with the
// request: the group must not outlive the unload).
func (c *Coordinator) addGroup(g *group) *group {
	p := c.PartitionFor(g.id)
	c.mu.Lock()
	defer c.mu.Unlock()
	if cur := c.groups[g.id]; cur != nil {
		return cur
	}
	if !c.owned[p] || c.loading[p] {
		return nil
	}
	c.groups[g.id] = g
	return g
}

// removeGroupIf drops g from the cache if it is the cached group of its id.
func (c *Coordinator) removeGroupIf(g *group) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.groups[g.id] == g {
		delete(c.groups, g.id)
		return true
	}
	return false
}

// groupNotExists: the group is local and absent or Dead (GroupMetadataManager.groupNotExists).
func (c *Coordinator) groupNotExists(id string) bool {
	p := c.PartitionFor(id)
	c.mu.RLock()
	owned := c.owned[p]
	g := c.groups[id]
	c.mu.RUnlock()
	if !owned {
		return false
	}
	if g == nil {
		return true
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.is(stateDead)
}

// locked runs fn under g's lock, then (lock released) the actions fn deferred (appends).
func (c *Coordinator) locked(g *group, fn func()) {
	g.mu.Lock()
	fn()
	deferred := g.deferred
	g.deferred = nil
	g.mu.Unlock()
	for _, d := range deferred {
		d()
	}
}

func (c *Coordinator) now() time.Time { return c.clock.Now() }

func (c *Coordinator) groupLog(g *group) logrus.FieldLogger {
	return c.log.WithFields(logrus.Fields{"group": g.id, "generation": g.generation, "state": g.state.String()})
}

// transition moves g to s, logging a refused transition (a bug) instead of panicking.
func (c *Coordinator) transition(g *group, s groupState) bool {
	if err := g.transitionTo(s, c.now()); err != nil {
		c.groupLog(g).WithError(err).Error("refusing invalid group state transition")
		return false
	}
	return true
}
