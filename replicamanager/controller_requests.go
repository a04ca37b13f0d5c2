package replicamanager

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/isrbroker/isrbroker/broker/ratelog"
	"github.com/isrbroker/isrbroker/fetcher"
	"github.com/isrbroker/isrbroker/logstore"

	"golang.org/x/sync/errgroup"
)

// controllerRequests is the controller-request path of the replica manager (Kafka's
// becomeLeaderOrFollower, makeLeaders, makeFollowers and stopReplicas): it applies LeaderAndIsr
// and StopReplica (S9, S14, S22) behind the controller-epoch and broker-epoch fences (K3,
// KIP-380), creating partitions, moving fetchers, completing the delayed operations of the
// partitions it changes and telling the leadership listener (leadership.go).
type controllerRequests struct {
	pool       *partitionPool
	brokerID   int32
	log        *logrus.Entry
	warnings   *ratelog.Limiter
	logs       *logstore.Manager
	fetcher    fetcherManager
	purgatory  *purgatory
	now        func() time.Time
	topicStats *BrokerTopicStats
	// createPartitions creates the missing partitions of a LeaderAndIsr with their topics'
	// effective configs (ReplicaManager.createPartitions: the live configs are its).
	createPartitions func([]TopicPartition) map[TopicPartition]error

	stateChangeLock sync.Mutex // serialises LeaderAndIsr and StopReplica (first in the lock order)
	// controllerEpoch is the latest controller epoch seen; guarded by partitionPool.mu.
	controllerEpoch int32
	brokerEpoch     atomic.Int64 // this broker's epoch (KIP-380); -1 until registered
	// leadership is told about leadership changes (leadership.go); set by main.
	leadership atomic.Pointer[LeadershipListener]
}

// checkControllerLocked applies the controller-epoch and broker-epoch fences (K3, KIP-380).
func (c *controllerRequests) checkControllerLocked(controllerEpoch int32, brokerEpoch int64) int16 {
	if controllerEpoch < c.controllerEpoch {
		return kerr.StaleControllerEpoch.Code
	}
	if cur := c.brokerEpoch.Load(); brokerEpoch != -1 && cur != -1 && brokerEpoch < cur {
		return kerr.StaleBrokerEpoch.Code
	}
	c.controllerEpoch = controllerEpoch
	return 0
}

// checkController applies the fences of checkControllerLocked under partitionPool.mu.
func (c *controllerRequests) checkController(controllerEpoch int32, brokerEpoch int64) int16 {
	c.pool.mu.Lock()
	defer c.pool.mu.Unlock()
	return c.checkControllerLocked(controllerEpoch, brokerEpoch)
}

// CheckControllerEpoch validates an UpdateMetadata's epochs, caching a newer controller epoch.
func (c *controllerRequests) CheckControllerEpoch(controllerID, controllerEpoch int32, brokerEpoch int64) int16 {
	c.pool.mu.Lock()
	defer c.pool.mu.Unlock()
	code := c.checkControllerLocked(controllerEpoch, brokerEpoch)
	if code != 0 {
		c.warnings.Warn(c.log.WithFields(logrus.Fields{"component": "state-change", "controllerId": controllerID, "controllerEpoch": controllerEpoch, "cachedControllerEpoch": c.controllerEpoch}),
			fmt.Sprint(controllerID, "/", controllerEpoch), "rejecting UpdateMetadata from a stale controller")
	}
	return code
}

// BecomeLeaderOrFollower applies a LeaderAndIsr request from the controller (S9, S14): fences,
// per-partition epoch checks, makeLeaders, makeFollowers, then shutdownIdleFetcherThreads (S23).
func (c *controllerRequests) BecomeLeaderOrFollower(req LeaderAndIsrRequest) LeaderAndIsrResult {
	c.stateChangeLock.Lock()
	defer c.stateChangeLock.Unlock()
	res := LeaderAndIsrResult{Partitions: make(map[TopicPartition]int16, len(req.Partitions))}
	code := c.checkController(req.ControllerEpoch, req.BrokerEpoch)
	log := c.log.WithFields(logrus.Fields{"component": "state-change", "controllerId": req.ControllerID, "controllerEpoch": req.ControllerEpoch})
	if code != 0 {
		c.warnings.Warn(log, fmt.Sprint(req.ControllerID, "/", req.ControllerEpoch), "rejecting LeaderAndIsr from a stale controller")
		res.ErrorCode = code
		return res
	}
	// The missing partitions' logs are created first, in parallel (createPartitions). With a
	// log dir offline, a partition that is not new (is_new false) and has no log here may have
	// had it in the offline dir: it is not created elsewhere, it answers KAFKA_STORAGE_ERROR
	// (Kafka's getOrCreateLog; docs/kafka-facts.md §12).
	var mine []TopicPartition
	mayBeOffline := map[TopicPartition]bool{}
	dirsOffline := len(c.logs.OfflineLogDirs()) > 0
	for _, st := range req.Partitions {
		if slices.Contains(st.Replicas, c.brokerID) {
			if dirsOffline && !st.IsNew && c.pool.getPartition(st.TopicPartition) == nil && c.logs.Get(st.TopicPartition) == nil {
				mayBeOffline[st.TopicPartition] = true
				continue
			}
			mine = append(mine, st.TopicPartition)
		}
	}
	start := time.Now()
	createErrs := c.createPartitions(mine)
	created := time.Since(start)
	var leaders, followers []PartitionState
	stale := 0
	for _, st := range req.Partitions {
		if !slices.Contains(st.Replicas, c.brokerID) {
			res.Partitions[st.TopicPartition] = kerr.UnknownTopicOrPartition.Code
			continue
		}
		if mayBeOffline[st.TopicPartition] {
			res.Partitions[st.TopicPartition] = kerr.KafkaStorageError.Code
			continue
		}
		p := c.pool.getPartition(st.TopicPartition)
		if p != nil && p.isOffline() {
			res.Partitions[st.TopicPartition] = kerr.KafkaStorageError.Code // its log dir is offline
			continue
		}
		if err := createErrs[st.TopicPartition]; err != nil || p == nil {
			log.WithFields(logrus.Fields{"topic": st.Topic, "partition": st.Partition}).WithError(err).Error("creating log")
			res.Partitions[st.TopicPartition] = kerr.KafkaStorageError.Code
			continue
		}
		p.mu.RLock()
		cur := p.leaderEpoch
		p.mu.RUnlock()
		// 2.4 rule: apply only a strictly newer leader epoch; otherwise STALE_CONTROLLER_EPOCH.
		// Logged once per request with a count (the first at debug level each), not per partition.
		if st.LeaderEpoch <= cur {
			if stale == 0 {
				log.WithFields(logrus.Fields{"topic": st.Topic, "partition": st.Partition, "leaderEpoch": st.LeaderEpoch, "currentLeaderEpoch": cur}).
					Debug("ignoring LeaderAndIsr: leader epoch not newer")
			}
			stale++
			res.Partitions[st.TopicPartition] = kerr.StaleControllerEpoch.Code
			continue
		}
		res.Partitions[st.TopicPartition] = 0
		if st.Leader == c.brokerID {
			leaders = append(leaders, st)
		} else {
			followers = append(followers, st)
		}
	}
	if stale > 0 {
		log.WithField("partitions", stale).Info("ignoring LeaderAndIsr for partitions whose leader epoch is not newer")
	}
	led := time.Now()
	c.makeLeaders(leaders)
	followed := time.Now()
	c.makeFollowers(followers, req.LiveLeaders)
	c.fetcher.ShutdownIdleFetcherThreads()
	c.notifyLeadership(partitionsOf(leaders), partitionsOf(followers))
	// One summary line per request, with where the time went (docs/performance.md, "Controller
	// at scale"); at info level only when it took long enough to matter.
	took := time.Since(start)
	sum := log.WithFields(logrus.Fields{"partitions": len(req.Partitions), "leaders": len(leaders), "followers": len(followers),
		"createLogs": created.Round(time.Millisecond), "makeLeaders": followed.Sub(led).Round(time.Millisecond),
		"makeFollowers": time.Since(followed).Round(time.Millisecond), "duration": took.Round(time.Millisecond)})
	if took >= 100*time.Millisecond {
		sum.Info("applied LeaderAndIsr")
	} else {
		sum.Debug("applied LeaderAndIsr")
	}
	return res
}

// makeLeaders: stop fetching for the partitions (S22 case 2), then make each a leader.
func (c *controllerRequests) makeLeaders(states []PartitionState) {
	if len(states) == 0 {
		return
	}
	c.fetcher.RemoveFetcherForPartitions(partitionsOf(states))
	// Each new leader epoch enters the partition's leader epoch cache (K1); the
	// leader-epoch-checkpoint file is written by the flush that first needs it
	// (logstore's persistDeferred), not here. The partitions are made leaders on a bounded
	// worker pool (docs/performance.md, "Controller at scale"); each takes only its own lock.
	var g errgroup.Group
	g.SetLimit(logCreateWorkers)
	for _, st := range states {
		g.Go(func() error {
			// The clock is read per partition, after its log was created: a follower's last
			// caught-up time starts when the leadership does (S10), not when the request arrived —
			// creating thousands of logs first would otherwise shrink every new ISR at once.
			c.pool.getPartition(st.TopicPartition).makeLeader(st, c.now())
			c.purgatory.checkAndComplete(st.TopicPartition)
			return nil
		})
	}
	_ = g.Wait() // the workers return no error
}

// makeFollowers implements S14 (with K1: no truncation here; the fetcher truncates by leader epoch).
func (c *controllerRequests) makeFollowers(states []PartitionState, liveLeaders map[int32]string) {
	if len(states) == 0 {
		return
	}
	changed := make([]PartitionState, 0, len(states))
	for _, st := range states {
		p := c.pool.getPartition(st.TopicPartition)
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
	tps := partitionsOf(changed)
	// S14.3: stop the old fetchers first so nothing more is appended.
	c.fetcher.RemoveFetcherForPartitions(tps)
	// S14.5: complete delayed produce and fetch requests for these partitions.
	for _, tp := range tps {
		c.purgatory.checkAndComplete(tp)
	}
	// S14.6: start fetchers toward the new leaders, from the local HW (2.4).
	init := make(map[TopicPartition]fetcher.InitialFetchState, len(changed))
	for _, st := range changed {
		p := c.pool.getPartition(st.TopicPartition)
		init[st.TopicPartition] = fetcher.InitialFetchState{
			Leader:             fetcher.BrokerEndPoint{ID: st.Leader, Addr: liveLeaders[st.Leader]},
			CurrentLeaderEpoch: st.LeaderEpoch,
			InitOffset:         p.HighWatermark(),
		}
	}
	c.fetcher.AddFetcherForPartitions(init)
}

// StopReplicas applies a StopReplica request (S22 case 1): remove fetchers, optionally delete the
// partition and its log, and complete the delayed operations waiting on it.
func (c *controllerRequests) StopReplicas(req StopReplicaRequest) StopReplicaResult {
	c.stateChangeLock.Lock()
	defer c.stateChangeLock.Unlock()
	res := StopReplicaResult{Partitions: make(map[TopicPartition]int16, len(req.Partitions))}
	code := c.checkController(req.ControllerEpoch, req.BrokerEpoch)
	if code != 0 {
		c.warnings.Warn(c.log.WithFields(logrus.Fields{"component": "state-change", "controllerId": req.ControllerID, "controllerEpoch": req.ControllerEpoch}),
			fmt.Sprint(req.ControllerID, "/", req.ControllerEpoch), "rejecting StopReplica from a stale controller")
		res.ErrorCode = code
		return res
	}
	c.fetcher.RemoveFetcherForPartitions(req.Partitions)
	for _, tp := range req.Partitions {
		res.Partitions[tp] = 0
		if !req.DeletePartitions {
			continue
		}
		if p := c.pool.getPartition(tp); p != nil && p.isOffline() {
			res.Partitions[tp] = kerr.KafkaStorageError.Code // nothing is written to an offline dir
			continue
		}
		c.pool.mu.Lock()
		p := c.pool.partitions[tp]
		delete(c.pool.partitions, tp)
		c.pool.mu.Unlock()
		if p != nil {
			p.mu.Lock()
			p.leaderID, p.leader = -1, nil
			p.mu.Unlock()
		}
		if c.logs.Get(tp) != nil {
			if err := c.logs.Delete(tp); err != nil {
				c.log.WithFields(logrus.Fields{"topic": tp.Topic, "partition": tp.Partition}).WithError(err).Error("deleting log")
				res.Partitions[tp] = kerr.KafkaStorageError.Code
			}
		}
		c.log.WithFields(logrus.Fields{"topic": tp.Topic, "partition": tp.Partition}).Info("deleted replica")
	}
	if req.DeletePartitions {
		c.removeTopicStatsOfDeleted(req.Partitions)
	}
	for _, tp := range req.Partitions {
		c.purgatory.checkAndComplete(tp)
	}
	c.notifyLeadership(nil, req.Partitions)
	return res
}
