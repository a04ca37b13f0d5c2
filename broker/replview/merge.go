package replview

import (
	"slices"
	"sort"
	"strings"

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
	// Each broker's fetcher thread and state per partition, indexed once: a lookup per replica
	// over every fetcher's list was quadratic (0.3 s of the merge at 10,000 partitions,
	// BenchmarkClusterJSON10k; 30 ms now for the whole merge).
	type fetchRef struct{ name, state string }
	fetching := map[int32]map[key]fetchRef{}
	for _, p := range peers {
		if p.view == nil {
			continue
		}
		m := map[key]fetchRef{}
		for _, f := range p.view.Fetchers {
			for _, fp := range f.Partitions {
				state := fp.State
				if fp.Delayed {
					state += " (delayed)"
				}
				m[key{fp.Topic, fp.Partition}] = fetchRef{f.Name, state}
			}
		}
		fetching[p.id] = m
	}
	fetchersOf := func(broker int32, tp key) (string, string) {
		r := fetching[broker][tp]
		return r.name, r.state
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
			pv.ISR, pv.MinISR = slices.Clone(best.ISR), best.MinISR
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
		pv.Problems = problems(&pv)
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
				bv.Fetchers = fetcherViews(p.view.Fetchers)
				for _, f := range bv.Fetchers {
					bv.FetchPartitions += f.PartitionCount
					bv.FetchLag += f.Lag
					bv.FetchMaxLag = max(bv.FetchMaxLag, f.MaxLag)
				}
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
			bv.Fetchers = []FetcherView{}
		}
		cv.Brokers = append(cv.Brokers, bv)
	}

	cv.Summary = summarize(cv.Partitions)
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

// problems are p's Problem* values (model.go), nil when healthy.
func problems(p *PartitionView) []string {
	var out []string
	if p.Leader < 0 || !p.LeaderReachable {
		out = append(out, ProblemOffline)
	}
	if p.LeaderReachable && p.MinISR > 0 && len(p.ISR) < p.MinISR {
		out = append(out, ProblemUnderMinISR)
	}
	if p.LeaderReachable && len(p.ISR) < len(p.Replicas) {
		out = append(out, ProblemUnderReplicated)
	}
	if p.Leader >= 0 && len(p.Replicas) > 0 && p.Leader != p.Replicas[0] {
		out = append(out, ProblemLeaderNotPreferred)
	}
	return out
}

// IsInternalTopic: Kafka's internal topics (__consumer_offsets, __transaction_state) and, by
// the same convention, any name starting with "__"; the page lists them after the user's.
func IsInternalTopic(name string) bool { return strings.HasPrefix(name, "__") }

// summarize counts partitions (sorted by topic) and their problems.
func summarize(ps []PartitionView) SummaryView {
	s := SummaryView{Partitions: len(ps)}
	for i, p := range ps {
		if i == 0 || ps[i-1].Topic != p.Topic {
			s.Topics++
			if IsInternalTopic(p.Topic) {
				s.InternalTopics++
			}
		}
		for _, pr := range p.Problems {
			switch pr {
			case ProblemOffline:
				s.Offline++
			case ProblemUnderMinISR:
				s.UnderMinISR++
			case ProblemUnderReplicated:
				s.UnderReplicated++
			case ProblemLeaderNotPreferred:
				s.LeaderNotPreferred++
			}
		}
	}
	return s
}

// MaxFetcherPartitions bounds the partitions listed per fetcher thread in cluster.json (those
// not caught up; FetcherView).
const MaxFetcherPartitions = 50

// fetcherViews sums each fetcher's partitions and keeps only those not caught up.
func fetcherViews(fs []fetcher.FetcherSnapshot) []FetcherView {
	out := make([]FetcherView, 0, len(fs))
	for _, f := range fs {
		fv := FetcherView{FetcherSnapshot: f, PartitionCount: len(f.Partitions)}
		fv.Partitions = []fetcher.FetchPartitionSnapshot{}
		for _, fp := range f.Partitions {
			fv.Lag += fp.Lag
			fv.MaxLag = max(fv.MaxLag, fp.Lag)
			caughtUp := fp.Lag == 0 && fp.State == "Fetching" && !fp.Delayed
			if !caughtUp && len(fv.Partitions) < MaxFetcherPartitions {
				fv.Partitions = append(fv.Partitions, fp)
			}
		}
		out = append(out, fv)
	}
	return out
}

func sortedIDs[V any](m map[int32]V) []int32 {
	out := make([]int32, 0, len(m))
	for id := range m {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}
