package controller

import (
	"github.com/isrbroker/isrbroker/zkcoord/internal/sorted"
	"github.com/isrbroker/isrbroker/zkcoord/zkdata"
)

// TopicPartition and BrokerInfo are zkdata's.
type (
	TopicPartition = zkdata.TopicPartition
	BrokerInfo     = zkdata.BrokerInfo
)

const noLeader = zkdata.NoLeader

// controllerContext is the controller's cached view of the cluster (Kafka's
// ControllerContext). Only the event goroutine touches it; resign drops it.
type controllerContext struct {
	epoch          int32
	epochZkVersion int32
	live           map[int32]BrokerInfo
	assignments    map[string]map[int32][]int32
	states         map[TopicPartition]*leaderIsr
	// shuttingDown holds the brokers in controlled shutdown (K7): live, but never elected
	// leader; an entry is cleared when the broker's registration goes away or is replaced.
	shuttingDown map[int32]bool
	// offlineDirs holds, per live broker, the replicas it answered KAFKA_STORAGE_ERROR for
	// (Kafka's replicasOnOfflineDirs, logdir.go): not online although their broker is live.
	offlineDirs map[int32]map[TopicPartition]bool
}

func newControllerContext() *controllerContext {
	c := &controllerContext{}
	c.reset()
	return c
}

func (c *controllerContext) reset() {
	c.live = map[int32]BrokerInfo{}
	c.assignments = map[string]map[int32][]int32{}
	c.states = map[TopicPartition]*leaderIsr{}
	c.shuttingDown = map[int32]bool{}
	c.offlineDirs = map[int32]map[TopicPartition]bool{}
}

func (c *controllerContext) isLive(id int32) bool {
	_, ok := c.live[id]
	return ok
}

// electable reports whether broker id may be chosen as a leader: live and not shutting down.
func (c *controllerContext) electable(id int32) bool { return c.isLive(id) && !c.shuttingDown[id] }

func (c *controllerContext) liveIDs() []int32 { return sorted.Keys(c.live) }

func (c *controllerContext) replicas(tp TopicPartition) []int32 {
	return c.assignments[tp.Topic][tp.Partition]
}

func (c *controllerContext) hasPartition(tp TopicPartition) bool {
	_, ok := c.assignments[tp.Topic][tp.Partition]
	return ok
}

func (c *controllerContext) liveReplicas(tp TopicPartition) []int32 {
	var out []int32
	for _, r := range c.replicas(tp) {
		if c.isReplicaOnline(r, tp) {
			out = append(out, r)
		}
	}
	return out
}

// partitions returns every assigned partition, sorted.
func (c *controllerContext) partitions() []TopicPartition {
	var out []TopicPartition
	for _, t := range sorted.Keys(c.assignments) {
		for _, p := range sorted.Keys(c.assignments[t]) {
			out = append(out, TopicPartition{Topic: t, Partition: p})
		}
	}
	return out
}

// sortedStates returns the partitions with a cached state, sorted.
func (c *controllerContext) sortedStates() []TopicPartition {
	out := make([]TopicPartition, 0, len(c.states))
	for tp := range c.states {
		out = append(out, tp)
	}
	sorted.TPs(out)
	return out
}

// needsElection reports whether a partition's leader is not live or its ISR names a broker
// that is not live.
func (c *controllerContext) needsElection(st *leaderIsr) bool {
	if !c.isLive(st.leader) {
		return true
	}
	for _, r := range st.isr {
		if !c.isLive(r) {
			return true
		}
	}
	return false
}
