package replicamanager

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rcrowley/go-metrics"
	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"

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

// ReplicaManager owns the partitions hosted by this broker. It holds the partition map and
// what every path shares (logs, fetcher manager, purgatory, throttles, metrics) and embeds one
// type per request path: controllerRequests (LeaderAndIsr, StopReplica; controller_requests.go),
// leaderReads (Fetch, ListOffsets, OffsetForLeaderEpoch; leader_reads.go) and followerReplicas
// (fetcher.Local; local.go). The produce path is produce.go, the background tasks tasks.go.
type ReplicaManager struct {
	controllerRequests
	leaderReads
	followerReplicas

	cfg     Config
	log     *logrus.Entry
	logs    *logstore.Manager
	isr     IsrWriter
	topics  TopicConfigSource
	fetcher fetcherManager
	metrics rmMetrics
	// penv is what every hosted partition shares (partition.go).
	penv *partitionEnv
	// topicStats holds the BrokerTopicMetrics (topic_stats.go).
	topicStats *BrokerTopicStats

	// throttles holds the replication throttles (issue 4, quota.go).
	throttles *throttles
	// live holds the dynamic configs every topic's effective config derives from (issue 12,
	// live_config.go).
	live liveConfigs

	// knownPartition tells whether the cluster metadata knows tp (NOT_LEADER_OR_FOLLOWER versus
	// UNKNOWN_TOPIC_OR_PARTITION for a partition not hosted here); set by the broker.
	knownPartition atomic.Pointer[func(TopicPartition) bool]
	// leadership is told about leadership changes (leadership.go); set by main.
	leadership atomic.Pointer[LeadershipListener]
	// aliveBroker tells whether a broker is live (the low watermark of DeleteRecords counts
	// only followers on live brokers, delete_records.go); set by main.
	aliveBroker atomic.Pointer[func(int32) bool]
	// logDirNotifier tells the controller about an offline log dir and allDirsOffline shuts
	// the broker down when none is left (logdir_failure.go).
	logDirNotifier LogDirFailureNotifier
	allDirsOffline atomic.Pointer[func(dirs []string)]

	mu         sync.RWMutex // guards partitions and controllerRequests.controllerEpoch
	partitions map[TopicPartition]*Partition

	purgatory *purgatory
	// warnings rate-limits the request path's repeated warnings (docs/logging.md).
	warnings *ratelog.Limiter

	startOnce sync.Once
	stopOnce  sync.Once
	cancel    context.CancelFunc
	wg        sync.WaitGroup
}

// New builds a replica manager over logs. coord may be nil in tests that never change the ISR.
func New(cfg Config, logs *logstore.Manager, coord Coordinator) *ReplicaManager {
	cfg.setDefaults()
	rm := &ReplicaManager{
		cfg:        cfg,
		log:        logrus.NewEntry(logrus.StandardLogger()).WithField("brokerId", cfg.BrokerID),
		logs:       logs,
		partitions: make(map[TopicPartition]*Partition),
		purgatory:  newPurgatory(),
		warnings:   ratelog.New(ratelog.DefaultInterval, cfg.Now),
	}
	if l, ok := cfg.Log.(*logrus.Entry); ok {
		rm.log = l.WithField("brokerId", cfg.BrokerID)
	} else if l, ok := cfg.Log.(*logrus.Logger); ok {
		rm.log = l.WithField("brokerId", cfg.BrokerID)
	}
	if coord != nil {
		rm.isr = coord
		rm.topics = coord
	}
	if n, ok := coord.(LogDirFailureNotifier); ok {
		rm.logDirNotifier = n
	}
	rm.controllerRequests.rm = rm
	rm.leaderReads.rm = rm
	rm.followerReplicas.rm = rm
	rm.brokerEpoch.Store(-1)
	rm.registerMetrics()
	rm.penv = &partitionEnv{brokerID: cfg.BrokerID, lagTimeMax: cfg.ReplicaLagTimeMax, now: cfg.Now, log: rm.log,
		warnings: rm.warnings, metrics: &rm.metrics, isr: rm.isr, events: cfg.Events, alive: rm.brokerAlive}
	rm.initLiveConfigs()
	rm.throttles = newThrottles(cfg.BrokerID, cfg.Now, rm.log, cfg.Registry)
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
		Registry:              cfg.Registry,
		Log:                   rm.log,
		Quota:                 rm.throttles.follower,
	}, rm)
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

func (rm *ReplicaManager) registerMetrics() {
	reg := rm.cfg.Registry
	meter := func(name string) metrics.Meter { return metrics.GetOrRegisterMeter(name, reg) }
	rm.metrics = rmMetrics{
		isrShrinks:       meter("kafka.server:type=ReplicaManager,name=IsrShrinksPerSec"),
		isrExpands:       meter("kafka.server:type=ReplicaManager,name=IsrExpandsPerSec"),
		failedIsrUpdates: meter("kafka.server:type=ReplicaManager,name=FailedIsrUpdatesPerSec"),
	}
	rm.topicStats = NewBrokerTopicStats(reg)
	gauge := func(name string, f func(v partitionView) bool) {
		g := metrics.NewFunctionalGauge(func() int64 {
			var n int64
			for _, p := range rm.allPartitions() {
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
}

// SetKnownPartition installs the metadata lookup used to tell NOT_LEADER_OR_FOLLOWER from
// UNKNOWN_TOPIC_OR_PARTITION for partitions this broker does not host.
func (rm *ReplicaManager) SetKnownPartition(f func(TopicPartition) bool) { rm.knownPartition.Store(&f) }

func (rm *ReplicaManager) now() time.Time { return rm.cfg.Now() }

func (rm *ReplicaManager) getPartition(tp TopicPartition) *Partition {
	rm.mu.RLock()
	defer rm.mu.RUnlock()
	return rm.partitions[tp]
}

// Partition returns the hosted partition, or nil.
func (rm *ReplicaManager) Partition(tp TopicPartition) *Partition { return rm.getPartition(tp) }

func (rm *ReplicaManager) allPartitions() []*Partition {
	rm.mu.RLock()
	defer rm.mu.RUnlock()
	out := make([]*Partition, 0, len(rm.partitions))
	for _, p := range rm.partitions {
		out = append(out, p)
	}
	return out
}

// notHostedCode is the error for a partition this broker does not host.
func (rm *ReplicaManager) notHostedCode(tp TopicPartition) int16 {
	if f := rm.knownPartition.Load(); f != nil && (*f)(tp) {
		return kerr.NotLeaderForPartition.Code
	}
	return kerr.UnknownTopicOrPartition.Code
}

// getOrCreatePartition creates the local replica and its log on the first LeaderAndIsr naming
// it, with the topic's current effective config (live_config.go): the overrides read from
// ZooKeeper now, unless the dynamic config listener delivered the topic meanwhile.
func (rm *ReplicaManager) getOrCreatePartition(tp TopicPartition) (*Partition, error) {
	if p := rm.getPartition(tp); p != nil {
		return p, nil
	}
	return rm.createPartition(tp, rm.readTopicConfig(tp.Topic))
}

// readTopicConfig reads topic's overrides (once per topic of a LeaderAndIsr, not per
// partition) and returns its effective config.
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

// createPartition creates tp's log (or opens the existing one) and its partition with config tc.
func (rm *ReplicaManager) createPartition(tp TopicPartition, tc topicConfig) (*Partition, error) {
	if p := rm.getPartition(tp); p != nil {
		return p, nil
	}
	l, err := rm.logs.GetOrCreate(tp, tc.log)
	if err != nil {
		return nil, err
	}
	return rm.addPartition(tp, l, tc), nil
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

// createPartitions creates the missing partitions of tps: each topic's config is read once,
// then the logs are created on a bounded worker pool with one directory fsync for all
// (logstore's GetOrCreateAll; docs/performance.md, "Controller at scale"). It returns the
// errors of the partitions that could not be created.
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
