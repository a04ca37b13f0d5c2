package replicamanager

import (
	"maps"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/isrbroker/isrbroker/broker/config/configdef"
	"github.com/isrbroker/isrbroker/logstore"
)

// Live configuration (issue 12; docs/live-configs.md §1–2). Every topic config and
// every KIP-226 dynamic broker config that the replica manager or the log uses applies without
// a restart. The DynamicConfigSource delivers each entity's complete config; the effective
// config of a topic follows configdef's precedence (configdef.Layers, broker/config/configdef/
// precedence.go, shared with DescribeConfigs): the topic override (retention.ms, ...) over
// /config/brokers/<this id> (log.retention.ms, ...) over /config/brokers/<default> over
// server.properties / --override over the configdef default. The two dynamic broker levels
// are resolved by brokerLevelLocked through configdef.Layers; the static config and the
// defaults are already the typed base (staticTopicDefaults), and the topic override goes on
// top of that level (topicOverridesOn).
//
// A change is applied at once to every local partition it concerns: the partition's topicConfig
// (min.insync.replicas for the next acks=all check, K2; unclean.leader.election.enable) and its
// log's Config (Log.SetConfig: retention and cleaning at their next run, segment.bytes/ms at
// the next roll, max.message.bytes and the timestamp settings at the next append). A partition
// created later gets the current config. num.replica.fetchers resizes the fetcher pool.

// liveConfigs holds the dynamic configs the effective topic configs derive from. Its mu
// serialises applying a change with creating a partition (getOrCreatePartition), so that no
// partition misses a change. Lock order: liveConfigs.mu → ReplicaManager.mu → Partition.mu →
// the log's locks.
type liveConfigs struct {
	mu         sync.Mutex
	perBroker  map[string]string            // /config/brokers/<this id>
	clusterDef map[string]string            // /config/brokers/<default>
	base       topicConfig                  // static config with the dynamic broker configs applied
	topics     map[string]map[string]string // latest known overrides per topic
	// deliveries counts the listener's deliveries per topic: a partition created while one
	// arrived takes the delivered overrides instead of its own (older) read.
	deliveries  map[string]uint64
	numFetchers int                       // num.replica.fetchers in effect
	cleaner     logstore.CleanerOverrides // dynamic log.cleaner.threads/dedupe.buffer.size/backoff.ms in effect
}

// brokerToTopicKey maps a dynamic broker log key to its topic key (LogConfig.TopicConfigSynonyms
// read backwards: log.retention.ms → retention.ms, message.max.bytes → max.message.bytes,
// min.insync.replicas → min.insync.replicas).
var brokerToTopicKey = func() map[string]string {
	m := map[string]string{}
	for _, k := range configdef.Keys() {
		if k.Scope == configdef.Topic && k.Synonym != "" {
			m[k.Synonym] = k.Name
		}
	}
	return m
}()

func (rm *ReplicaManager) initLiveConfigs() {
	rm.live.base = rm.staticTopicDefaults()
	rm.live.topics = map[string]map[string]string{}
	rm.live.deliveries = map[string]uint64{}
	rm.live.numFetchers = rm.cfg.NumReplicaFetchers
}

func (rm *ReplicaManager) dynLog() *logrus.Entry {
	return rm.log.WithField("component", "dynamic-config")
}

// applyDynamicConfig takes one entity's complete config from the DynamicConfigSource.
func (rm *ReplicaManager) applyDynamicConfig(entity string, cfg map[string]string) {
	kind, name, ok := strings.Cut(entity, "/")
	if !ok || name == "" {
		return
	}
	switch kind {
	case "topics":
		rm.applyTopicEntity(name, cfg)
	case "brokers":
		if name != "<default>" && name != strconv.Itoa(int(rm.cfg.BrokerID)) {
			return
		}
		rm.applyBrokerEntity(name, cfg)
	}
}

// applyTopicEntity applies a topic's new overrides to its local partitions; a key removed from
// the overrides falls back to the broker level.
func (rm *ReplicaManager) applyTopicEntity(topic string, cfg map[string]string) {
	rm.live.mu.Lock()
	defer rm.live.mu.Unlock()
	old := rm.live.topics[topic]
	rm.live.topics[topic] = cfg
	rm.live.deliveries[topic]++
	parts := rm.partitionsOf(topic)
	if len(parts) == 0 {
		return
	}
	rm.logChanges("topics/"+topic, old, cfg, func(k string) bool { _, ok := configdef.Lookup(k, configdef.Topic); return ok })
	tc := rm.topicOverridesOn(rm.live.base, topic, cfg)
	for _, p := range parts {
		p.setConfig(tc)
	}
}

// applyBrokerEntity applies a dynamic broker config (this broker's or the cluster default):
// the broker level of every topic, then every local partition, then num.replica.fetchers.
func (rm *ReplicaManager) applyBrokerEntity(name string, cfg map[string]string) {
	rm.live.mu.Lock()
	defer rm.live.mu.Unlock()
	var old map[string]string
	if name == "<default>" {
		old, rm.live.clusterDef = rm.live.clusterDef, cfg
	} else {
		old, rm.live.perBroker = rm.live.perBroker, cfg
	}
	rm.logChanges("brokers/"+name, old, cfg, func(k string) bool { return dynamicBrokerKey(k, name == "<default>") != nil })
	base, fetchers, cleaner := rm.brokerLevelLocked()
	if base != rm.live.base {
		rm.live.base = base
		for _, p := range rm.allPartitions() {
			p.setConfig(rm.topicOverridesOn(base, p.tp.Topic, rm.live.topics[p.tp.Topic]))
		}
	}
	if fetchers != rm.live.numFetchers {
		rm.live.numFetchers = fetchers
		if r, ok := rm.fetcher.(interface{ ResizeThreadPool(int) }); ok {
			r.ResizeThreadPool(fetchers)
		}
	}
	if cleaner != rm.live.cleaner {
		rm.live.cleaner = cleaner
		if rm.logs != nil {
			rm.logs.ReconfigureCleaner(cleaner) // restarts the cleaner threads (LogCleaner.reconfigure)
		}
	}
}

// cleanerThreadKeys are the dynamic cleaner settings whose change restarts the cleaner threads.
var cleanerThreadKeys = map[string]bool{"log.cleaner.threads": true, "log.cleaner.dedupe.buffer.size": true, "log.cleaner.backoff.ms": true}

// dynamicBrokerKey returns the broker key k if it may be set dynamically (per broker, or
// cluster-wide when clusterDefault) and isrbroker applies it live; nil otherwise.
func dynamicBrokerKey(k string, clusterDefault bool) *configdef.Key {
	key, ok := configdef.Lookup(k, configdef.Broker)
	if !ok || !key.AppliesLive() || (clusterDefault && key.Dynamic != configdef.ClusterWide) {
		return nil
	}
	if _, ok := brokerToTopicKey[k]; !ok && k != "num.replica.fetchers" && !cleanerThreadKeys[k] {
		return nil // live elsewhere
	}
	return key
}

// brokerLevelLocked computes the broker level of the topic configs and num.replica.fetchers:
// each key this broker applies live takes its value from the highest dynamic level that sets
// it validly (configdef.Layers: /config/brokers/<this id>, then <default>), else keeps the
// static config's (server.properties and the configdef defaults, already typed in rm.cfg).
// Invalid values are logged and skipped (they are validated when written), so the next level
// down applies.
func (rm *ReplicaManager) brokerLevelLocked() (topicConfig, int, logstore.CleanerOverrides) {
	layers := configdef.Layers[any]{
		ClusterDefault: rm.validDynamicLocked("brokers/<default>", rm.live.clusterDef, true),
		Broker:         rm.validDynamicLocked("brokers/"+strconv.Itoa(int(rm.cfg.BrokerID)), rm.live.perBroker, false),
	}
	names := map[string]bool{}
	for _, l := range configdef.Precedence() {
		for k := range layers.At(l) {
			names[k] = true
		}
	}
	tc := rm.staticTopicDefaults()
	fetchers := rm.cfg.NumReplicaFetchers
	var cleaner logstore.CleanerOverrides
	for _, k := range sortedKeys(names) {
		v, _, _ := layers.Value(k)
		switch k {
		case "num.replica.fetchers":
			fetchers = int(v.(int64))
		case "log.cleaner.threads":
			cleaner.Threads = int(v.(int64))
		case "log.cleaner.dedupe.buffer.size":
			cleaner.DedupeBufferSize = v.(int64)
		case "log.cleaner.backoff.ms":
			cleaner.Backoff = configdef.Scale(v.(int64), time.Millisecond)
		default:
			applyTopicConfig(&tc, brokerToTopicKey[k], v)
		}
	}
	return tc, fetchers, cleaner
}

// validDynamicLocked parses one dynamic broker entity's config: the keys this broker applies
// live and may take from that entity (clusterDefault: /config/brokers/<default>), with valid
// values; an invalid value is logged and left out.
func (rm *ReplicaManager) validDynamicLocked(entity string, cfg map[string]string, clusterDefault bool) map[string]any {
	out := map[string]any{}
	for _, k := range sortedKeys(cfg) {
		key := dynamicBrokerKey(k, clusterDefault)
		if key == nil {
			continue
		}
		v, err := key.ParseValid(cfg[k])
		if err != nil {
			rm.dynLog().WithFields(logrus.Fields{"entity": entity, "key": k, "value": cfg[k]}).WithError(err).Warn("ignoring invalid dynamic broker config value")
			continue
		}
		out[k] = v
	}
	return out
}

// logChanges logs each key whose value changed between old and cfg, and whether isrbroker
// applies it live.
func (rm *ReplicaManager) logChanges(entity string, old, cfg map[string]string, live func(string) bool) {
	all := maps.Clone(old)
	if all == nil {
		all = map[string]string{}
	}
	maps.Copy(all, cfg)
	for _, k := range sortedKeys(all) {
		o, hadOld := old[k]
		n, hasNew := cfg[k]
		if hadOld == hasNew && o == n {
			continue
		}
		f := logrus.Fields{"entity": entity, "key": k, "old": o, "new": n}
		if !hadOld {
			f["old"] = nil
		}
		if !hasNew {
			f["new"] = nil // deleted: the next level down applies
		}
		if live(k) {
			rm.dynLog().WithFields(f).Info("applying config change")
		} else {
			rm.dynLog().WithFields(f).Debug("config change not applied by the replica manager")
		}
	}
}

// partitionsOf returns the local partitions of topic.
func (rm *ReplicaManager) partitionsOf(topic string) []*Partition {
	rm.mu.RLock()
	defer rm.mu.RUnlock()
	var out []*Partition
	for tp, p := range rm.partitions {
		if tp.Topic == topic {
			out = append(out, p)
		}
	}
	return out
}

// setConfig installs a partition's new effective config: min.insync.replicas counts from the
// next acks=all produce (K2) and the log applies its part at its next append, roll, retention
// or cleaning run.
func (p *Partition) setConfig(tc topicConfig) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cfg == tc {
		return
	}
	p.cfg = tc
	p.log.SetConfig(tc.log)
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
