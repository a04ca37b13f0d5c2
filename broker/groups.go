package broker

import (
	"net"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/isrbroker/isrbroker/broker/groupcoord"
	"github.com/isrbroker/isrbroker/broker/security/acl"
	rm "github.com/isrbroker/isrbroker/replicamanager"
)

// Group API keys (OffsetCommit, OffsetFetch, FindCoordinator, JoinGroup, Heartbeat,
// LeaveGroup, SyncGroup, DescribeGroups, ListGroups, DeleteGroups, OffsetDelete): decoded
// here, served by the group coordinator (broker/groupcoord, docs/groups.md), which owns every
// group. The version ranges are the coordinator's (groupcoord.Keys), so ApiVersions advertises
// exactly what it serves.
//
// Behavior: each request goes to the coordinator with the client id, the client host
// ("/ip", as Kafka reports it in DescribeGroups) and the listener it came in on (FindCoordinator
// answers with that listener's endpoint). A broker built without a coordinator (unit tests)
// closes the connection on these keys.

func init() {
	for _, k := range groupcoord.Keys() {
		regKey(k.Key, k.Min, k.Max, handleGroupRequest)
	}
}

// GroupCoordinator serves the group API keys and drops the committed offsets of deleted
// partitions; *groupcoord.Coordinator implements it.
type GroupCoordinator interface {
	Handle(r *groupcoord.Request, req kmsg.Request, respond func(kmsg.Response))
	HandleDeletedPartitions(partitions []rm.TopicPartition)
}

// SetGroupCoordinator installs the group coordinator; call it before Serve.
func (s *Server) SetGroupCoordinator(gc GroupCoordinator) { s.groups = gc }

func handleGroupRequest(s *Server, r *request, req kmsg.Request) {
	if s.groups == nil {
		requestWarnings.Warn(r.log(), "", "no group coordinator; closing the connection")
		r.respondAndClose()
		return
	}
	host := r.c.nc.RemoteAddr().String()
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	gr := &groupcoord.Request{ClientID: r.clientID(), ClientHost: "/" + host, Listener: r.c.listener, Log: r.log()}
	if s.deps.ACLs != nil {
		gr.Authorized = func(op acl.Operation, typ acl.ResourceType, name string) bool {
			return s.authz.authorized(r, op, typ, name)
		}
	}
	s.groups.Handle(gr, req, func(resp kmsg.Response) {
		r.safe(func() { r.respond(resp) })
	})
}

// GroupMetadata adapts the metadata cache to what the group coordinator reads.
type GroupMetadata struct{ Cache *MetadataCache }

// PartitionCount is the number of partitions of topic, 0 when unknown.
func (m GroupMetadata) PartitionCount(topic string) int32 {
	return int32(len(m.Cache.Snapshot().Topics[topic]))
}

// HasPartition reports whether the cluster knows topic-partition.
func (m GroupMetadata) HasPartition(topic string, partition int32) bool {
	_, ok := m.Cache.Partition(topic, partition)
	return ok
}

// Leader returns the live leader of topic-partition and its endpoint on listener.
func (m GroupMetadata) Leader(topic string, partition int32, listener string) (groupcoord.Node, bool) {
	snap := m.Cache.Snapshot()
	p, ok := snap.Partition(topic, partition)
	if !ok || p.Leader < 0 {
		return groupcoord.Node{}, false
	}
	b, alive := snap.Brokers[p.Leader]
	if !alive {
		return groupcoord.Node{}, false
	}
	ep, ok := b.Endpoint(listener)
	if !ok {
		return groupcoord.Node{}, false
	}
	return groupcoord.Node{ID: b.ID, Host: ep.Host, Port: ep.Port}, true
}

// AliveBrokers is the number of live brokers.
func (m GroupMetadata) AliveBrokers() int { return len(m.Cache.Snapshot().Brokers) }

// isInternalTopic: the topics Kafka 2.4 marks internal.
func isInternalTopic(name string) bool {
	return name == groupcoord.OffsetsTopic || name == "__transaction_state"
}
