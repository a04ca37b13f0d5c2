package replicamanager

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rcrowley/go-metrics"
	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"

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
	messagesIn       metrics.Meter
	bytesIn          metrics.Meter
}

// ReplicaManager owns the partitions hosted by this broker.
type ReplicaManager struct {
	cfg     Config
	log     *logrus.Entry
	logs    *logstore.Manager
	isr     IsrWriter
	topics  TopicConfigSource
	fetcher fetcherManager
	metrics rmMetrics

	// throttles holds the replication throttles (issue 4, quota.go).
	throttles *throttles

	// knownPartition tells whether the cluster metadata knows tp (NOT_LEADER_OR_FOLLOWER versus
	// UNKNOWN_TOPIC_OR_PARTITION for a partition not hosted here); set by the broker.
	knownPartition atomic.Pointer[func(TopicPartition) bool]
	// leadership is told about leadership changes (leadership.go); set by main.
	leadership atomic.Pointer[LeadershipListener]

	stateChangeLock sync.Mutex // serialises LeaderAndIsr and StopReplica
	mu              sync.RWMutex
	partitions      map[TopicPartition]*Partition
	controllerEpoch int32
	brokerEpoch     atomic.Int64

	purgatory *purgatory

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
		log:        logrus.NewEntry(logrus.StandardLogger()).WithField("broker", cfg.BrokerID),
		logs:       logs,
		partitions: make(map[TopicPartition]*Partition),
		purgatory:  newPurgatory(),
	}
	if l, ok := cfg.Log.(*logrus.Entry); ok {
		rm.log = l.WithField("broker", cfg.BrokerID)
	} else if l, ok := cfg.Log.(*logrus.Logger); ok {
		rm.log = l.WithField("broker", cfg.BrokerID)
	}
	if coord != nil {
		rm.isr = coord
		rm.topics = coord
	}
	rm.brokerEpoch.Store(-1)
	rm.registerMetrics()
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
	// Issue 4: the replication throttles follow the dynamic configs (last: the source may call
	// back at once).
	if d, ok := coord.(DynamicConfigSource); ok {
		d.OnDynamicConfig(rm.throttles.apply)
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
		messagesIn:       meter("kafka.server:type=BrokerTopicMetrics,name=MessagesInPerSec"),
		bytesIn:          meter("kafka.server:type=BrokerTopicMetrics,name=BytesInPerSec"),
	}
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

// SetBrokerEpoch records this broker's epoch (the czxid of its registration, KIP-380).
func (rm *ReplicaManager) SetBrokerEpoch(epoch int64) { rm.brokerEpoch.Store(epoch) }

// Start runs the background tasks: the ISR-shrink task every replica.lag.time.max.ms/2 (S10) and
// the HW checkpoint every replica.high.watermark.checkpoint.interval.ms.
func (rm *ReplicaManager) Start() {
	rm.startOnce.Do(func() {
		ctx, cancel := context.WithCancel(context.Background())
		rm.cancel = cancel
		rm.wg.Add(2)
		go rm.every(ctx, rm.cfg.ReplicaLagTimeMax/2, rm.maybeShrinkIsr)
		go rm.every(ctx, rm.cfg.HighWatermarkCheckpointInterval, func() { _ = rm.checkpointHighWatermarks() })
	})
}

func (rm *ReplicaManager) every(ctx context.Context, d time.Duration, f func()) {
	defer rm.wg.Done()
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			f()
		}
	}
}

// Shutdown stops fetchers and background tasks and writes a final HW checkpoint.
func (rm *ReplicaManager) Shutdown() {
	rm.stopOnce.Do(func() {
		if rm.cancel != nil {
			rm.cancel()
		}
		rm.wg.Wait()
		rm.fetcher.Close()
		if err := rm.checkpointHighWatermarks(); err != nil {
			rm.log.WithError(err).Warn("final high watermark checkpoint failed")
		}
	})
}

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

// getOrCreatePartition creates the local replica and its log on the first LeaderAndIsr naming it.
func (rm *ReplicaManager) getOrCreatePartition(tp TopicPartition) (*Partition, error) {
	if p := rm.getPartition(tp); p != nil {
		return p, nil
	}
	var overrides map[string]string
	if rm.topics != nil {
		o, err := rm.topics.TopicConfig(tp.Topic)
		if err != nil {
			rm.log.WithFields(logrus.Fields{"topic": tp.Topic}).WithError(err).Warn("reading topic config; using broker defaults")
		}
		overrides = o
		rm.throttles.applyTopicConfigRead(tp.Topic, o) // issue 4: throttles of a new topic
	}
	tc := rm.topicOverrides(tp.Topic, overrides)
	l, err := rm.logs.GetOrCreate(tp, tc.log)
	if err != nil {
		return nil, err
	}
	hw := int64(0)
	if cp, ok := rm.logs.HighWatermarks()[tp]; ok {
		hw = cp
	}
	hw = min(max(hw, l.LogStartOffset()), l.LogEndOffset())
	p := &Partition{tp: tp, rm: rm, log: l, leaderID: -1, leaderEpoch: -1, hw: hw, cfg: tc}
	rm.mu.Lock()
	defer rm.mu.Unlock()
	if existing := rm.partitions[tp]; existing != nil {
		return existing, nil
	}
	rm.partitions[tp] = p
	return p, nil
}

// checkControllerLocked applies the controller-epoch and broker-epoch fences (K3, KIP-380).
func (rm *ReplicaManager) checkControllerLocked(controllerEpoch int32, brokerEpoch int64) int16 {
	if controllerEpoch < rm.controllerEpoch {
		return kerr.StaleControllerEpoch.Code
	}
	if cur := rm.brokerEpoch.Load(); brokerEpoch != -1 && cur != -1 && brokerEpoch < cur {
		return kerr.StaleBrokerEpoch.Code
	}
	rm.controllerEpoch = controllerEpoch
	return 0
}

// CheckControllerEpoch validates an UpdateMetadata's epochs, caching a newer controller epoch.
func (rm *ReplicaManager) CheckControllerEpoch(controllerID, controllerEpoch int32, brokerEpoch int64) int16 {
	rm.mu.Lock()
	defer rm.mu.Unlock()
	code := rm.checkControllerLocked(controllerEpoch, brokerEpoch)
	if code != 0 {
		rm.log.WithFields(logrus.Fields{"controller": controllerID, "controllerEpoch": controllerEpoch, "cachedControllerEpoch": rm.controllerEpoch}).
			Warn("rejecting UpdateMetadata from a stale controller")
	}
	return code
}

// BecomeLeaderOrFollower applies a LeaderAndIsr request from the controller (S9, S14): fences,
// per-partition epoch checks, makeLeaders, makeFollowers, then shutdownIdleFetcherThreads (S23).
func (rm *ReplicaManager) BecomeLeaderOrFollower(req LeaderAndIsrRequest) LeaderAndIsrResult {
	rm.stateChangeLock.Lock()
	defer rm.stateChangeLock.Unlock()
	res := LeaderAndIsrResult{Partitions: make(map[TopicPartition]int16, len(req.Partitions))}
	rm.mu.Lock()
	code := rm.checkControllerLocked(req.ControllerEpoch, req.BrokerEpoch)
	rm.mu.Unlock()
	log := rm.log.WithFields(logrus.Fields{"controller": req.ControllerID, "controllerEpoch": req.ControllerEpoch})
	if code != 0 {
		log.Warn("rejecting LeaderAndIsr from a stale controller")
		res.ErrorCode = code
		return res
	}
	now := rm.now()
	var leaders, followers []PartitionState
	for _, st := range req.Partitions {
		if !slices.Contains(st.Replicas, rm.cfg.BrokerID) {
			res.Partitions[st.TopicPartition] = kerr.UnknownTopicOrPartition.Code
			continue
		}
		p, err := rm.getOrCreatePartition(st.TopicPartition)
		if err != nil {
			log.WithFields(logrus.Fields{"topic": st.Topic, "partition": st.Partition}).WithError(err).Error("creating log")
			res.Partitions[st.TopicPartition] = kerr.KafkaStorageError.Code
			continue
		}
		p.mu.RLock()
		cur := p.leaderEpoch
		p.mu.RUnlock()
		// 2.4 rule: apply only a strictly newer leader epoch; otherwise STALE_CONTROLLER_EPOCH.
		if st.LeaderEpoch <= cur {
			log.WithFields(logrus.Fields{"topic": st.Topic, "partition": st.Partition, "leaderEpoch": st.LeaderEpoch, "currentLeaderEpoch": cur}).
				Info("ignoring LeaderAndIsr: leader epoch not newer")
			res.Partitions[st.TopicPartition] = kerr.StaleControllerEpoch.Code
			continue
		}
		res.Partitions[st.TopicPartition] = 0
		if st.Leader == rm.cfg.BrokerID {
			leaders = append(leaders, st)
		} else {
			followers = append(followers, st)
		}
	}
	rm.makeLeaders(leaders, now)
	rm.makeFollowers(followers, req.LiveLeaders)
	rm.fetcher.ShutdownIdleFetcherThreads()
	rm.notifyLeadership(partitionsOf(leaders), partitionsOf(followers))
	return res
}

// makeLeaders: stop fetching for the partitions (S22 case 2), then make each a leader.
func (rm *ReplicaManager) makeLeaders(states []PartitionState, now time.Time) {
	if len(states) == 0 {
		return
	}
	tps := make([]TopicPartition, len(states))
	for i, st := range states {
		tps[i] = st.TopicPartition
	}
	rm.fetcher.RemoveFetcherForPartitions(tps)
	for _, st := range states {
		p := rm.getPartition(st.TopicPartition)
		p.makeLeader(st, now)
		rm.purgatory.checkAndComplete(st.TopicPartition)
	}
}

// makeFollowers implements S14 (with K1: no truncation here; the fetcher truncates by leader epoch).
func (rm *ReplicaManager) makeFollowers(states []PartitionState, liveLeaders map[int32]string) {
	if len(states) == 0 {
		return
	}
	changed := make([]PartitionState, 0, len(states))
	for _, st := range states {
		p := rm.getPartition(st.TopicPartition)
		if _, ok := liveLeaders[st.Leader]; !ok {
			// Kafka 2.4's makeFollowers: the leader is not a live broker, so the partition is
			// skipped; only its log exists (created above, so the HW is checkpointed). Its role,
			// leader epoch and fetcher stay as they were, so the controller's next request for
			// this epoch, once the leader is live, is applied instead of looking stale.
			p.mu.RLock()
			log := p.logger()
			p.mu.RUnlock()
			log.WithFields(logrus.Fields{"leader": st.Leader, "requestLeaderEpoch": st.LeaderEpoch}).
				Error("LeaderAndIsr names a leader that is not a live broker; skipping the partition")
			continue
		}
		// S14.1–S14.2: no longer led here; produce now gets NOT_LEADER_OR_FOLLOWER.
		if p.makeFollower(st) {
			changed = append(changed, st)
		}
	}
	if len(changed) == 0 {
		return
	}
	tps := make([]TopicPartition, len(changed))
	for i, st := range changed {
		tps[i] = st.TopicPartition
	}
	// S14.3: stop the old fetchers first so nothing more is appended.
	rm.fetcher.RemoveFetcherForPartitions(tps)
	// S14.5: complete delayed produce and fetch requests for these partitions.
	for _, tp := range tps {
		rm.purgatory.checkAndComplete(tp)
	}
	// S14.6: start fetchers toward the new leaders, from the local HW (2.4).
	init := make(map[TopicPartition]fetcher.InitialFetchState, len(changed))
	for _, st := range changed {
		p := rm.getPartition(st.TopicPartition)
		init[st.TopicPartition] = fetcher.InitialFetchState{
			Leader:             fetcher.BrokerEndPoint{ID: st.Leader, Addr: liveLeaders[st.Leader]},
			CurrentLeaderEpoch: st.LeaderEpoch,
			InitOffset:         p.HighWatermark(),
		}
	}
	rm.fetcher.AddFetcherForPartitions(init)
}

// StopReplicas applies a StopReplica request (S22 case 1): remove fetchers, optionally delete the
// partition and its log, and complete the delayed operations waiting on it.
func (rm *ReplicaManager) StopReplicas(req StopReplicaRequest) StopReplicaResult {
	rm.stateChangeLock.Lock()
	defer rm.stateChangeLock.Unlock()
	res := StopReplicaResult{Partitions: make(map[TopicPartition]int16, len(req.Partitions))}
	rm.mu.Lock()
	code := rm.checkControllerLocked(req.ControllerEpoch, req.BrokerEpoch)
	rm.mu.Unlock()
	if code != 0 {
		rm.log.WithFields(logrus.Fields{"controller": req.ControllerID, "controllerEpoch": req.ControllerEpoch}).Warn("rejecting StopReplica from a stale controller")
		res.ErrorCode = code
		return res
	}
	rm.fetcher.RemoveFetcherForPartitions(req.Partitions)
	for _, tp := range req.Partitions {
		res.Partitions[tp] = 0
		if !req.DeletePartitions {
			continue
		}
		rm.mu.Lock()
		p := rm.partitions[tp]
		delete(rm.partitions, tp)
		rm.mu.Unlock()
		if p != nil {
			p.mu.Lock()
			p.leaderID, p.leader = -1, nil
			p.mu.Unlock()
		}
		if rm.logs.Get(tp) != nil {
			if err := rm.logs.Delete(tp); err != nil {
				rm.log.WithFields(logrus.Fields{"topic": tp.Topic, "partition": tp.Partition}).WithError(err).Error("deleting log")
				res.Partitions[tp] = kerr.KafkaStorageError.Code
			}
		}
		rm.log.WithFields(logrus.Fields{"topic": tp.Topic, "partition": tp.Partition}).Info("deleted replica")
	}
	for _, tp := range req.Partitions {
		rm.purgatory.checkAndComplete(tp)
	}
	rm.notifyLeadership(nil, req.Partitions)
	return res
}

// AppendRecords appends produce data to the partitions this broker leads and answers through
// done: at once for acks 0/1, and for acks=-1 once the HW passes the last offset, the ISR shrinks
// below min.insync.replicas, leadership moves, or timeout expires (K2).
func (rm *ReplicaManager) AppendRecords(timeout time.Duration, acks int16, entries map[TopicPartition][]byte, done func(map[TopicPartition]ProduceResult)) {
	now := rm.now()
	results := make(map[TopicPartition]ProduceResult, len(entries))
	required := make(map[TopicPartition]int64, len(entries))
	for tp, records := range entries {
		p := rm.getPartition(tp)
		if p == nil {
			results[tp] = ProduceResult{ErrorCode: rm.notHostedCode(tp), BaseOffset: -1, LogAppendTime: -1, LogStartOffset: -1}
			continue
		}
		info, code := p.appendAsLeader(records, acks, now)
		if code != 0 {
			results[tp] = ProduceResult{ErrorCode: code, BaseOffset: -1, LogAppendTime: -1, LogStartOffset: -1}
			continue
		}
		rm.metrics.messagesIn.Mark(int64(info.NumRecords))
		rm.metrics.bytesIn.Mark(int64(len(records)))
		results[tp] = ProduceResult{BaseOffset: info.FirstOffset, LogAppendTime: -1, LogStartOffset: p.log.LogStartOffset()}
		required[tp] = info.LastOffset + 1
		// Wake parked follower fetches (new data) and produces (the HW may have moved).
		rm.purgatory.checkAndComplete(tp)
	}
	if acks != -1 || len(required) == 0 {
		done(results)
		return
	}
	keys := make([]TopicPartition, 0, len(required))
	for tp := range required {
		keys = append(keys, tp)
	}
	op := &delayedOp{keys: keys}
	op.try = func() bool {
		for tp, off := range required {
			p := rm.getPartition(tp)
			if p == nil {
				continue
			}
			if ok, _ := p.checkEnoughReplicasReachOffset(off); !ok {
				return false
			}
		}
		return true
	}
	op.complete = func(expired bool) {
		for tp, off := range required {
			r := results[tp]
			p := rm.getPartition(tp)
			if p == nil {
				r.ErrorCode = kerr.NotLeaderForPartition.Code
			} else if ok, code := p.checkEnoughReplicasReachOffset(off); ok {
				r.ErrorCode = code
			} else {
				r.ErrorCode = kerr.RequestTimedOut.Code
			}
			results[tp] = r
		}
		done(results)
	}
	if timeout <= 0 {
		timeout = time.Millisecond
	}
	rm.purgatory.tryCompleteElseWatch(op, timeout)
}

// fetchRead reads every partition of a fetch once. Consumers read below the HW, followers up to
// the LEO (S7). When updateFollowers is set and the fetch comes from a follower, the leader records
// the follower's fetch offset as its LEO (docs/kafka-facts.md §3). throttledBytes is the part of
// bytes read for leader-throttled replicas outside the ISR (issue 4), to be recorded against the
// leader quota once the response is sent.
func (rm *ReplicaManager) fetchRead(fp FetchParams, updateFollowers bool) (results []FetchPartitionResult, bytes int, errored bool, throttledBytes int) {
	fromFollower := fp.ReplicaID >= 0
	remaining := int64(fp.MaxBytes)
	if remaining <= 0 {
		remaining = 1<<31 - 1
	}
	minOne := true // KIP-74: the first batch is returned whole even when larger than the limits
	now := rm.now()
	results = make([]FetchPartitionResult, len(fp.Partitions))
	for i, part := range fp.Partitions {
		r := &results[i]
		r.TopicPartition = part.TopicPartition
		r.HighWatermark, r.LastStableOffset, r.LogStartOffset = -1, -1, -1
		p := rm.getPartition(part.TopicPartition)
		if p == nil {
			r.ErrorCode = rm.notHostedCode(part.TopicPartition)
			errored = true
			continue
		}
		p.mu.RLock()
		if !p.isLeaderLocked() {
			p.mu.RUnlock()
			r.ErrorCode = kerr.NotLeaderForPartition.Code
			errored = true
			continue
		}
		if code := p.checkLeaderEpochLocked(part.CurrentLeaderEpoch); code != 0 {
			p.mu.RUnlock()
			r.ErrorCode = code
			errored = true
			continue
		}
		hw, leo, logStart := p.highWatermark(), p.log.LogEndOffset(), p.log.LogStartOffset()
		throttled := fromFollower && rm.throttledFollowerLocked(p, fp.ReplicaID)
		// Only an assigned follower reads to the LEO and counts as a follower's progress;
		// Kafka answers any other replica_id >= 0 with no records (updateFollowerFetchState
		// fails, withEmptyFetchInfo).
		unassigned := fromFollower && (p.leader == nil || !p.leader.IsFollower(fp.ReplicaID))
		p.mu.RUnlock()
		maxOffset := hw
		if fromFollower {
			maxOffset = leo
		}
		limit := min(int64(part.PartitionMaxBytes), remaining)
		if part.PartitionMaxBytes <= 0 {
			limit = remaining
		}
		var records []byte
		var err error
		if unassigned {
			rm.log.WithFields(logrus.Fields{"topic": part.Topic, "partition": part.Partition, "replica": fp.ReplicaID}).
				Warn("fetch from a replica id that is not an assigned follower; answering with no records")
			records = nil
		} else if throttled && rm.throttles.leader.IsQuotaExceeded() {
			// Issue 4 (shouldLeaderThrottle): a throttled replica outside the ISR gets no records
			// while the leader quota is exceeded; not an error, its fetch state is still updated.
			records = nil
		} else {
			records, err = p.log.Read(part.FetchOffset, int32(limit), maxOffset, minOne)
		}
		r.HighWatermark, r.LastStableOffset, r.LogStartOffset = hw, hw, logStart
		if err != nil {
			r.ErrorCode = logErrorCode(err)
			errored = true
			continue
		}
		r.Records = records
		if len(records) > 0 {
			minOne = false
			remaining -= int64(len(records))
			bytes += len(records)
			if throttled {
				throttledBytes += len(records)
			}
		}
		if fromFollower && updateFollowers && !unassigned {
			if p.updateFollowerFetchState(fp.ReplicaID, part.FetchOffset, part.LogStartOffset, leo, now) {
				// The HW moved: acks=-1 produces and consumer fetches may complete (architecture step 5).
				rm.purgatory.checkAndComplete(part.TopicPartition)
			}
		}
	}
	return results, bytes, errored, throttledBytes
}

// throttledFollowerLocked is the first half of Kafka's shouldLeaderThrottle: the follower
// replicaID is not in the ISR and p is listed in leader.replication.throttled.replicas for this
// broker (with a leader rate set). Callers hold p.mu.
func (rm *ReplicaManager) throttledFollowerLocked(p *Partition, replicaID int32) bool {
	return (p.leader == nil || !p.leader.InISR(replicaID)) && rm.throttles.leader.IsThrottled(p.tp)
}

// FetchMessages serves a fetch from a consumer or a follower. It answers at once when max_wait is
// zero, enough bytes are readable, or a partition errored; otherwise it parks in the purgatory until
// new data arrives (an append for followers, a HW move for consumers), leadership changes, or
// max_wait expires (S14.5's delayed fetch).
func (rm *ReplicaManager) FetchMessages(fp FetchParams, done func([]FetchPartitionResult)) {
	results, bytes, errored, throttledBytes := rm.fetchRead(fp, true)
	minBytes := max(int(fp.MinBytes), 1)
	if fp.MaxWait <= 0 || len(fp.Partitions) == 0 || bytes >= minBytes || errored {
		rm.throttles.leader.Record(int64(throttledBytes))
		done(results)
		return
	}
	fromFollower := fp.ReplicaID >= 0
	keys := make([]TopicPartition, len(fp.Partitions))
	for i, part := range fp.Partitions {
		keys[i] = part.TopicPartition
	}
	op := &delayedOp{keys: keys}
	op.try = func() bool {
		ready := false
		for _, part := range fp.Partitions {
			p := rm.getPartition(part.TopicPartition)
			if p == nil {
				return true
			}
			v := p.view()
			if !v.isLeader || (part.CurrentLeaderEpoch >= 0 && part.CurrentLeaderEpoch != v.leaderEpoch) {
				return true
			}
			end := v.hw
			if fromFollower {
				if fp.ReplicaID == rm.cfg.BrokerID || !slices.Contains(v.assigned, fp.ReplicaID) {
					continue // never anything to answer but no records (fetchRead)
				}
				end = v.leo
			}
			if part.FetchOffset > v.leo || part.FetchOffset < v.logStart {
				return true // now out of range: answer with the error
			}
			if fromFollower && !slices.Contains(v.isr, fp.ReplicaID) && rm.throttles.leader.IsThrottled(part.TopicPartition) &&
				rm.throttles.leader.IsQuotaExceeded() {
				continue // issue 4: throttled data does not complete the delayed fetch (DelayedFetch)
			}
			if end > part.FetchOffset {
				ready = true
			}
		}
		if !ready {
			return false
		}
		if minBytes <= 1 {
			return true
		}
		_, n, errored, _ := rm.fetchRead(fp, false)
		return errored || n >= minBytes
	}
	op.complete = func(bool) {
		results, _, _, throttledBytes := rm.fetchRead(fp, false)
		rm.throttles.leader.Record(int64(throttledBytes))
		done(results)
	}
	rm.purgatory.tryCompleteElseWatch(op, fp.MaxWait)
}

// leaderPartition returns tp's partition and a consistent view of it when this broker leads it
// at the client's current_leader_epoch (KIP-320), else the error code to answer.
func (rm *ReplicaManager) leaderPartition(tp TopicPartition, currentLeaderEpoch int32) (*Partition, partitionView, int16) {
	p := rm.getPartition(tp)
	if p == nil {
		return nil, partitionView{}, rm.notHostedCode(tp)
	}
	p.mu.RLock()
	defer p.mu.RUnlock()
	if !p.isLeaderLocked() {
		return nil, partitionView{}, kerr.NotLeaderForPartition.Code
	}
	if code := p.checkLeaderEpochLocked(currentLeaderEpoch); code != 0 {
		return nil, partitionView{}, code
	}
	return p, p.viewLocked(), 0
}

// ListOffsets answers earliest (-2), latest (-1) and by-timestamp lookups on partitions led here.
// Consumers' latest is the HW; a replica's is the LEO.
func (rm *ReplicaManager) ListOffsets(replicaID int32, isolationLevel int8, parts []ListOffsetsPartition) []ListOffsetsResult {
	out := make([]ListOffsetsResult, len(parts))
	for i, part := range parts {
		r := &out[i]
		r.TopicPartition = part.TopicPartition
		r.Timestamp, r.Offset, r.LeaderEpoch = -1, -1, -1
		p, v, code := rm.leaderPartition(part.TopicPartition, part.CurrentLeaderEpoch)
		if code != 0 {
			r.ErrorCode = code
			continue
		}
		hw, leo, start, epoch := v.hw, v.leo, v.logStart, v.leaderEpoch
		end := hw
		if replicaID >= 0 {
			end = leo
		}
		r.LeaderEpoch = epoch
		switch part.Timestamp {
		case -2:
			r.Offset = start
		case -1:
			r.Offset = end
		default:
			off, ts, ok := p.log.OffsetForTimestamp(part.Timestamp)
			if ok && off < end {
				r.Offset, r.Timestamp = off, ts
			}
		}
	}
	return out
}

// LastOffsetForLeaderEpoch answers OffsetForLeaderEpoch (K1, KIP-279): the largest epoch <= the
// requested one and its end offset, from the leader's epoch cache.
func (rm *ReplicaManager) LastOffsetForLeaderEpoch(replicaID int32, parts []EpochEndOffsetRequest) []EpochEndOffsetResult {
	out := make([]EpochEndOffsetResult, len(parts))
	for i, part := range parts {
		r := &out[i]
		r.TopicPartition = part.TopicPartition
		r.LeaderEpoch, r.EndOffset = -1, -1
		p, _, code := rm.leaderPartition(part.TopicPartition, part.CurrentLeaderEpoch)
		if code != 0 {
			r.ErrorCode = code
			continue
		}
		r.LeaderEpoch, r.EndOffset = p.log.EndOffsetForEpoch(part.LeaderEpoch)
	}
	return out
}

// maybeShrinkIsr runs the ISR-shrink step on every partition this broker leads (S10).
func (rm *ReplicaManager) maybeShrinkIsr() {
	now := rm.now()
	for _, p := range rm.allPartitions() {
		if p.maybeShrinkIsr(now) {
			rm.purgatory.checkAndComplete(p.tp)
		}
	}
}

// checkpointHighWatermarks writes every hosted partition's HW to replication-offset-checkpoint.
func (rm *ReplicaManager) checkpointHighWatermarks() error {
	hws := make(map[TopicPartition]int64)
	for _, p := range rm.allPartitions() {
		hws[p.tp] = p.HighWatermark()
	}
	if err := rm.logs.CheckpointHighWatermarks(hws); err != nil {
		rm.log.WithError(err).Warn("writing replication-offset-checkpoint")
		return err
	}
	return nil
}

// ErrNotFollower is returned to the fetcher for partitions no longer followed here.
var ErrNotFollower = fetcher.ErrNotFollower

func notFollowerf(tp TopicPartition, why string) error {
	return fmt.Errorf("%w: %s-%d %s", ErrNotFollower, tp.Topic, tp.Partition, why)
}
