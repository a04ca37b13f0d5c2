package main

import (
	"net/http"
	"net/http/httptest"
	"testing"

	metrics "github.com/rcrowley/go-metrics"
	"github.com/sirupsen/logrus"

	"github.com/isrbroker/isrbroker/broker/config"
)

// /debug/pprof/ is on the metrics listener only with isrbroker.pprof.enable.
func TestPprofRoutes(t *testing.T) {
	log := logrus.New()
	for _, enabled := range []bool{false, true} {
		cfg := config.Default()
		cfg.PprofEnable = enabled
		mux := httpMux(metrics.NewRegistry(), http.NotFoundHandler(), pprofRoutes(cfg, log))
		for _, path := range []string{"/debug/pprof/", "/debug/pprof/mutex?debug=1", "/debug/pprof/block?debug=1"} {
			rec := httptest.NewRecorder()
			mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
			want := http.StatusNotFound
			if enabled {
				want = http.StatusOK
			}
			if rec.Code != want {
				t.Errorf("pprof enabled=%v: GET %s = %d, want %d", enabled, path, rec.Code, want)
			}
		}
	}
}
