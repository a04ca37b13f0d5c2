package replview

import (
	"slices"
	"sort"

	"github.com/isrbroker/isrbroker/fetcher"

	"github.com/isrbroker/isrbroker/replicamanager"
	"github.com/isrbroker/isrbroker/replicamanager/replevents"
)

// MaxEvents bounds the merged events of cluster.json.
const MaxEvents = 300

// peerResult is one registered broker and what reading its local view gave.
type peerResult struct {
	id         int32
	address    string
	registered bool
	view       *LocalView // nil: unreachable
	err        string
}

// merge builds the cluster view from the brokers' local views: brokers (registered ones and
// those only named in an AR), partitions as their leader sees them, and the events of every
// answering broker, newest first.
func merge(servedBy int32, nowMs int64, ctl ControllerView, lagMaxMs int64, peers []peerResult) ClusterView {
	cv := ClusterView{
		TimeMs: nowMs, ServedBy: servedBy, Controller: ctl, ReplicaLagTimeMaxMs: lagMaxMs,
		Brokers: []BrokerView{}, Partitions: []PartitionView{}, Events: []replevents.Event{}, Errors: []string{},
	}
	byID := map[int32]*peerResult{}
	for i := range peers {
		byID[peers[i].id] = &peers[i]
	}

	// Every hosted replica, per partition and broker.
	type key struct {
		topic string
		part  int32
	}
	replicas := map[key]map[int32]*replicamanager.PartitionSnapshot{}
	for _, p := range peers {
		if p.view == nil {
			continue
		}
		for i := range p.view.Partitions {
			ps := &p.view.Partitions[i]
			k := key{ps.Topic, ps.Partition}
			if replicas[k] == nil {
				replicas[k] = map[int32]*replicamanager.PartitionSnapshot{}
			}
			replicas[k][p.id] = ps
		}
		cv.Events = append(cv.Events, p.view.Events...)
	}
	fetchersOf := func(broker int32, tp key) (string, string) {
		p := byID[broker]
		if p == nil || p.view == nil {
			return "", ""
		}
		for _, f := range p.view.Fetchers {
			for _, fp := range f.Partitions {
				if fp.Topic == tp.topic && fp.Partition == tp.part {
					state := fp.State
					if fp.Delayed {
						state += " (delayed)"
					}
					return f.Name, state
				}
			}
		}
		return "", ""
	}

	keys := make([]key, 0, len(replicas))
	for k := range replicas {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].topic != keys[j].topic {
			return keys[i].topic < keys[j].topic
		}
		return keys[i].part < keys[j].part
	})
	named := map[int32]bool{}
	for _, k := range keys {
		hosts := replicas[k]
		// The view: the leader's snapshot with the newest epoch, else the newest follower's.
		var best *replicamanager.PartitionSnapshot
		for _, id := range sortedIDs(hosts) {
			ps := hosts[id]
			isLeader := func(x *replicamanager.PartitionSnapshot) bool { return x.Role == replicamanager.RoleLeader }
			better := best == nil || isLeader(ps) && !isLeader(best) ||
				isLeader(ps) == isLeader(best) && ps.LeaderEpoch > best.LeaderEpoch
			if better {
				best = ps
			}
		}
		pv := PartitionView{
			Topic: k.topic, Partition: k.part, Leader: best.Leader, LeaderEpoch: best.LeaderEpoch,
			HighWatermark: best.HighWatermark, LogStartOffset: best.LogStartOffset,
			Replicas: slices.Clone(best.Replicas), ISR: []int32{}, OutOfSync: []int32{},
			LeaderReachable: best.Role == replicamanager.RoleLeader,
		}
		if pv.LeaderReachable {
			pv.ISR = slices.Clone(best.ISR)
			for _, r := range pv.Replicas {
				if !slices.Contains(pv.ISR, r) {
					pv.OutOfSync = append(pv.OutOfSync, r)
				}
			}
		}
		for _, r := range pv.Replicas {
			named[r] = true
			rv := ReplicaView{Broker: r, LogEndOffset: -1, HighWatermark: -1, LastCaughtUpAgoMs: -1, LastFetchAgoMs: -1}
			if r == best.Leader && pv.LeaderReachable {
				rv.Role, rv.InISR = replicamanager.RoleLeader, true
				rv.LogEndOffset, rv.LEOSource, rv.HighWatermark, rv.Reachable = best.LogEndOffset, "self", best.HighWatermark, true
			} else {
				if pv.LeaderReachable {
					for _, f := range best.Followers {
						if f.Broker == r {
							rv.Role = replicamanager.RoleFollower
							rv.InISR = f.InISR
							rv.LastCaughtUpAgoMs, rv.LastFetchAgoMs = f.LastCaughtUpAgoMs, f.LastFetchAgoMs
							if f.LogEndOffset >= 0 {
								rv.LogEndOffset, rv.LEOSource = f.LogEndOffset, "leader"
							}
						}
					}
				}
				if own := hosts[r]; own != nil {
					rv.Reachable = true
					if rv.Role == "" {
						rv.Role = own.Role
					}
					rv.LogEndOffset, rv.LEOSource, rv.HighWatermark = own.LogEndOffset, "self", own.HighWatermark
					rv.Fetcher, rv.FetchState = fetchersOf(r, k)
				}
			}
			pv.ReplicaStates = append(pv.ReplicaStates, rv)
		}
		cv.Partitions = append(cv.Partitions, pv)
	}

	// Brokers: the registered ones and those only named in an AR (dead or unregistered).
	ids := map[int32]bool{}
	for _, p := range peers {
		ids[p.id] = true
	}
	for r := range named {
		ids[r] = true
	}
	for _, id := range sortedIDs(ids) {
		bv := BrokerView{ID: id}
		if p := byID[id]; p != nil {
			bv.PageAddress, bv.Registered, bv.Error = p.address, p.registered, p.err
			if p.view != nil {
				bv.Reachable, bv.StartedMs = true, p.view.StartedMs
				bv.Fetchers = p.view.Fetchers
				for _, ps := range p.view.Partitions {
					switch ps.Role {
					case replicamanager.RoleLeader:
						bv.Leaders++
					case replicamanager.RoleFollower:
						bv.Followers++
					}
				}
			}
		} else {
			bv.Error = "not registered in ZooKeeper"
		}
		if bv.Fetchers == nil {
			bv.Fetchers = []fetcher.FetcherSnapshot{}
		}
		cv.Brokers = append(cv.Brokers, bv)
	}

	sort.SliceStable(cv.Events, func(i, j int) bool {
		a, b := cv.Events[i], cv.Events[j]
		if a.TimeMs != b.TimeMs {
			return a.TimeMs > b.TimeMs
		}
		if a.Broker != b.Broker {
			return a.Broker < b.Broker
		}
		return a.Seq > b.Seq
	})
	if len(cv.Events) > MaxEvents {
		cv.Events = cv.Events[:MaxEvents]
	}
	return cv
}

func sortedIDs[V any](m map[int32]V) []int32 {
	out := make([]int32, 0, len(m))
	for id := range m {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}
