package replview

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/isrbroker/isrbroker/fetcher"
	"github.com/isrbroker/isrbroker/replicamanager"
	"github.com/isrbroker/isrbroker/replicamanager/replevents"
	"github.com/isrbroker/isrbroker/zkcoord"
)

type fakeLocal struct{ s replicamanager.Snapshot }

func (f fakeLocal) Snapshot(after uint64) replicamanager.Snapshot {
	s := f.s
	s.Events = nil
	for _, e := range f.s.Events {
		if e.Seq > after {
			s.Events = append(s.Events, e)
		}
	}
	if s.Events == nil {
		s.Events = []replevents.Event{}
	}
	return s
}

type fakeCluster struct {
	peers      []zkcoord.ReplicationPeer
	ctl, epoch int32
}

func (f fakeCluster) ReplicationPeers() ([]zkcoord.ReplicationPeer, error) { return f.peers, nil }
func (f fakeCluster) Controller() (int32, int32, error)                    { return f.ctl, f.epoch, nil }

// Partition t-0 on brokers 1, 2, 3: broker 1 leads at epoch 5 with ISR {1, 2}; 3 is out of sync.
func leaderSnapshot() replicamanager.Snapshot {
	return replicamanager.Snapshot{
		BrokerID: 1, TimeMs: 1000, ReplicaLagTimeMaxMs: 1500,
		Partitions: []replicamanager.PartitionSnapshot{{
			Topic: "t", Partition: 0, Role: replicamanager.RoleLeader, Leader: 1, LeaderEpoch: 5,
			HighWatermark: 90, LogEndOffset: 100, LogStartOffset: 10, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2},
			Followers: []replicamanager.FollowerSnapshot{
				{Broker: 2, LogEndOffset: 95, InISR: true, LastCaughtUpAgoMs: 3, LastFetchAgoMs: 3},
				{Broker: 3, LogEndOffset: 40, InISR: false, LastCaughtUpAgoMs: 4000, LastFetchAgoMs: 4000},
			},
		}},
		Fetchers: []fetcher.FetcherSnapshot{},
		Events: []replevents.Event{
			{Seq: 1, TimeMs: 500, Broker: 1, Kind: replevents.BecomeLeader, Topic: "t", LeaderEpoch: 5},
			{Seq: 2, TimeMs: 900, Broker: 1, Kind: replevents.IsrShrink, Topic: "t", Changed: []int32{3}, ISR: []int32{1, 2}},
		},
	}
}

func followerSnapshot() replicamanager.Snapshot {
	return replicamanager.Snapshot{
		BrokerID: 2, TimeMs: 1000, ReplicaLagTimeMaxMs: 1500,
		Partitions: []replicamanager.PartitionSnapshot{{
			Topic: "t", Partition: 0, Role: replicamanager.RoleFollower, Leader: 1, LeaderEpoch: 5,
			HighWatermark: 88, LogEndOffset: 97, LogStartOffset: 10, Replicas: []int32{1, 2, 3}, ISR: []int32{},
		}},
		Fetchers: []fetcher.FetcherSnapshot{{Name: "ReplicaFetcherThread-0-1", FetcherID: 0, LeaderID: 1, LeaderAddr: "b1:9092",
			Partitions: []fetcher.FetchPartitionSnapshot{{Topic: "t", Partition: 0, FetchOffset: 97, LeaderEpoch: 5, State: "Fetching"}}}},
		Events: []replevents.Event{{Seq: 1, TimeMs: 700, Broker: 2, Kind: replevents.Truncate, Topic: "t", FromOffset: 99, ToOffset: 96}},
	}
}

func getJSON(t *testing.T, h http.Handler, path string) map[string]any {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	if rec.Code != http.StatusOK || !strings.HasPrefix(rec.Header().Get("Content-Type"), "application/json") {
		t.Fatalf("GET %s: %d %s", path, rec.Code, rec.Body.String())
	}
	var m map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &m); err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	return m
}

func keys(m any) []string {
	var out []string
	for k := range m.(map[string]any) {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func hasKeys(t *testing.T, what string, m any, want ...string) {
	t.Helper()
	got := keys(m)
	for _, k := range want {
		if !slices.Contains(got, k) {
			t.Errorf("%s: no key %q (keys %v)", what, k, got)
		}
	}
}

// The JSON shape scripts rely on (docs/replication-page.md): local.json and cluster.json field
// names, and ?after= filtering the events.
func TestLocalAndClusterJSONShape(t *testing.T) {
	v := New(Config{BrokerID: 1, Local: fakeLocal{leaderSnapshot()}})
	m := getJSON(t, v, "/replication/local.json")
	hasKeys(t, "local.json", m, "brokerId", "timeMs", "startedMs", "replicaLagTimeMaxMs", "controllerEpoch", "partitions", "fetchers", "events")
	p := m["partitions"].([]any)[0]
	hasKeys(t, "local.json partition", p, "topic", "partition", "role", "leader", "leaderEpoch", "highWatermark",
		"logEndOffset", "logStartOffset", "replicas", "isr", "followers")
	hasKeys(t, "local.json follower", p.(map[string]any)["followers"].([]any)[0], "broker", "logEndOffset", "inIsr", "lastCaughtUpAgoMs", "lastFetchAgoMs")
	hasKeys(t, "local.json event", m["events"].([]any)[0], "seq", "timeMs", "broker", "kind", "topic", "partition")
	if ev := getJSON(t, v, "/replication/local.json?after=1")["events"].([]any); len(ev) != 1 {
		t.Errorf("local.json?after=1: %d events, want 1", len(ev))
	}

	c := getJSON(t, v, "/replication/cluster.json")
	hasKeys(t, "cluster.json", c, "timeMs", "servedBy", "controller", "replicaLagTimeMaxMs", "summary", "brokers", "partitions", "events", "errors")
	hasKeys(t, "cluster.json summary", c["summary"], "partitions", "topics", "internalTopics", "underReplicated", "underMinIsr", "offline", "leaderNotPreferred")
	hasKeys(t, "cluster.json controller", c["controller"], "id", "epoch")
	hasKeys(t, "cluster.json broker", c["brokers"].([]any)[0], "id", "pageAddress", "registered", "reachable", "leaders", "followers", "fetchers")
	cp := c["partitions"].([]any)[0]
	hasKeys(t, "cluster.json partition", cp, "topic", "partition", "leader", "leaderEpoch", "highWatermark", "logStartOffset",
		"replicas", "isr", "osr", "leaderReachable", "problems", "replicaStates")
	hasKeys(t, "cluster.json replica", cp.(map[string]any)["replicaStates"].([]any)[0], "broker", "role", "inIsr", "logEndOffset",
		"leoSource", "highWatermark", "lastCaughtUpAgoMs", "reachable")

	rec := httptest.NewRecorder()
	v.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/replication/local.json?after=x", nil))
	if rec.Code != http.StatusBadRequest {
		t.Errorf("after=x: %d, want 400", rec.Code)
	}
}

// Gathering over HTTP with one peer down and one that never answers (SIGSTOPped): the page still
// draws the partition from the brokers that answered, marks the others unreachable, and takes
// each replica's LEO from the replica itself or, when it did not answer, from the leader.
func TestGatherWithPeerDown(t *testing.T) {
	peer2 := httptest.NewServer(New(Config{BrokerID: 2, Local: fakeLocal{followerSnapshot()}}))
	defer peer2.Close()
	down, _ := net.Listen("tcp", "127.0.0.1:0")
	downAddr := down.Addr().String()
	down.Close()
	hung, _ := net.Listen("tcp", "127.0.0.1:0") // accepts, never answers
	defer hung.Close()

	v := New(Config{BrokerID: 1, Local: fakeLocal{leaderSnapshot()}, PeerTimeout: 300 * time.Millisecond,
		Cluster: fakeCluster{ctl: 2, epoch: 7, peers: []zkcoord.ReplicationPeer{
			{ID: 1, PageAddress: "self:1"},
			{ID: 2, PageAddress: strings.TrimPrefix(peer2.URL, "http://")},
			{ID: 3, PageAddress: downAddr},
			{ID: 4, PageAddress: hung.Addr().String()},
		}}})
	start := time.Now()
	cv := v.Gather(context.Background())
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("gathering took %v with PeerTimeout 300ms", d)
	}
	if cv.Controller != (ControllerView{ID: 2, Epoch: 7}) || cv.ServedBy != 1 || cv.ReplicaLagTimeMaxMs != 1500 {
		t.Errorf("header %+v %d %d", cv.Controller, cv.ServedBy, cv.ReplicaLagTimeMaxMs)
	}
	reach := map[int32]bool{}
	for _, b := range cv.Brokers {
		reach[b.ID] = b.Reachable
		if !b.Reachable && b.Error == "" {
			t.Errorf("broker %d unreachable without an error", b.ID)
		}
	}
	if want := map[int32]bool{1: true, 2: true, 3: false, 4: false}; !mapsEqual(reach, want) {
		t.Errorf("reachable %v, want %v", reach, want)
	}
	if len(cv.Brokers) != 4 || len(cv.Brokers[1].Fetchers) != 1 || cv.Brokers[1].Followers != 1 || cv.Brokers[0].Leaders != 1 {
		t.Errorf("brokers %+v", cv.Brokers)
	}

	if len(cv.Partitions) != 1 {
		t.Fatalf("partitions %+v", cv.Partitions)
	}
	p := cv.Partitions[0]
	if p.Leader != 1 || p.LeaderEpoch != 5 || !p.LeaderReachable || p.HighWatermark != 90 || p.LogStartOffset != 10 ||
		!slices.Equal(p.ISR, []int32{1, 2}) || !slices.Equal(p.OutOfSync, []int32{3}) {
		t.Errorf("partition %+v", p)
	}
	rs := p.ReplicaStates
	if len(rs) != 3 {
		t.Fatalf("replica states %+v", rs)
	}
	if r := rs[0]; r.Broker != 1 || r.Role != replicamanager.RoleLeader || !r.InISR || r.LogEndOffset != 100 || r.LEOSource != "self" {
		t.Errorf("leader %+v", r)
	}
	if r := rs[1]; r.Broker != 2 || !r.InISR || r.LogEndOffset != 97 || r.LEOSource != "self" || r.HighWatermark != 88 ||
		r.Fetcher != "ReplicaFetcherThread-0-1" || r.LastCaughtUpAgoMs != 3 || !r.Reachable {
		t.Errorf("reachable follower %+v", r)
	}
	if r := rs[2]; r.Broker != 3 || r.InISR || r.LogEndOffset != 40 || r.LEOSource != "leader" || r.Reachable || r.LastCaughtUpAgoMs != 4000 {
		t.Errorf("unreachable follower %+v", r)
	}
	if len(cv.Events) != 3 || cv.Events[0].Kind != replevents.IsrShrink || cv.Events[1].Broker != 2 || cv.Events[2].Kind != replevents.BecomeLeader {
		t.Errorf("events not merged newest first: %+v", cv.Events)
	}

	// The leader down too: the partition is drawn from the follower, the ISR unknown.
	v2 := New(Config{BrokerID: 2, Local: fakeLocal{followerSnapshot()}, PeerTimeout: 300 * time.Millisecond,
		Cluster: fakeCluster{ctl: 2, epoch: 7, peers: []zkcoord.ReplicationPeer{{ID: 1, PageAddress: downAddr}, {ID: 2}}}})
	p = v2.Gather(context.Background()).Partitions[0]
	if p.Leader != 1 || p.LeaderEpoch != 5 || p.LeaderReachable || len(p.ISR) != 0 || p.ReplicaStates[1].LogEndOffset != 97 {
		t.Errorf("partition with its leader down %+v", p)
	}
}

// The page and its static files are served from the binary, with no reference to another host.
func TestPageIsEmbedded(t *testing.T) {
	v := New(Config{BrokerID: 1, Local: fakeLocal{leaderSnapshot()}})
	for _, path := range []string{"/replication", "/replication/", "/replication/static/app.js", "/replication/static/style.css"} {
		rec := httptest.NewRecorder()
		v.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		body, _ := io.ReadAll(rec.Body)
		if rec.Code != http.StatusOK || len(body) == 0 {
			t.Errorf("GET %s: %d", path, rec.Code)
		}
		if s := string(body); strings.Contains(s, "http://") || strings.Contains(s, "https://") || strings.Contains(s, "//cdn") {
			t.Errorf("GET %s refers to another host", path)
		}
	}
}

func mapsEqual(a, b map[int32]bool) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if bv, ok := b[k]; !ok || bv != v {
			return false
		}
	}
	return true
}
