package replicamanager

import (
	"time"
)

// Fetch from follower (KIP-392, Kafka 2.4; docs/kafka-facts.md §15). A consumer's fetch
// of v11+ carries client metadata (FetchParams.Client). On the leader, with
// replica.selector.class set, the selector may name another replica as the partition's
// preferred read replica; the partition is then answered without records, with the HW, the log
// start offset, the LSO and preferred_read_replica (readFromLocalLog). On a follower such a fetch
// reads up to the follower's own HW instead of failing with NOT_LEADER_FOR_PARTITION.

// ReplicaEndpoint looks up broker id in the metadata cache on the client's listener (Kafka's
// MetadataCache.getPartitionReplicaEndpoints): ok is false when the broker is not alive or has no
// endpoint on that listener (Kafka's Node.noNode()); rack is nil when it registered none.
type ReplicaEndpoint func(listener string, id int32) (rack *string, ok bool)

// replicaView is the leader's view of one replica as the selector sees it (Kafka's
// DefaultReplicaView): its endpoint's rack, its LEO and the time since it was last caught up
// (0 for the leader).
type replicaView struct {
	id            int32
	reachable     bool    // an endpoint on the client's listener; else Kafka's Node.noNode()
	rack          *string // nil: the broker has no rack (or is unreachable)
	leo           int64
	sinceCaughtUp time.Duration
}

func (v replicaView) inRack(rack string) bool { return v.rack != nil && *v.rack == rack }

// moreCaughtUp orders replicas as Kafka's ReplicaView.comparator() does, a before b when a is the
// greater: larger LEO, then shorter time since last caught up, then larger broker id.
func moreCaughtUp(a, b replicaView) bool {
	if a.leo != b.leo {
		return a.leo > b.leo
	}
	if a.sinceCaughtUp != b.sinceCaughtUp {
		return a.sinceCaughtUp < b.sinceCaughtUp
	}
	return a.id > b.id
}

// selectRackAware is Kafka 2.4's RackAwareReplicaSelector: without a client rack, the leader;
// the leader when it is in the client's rack; else the most caught-up replica in that rack
// (moreCaughtUp); the leader when no replica is in the rack. followers are the candidates other
// than the leader.
func selectRackAware(clientRack string, leader replicaView, followers []replicaView) replicaView {
	if clientRack == "" || leader.inRack(clientRack) {
		return leader
	}
	best, found := leader, false
	for _, f := range followers {
		if f.inRack(clientRack) && (!found || moreCaughtUp(f, best)) {
			best, found = f, true
		}
	}
	return best
}

// preferredReadReplicaLocked is Kafka's findPreferredReadReplica for a consumer's fetch at
// fetchOffset on a partition led here (p.mu held): the candidates are the leader and the
// followers whose LEO >= fetchOffset and log start offset <= fetchOffset in the leader's view
// (in the ISR or not). It reports a replica only when the selector chose one other than the
// leader that is reachable on the client's listener.
func (lr *leaderReads) preferredReadReplicaLocked(p *Partition, client *ClientMetadata, fetchOffset int64, now time.Time) (int32, bool) {
	if !lr.rackAware || client == nil || p.leader == nil {
		return -1, false
	}
	ep := lr.endpoint.Load()
	if ep == nil {
		return -1, false
	}
	view := func(id int32, leo int64, since time.Duration) replicaView {
		rack, ok := (*ep)(client.Listener, id)
		if !ok {
			rack = nil
		}
		return replicaView{id: id, reachable: ok, rack: rack, leo: leo, sinceCaughtUp: since}
	}
	leader := view(lr.brokerID, p.log.LogEndOffset(), 0)
	var followers []replicaView
	for _, id := range p.assigned {
		prog, ok := p.leader.Progress(id)
		if id == lr.brokerID || !ok || prog.LEO < fetchOffset || prog.LogStartOffset > fetchOffset {
			continue
		}
		// Never caught up: Kafka's lastCaughtUpTimeMs 0, the longest time since (Sub saturates).
		followers = append(followers, view(id, prog.LEO, now.Sub(prog.LastCaughtUpTime)))
	}
	chosen := selectRackAware(client.RackID, leader, followers)
	if chosen.id == lr.brokerID || !chosen.reachable {
		return -1, false
	}
	return chosen.id, true
}
