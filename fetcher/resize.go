package fetcher

import (
	"github.com/sirupsen/logrus"
)

// ResizeThreadPool changes num.replica.fetchers at run time (KIP-226; Kafka 2.4's
// AbstractFetcherManager.resizeThreadPool, docs/live-configs.md §3): every
// partition is re-hashed to FetcherID(topic, partition, n) toward its leader and moves to that
// fetcher with its fetch state unchanged (fetch offset, leader epoch, truncating or fetching),
// fetchers with an id >= n stop, and fetchers left without partitions stop (S23). Kafka re-adds
// the moved partitions through addFetcherForPartitions; keeping their state instead saves a
// truncation round trip and cannot lose a record: the log is not touched. n < 1 counts as 1.
func (m *Manager) ResizeThreadPool(n int) {
	if n < 1 {
		n = 1
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed || n == m.numFetchers {
		return
	}
	m.log.WithFields(logrus.Fields{"component": "dynamic-config", "key": "num.replica.fetchers", "old": m.numFetchers, "new": n}).
		Info("resizing the replica fetcher thread pool")
	m.numFetchers = n
	type moved struct {
		source BrokerEndPoint
		states map[TopicPartition]partitionState
	}
	targets := make(map[fetcherKey]*moved)
	for key, th := range m.fetchers {
		if key.fetcherID >= n {
			th.shutdown() // before taking its states: nothing in flight writes the logs afterwards
			delete(m.fetchers, key)
		}
		for tp, st := range th.takeStates() {
			to := fetcherKey{leaderID: key.leaderID, fetcherID: FetcherID(tp.Topic, tp.Partition, n)}
			mv := targets[to]
			if mv == nil {
				mv = &moved{source: th.source, states: make(map[TopicPartition]partitionState)}
				targets[to] = mv
			}
			mv.states[tp] = st
		}
	}
	for key, mv := range targets {
		th := m.fetchers[key]
		if th != nil && th.source != mv.source {
			th.shutdown()
			delete(m.fetchers, key)
			th = nil
		}
		if th == nil {
			th = m.createFetcherThread(key.fetcherID, mv.source)
			m.fetchers[key] = th
			th.start()
		}
		th.restore(mv.states)
	}
	for key, th := range m.fetchers {
		if th.partitionCount() == 0 {
			th.shutdown()
			delete(m.fetchers, key)
		}
	}
	m.threadCountChangedLocked()
}

// NumFetchers returns the current num.replica.fetchers.
func (m *Manager) NumFetchers() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.numFetchers
}
