package fetcher

import (
	"fmt"
	"sort"
	"sync"

	"github.com/rcrowley/go-metrics"
	"github.com/sirupsen/logrus"
)

// fetcherKey is Kafka's BrokerIdAndFetcherId: the fetcher map key.
type fetcherKey struct {
	leaderID  int32
	fetcherID int
}

// Manager is the ReplicaFetcherManager (S15, S16, S22, S23): it runs at most
// num.replica.fetchers fetchers toward each leader and assigns each partition to one of them by
// FetcherID. It is safe for concurrent use.
//
// Lock order: Manager.mu → fetcherThread.mu → Manager.failedMu.
type Manager struct {
	cfg   Config
	local Local
	log   logrus.FieldLogger

	mu          sync.Mutex
	fetchers    map[fetcherKey]*fetcherThread
	numFetchers int // num.replica.fetchers now (ResizeThreadPool)
	closed      bool

	failedMu sync.Mutex
	failed   map[TopicPartition]struct{}

	bytesIn     metrics.Meter
	maxLag      metrics.Gauge
	threadCount metrics.Gauge // FetcherThreadCount: len(fetchers), set under mu
}

// NewManager returns a ReplicaFetcherManager driving local. Zero config values take Kafka's
// defaults. It registers the MaxLag and FetcherThreadCount gauges and the
// ReplicationBytesInPerSec meter in cfg.Registry; each fetcher registers its PartitionCount gauge
// (MetricPartitionCount) while it runs.
func NewManager(cfg Config, local Local) *Manager {
	cfg = cfg.withDefaults()
	// Every line of the fetchers carries component=fetcher (docs/logging.md).
	cfg.Log = cfg.Log.WithField("component", "fetcher")
	m := &Manager{
		cfg:         cfg,
		local:       local,
		log:         cfg.Log.WithField("brokerId", cfg.BrokerID),
		fetchers:    make(map[fetcherKey]*fetcherThread),
		numFetchers: cfg.NumFetchers,
		failed:      make(map[TopicPartition]struct{}),
	}
	m.bytesIn = metrics.GetOrRegisterMeter(MetricReplicationBytesInPerSec, cfg.Registry)
	m.maxLag = metrics.NewFunctionalGauge(m.MaxLag)
	cfg.Registry.Unregister(MetricMaxLag)
	_ = cfg.Registry.Register(MetricMaxLag, m.maxLag)
	m.threadCount = metrics.NewGauge()
	cfg.Registry.Unregister(MetricFetcherThreadCount)
	_ = cfg.Registry.Register(MetricFetcherThreadCount, m.threadCount)
	return m
}

// threadCountChangedLocked publishes len(fetchers); call it with mu held after every change.
func (m *Manager) threadCountChangedLocked() {
	m.threadCount.Update(int64(len(m.fetchers)))
}

// createFetcherThread builds the fetcher for (leader, fetcher id) and its leader connection.
func (m *Manager) createFetcherThread(fetcherID int, source BrokerEndPoint) *fetcherThread {
	var leader Leader
	if m.cfg.NewLeader != nil {
		leader = m.cfg.NewLeader(source, fetcherID)
	} else {
		clientID := fmt.Sprintf("broker-%d-fetcher-%d", m.cfg.BrokerID, fetcherID)
		leader = NewSecureRemoteLeader(source.Addr, m.cfg.LocalAddr, clientID, m.cfg.SocketTimeout, m.cfg.Security)
	}
	return newFetcherThread(m, fetcherID, source, leader)
}

// AddFetcherForPartitions starts fetching parts (S16): for each partition it computes the
// fetcher id, finds the fetcher for (leader, fetcher id) or creates and starts one
// (createFetcherThread), and adds the partition there. A partition already present at the same
// leader epoch keeps its state; otherwise it starts Truncating at InitOffset. A fetcher whose
// leader address changed is replaced; its other partitions move to the new one unchanged.
func (m *Manager) AddFetcherForPartitions(parts map[TopicPartition]InitialFetchState) {
	if len(parts) == 0 {
		return
	}
	type group struct {
		source BrokerEndPoint
		parts  map[TopicPartition]InitialFetchState
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return
	}
	groups := make(map[fetcherKey]*group)
	for tp, init := range parts {
		key := fetcherKey{leaderID: init.Leader.ID, fetcherID: FetcherID(tp.Topic, tp.Partition, m.numFetchers)}
		g := groups[key]
		if g == nil {
			g = &group{source: init.Leader, parts: make(map[TopicPartition]InitialFetchState)}
			groups[key] = g
		}
		g.parts[tp] = init
	}
	// Clear failed marks first: a fetcher may fail a partition again as soon as it is added.
	m.failedMu.Lock()
	for tp := range parts {
		delete(m.failed, tp)
	}
	m.failedMu.Unlock()
	for key, g := range groups {
		th := m.fetchers[key]
		var carried map[TopicPartition]partitionState
		if th != nil && th.source != g.source {
			m.log.WithFields(logrus.Fields{"leader": key.leaderID, "old": th.source.Addr, "new": g.source.Addr}).
				Info("leader endpoint changed; replacing fetcher")
			th.shutdown()
			carried = th.takeStates()
			th = nil
		}
		if th == nil {
			th = m.createFetcherThread(key.fetcherID, g.source)
			m.fetchers[key] = th
			th.start()
			if len(carried) > 0 {
				th.restore(carried)
			}
		}
		th.addPartitions(g.parts)
	}
	m.threadCountChangedLocked()
}

// RemoveFetcherForPartitions removes parts from every fetcher (S22). When it returns, no fetcher
// truncates or appends to those partitions any more (S14.3).
func (m *Manager) RemoveFetcherForPartitions(parts []TopicPartition) {
	if len(parts) == 0 {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, th := range m.fetchers {
		th.removePartitions(parts)
	}
	m.failedMu.Lock()
	for _, tp := range parts {
		delete(m.failed, tp)
	}
	m.failedMu.Unlock()
}

// ShutdownIdleFetcherThreads stops the fetchers left without partitions (S23); the replica
// manager calls it after every LeaderAndIsr.
func (m *Manager) ShutdownIdleFetcherThreads() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for key, th := range m.fetchers {
		if th.partitionCount() == 0 {
			th.shutdown()
			delete(m.fetchers, key)
		}
	}
	m.threadCountChangedLocked()
}

// Fetchers lists the running fetchers, ordered by leader and fetcher id.
func (m *Manager) Fetchers() []FetcherInfo {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]FetcherInfo, 0, len(m.fetchers))
	for key, th := range m.fetchers {
		ps := th.partitions()
		sortPartitions(ps)
		out = append(out, FetcherInfo{LeaderID: key.leaderID, FetcherID: key.fetcherID, Partitions: ps})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].LeaderID != out[j].LeaderID {
			return out[i].LeaderID < out[j].LeaderID
		}
		return out[i].FetcherID < out[j].FetcherID
	})
	return out
}

// PartitionState returns the fetch state of tp if a fetcher holds it.
func (m *Manager) PartitionState(tp TopicPartition) (PartitionFetchState, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, th := range m.fetchers {
		if s, ok := th.state(tp); ok {
			return s, true
		}
	}
	return PartitionFetchState{}, false
}

// FailedPartitions lists partitions marked failed (FENCED_LEADER_EPOCH) and not re-added or
// removed since.
func (m *Manager) FailedPartitions() []TopicPartition {
	m.failedMu.Lock()
	out := make([]TopicPartition, 0, len(m.failed))
	for tp := range m.failed {
		out = append(out, tp)
	}
	m.failedMu.Unlock()
	sortPartitions(out)
	return out
}

func (m *Manager) markFailed(tp TopicPartition) {
	m.failedMu.Lock()
	m.failed[tp] = struct{}{}
	m.failedMu.Unlock()
}

// MaxLag is the MaxLag gauge: the largest lag in messages (leader HW − next fetch offset) over
// all partitions being fetched.
func (m *Manager) MaxLag() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	var lag int64
	for _, th := range m.fetchers {
		if l := th.maxLag(); l > lag {
			lag = l
		}
	}
	return lag
}

// Close stops every fetcher and unregisters the MaxLag and FetcherThreadCount gauges.
func (m *Manager) Close() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return
	}
	m.closed = true
	for key, th := range m.fetchers {
		th.shutdown()
		delete(m.fetchers, key)
	}
	m.threadCountChangedLocked()
	if m.cfg.Registry.Get(MetricMaxLag) == m.maxLag {
		m.cfg.Registry.Unregister(MetricMaxLag)
	}
	if m.cfg.Registry.Get(MetricFetcherThreadCount) == m.threadCount {
		m.cfg.Registry.Unregister(MetricFetcherThreadCount)
	}
}

func sortPartitions(ps []TopicPartition) {
	sort.Slice(ps, func(i, j int) bool {
		if ps[i].Topic != ps[j].Topic {
			return ps[i].Topic < ps[j].Topic
		}
		return ps[i].Partition < ps[j].Partition
	})
}
