package replicamanager

import (
	"errors"
	"sync"
	"sync/atomic"

	"github.com/rcrowley/go-metrics"
	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/isrbroker/isrbroker/broker/config/configdef"
	"github.com/isrbroker/isrbroker/broker/ratelog"
	"github.com/isrbroker/isrbroker/fetcher"
	"github.com/isrbroker/isrbroker/logstore"
)

// IsrWriter writes a leader's own ISR change to ZooKeeper as a compare-and-set on the partition
// state's zkVersion (K3); zkcoord implements it and also queues the change for
// /isr_change_notification (K5).
//
// UpdateLeaderAndIsr returns the new zkVersion. When it gives up without knowing whether the
// write committed (the connection was lost and the retries ran out), its error wraps one whose
// OutcomeUnknown method returns true (see IsOutcomeUnknown); the leader then re-reads the
// partition state with ReadLeaderAndIsr and reconciles. Any other error means the write did not
// happen.
type IsrWriter interface {
	UpdateLeaderAndIsr(topic string, partition int32, leader, leaderEpoch int32, isr []int32, controllerEpoch int32, zkVersion int32) (int32, error)
	// ReadLeaderAndIsr reads the partition state znode: its leader, leader epoch, ISR and
	// zkVersion.
	ReadLeaderAndIsr(topic string, partition int32) (leader, leaderEpoch int32, isr []int32, zkVersion int32, err error)
}

// IsOutcomeUnknown reports whether err says that a ZooKeeper write may or may not have
// committed: it wraps an error with an OutcomeUnknown() bool method returning true.
func IsOutcomeUnknown(err error) bool {
	var u interface{ OutcomeUnknown() bool }
	return errors.As(err, &u) && u.OutcomeUnknown()
}

// TopicConfigSource returns a topic's overrides (/config/topics/<t>); zkcoord implements it.
type TopicConfigSource interface {
	TopicConfig(topic string) (map[string]string, error)
}

// Coordinator is what the replica manager needs from ZooKeeper coordination.
type Coordinator interface {
	IsrWriter
	TopicConfigSource
}

// fetcherManager is the part of fetcher.Manager the replica manager drives (S16, S22, S23).
type fetcherManager interface {
	AddFetcherForPartitions(map[TopicPartition]fetcher.InitialFetchState)
	RemoveFetcherForPartitions([]TopicPartition)
	ShutdownIdleFetcherThreads()
	Close()
}

type rmMetrics struct {
	isrShrinks       metrics.Meter
	isrExpands       metrics.Meter
	failedIsrUpdates metrics.Meter
}

// partitionPool is Kafka's allPartitions: the partitions hosted here, and the metadata lookup
// that tells a partition the cluster knows (NOT_LEADER_OR_FOLLOWER) from an unknown one
// (UNKNOWN_TOPIC_OR_PARTITION). The ReplicaManager and its request paths share it.
type partitionPool struct {
	mu         sync.RWMutex // guards partitions and controllerRequests.controllerEpoch
	partitions map[TopicPartition]*Partition

	// knownPartition tells whether the cluster metadata knows tp; set by the broker.
	knownPartition atomic.Pointer[func(TopicPartition) bool]
}

func (pp *partitionPool) getPartition(tp TopicPartition) *Partition {
	pp.mu.RLock()
	defer pp.mu.RUnlock()
	return pp.partitions[tp]
}

func (pp *partitionPool) allPartitions() []*Partition {
	pp.mu.RLock()
	defer pp.mu.RUnlock()
	out := make([]*Partition, 0, len(pp.partitions))
	for _, p := range pp.partitions {
		out = append(out, p)
	}
	return out
}

// notHostedCode is the error for a partition this broker does not host.
func (pp *partitionPool) notHostedCode(tp TopicPartition) int16 {
	if f := pp.knownPartition.Load(); f != nil && (*f)(tp) {
		return kerr.NotLeaderForPartition.Code
	}
	return kerr.UnknownTopicOrPartition.Code
}

// ReplicaManager owns the partitions hosted by this broker (Kafka's ReplicaManager): the
// partition pool, the live configs every topic's effective config derives from
// (live_config.go) and the creation of partitions. The request paths are types of their own,
// each holding its own state and what it uses (not the ReplicaManager):
//
//	controllerRequests  LeaderAndIsr, StopReplica, the epoch fences (controller_requests.go)
//	leaderReads         Fetch, ListOffsets, OffsetForLeaderEpoch, local reads (leader_reads.go)
//	appender            Produce and the delayed produce (produce.go)
//	followerReplicas    fetcher.Local, the follower side the fetchers drive (local.go)
//	deleteRecords       DeleteRecords and the low watermark (delete_records.go)
//	logDirs             DescribeLogDirs and the offline log dirs (log_dirs.go, logdir_failure.go)
//	backgroundTasks     the ISR-shrink task and the HW checkpoint (tasks.go)
//	localView           the replication page's Snapshot (snapshot.go)
//
// Requests (requests.go) is what the broker, the group coordinator and the replication page
// call.
type ReplicaManager struct {
	// The pool is embedded for its fields: live_config.go reads rm.mu and rm.partitions.
	*partitionPool

	cfg     Config
	log     *logrus.Entry
	logs    *logstore.Manager
	topics  TopicConfigSource
	fetcher fetcherManager
	metrics rmMetrics
	// penv is what every hosted partition shares (partition.go).
	penv *partitionEnv

	// throttles holds the replication throttles (issue 4, quota.go).
	throttles *throttles
	// live holds the dynamic configs every topic's effective config derives from (issue 12,
	// live_config.go).
	live liveConfigs

	ctl       *controllerRequests
	reads     *leaderReads
	produce   *appender
	followers *followerReplicas
	deletes   *deleteRecords
	dirs      *logDirs
	tasks     *backgroundTasks
	requests  *Requests
}

// New builds a replica manager over logs. coord may be nil in tests that never change the ISR.
func New(cfg Config, logs *logstore.Manager, coord Coordinator) *ReplicaManager {
	return newReplicaManager(cfg, logs, coord, nil)
}

// newReplicaManager is New with the fetcher manager fm (nil: fetcher.NewManager's; tests pass
// fakes).
func newReplicaManager(cfg Config, logs *logstore.Manager, coord Coordinator, fm fetcherManager) *ReplicaManager {
	cfg.setDefaults()
	pool := &partitionPool{partitions: make(map[TopicPartition]*Partition)}
	rm := &ReplicaManager{
		partitionPool: pool,
		cfg:           cfg,
		log:           logrus.NewEntry(logrus.StandardLogger()).WithField("brokerId", cfg.BrokerID),
		logs:          logs,
	}
	if l, ok := cfg.Log.(*logrus.Entry); ok {
		rm.log = l.WithField("brokerId", cfg.BrokerID)
	} else if l, ok := cfg.Log.(*logrus.Logger); ok {
		rm.log = l.WithField("brokerId", cfg.BrokerID)
	}
	var isr IsrWriter
	if coord != nil {
		isr = coord
		rm.topics = coord
	}
	notifier, _ := coord.(LogDirFailureNotifier)
	purg := newPurgatory()
	// warnings rate-limits the request path's repeated warnings (docs/logging.md).
	warnings := ratelog.New(ratelog.DefaultInterval, cfg.Now)
	var topicStats *BrokerTopicStats
	rm.metrics, topicStats = registerMetrics(cfg.Registry, pool)
	rm.penv = &partitionEnv{brokerID: cfg.BrokerID, lagTimeMax: cfg.ReplicaLagTimeMax, now: cfg.Now, log: rm.log,
		warnings: warnings, metrics: &rm.metrics, isr: isr, events: cfg.Events}
	rm.initLiveConfigs()
	rm.throttles = newThrottles(cfg.BrokerID, cfg.Now, rm.log, cfg.Registry)
	rm.followers = &followerReplicas{pool: pool, logs: logs, log: rm.log, purgatory: purg}
	rm.fetcher = fm
	if fm == nil {
		rm.fetcher = fetcher.NewManager(fetcher.Config{
			BrokerID:              cfg.BrokerID,
			NumFetchers:           cfg.NumReplicaFetchers,
			FetchWaitMax:          cfg.ReplicaFetchWaitMax,
			FetchBackoff:          cfg.ReplicaFetchBackoff,
			SocketTimeout:         cfg.ReplicaSocketTimeout,
			FetchMinBytes:         cfg.ReplicaFetchMinBytes,
			FetchMaxBytes:         cfg.ReplicaFetchMaxBytes,
			FetchResponseMaxBytes: cfg.ReplicaFetchResponseMaxBytes,
			LocalAddr:             cfg.LocalAddr,
			Security:              cfg.InterBrokerSecurity,
			Registry:              cfg.Registry,
			Log:                   rm.log,
			Quota:                 rm.throttles.follower,
		}, rm.followers)
	}
	rm.ctl = &controllerRequests{pool: pool, brokerID: cfg.BrokerID, log: rm.log, warnings: warnings, logs: logs,
		fetcher: rm.fetcher, purgatory: purg, now: cfg.Now, topicStats: topicStats, createPartitions: rm.createPartitions}
	rm.ctl.brokerEpoch.Store(-1)
	rm.reads = &leaderReads{pool: pool, brokerID: cfg.BrokerID, now: cfg.Now, quota: rm.throttles.leader, purgatory: purg, log: rm.log,
		rackAware: cfg.ReplicaSelector == configdef.RackAwareReplicaSelector}
	rm.produce = &appender{pool: pool, purgatory: purg, topicStats: topicStats, now: cfg.Now}
	rm.deletes = &deleteRecords{pool: pool, purgatory: purg, logs: logs, log: rm.log}
	rm.dirs = &logDirs{pool: pool, logs: logs, log: rm.log, fetcher: rm.fetcher, purgatory: purg, ctl: rm.ctl, notifier: notifier}
	rm.tasks = &backgroundTasks{pool: pool, purgatory: purg, logs: logs, log: rm.log, now: cfg.Now, fetcher: rm.fetcher, dirs: rm.dirs,
		shrinkEvery: cfg.ReplicaLagTimeMax / 2, checkpointEvery: cfg.HighWatermarkCheckpointInterval}
	view := &localView{pool: pool, ctl: rm.ctl, fetcher: rm.fetcher, events: cfg.Events, brokerID: cfg.BrokerID,
		lagTimeMax: cfg.ReplicaLagTimeMax, now: cfg.Now}
	rm.requests = &Requests{ctl: rm.ctl, reads: rm.reads, produce: rm.produce, deletes: rm.deletes, dirs: rm.dirs, view: view, topicStats: topicStats}
	// Issue 4: the replication throttles follow the dynamic configs; issue 12: so do the topic
	// configs and the dynamic broker configs (last: the source may call back at once).
	if d, ok := coord.(DynamicConfigSource); ok {
		d.OnDynamicConfig(func(entity string, cfg map[string]string) {
			rm.throttles.apply(entity, cfg)
			rm.applyDynamicConfig(entity, cfg)
		})
	}
	return rm
}

// registerMetrics registers the replica manager's meters and gauges in reg (the gauges count
// pool's partitions) and the BrokerTopicMetrics.
func registerMetrics(reg metrics.Registry, pool *partitionPool) (rmMetrics, *BrokerTopicStats) {
	meter := func(name string) metrics.Meter { return metrics.GetOrRegisterMeter(name, reg) }
	m := rmMetrics{
		isrShrinks:       meter("kafka.server:type=ReplicaManager,name=IsrShrinksPerSec"),
		isrExpands:       meter("kafka.server:type=ReplicaManager,name=IsrExpandsPerSec"),
		failedIsrUpdates: meter("kafka.server:type=ReplicaManager,name=FailedIsrUpdatesPerSec"),
	}
	topicStats := NewBrokerTopicStats(reg)
	gauge := func(name string, f func(v partitionView) bool) {
		g := metrics.NewFunctionalGauge(func() int64 {
			var n int64
			for _, p := range pool.allPartitions() {
				if f(p.view()) {
					n++
				}
			}
			return n
		})
		_ = reg.Register(name, g)
	}
	// S12: partitions this broker leads whose ISR is smaller than the assigned replicas.
	gauge("kafka.server:type=ReplicaManager,name=UnderReplicatedPartitions", func(v partitionView) bool {
		return v.isLeader && len(v.isr) < len(v.assigned)
	})
	gauge("kafka.server:type=ReplicaManager,name=UnderMinIsrPartitionCount", func(v partitionView) bool {
		return v.isLeader && len(v.isr) < v.minIsr
	})
	gauge("kafka.server:type=ReplicaManager,name=AtMinIsrPartitionCount", func(v partitionView) bool {
		return v.isLeader && len(v.isr) == v.minIsr
	})
	gauge("kafka.server:type=ReplicaManager,name=LeaderCount", func(v partitionView) bool { return v.isLeader })
	gauge("kafka.server:type=ReplicaManager,name=PartitionCount", func(partitionView) bool { return true })
	// KIP-112: partitions whose log dir went offline (Kafka's offlinePartitionsIterator).
	_ = reg.Register(OfflineReplicaCountMetric, metrics.NewFunctionalGauge(func() int64 {
		var n int64
		for _, p := range pool.allPartitions() {
			if p.isOffline() {
				n++
			}
		}
		return n
	}))
	return m, topicStats
}

// Requests returns the request paths the broker, the group coordinator and the replication
// page call (requests.go).
func (rm *ReplicaManager) Requests() *Requests { return rm.requests }

// Start runs the background tasks (tasks.go).
func (rm *ReplicaManager) Start() { rm.tasks.start() }

// Shutdown stops fetchers and background tasks and writes a final HW checkpoint.
func (rm *ReplicaManager) Shutdown() { rm.tasks.shutdown() }

// OfflineReplicaCountMetric counts this broker's partitions on offline log dirs (KIP-112).
const OfflineReplicaCountMetric = "kafka.server:type=ReplicaManager,name=OfflineReplicaCount"

// SetKnownPartition installs the metadata lookup used to tell NOT_LEADER_OR_FOLLOWER from
// UNKNOWN_TOPIC_OR_PARTITION for partitions this broker does not host.
func (rm *ReplicaManager) SetKnownPartition(f func(TopicPartition) bool) {
	rm.partitionPool.knownPartition.Store(&f)
}

// SetBrokerEpoch records this broker's epoch (the czxid of its registration, KIP-380).
func (rm *ReplicaManager) SetBrokerEpoch(epoch int64) { rm.ctl.brokerEpoch.Store(epoch) }

// SetLeadershipListener installs the listener of leadership changes (nil removes it;
// leadership.go).
func (rm *ReplicaManager) SetLeadershipListener(f LeadershipListener) {
	rm.ctl.setLeadershipListener(f)
}

// SetAliveBroker installs the liveness lookup (the metadata cache's live brokers): only the
// followers on live brokers count in the low watermark of DeleteRecords (delete_records.go).
func (rm *ReplicaManager) SetAliveBroker(f func(id int32) bool) { rm.deletes.aliveBroker.Store(&f) }

// SetReplicaEndpoint installs the metadata cache's replica endpoints, which the replica selector
// needs for the racks of a partition's replicas (KIP-392, read_replica.go).
func (rm *ReplicaManager) SetReplicaEndpoint(f ReplicaEndpoint) { rm.reads.endpoint.Store(&f) }

// SetAllLogDirsOffline installs what to do when no log dir is online any more (main: shut the
// broker down, as Kafka's "Shutdown broker because all log dirs ... have failed";
// logdir_failure.go).
func (rm *ReplicaManager) SetAllLogDirsOffline(f func(dirs []string)) {
	rm.dirs.allDirsOffline.Store(&f)
}

// readTopicConfig reads topic's overrides (once per topic of a LeaderAndIsr, not per
// partition) and returns its effective config (live_config.go): the overrides read from
// ZooKeeper now, unless the dynamic config listener delivered the topic meanwhile.
func (rm *ReplicaManager) readTopicConfig(topic string) topicConfig {
	rm.live.mu.Lock()
	seen := rm.live.deliveries[topic]
	rm.live.mu.Unlock()
	var overrides map[string]string
	readOK := false
	if rm.topics != nil {
		o, err := rm.topics.TopicConfig(topic)
		if err != nil {
			rm.log.WithFields(logrus.Fields{"topic": topic}).WithError(err).Warn("reading topic config; using broker defaults")
		} else {
			readOK = true
		}
		overrides = o
		rm.throttles.applyTopicConfigRead(topic, o) // issue 4: throttles of a new topic
	}
	rm.live.mu.Lock()
	defer rm.live.mu.Unlock()
	if rm.live.deliveries[topic] != seen || (!readOK && rm.topics != nil) {
		overrides = rm.live.topics[topic] // newer than this read, or the read failed
	} else {
		rm.live.topics[topic] = overrides
	}
	return rm.topicOverridesOn(rm.live.base, topic, overrides)
}

// addPartition registers the partition of tp's log l (created or opened) with config tc, or
// returns the one registered meanwhile.
func (rm *ReplicaManager) addPartition(tp TopicPartition, l *logstore.Log, tc topicConfig) *Partition {
	hw := int64(0)
	if cp, ok := rm.logs.HighWatermark(tp); ok { // one lookup, not a copy of every HW
		hw = cp
	}
	hw = min(max(hw, l.LogStartOffset()), l.LogEndOffset())
	// The log was created outside live.mu (logs are created in parallel): a topic config
	// delivered meanwhile missed this partition, so it is registered under live.mu with the
	// topic's current config (applyTopicEntity updates registered partitions under live.mu).
	rm.live.mu.Lock()
	defer rm.live.mu.Unlock()
	if cur, ok := rm.live.topics[tp.Topic]; ok {
		tc = rm.topicOverridesOn(rm.live.base, tp.Topic, cur)
	}
	p := &Partition{tp: tp, env: rm.penv, log: l, leaderID: -1, leaderEpoch: -1, hw: highWatermark{v: hw}, cfg: tc}
	rm.mu.Lock()
	defer rm.mu.Unlock()
	if existing := rm.partitions[tp]; existing != nil {
		return existing
	}
	l.SetConfig(tc.log)
	rm.partitions[tp] = p
	return p
}

// createPartitions creates the missing partitions of tps (the first LeaderAndIsr naming each)
// with their topic's current effective config: each topic's config is read once, then the logs
// are created (or the existing ones opened) on a bounded worker pool with one directory fsync
// for all (logstore's GetOrCreateAll; docs/performance.md, "Controller at scale"). It returns
// the errors of the partitions that could not be created.
func (rm *ReplicaManager) createPartitions(tps []TopicPartition) map[TopicPartition]error {
	var missing []TopicPartition
	var cfgs []logstore.Config
	configs := map[string]topicConfig{}
	for _, tp := range tps {
		if rm.getPartition(tp) != nil {
			continue
		}
		tc, ok := configs[tp.Topic]
		if !ok {
			tc = rm.readTopicConfig(tp.Topic)
			configs[tp.Topic] = tc
		}
		missing = append(missing, tp)
		cfgs = append(cfgs, tc.log)
	}
	out := map[TopicPartition]error{}
	if len(missing) == 0 {
		return out
	}
	logs, errs := rm.logs.GetOrCreateAll(missing, cfgs, logCreateWorkers)
	for i, tp := range missing {
		if errs[i] != nil {
			out[tp] = errs[i]
			continue
		}
		rm.addPartition(tp, logs[i], configs[tp.Topic])
	}
	return out
}

// logCreateWorkers bounds the partitions a LeaderAndIsr creates or makes leaders at once.
const logCreateWorkers = 8
