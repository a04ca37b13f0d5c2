package replview

import (
	"fmt"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/isrbroker/isrbroker/fetcher"
	"github.com/isrbroker/isrbroker/replicamanager"
	"github.com/isrbroker/isrbroker/replicamanager/replevents"
	"github.com/isrbroker/isrbroker/zkcoord"
)

// synthTopic is one topic of the synthetic cluster.
type synthTopic struct {
	name       string
	partitions int
}

// synthTopics: 10,000 partitions, the internal __consumer_offsets (50) among user topics whose
// names sort after it ("_" sorts before lowercase letters).
var synthTopics = []synthTopic{
	{"__consumer_offsets", 50}, {"audit", 950}, {"clicks", 3000}, {"inventory", 1500}, {"orders", 2500}, {"payments", 2000},
}

// synthWant is what the page's summary of the synthetic cluster shows.
type synthWant struct {
	partitions, underReplicated, underMinISR, offline, notPreferred int
	unhealthy                                                       []string // "topic-partition", sorted as the page draws them
	fetchLag                                                        map[int32]int64
}

// synthCluster builds the local views of a 3-broker cluster with RF=3 and min.insync.replicas=2
// over synthTopics: partition i of a topic has AR rotated from broker 1+i%3, its first replica
// leading (preferred), everyone in the ISR and fetching, except a few partitions of
// "orders" and "__consumer_offsets": under-replicated (broker out of the ISR, lagging),
// under min ISR (two followers out), offline (no leader) and led by a non-preferred replica.
func synthCluster() ([]LocalView, synthWant) {
	const brokers = 3
	views := make([]LocalView, brokers)
	for b := range views {
		views[b] = LocalView{Snapshot: replicamanager.Snapshot{
			BrokerID: int32(b + 1), TimeMs: 1_764_000_000_000, ReplicaLagTimeMaxMs: 10000, ControllerEpoch: 3,
			Partitions: []replicamanager.PartitionSnapshot{}, Events: []replevents.Event{},
		}, StartedMs: 1_763_999_000_000}
	}
	fetchers := map[[2]int32]*fetcher.FetcherSnapshot{} // [follower, leader]
	want := synthWant{fetchLag: map[int32]int64{}}
	// Special partitions: topic -> partition -> kind.
	special := map[string]map[int32]string{
		"orders":             {7: "urp", 42: "urp", 1999: "minisr", 2001: "offline", 300: "notpreferred"},
		"__consumer_offsets": {13: "urp"},
		"clicks":             {2500: "notpreferred"},
	}
	for _, tp := range synthTopics {
		for i := 0; i < tp.partitions; i++ {
			part := int32(i)
			ar := []int32{int32(1 + i%3), int32(1 + (i+1)%3), int32(1 + (i+2)%3)}
			isr := slices.Clone(ar)
			leader := ar[0]
			kind := special[tp.name][part]
			hw, leo := int64(1000+i), int64(1000+i)
			switch kind {
			case "urp":
				isr = ar[:2]
				want.underReplicated++
			case "minisr":
				isr = ar[:1]
				want.underReplicated++
				want.underMinISR++
			case "offline":
				leader, isr = -1, ar[:1]
				want.offline++
			case "notpreferred":
				leader = ar[1]
				want.notPreferred++
			}
			want.partitions++
			if kind != "" {
				want.unhealthy = append(want.unhealthy, fmt.Sprintf("%s-%d", tp.name, part))
			}
			for _, r := range ar {
				ps := replicamanager.PartitionSnapshot{
					Topic: tp.name, Partition: part, Leader: leader, LeaderEpoch: 2,
					HighWatermark: hw, LogEndOffset: leo, LogStartOffset: 0, Replicas: ar, ISR: []int32{},
				}
				inISR := slices.Contains(isr, r)
				switch {
				case r == leader:
					ps.Role, ps.ISR, ps.MinISR = replicamanager.RoleLeader, isr, 2
					for _, f := range ar {
						if f == leader {
							continue
						}
						fs := replicamanager.FollowerSnapshot{Broker: f, LogEndOffset: leo, InISR: true, LastCaughtUpAgoMs: 12, LastFetchAgoMs: 12}
						if !slices.Contains(isr, f) {
							fs.InISR, fs.LogEndOffset, fs.LastCaughtUpAgoMs = false, leo-400, 25000
						}
						ps.Followers = append(ps.Followers, fs)
					}
				case leader < 0:
					ps.Role = replicamanager.RoleNone
				default:
					ps.Role = replicamanager.RoleFollower
					if !inISR {
						ps.LogEndOffset, ps.HighWatermark = leo-400, hw-400
					}
				}
				views[r-1].Partitions = append(views[r-1].Partitions, ps)
				if ps.Role == replicamanager.RoleFollower {
					key := [2]int32{r, leader}
					f := fetchers[key]
					if f == nil {
						f = &fetcher.FetcherSnapshot{Name: fmt.Sprintf("ReplicaFetcherThread-0-%d", leader), LeaderID: leader,
							LeaderAddr: fmt.Sprintf("broker%d:9092", leader)}
						fetchers[key] = f
					}
					fp := fetcher.FetchPartitionSnapshot{Topic: tp.name, Partition: part, FetchOffset: ps.LogEndOffset, LeaderEpoch: 2, State: "Fetching"}
					if !inISR {
						fp.Lag = 400
						want.fetchLag[r] += fp.Lag
					}
					f.Partitions = append(f.Partitions, fp)
				}
			}
		}
	}
	for b := range views {
		views[b].Fetchers = []fetcher.FetcherSnapshot{}
		for l := int32(1); l <= brokers; l++ {
			if f := fetchers[[2]int32{int32(b + 1), l}]; f != nil {
				views[b].Fetchers = append(views[b].Fetchers, *f)
			}
		}
	}
	views[0].Events = []replevents.Event{{Seq: 1, TimeMs: 1_763_999_990_000, Broker: 1, Kind: replevents.IsrShrink, Topic: "orders",
		Partition: 7, ISR: []int32{2, 3}, Changed: []int32{1}}}
	// Sorted as the page draws them: user topics by name, then internal ones.
	internal := func(s string) bool { return len(s) > 1 && s[:2] == "__" }
	slices.SortStableFunc(want.unhealthy, func(a, b string) int {
		if ia, ib := internal(a), internal(b); ia != ib {
			if ia {
				return 1
			}
			return -1
		}
		return 0
	})
	return views, want
}

// synthPeers are the peer results of the synthetic cluster, every broker answering.
func synthPeers(views []LocalView) []peerResult {
	peers := make([]peerResult, len(views))
	for i := range views {
		peers[i] = peerResult{id: views[i].BrokerID, address: fmt.Sprintf("broker%d:9101", i+1), registered: true, view: &views[i]}
	}
	return peers
}

// synthView serves the synthetic cluster as broker 1 does: its own view from a fake replica
// manager, brokers 2 and 3 as HTTP servers of their local.json (a fake ZooKeeper names their
// addresses). The servers stop at the end of the test.
func synthView(tb testing.TB) (*View, synthWant) {
	views, want := synthCluster()
	peers := []zkcoord.ReplicationPeer{{ID: 1, PageAddress: "self:1"}}
	for _, lv := range views[1:] {
		srv := httptest.NewServer(New(Config{BrokerID: lv.BrokerID, Local: fakeLocal{lv.Snapshot}}))
		tb.Cleanup(srv.Close)
		peers = append(peers, zkcoord.ReplicationPeer{ID: lv.BrokerID, PageAddress: strings.TrimPrefix(srv.URL, "http://")})
	}
	// Generous: under the race detector a peer's 10,000-partition local.json takes a while.
	v := New(Config{BrokerID: 1, Local: fakeLocal{views[0].Snapshot}, PeerTimeout: 20 * time.Second,
		Cluster: fakeCluster{ctl: 1, epoch: 3, peers: peers}})
	return v, want
}
