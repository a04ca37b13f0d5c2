package replview

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
)

// The page at scale (docs/replication-page.md, "At scale"): over the synthetic 10,000-partition
// cluster gathered over HTTP, the summary counts each problem, only the unhealthy partitions
// carry problems, each broker's fetcher lag is summed, and a fetcher lists only its partitions
// not caught up.
func TestSummaryAndProblemsAt10k(t *testing.T) {
	v, want := synthView(t)
	cv := v.Gather(context.Background())
	if len(cv.Errors) != 0 {
		t.Fatalf("errors %v", cv.Errors)
	}
	got := cv.Summary
	if got != (SummaryView{Partitions: want.partitions, Topics: len(synthTopics), InternalTopics: 1, UnderReplicated: want.underReplicated,
		UnderMinISR: want.underMinISR, Offline: want.offline, LeaderNotPreferred: want.notPreferred}) {
		t.Errorf("summary %+v, want %+v", got, want)
	}
	var unhealthy []string
	for _, p := range cv.Partitions {
		if len(p.Problems) > 0 {
			unhealthy = append(unhealthy, fmt.Sprintf("%s-%d", p.Topic, p.Partition))
		}
	}
	slices.Sort(unhealthy)
	wantUnhealthy := slices.Sorted(slices.Values(want.unhealthy))
	if !slices.Equal(unhealthy, wantUnhealthy) {
		t.Errorf("unhealthy %v, want %v", unhealthy, wantUnhealthy)
	}
	byName := map[string]PartitionView{}
	for _, p := range cv.Partitions {
		byName[fmt.Sprintf("%s-%d", p.Topic, p.Partition)] = p
	}
	for name, w := range map[string][]string{
		"orders-7":    {ProblemUnderReplicated},
		"orders-1999": {ProblemUnderMinISR, ProblemUnderReplicated},
		"orders-2001": {ProblemOffline},
		"orders-300":  {ProblemLeaderNotPreferred},
	} {
		if p := byName[name]; !slices.Equal(p.Problems, w) {
			t.Errorf("%s: problems %v, want %v", name, p.Problems, w)
		}
	}
	for _, b := range cv.Brokers {
		if !b.Reachable || b.FetchLag != want.fetchLag[b.ID] || b.FetchPartitions == 0 {
			t.Errorf("broker %d: reachable %v, fetch lag %d over %d partitions, want lag %d", b.ID, b.Reachable, b.FetchLag, b.FetchPartitions, want.fetchLag[b.ID])
		}
		for _, f := range b.Fetchers {
			for _, fp := range f.Partitions {
				if fp.Lag == 0 && fp.State == "Fetching" && !fp.Delayed {
					t.Errorf("broker %d %s lists %s-%d, caught up", b.ID, f.Name, fp.Topic, fp.Partition)
				}
			}
			if f.PartitionCount < 1000 || len(f.Partitions) > MaxFetcherPartitions {
				t.Errorf("broker %d %s: %d partitions, %d listed", b.ID, f.Name, f.PartitionCount, len(f.Partitions))
			}
		}
	}
}

// cluster.json?brief=1 (the page's poll) leaves out the replica states of the healthy partitions
// but those named in ?open=; the JSON is gzipped when the client accepts it.
func TestClusterJSONBriefAndGzip(t *testing.T) {
	v, want := synthView(t)
	req := httptest.NewRequest(http.MethodGet, "/replication/cluster.json?brief=1&open=audit-3,clicks-10", nil)
	req.Header.Set("Accept-Encoding", "gzip")
	rec := httptest.NewRecorder()
	v.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK || rec.Header().Get("Content-Encoding") != "gzip" {
		t.Fatalf("cluster.json: %d, Content-Encoding %q", rec.Code, rec.Header().Get("Content-Encoding"))
	}
	zr, err := gzip.NewReader(rec.Body)
	if err != nil {
		t.Fatal(err)
	}
	var cv ClusterView
	if err := json.NewDecoder(zr).Decode(&cv); err != nil {
		t.Fatal(err)
	}
	var withStates []string
	for _, p := range cv.Partitions {
		name := fmt.Sprintf("%s-%d", p.Topic, p.Partition)
		if len(p.ReplicaStates) > 0 {
			withStates = append(withStates, name)
			if len(p.ReplicaStates) != len(p.Replicas) {
				t.Errorf("%s: %d replica states for AR %v", name, len(p.ReplicaStates), p.Replicas)
			}
		}
	}
	wantStates := append(slices.Clone(want.unhealthy), "audit-3", "clicks-10")
	slices.Sort(withStates)
	slices.Sort(wantStates)
	if !slices.Equal(withStates, wantStates) {
		t.Errorf("partitions with replica states %v, want %v", withStates, wantStates)
	}

	// Without brief, every partition has them; without Accept-Encoding, no gzip.
	rec = httptest.NewRecorder()
	v.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/replication/cluster.json", nil))
	if rec.Header().Get("Content-Encoding") != "" {
		t.Errorf("gzipped without Accept-Encoding")
	}
	cv = ClusterView{}
	if err := json.Unmarshal(rec.Body.Bytes(), &cv); err != nil {
		t.Fatal(err)
	}
	for _, p := range cv.Partitions {
		if len(p.ReplicaStates) != len(p.Replicas) {
			t.Fatalf("%s-%d: %d replica states without brief", p.Topic, p.Partition, len(p.ReplicaStates))
		}
	}
}
