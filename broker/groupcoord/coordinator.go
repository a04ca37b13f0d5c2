package groupcoord

import (
	"context"
	"io"
	"sync"
	"time"

	"github.com/rcrowley/go-metrics"
	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/isrbroker/isrbroker/broker/config/configdef"
	"github.com/isrbroker/isrbroker/broker/coordinator"
	"github.com/isrbroker/isrbroker/broker/security/acl"
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
	errGroupAuthFailed                 = kerr.GroupAuthorizationFailed.Code
	errTopicAuthFailed                 = kerr.TopicAuthorizationFailed.Code
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

// Admin creates topics (*zkcoord/admin.Admin).
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
	// Authorized decides an operation of the request's principal on a resource (the broker's
	// authorizer; docs/acls.md). nil: no authorizer, everything is allowed.
	Authorized coordinator.Authorizer
}

// allowed reports whether the request may perform op on typ:name.
func (r *Request) allowed(op acl.Operation, typ acl.ResourceType, name string) bool {
	return r == nil || r.Authorized.Allows(op, typ, name)
}

// authorizedGroupOps is KIP-430's bitfield of the group operations the request may perform.
func (r *Request) authorizedGroupOps(group string) int32 {
	var bits int32
	for _, op := range acl.SupportedOperations(acl.ResourceGroup) {
		if r.allowed(op, acl.ResourceGroup, group) {
			bits |= 1 << uint(op)
		}
	}
	return bits
}

// groupReadDenied answers the group membership requests (JoinGroup, SyncGroup, Heartbeat,
// LeaveGroup) of a principal without READ on the group (GROUP_AUTHORIZATION_FAILED).
func (r *Request) groupReadDenied(group string) bool {
	return !r.allowed(acl.OpRead, acl.ResourceGroup, group)
}

// handlerFunc serves one request; respond must be called exactly once, now or later.
type handlerFunc func(c *Coordinator, r *Request, req kmsg.Request, respond func(kmsg.Response))

var handlers coordinator.Handlers[handlerFunc]

func register(key kmsg.Key, min, max int16, fn handlerFunc) { handlers.Register(key, min, max, fn) }

// KeyRange is one served API key and its version range.
type KeyRange = coordinator.KeyRange

// Keys lists the API keys the coordinator serves and their version ranges, by key.
func Keys() []KeyRange {
	return handlers.Keys()
}

// Coordinator is the group coordinator of one broker: Kafka's GroupCoordinator. It handles the
// group requests (one handler file per API key); the rebalance machinery is its rebalancer
// (rebalance.go) and the groups and offsets cache, with everything written to or read from
// __consumer_offsets, is its groupManager (group_manager.go).
type Coordinator struct {
	cfg     Config
	clock   Clock
	log     logrus.FieldLogger
	meta    Metadata
	admin   Admin
	metrics *coordMetrics

	groupManager *groupMetadataManager
	rebalancer   *rebalancer

	// ctx, cancel and wg are those of the __consumer_offsets creation (FindCoordinator).
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu       sync.RWMutex
	active   bool
	creating bool // a __consumer_offsets creation is under way
}

// New builds a coordinator; Start activates it.
func New(cfg Config, replicas Replicas, meta Metadata, admin Admin) *Coordinator {
	cfg.setDefaults()
	ctx, cancel := context.WithCancel(context.Background())
	log := cfg.Log.WithField("component", "coordinator")
	gm := newGroupMetadataManager(cfg, log, replicas, meta)
	gm.metrics = newCoordMetrics(gm, cfg.Registry)
	return &Coordinator{
		cfg:          cfg,
		clock:        cfg.Clock,
		log:          log,
		meta:         meta,
		admin:        admin,
		metrics:      gm.metrics,
		groupManager: gm,
		rebalancer:   &rebalancer{cfg: cfg, clock: cfg.Clock, log: log, groupManager: gm},
		ctx:          ctx,
		cancel:       cancel,
	}
}

// Start activates the coordinator: the loader goroutine and the offset-expiry task
// (offsets.retention.check.interval.ms).
func (c *Coordinator) Start() {
	c.mu.Lock()
	c.active = true
	c.mu.Unlock()
	c.groupManager.startup()
	c.log.Info("group coordinator started")
}

// Close deactivates the coordinator (COORDINATOR_NOT_AVAILABLE afterwards), unloads every
// group (parked joins and syncs are answered NOT_COORDINATOR) and waits for its goroutines.
func (c *Coordinator) Close() {
	c.mu.Lock()
	c.active = false
	c.mu.Unlock()
	c.cancel()
	c.groupManager.shutdown(c.rebalancer.onGroupUnloaded)
	c.wg.Wait()
}

// Handle serves one decoded request of a key listed by Keys.
func (c *Coordinator) Handle(r *Request, req kmsg.Request, respond func(kmsg.Response)) {
	fn, ok := handlers.Lookup(req.Key())
	if !ok {
		respond(nil)
		return
	}
	if r.Log == nil {
		r.Log = c.log
	}
	fn(c, r, req, respond)
}

// OnLeadershipChange is the replica manager's leadership callback (KafkaApis
// onLeadershipChange, GroupCoordinator.onElection and onResignation): partitions of
// __consumer_offsets this broker now leads are loaded, those it follows or stopped hosting are
// unloaded. It only schedules; the work runs on the group manager's scheduler.
func (c *Coordinator) OnLeadershipChange(leaders, followers []rm.TopicPartition) {
	for _, t := range leaders {
		if t.Topic == OffsetsTopic {
			c.groupManager.scheduleLoadGroupAndOffsets(t.Partition, c.rebalancer.onGroupLoaded)
		}
	}
	for _, t := range followers {
		if t.Topic == OffsetsTopic {
			c.groupManager.removeGroupsForPartition(t.Partition, c.rebalancer.onGroupUnloaded)
		}
	}
}

// HandleDeletedPartitions is GroupCoordinator.handleDeletedPartitions, called after an
// UpdateMetadata that marked partitions deleted (leader -2, the topic is being deleted): their
// committed offsets are removed from every cached group and tombstoned, and a group left Empty
// without offsets becomes Dead (docs/groups.md §6). OffsetFetch answers no offset for them from
// then on, so a consumer of a topic deleted and re-created starts it from auto.offset.reset.
func (c *Coordinator) HandleDeletedPartitions(partitions []rm.TopicPartition) {
	tps := make([]tp, 0, len(partitions))
	for _, p := range partitions {
		tps = append(tps, tp{p.Topic, p.Partition})
	}
	n := c.groupManager.cleanupGroupMetadata(c.groupManager.allGroups(), func(g *group) map[tp]offsetAndMetadata {
		return g.offsets.removeOffsets(tps)
	})
	c.log.WithFields(logrus.Fields{"offsets": n, "partitions": len(tps)}).Info("removed offsets associated with deleted partitions")
}

// PartitionFor is Utils.abs(groupId.hashCode) % partitions (docs/groups.md §1).
func (c *Coordinator) PartitionFor(groupID string) int32 {
	return c.groupManager.partitionFor(groupID)
}

// validateGroupStatus is GroupCoordinator.validateGroupStatus: 0 or the error to answer.
// allowEmpty: OffsetCommit, OffsetFetch, DescribeGroups and DeleteGroups accept the empty
// group id (older clients).
func (c *Coordinator) validateGroupStatus(groupID string, allowEmpty bool) int16 {
	if groupID == "" && !allowEmpty {
		return errInvalidGroupID
	}
	c.mu.RLock()
	active := c.active
	c.mu.RUnlock()
	if !active {
		return errCoordinatorNotAvailable
	}
	owned, loading := c.groupManager.partitionState(c.PartitionFor(groupID))
	switch {
	case loading:
		return errCoordinatorLoadInProgress
	case !owned:
		return errNotCoordinator
	}
	return errNone
}

func (c *Coordinator) now() time.Time { return c.clock.Now() }

// groupLog is log with g's id, generation and state.
func groupLog(log logrus.FieldLogger, g *group) logrus.FieldLogger {
	return log.WithFields(logrus.Fields{"group": g.id, "generation": g.generation, "state": g.state.String()})
}

// transition moves g to s at now, logging a refused transition (a bug) instead of panicking.
func transition(log logrus.FieldLogger, g *group, s groupState, now time.Time) bool {
	if err := g.transitionTo(s, now); err != nil {
		groupLog(log, g).WithError(err).Error("refusing invalid group state transition")
		return false
	}
	return true
}
