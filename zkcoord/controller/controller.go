package controller

import (
	"errors"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/isrbroker/isrbroker/broker/kproto"
	"github.com/isrbroker/isrbroker/zkcoord/internal/queue"
	"github.com/isrbroker/isrbroker/zkcoord/zkclient"
	"github.com/rcrowley/go-metrics"
	"github.com/sirupsen/logrus"
)

// ErrControllerMoved: a fenced write failed its /controller_epoch check, or a partition state
// was written by a newer controller.
var ErrControllerMoved = errors.New("zkcoord: controller moved")

// Config configures a Controller.
type Config struct {
	BrokerID                int32
	InterBrokerListener     string        // listener used to reach brokers ("" : their first endpoint)
	LocalAddr               string        // optional local IP for the connections to brokers (fault tests)
	ControllerSocketTimeout time.Duration // controller.socket.timeout.ms
	UncleanLeaderElection   bool          // broker default; a topic's /config/topics override wins (K6)
	DeleteTopicEnable       bool
	// AutoLeaderRebalance, LeaderImbalanceCheckInterval and LeaderImbalancePerBrokerPercentage
	// are auto.leader.rebalance.enable, leader.imbalance.check.interval.seconds and
	// leader.imbalance.per.broker.percentage (K7, preferred.go).
	AutoLeaderRebalance                bool
	LeaderImbalanceCheckInterval       time.Duration
	LeaderImbalancePerBrokerPercentage int
	Registry                           metrics.Registry // nil: metrics.DefaultRegistry
	Log                                logrus.FieldLogger
	// Dial opens the controller's connection to a broker; nil dials the Kafka protocol over
	// TCP (broker/kproto). Unit tests record requests in memory instead.
	Dial DialFunc
	// Security secures the default Dial's connections (TLS, SASL of the inter-broker
	// listener); the zero value is PLAINTEXT.
	Security kproto.Security
	// OnRoleChange, when set, is told each time this broker becomes the active controller
	// (active true, with the controller epoch it won) and each time it resigns (active false,
	// with the epoch it held). It runs on the event goroutine, between two events, so it must
	// return at once: no I/O, no waiting (the replication page records it in its journal).
	OnRoleChange func(active bool, epoch int32)
}

// Controller is one broker's controller: it runs for election and, while elected, acts on
// the events of its queue on one goroutine (Kafka's KafkaController + ControllerEventManager).
type Controller struct {
	cfg    Config
	conn   zkclient.Conn
	log    logrus.FieldLogger
	q      *queue.Queue[event]
	active atomic.Bool
	done   chan struct{}
	wg     sync.WaitGroup
	once   sync.Once

	// Owned by the event goroutine.
	ctx       *controllerContext
	zk        *controllerZk
	psm       *partitionStateMachine
	rsm       *replicaStateMachine
	chans     *channelManager
	deletion  *topicDeletionManager
	reassign  *reassigner
	preferred *preferredElector
	// The handlers of the events from ZooKeeper watches and requests, grouped as Kafka's
	// ControllerEvent handlers are (brokers.go, topics.go, logdir.go, elect_leaders.go).
	brokerChanges    brokerChangeHandler
	partitionChanges partitionChangeHandler
	logDirs          logDirFailureHandler
	electRequests    electionRequests

	mActive    metrics.Gauge
	mOffline   metrics.Gauge
	mUnclean   metrics.Meter
	mElection  metrics.Timer
	mImbalance metrics.Gauge
}

// New returns a controller using conn; Start runs it.
func New(conn zkclient.Conn, cfg Config) *Controller {
	if cfg.ControllerSocketTimeout <= 0 {
		cfg.ControllerSocketTimeout = 30 * time.Second
	}
	if cfg.LeaderImbalanceCheckInterval <= 0 {
		cfg.LeaderImbalanceCheckInterval = 300 * time.Second
	}
	if cfg.Registry == nil {
		cfg.Registry = metrics.DefaultRegistry
	}
	if cfg.Log == nil {
		cfg.Log = logrus.StandardLogger().WithField("brokerId", cfg.BrokerID)
	}
	if cfg.Dial == nil {
		cfg.Dial = secureDial(cfg.Security)
	}
	ct := &Controller{
		cfg:        cfg,
		conn:       conn,
		log:        cfg.Log.WithField("component", "controller"),
		q:          queue.New[event](),
		done:       make(chan struct{}),
		ctx:        newControllerContext(),
		mActive:    metrics.GetOrRegisterGauge("kafka.controller:type=KafkaController,name=ActiveControllerCount", cfg.Registry),
		mOffline:   metrics.GetOrRegisterGauge("kafka.controller:type=KafkaController,name=OfflinePartitionsCount", cfg.Registry),
		mUnclean:   metrics.GetOrRegisterMeter("kafka.controller:type=ControllerStats,name=UncleanLeaderElectionsPerSec", cfg.Registry),
		mElection:  metrics.GetOrRegisterTimer("kafka.controller:type=ControllerStats,name=LeaderElectionRateAndTimeMs", cfg.Registry),
		mImbalance: metrics.GetOrRegisterGauge(metricPreferredImbalance, cfg.Registry),
	}
	ct.zk = &controllerZk{ct: ct, armed: map[string]uint64{}}
	ct.psm = newPartitionStateMachine(ct)
	ct.rsm = newReplicaStateMachine(ct)
	ct.chans = &channelManager{ct: ct, senders: map[int32]*brokerSender{}}
	ct.deletion = &topicDeletionManager{ct: ct}
	ct.deletion.reset()
	ct.reassign = &reassigner{ct: ct, inProgress: map[TopicPartition]*reassignCtx{}}
	ct.preferred = &preferredElector{ct: ct}
	ct.brokerChanges = brokerChangeHandler{ct}
	ct.partitionChanges = partitionChangeHandler{ct}
	ct.logDirs = logDirFailureHandler{ct}
	ct.electRequests = electionRequests{ct}
	return ct
}

// Start starts the event goroutine and queues the first election.
func (ct *Controller) Start() {
	ct.wg.Add(1)
	go func() {
		defer ct.wg.Done()
		ct.run()
	}()
	ct.enqueue(event{kind: evElect})
}

// Close stops the event goroutine (resigning first) and waits for it. It does not close the
// ZooKeeper connection.
func (ct *Controller) Close() {
	ct.once.Do(func() {
		ct.enqueue(event{kind: evShutdown})
		close(ct.done)
	})
	ct.wg.Wait()
}

// IsActive reports whether this broker is the active controller.
func (ct *Controller) IsActive() bool { return ct.active.Load() }

// stateChangeLog is the logger of the partition and replica state machines' transitions and
// elections: component=state-change, Kafka's state-change.log (docs/logging.md).
func (ct *Controller) stateChangeLog() *logrus.Entry {
	return ct.log.WithField("component", "state-change")
}

// Reelect queues an election (a new ZooKeeper session: Kafka's RegisterBrokerAndReelect).
func (ct *Controller) Reelect() { ct.enqueue(event{kind: evElect}) }

// Expire drops queued work and resigns first (ControllerEventManager.clearAndPut(Expire)).
// The dropped requests (ControlledShutdown, ElectLeaders, the KIP-455 calls) are answered
// NOT_CONTROLLER at once (Kafka's preempt), not left to their callers' timeouts. It is called
// from the session goroutine and never waits for the event loop.
func (ct *Controller) Expire() {
	for _, ev := range ct.q.ClearAndPut(event{kind: evExpire}) {
		if ev.preempt != nil {
			ev.preempt()
		}
	}
}

func (ct *Controller) enqueue(ev event) { ct.q.Put(ev) }

// closed reports whether Close was called or the ZooKeeper connection is closed.
func (ct *Controller) closed() bool {
	select {
	case <-ct.done:
		return true
	case <-ct.conn.Done():
		return true
	default:
		return false
	}
}

func (ct *Controller) run() {
	defer ct.resign("shutdown")
	for {
		ev, ok := ct.q.Get(ct.done)
		if !ok || ev.kind == evShutdown {
			return
		}
		ct.handle(ev)
		ct.updateGauges()
	}
}

func (ct *Controller) handle(ev event) {
	defer func() {
		if r := recover(); r != nil {
			ct.log.WithField("panic", r).WithField("stack", string(debug.Stack())).Error("controller event handler panicked; resigning")
			ct.resign("panic")
			ct.retryElectLater()
		}
	}()
	if !ct.zk.accept(ev) {
		return // a watch from an earlier registration
	}
	switch ev.kind {
	case evElect, evControllerChange:
		ct.elect()
		return
	case evExpire:
		ct.resign("session expired")
		ct.zk.disarmAll() // the session's watches are gone
		return
	case evStaleEpoch:
		if ct.active.Load() && ev.epoch == ct.ctx.epoch {
			ct.log.WithField("controllerEpoch", ct.ctx.epoch).Warn("a broker answered STALE_CONTROLLER_EPOCH: a newer controller exists")
			ct.resign("fenced by a broker")
			ct.elect()
		}
		return
	case evControlledShutdown:
		shutdownHandler{ct}.onRequest(ev.shutdown) // answers NOT_CONTROLLER itself when inactive
		return
	case evElectLeaders:
		ct.electRequests.onElectLeaders(ev.elect) // answers NOT_CONTROLLER itself when inactive
	case evReassignAPI:
		ev.call() // answers NOT_CONTROLLER itself when inactive
		return
	}
	if !ct.active.Load() {
		return
	}
	var err error
	switch ev.kind {
	case evBrokerChange:
		err = ct.brokerChanges.processBrokerChange()
	case evTopicChange:
		err = ct.partitionChanges.processTopicChange()
	case evPartitionModification:
		err = ct.partitionChanges.processPartitionModification(ev.topic)
	case evDeleteTopics:
		err = ct.deletion.process()
	case evIsrChange:
		err = ct.partitionChanges.processIsrChange()
	case evReassignPartitions:
		_, err = ct.reassign.process()
	case evReassignIsrChange:
		err = ct.reassign.processIsrChange()
	case evPreferredElection:
		err = ct.preferred.process()
	case evAutoRebalance:
		err = ct.preferred.processAutoRebalance(ev.epoch)
	case evUncleanEnable:
		err = ct.electRequests.processUncleanEnable(ev.topic)
	case evLogDirEvent:
		err = ct.logDirs.processLogDirEvent()
	case evLeaderAndIsrResponse:
		err = ct.logDirs.processLeaderAndIsrResponse(ev.lair)
	case evStopReplicaAnswer:
		if ev.epoch == ct.ctx.epoch {
			err = ct.deletion.onStopReplicaAnswer(ev.stop)
		}
	}
	ct.handleErr(err)
}

func (ct *Controller) handleErr(err error) {
	if err == nil {
		return
	}
	if errors.Is(err, ErrControllerMoved) {
		ct.log.WithField("controllerEpoch", ct.ctx.epoch).Warn("controller moved to another broker; resigning")
		ct.resign("controller moved")
		ct.elect()
		return
	}
	if errors.Is(err, zk.ErrClosing) || errors.Is(err, zk.ErrConnectionClosed) && ct.closed() {
		return
	}
	ct.log.WithError(err).Error("controller event failed; resigning and re-electing")
	ct.resign("error")
	ct.retryElectLater()
}

func (ct *Controller) retryElectLater() {
	time.AfterFunc(time.Second, func() {
		if !ct.closed() {
			ct.enqueue(event{kind: evElect})
		}
	})
}

// resign stops acting as controller (onControllerResignation): request queues are stopped
// and the cached context and state machines dropped. It writes nothing to ZooKeeper.
func (ct *Controller) resign(why string) {
	ct.chans.stopAll()
	if !ct.active.Load() {
		return
	}
	ct.active.Store(false)
	ct.mActive.Update(0)
	ct.mOffline.Update(0)
	ct.reportRole(false)
	ct.zk.disarmAllBut("exists:" + pathController)
	ct.ctx.reset()
	ct.psm.reset()
	ct.rsm.reset()
	ct.deletion.reset()
	ct.reassign.reset()
	ct.log.WithField("reason", why).Info("resigned as controller")
}

// reportRole tells Config.OnRoleChange that this broker won (active) or gave up the
// controller role at ct.ctx.epoch.
func (ct *Controller) reportRole(active bool) {
	if ct.cfg.OnRoleChange != nil {
		ct.cfg.OnRoleChange(active, ct.ctx.epoch)
	}
}

func (ct *Controller) updateGauges() {
	if !ct.active.Load() {
		ct.mOffline.Update(0)
		ct.mImbalance.Update(0)
		return
	}
	var n int64
	for _, tp := range ct.ctx.partitions() {
		st, ok := ct.ctx.states[tp]
		if !ok || !ct.ctx.isLive(st.leader) {
			n++
		}
	}
	ct.mOffline.Update(n)
	ct.mImbalance.Update(ct.preferred.imbalanceCount())
}
