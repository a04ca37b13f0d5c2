package replview

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
)

// BenchmarkClusterJSON10k measures cluster.json for the synthetic 10,000-partition, 3-broker
// cluster (synth_test.go): merge builds the page data from the three local views, encode adds
// its JSON encoding, serve the whole response through the handler (gzip when asked). The
// numbers are in docs/replication-page.md ("At scale").
func BenchmarkClusterJSON10k(b *testing.B) {
	views, _ := synthCluster()
	peers := synthPeers(views)
	ctl := ControllerView{ID: 1, Epoch: 3}
	b.Run("merge", func(b *testing.B) {
		for b.Loop() {
			merge(1, 0, ctl, 10000, peers)
		}
	})
	b.Run("encode", func(b *testing.B) {
		var n int
		for b.Loop() {
			var buf bytes.Buffer
			_ = json.NewEncoder(&buf).Encode(merge(1, 0, ctl, 10000, peers))
			n = buf.Len()
		}
		b.ReportMetric(float64(n), "bytes")
	})
	b.Run("encode+gzip", func(b *testing.B) {
		var n int
		for b.Loop() {
			var buf bytes.Buffer
			zw := gzip.NewWriter(&buf)
			_ = json.NewEncoder(zw).Encode(merge(1, 0, ctl, 10000, peers))
			_ = zw.Close()
			n = buf.Len()
		}
		b.ReportMetric(float64(n), "bytes")
	})
	// The whole request as broker 1 serves it: ZooKeeper (fake), brokers 2 and 3's local.json
	// over loopback HTTP (gzipped), merge, JSON, gzip; full and as the page asks (brief).
	v, _ := synthView(b)
	for _, c := range []struct {
		name, query string
		gzip        bool
	}{{"serve/full", "", false}, {"serve/full+gzip", "", true}, {"serve/brief", "?brief=1", false}, {"serve/brief+gzip", "?brief=1", true}} {
		b.Run(c.name, func(b *testing.B) {
			var n int
			for b.Loop() {
				n = serveSynth(b, v, c.query, c.gzip)
			}
			b.ReportMetric(float64(n), "bytes")
		})
	}
}

// serveSynth serves the synthetic cluster's cluster.json through View's handler.
func serveSynth(b *testing.B, h http.Handler, query string, gz bool) int {
	req := httptest.NewRequest(http.MethodGet, "/replication/cluster.json"+query, nil)
	if gz {
		req.Header.Set("Accept-Encoding", "gzip")
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK || gz != (rec.Header().Get("Content-Encoding") == "gzip") {
		b.Fatalf("cluster.json: %d, Content-Encoding %q", rec.Code, rec.Header().Get("Content-Encoding"))
	}
	return rec.Body.Len()
}
