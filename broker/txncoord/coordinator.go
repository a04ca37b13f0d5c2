package txncoord

import (
	"io"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/isrbroker/isrbroker/broker/config/configdef"
	"github.com/isrbroker/isrbroker/broker/coordinator"
	"github.com/isrbroker/isrbroker/broker/security/acl"
	rm "github.com/isrbroker/isrbroker/replicamanager"
)

// TransactionStateTopic is Kafka's TRANSACTION_STATE_TOPIC_NAME.
const TransactionStateTopic = "__transaction_state"

// Error codes, in Kafka's words.
var (
	errNone                      int16 = 0
	errUnknownServer                   = kerr.UnknownServerError.Code
	errCoordinatorNotAvailable         = kerr.CoordinatorNotAvailable.Code
	errNotCoordinator                  = kerr.NotCoordinator.Code
	errCoordinatorLoadInProgress       = kerr.CoordinatorLoadInProgress.Code
	errInvalidRequest                  = kerr.InvalidRequest.Code
	errInvalidTransactionTimeout       = kerr.InvalidTransactionTimeout.Code
	errConcurrentTransactions          = kerr.ConcurrentTransactions.Code
	errInvalidProducerIDMapping        = kerr.InvalidProducerIDMapping.Code
	errInvalidProducerEpoch            = kerr.InvalidProducerEpoch.Code
	errInvalidTxnState                 = kerr.InvalidTxnState.Code
	errTransactionalIDAuthFailed       = kerr.TransactionalIDAuthorizationFailed.Code
	errClusterAuthFailed               = kerr.ClusterAuthorizationFailed.Code
	errGroupAuthFailed                 = kerr.GroupAuthorizationFailed.Code
	errTopicAuthFailed                 = kerr.TopicAuthorizationFailed.Code
	errUnknownTopicOrPartition         = kerr.UnknownTopicOrPartition.Code
	errOperationNotAttempted           = kerr.OperationNotAttempted.Code
)

// Config is the part of server.properties the transaction coordinator uses
// (docs/transactions.md §1). Zero values take the configdef table's defaults.
type Config struct {
	BrokerID                  int32
	NumPartitions             int32         // transaction.state.log.num.partitions
	LoadBufferSize            int32         // transaction.state.log.load.buffer.size
	MaxTimeout                time.Duration // transaction.max.timeout.ms
	TransactionalIDExpiration time.Duration // transactional.id.expiration.ms
	AbortTimedOutInterval     time.Duration // transaction.abort.timed.out.transaction.cleanup.interval.ms
	RemoveExpiredInterval     time.Duration // transaction.remove.expired.transaction.cleanup.interval.ms
	RequestTimeout            time.Duration // request.timeout.ms (the tombstones' append timeout)
	MarkerRetryBackoff        time.Duration // between rounds of markers and retried completions; 0: 100 ms

	Clock Clock // nil: the wall clock
	Log   logrus.FieldLogger
}

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
	i32(&c.NumPartitions, "transaction.state.log.num.partitions")
	i32(&c.LoadBufferSize, "transaction.state.log.load.buffer.size")
	dur(&c.MaxTimeout, "transaction.max.timeout.ms")
	dur(&c.TransactionalIDExpiration, "transactional.id.expiration.ms")
	dur(&c.AbortTimedOutInterval, "transaction.abort.timed.out.transaction.cleanup.interval.ms")
	dur(&c.RemoveExpiredInterval, "transaction.remove.expired.transaction.cleanup.interval.ms")
	dur(&c.RequestTimeout, "request.timeout.ms")
	if c.MarkerRetryBackoff <= 0 {
		c.MarkerRetryBackoff = 100 * time.Millisecond
	}
	if c.Clock == nil {
		c.Clock = RealClock
	}
	if c.Log == nil {
		l := logrus.New()
		l.SetOutput(io.Discard)
		c.Log = l
	}
}

// Replicas is what the coordinator needs from the replica manager (as groupcoord's).
type Replicas interface {
	// AppendRecords appends to partitions this broker leads; done is called exactly once,
	// maybe on another goroutine, maybe before AppendRecords returns.
	AppendRecords(timeout time.Duration, acks int16, entries map[rm.TopicPartition][]byte, done func(map[rm.TopicPartition]rm.ProduceResult))
	// ReadLocal reads whole batches of the local log of tp from offset (clamped to the log
	// start offset) up to its LEO.
	ReadLocal(tp rm.TopicPartition, offset int64, maxBytes int32) (rm.LocalRead, error)
}

// ProducerIDs hands out producer ids no other broker hands out (Kafka's ProducerIdManager:
// blocks from /latest_producer_id_block).
type ProducerIDs interface {
	GenerateProducerID() (int64, error)
}

// Metadata is the coordinator's view of the broker's metadata cache.
type Metadata interface {
	// PartitionCount is the number of partitions of topic, 0 when the topic is unknown.
	PartitionCount(topic string) int32
	// HasPartition reports whether the cluster knows topic-partition.
	HasPartition(topic string, partition int32) bool
}

// Marker is one WriteTxnMarkers entry: the end of a transaction on its partitions.
type Marker struct {
	TransactionalID  string
	ProducerID       int64
	ProducerEpoch    int16
	Commit           bool
	CoordinatorEpoch int32
	Partitions       []rm.TopicPartition
}

// MarkerSender writes transaction markers (Kafka's TransactionMarkerChannelManager): it sends
// WriteTxnMarkers to the leader of each partition of m and calls done exactly once, maybe on
// another goroutine, with an error code per partition of m (a failed send: the code of the
// failure, NETWORK_EXCEPTION or REQUEST_TIMED_OUT, for each partition it carried). The
// coordinator retries what is retriable (markers.go).
type MarkerSender interface {
	SendMarkers(m Marker, done func(map[rm.TopicPartition]int16))
}

// GroupPartitioner places a consumer group in __consumer_offsets (the group coordinator's
// PartitionFor), for AddOffsetsToTxn.
type GroupPartitioner interface {
	PartitionFor(groupID string) int32
}

// Request is what a handler knows of the request besides its body.
type Request struct {
	ClientID string
	Listener string
	Log      logrus.FieldLogger
	// Authorized decides an operation of the request's principal on a resource (the broker's
	// authorizer; docs/acls.md). nil: no authorizer, everything is allowed.
	Authorized coordinator.Authorizer
}

// allowed reports whether the request may perform op on typ:name.
func (r *Request) allowed(op acl.Operation, typ acl.ResourceType, name string) bool {
	return r == nil || r.Authorized.Allows(op, typ, name)
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

// Coordinator is the transaction coordinator of one broker: Kafka's TransactionCoordinator.
// Its stateManager (state_manager.go) is TransactionStateManager: the cache of the
// transactional ids whose __transaction_state partition this broker leads, their appends and
// the loading and unloading of partitions; its markers (markers.go) are the marker side of
// TransactionMarkerChannelManager.
type Coordinator struct {
	cfg     Config
	clock   Clock
	log     logrus.FieldLogger
	pids    ProducerIDs
	meta    Metadata
	groups  GroupPartitioner
	state   *stateManager
	markers *markerManager

	mu            sync.Mutex
	active        bool
	abortTimer    Timer
	expiryTimer   Timer
	closed        chan struct{}
	schedulerDone chan struct{}
}

// New builds a coordinator; Start activates it. meta and groups may be nil (tests): then
// every partition is known, and AddOffsetsToTxn places every group in partition 0.
func New(cfg Config, replicas Replicas, pids ProducerIDs, markers MarkerSender, meta Metadata, groups GroupPartitioner) *Coordinator {
	cfg.setDefaults()
	log := cfg.Log.WithField("component", "txn-coordinator")
	c := &Coordinator{cfg: cfg, clock: cfg.Clock, log: log, pids: pids, meta: meta, groups: groups, closed: make(chan struct{}), schedulerDone: make(chan struct{})}
	c.state = newStateManager(cfg, log, replicas, meta)
	c.markers = &markerManager{c: c, sender: markers}
	return c
}

// Start activates the coordinator: the loader goroutine, the abort of timed-out transactions
// (transaction.abort.timed.out.transaction.cleanup.interval.ms) and the expiration of
// transactional ids (transaction.remove.expired.transaction.cleanup.interval.ms).
func (c *Coordinator) Start() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.active {
		return
	}
	c.active = true
	go func() {
		defer close(c.schedulerDone)
		c.state.scheduler.run(c.closed)
	}()
	c.abortTimer = c.clock.AfterFunc(c.cfg.AbortTimedOutInterval, c.abortTimedOutTick)
	c.expiryTimer = c.clock.AfterFunc(c.cfg.RemoveExpiredInterval, c.expiryTick)
	c.log.Info("transaction coordinator started")
}

// Close stops the periodic tasks and the loader and empties the cache (requests get
// NOT_COORDINATOR afterwards).
func (c *Coordinator) Close() {
	c.mu.Lock()
	if !c.active {
		c.mu.Unlock()
		return
	}
	c.active = false
	c.abortTimer.Stop()
	c.expiryTimer.Stop()
	close(c.closed)
	c.mu.Unlock()
	<-c.schedulerDone
	c.state.shutdown()
	c.log.Info("transaction coordinator stopped")
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

// OnElection is TransactionCoordinator.onElection: this broker now leads partition p of
// __transaction_state at leader epoch coordinatorEpoch; its transactions are loaded on the
// loader goroutine (COORDINATOR_LOAD_IN_PROGRESS meanwhile) and those found in PrepareCommit
// or PrepareAbort get their markers sent again.
func (c *Coordinator) OnElection(p, coordinatorEpoch int32) {
	c.state.scheduleLoad(p, coordinatorEpoch, c.markers.send)
}

// OnResignation is TransactionCoordinator.onResignation: this broker no longer leads
// partition p (coordinatorEpoch is the new leader epoch, -1 after a StopReplica); its
// transactions are dropped at once (NOT_COORDINATOR) and their marker work stops.
func (c *Coordinator) OnResignation(p, coordinatorEpoch int32) {
	c.state.removePartition(p, coordinatorEpoch)
}

// PartitionFor is Utils.abs(transactionalId.hashCode) % partitions (docs/transactions.md §1).
func (c *Coordinator) PartitionFor(transactionalID string) int32 {
	return c.state.partitionFor(transactionalID)
}

func (c *Coordinator) nowMs() int64 { return c.clock.Now().UnixMilli() }

func txnLog(log logrus.FieldLogger, id string) logrus.FieldLogger {
	return log.WithField("transactionalId", id)
}
