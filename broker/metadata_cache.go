package broker

import (
	"context"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kmsg"

	rm "github.com/isrbroker/isrbroker/replicamanager"
)

// LeaderDuringDelete is the leader id the controller sends in UpdateMetadata for a
// partition of a topic being deleted (LeaderAndIsr.LeaderDuringDelete); the cache drops it.
const LeaderDuringDelete = -2

// NoLeader is the leader id of a partition without a leader.
const NoLeader = -1

// Endpoint is one listener of a live broker.
type Endpoint struct {
	Listener         string
	Host             string
	Port             int32
	SecurityProtocol int16
}

// BrokerInfo is a live broker as the controller last described it.
type BrokerInfo struct {
	ID        int32
	Rack      *string
	Endpoints []Endpoint
}

// Endpoint returns the broker's endpoint for the listener name.
func (b BrokerInfo) Endpoint(listener string) (Endpoint, bool) {
	for _, e := range b.Endpoints {
		if e.Listener == listener {
			return e, true
		}
	}
	return Endpoint{}, false
}

// PartitionInfo is the controller's view of one partition: leader, leader epoch, ISR,
// assigned replicas and offline replicas.
type PartitionInfo struct {
	Topic           string
	Partition       int32
	ControllerEpoch int32
	Leader          int32
	LeaderEpoch     int32
	ISR             []int32
	ZkVersion       int32
	Replicas        []int32
	OfflineReplicas []int32
}

// MetadataSnapshot is one immutable version of the cache. Never modify it.
type MetadataSnapshot struct {
	ControllerID    int32
	ControllerEpoch int32
	Brokers         map[int32]BrokerInfo
	Topics          map[string]map[int32]PartitionInfo
}

// AliveBrokers returns the live brokers sorted by id.
func (m *MetadataSnapshot) AliveBrokers() []BrokerInfo {
	out := make([]BrokerInfo, 0, len(m.Brokers))
	for _, b := range m.Brokers {
		out = append(out, b)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Partition returns one partition's state.
func (m *MetadataSnapshot) Partition(topic string, partition int32) (PartitionInfo, bool) {
	p, ok := m.Topics[topic][partition]
	return p, ok
}

// TopicNames returns the known topics, sorted.
func (m *MetadataSnapshot) TopicNames() []string {
	out := make([]string, 0, len(m.Topics))
	for t := range m.Topics {
		out = append(out, t)
	}
	sort.Strings(out)
	return out
}

// MetadataCache is the broker's view of the cluster, fed only by UpdateMetadata (like
// Kafka's MetadataCache). Readers take a snapshot without blocking; an update copies what
// it changes and swaps the pointer (copy-on-write).
type MetadataCache struct {
	mu          sync.Mutex // serialises updates
	snap        atomic.Pointer[MetadataSnapshot]
	changed     atomic.Pointer[chan struct{}] // closed and replaced on every update
	initialized chan struct{}                 // closed by the first update
	initOnce    sync.Once
}

// NewMetadataCache returns an empty cache: no controller (-1), no brokers, no topics.
func NewMetadataCache() *MetadataCache {
	m := &MetadataCache{initialized: make(chan struct{})}
	m.snap.Store(&MetadataSnapshot{ControllerID: -1, Brokers: map[int32]BrokerInfo{}, Topics: map[string]map[int32]PartitionInfo{}})
	ch := make(chan struct{})
	m.changed.Store(&ch)
	return m
}

// Initialized is closed once the cache has applied its first UpdateMetadata: from then on it
// knows the live brokers and partitions the controller told it about.
func (m *MetadataCache) Initialized() <-chan struct{} { return m.initialized }

// Snapshot returns the current immutable snapshot.
func (m *MetadataCache) Snapshot() *MetadataSnapshot { return m.snap.Load() }

// ControllerID is the controller named by the last UpdateMetadata, or -1.
func (m *MetadataCache) ControllerID() int32 { return m.snap.Load().ControllerID }

// AliveBrokers returns the live brokers sorted by id.
func (m *MetadataCache) AliveBrokers() []BrokerInfo { return m.snap.Load().AliveBrokers() }

// Partition returns one partition's state.
func (m *MetadataCache) Partition(topic string, partition int32) (PartitionInfo, bool) {
	return m.snap.Load().Partition(topic, partition)
}

// ReplicaEndpoint is the replica selector's view of broker id (KIP-392; Kafka's
// getPartitionReplicaEndpoints): its rack (nil when it registered none) when it is alive with
// an endpoint on listener, else ok false. It implements replicamanager.ReplicaEndpoint.
func (m *MetadataCache) ReplicaEndpoint(listener string, id int32) (rack *string, ok bool) {
	b, alive := m.snap.Load().Brokers[id]
	if !alive {
		return nil, false
	}
	if _, ok := b.Endpoint(listener); !ok {
		return nil, false
	}
	return b.Rack, true
}

var _ rm.ReplicaEndpoint = (*MetadataCache)(nil).ReplicaEndpoint

// WaitFor blocks until cond holds for a snapshot or ctx ends (returning ctx.Err()).
// cond is evaluated on the current snapshot and after every update.
func (m *MetadataCache) WaitFor(ctx context.Context, cond func(*MetadataSnapshot) bool) error {
	for {
		ch := *m.changed.Load() // load before the snapshot: an update in between is not missed
		if cond(m.snap.Load()) {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// securityProtocolName maps the security protocol id of UpdateMetadata v1–v2 endpoints
// (which carry no listener name) to the listener name Kafka derives from it.
func securityProtocolName(id int16) string {
	switch id {
	case 0:
		return "PLAINTEXT"
	case 1:
		return "SSL"
	case 2:
		return "SASL_PLAINTEXT"
	case 3:
		return "SASL_SSL"
	}
	return ""
}

// Update applies an UpdateMetadata request (already fenced by controller and broker
// epoch): live brokers and controller id are replaced, partition states are upserted, and
// partitions whose leader is -2 are removed (topic deleted), a topic going when its last
// partition does. It returns the partitions the request marked deleted, every one with leader
// -2 whether cached or not (Kafka's MetadataCache.updateMetadata).
func (m *MetadataCache) Update(req *kmsg.UpdateMetadataRequest) (deleted []rm.TopicPartition) {
	m.mu.Lock()
	defer m.mu.Unlock()
	old := m.snap.Load()
	next := &MetadataSnapshot{
		ControllerID:    req.ControllerID,
		ControllerEpoch: req.ControllerEpoch,
		Brokers:         make(map[int32]BrokerInfo, len(req.LiveBrokers)),
		Topics:          make(map[string]map[int32]PartitionInfo, len(old.Topics)),
	}
	for _, lb := range req.LiveBrokers {
		b := BrokerInfo{ID: lb.ID, Rack: lb.Rack}
		if req.Version == 0 {
			b.Endpoints = []Endpoint{{Listener: "PLAINTEXT", Host: lb.Host, Port: lb.Port}}
		}
		for _, e := range lb.Endpoints {
			name := e.ListenerName
			if req.Version < 3 {
				name = securityProtocolName(e.SecurityProtocol)
			}
			b.Endpoints = append(b.Endpoints, Endpoint{Listener: name, Host: e.Host, Port: e.Port, SecurityProtocol: e.SecurityProtocol})
		}
		next.Brokers[b.ID] = b
	}
	for t, parts := range old.Topics {
		next.Topics[t] = parts // shared until modified below
	}
	copied := map[string]bool{}
	apply := func(topic string, ps *kmsg.UpdateMetadataRequestTopicPartition) {
		parts := next.Topics[topic]
		if !copied[topic] {
			np := make(map[int32]PartitionInfo, len(parts)+1)
			for k, v := range parts {
				np[k] = v
			}
			parts = np
			next.Topics[topic] = parts
			copied[topic] = true
		}
		if ps.Leader == LeaderDuringDelete {
			delete(parts, ps.Partition)
			deleted = append(deleted, rm.TopicPartition{Topic: topic, Partition: ps.Partition})
			return
		}
		parts[ps.Partition] = PartitionInfo{
			Topic:           topic,
			Partition:       ps.Partition,
			ControllerEpoch: ps.ControllerEpoch,
			Leader:          ps.Leader,
			LeaderEpoch:     ps.LeaderEpoch,
			ISR:             append([]int32(nil), ps.ISR...),
			ZkVersion:       ps.ZKVersion,
			Replicas:        append([]int32(nil), ps.Replicas...),
			OfflineReplicas: append([]int32(nil), ps.OfflineReplicas...),
		}
	}
	for i := range req.PartitionStates {
		apply(req.PartitionStates[i].Topic, &req.PartitionStates[i])
	}
	for i := range req.TopicStates {
		ts := &req.TopicStates[i]
		for j := range ts.PartitionStates {
			apply(ts.Topic, &ts.PartitionStates[j])
		}
	}
	for t := range copied {
		if len(next.Topics[t]) == 0 {
			delete(next.Topics, t)
		}
	}
	m.snap.Store(next)
	ch := make(chan struct{})
	oldCh := m.changed.Swap(&ch)
	close(*oldCh)
	m.initOnce.Do(func() { close(m.initialized) })
	return deleted
}
