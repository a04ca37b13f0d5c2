package main

import (
	"net"
	"net/http"

	metrics "github.com/rcrowley/go-metrics"

	"github.com/isrbroker/isrbroker/broker/config"
	"github.com/isrbroker/isrbroker/broker/metricsexport"
)

// httpMux is the metrics listener's routes: /metrics and the replication page
// (broker/replview, docs/replication-page.md), which answers 503 until the broker's parts
// exist, plus the profiling routes when isrbroker.pprof.enable is set (extra: nil or
// pprofRoutes).
func httpMux(reg metrics.Registry, page http.Handler, extra func(*http.ServeMux)) http.Handler {
	mux := http.NewServeMux()
	if extra != nil {
		extra(mux)
	}
	mux.Handle("/metrics", metricsexport.Handler(reg))
	mux.Handle("/replication", page)
	mux.Handle("/replication/", page)
	return mux
}

// pageAddress is the replication page address this broker publishes: metrics.advertised.listen,
// or derived from the bound metrics listener; "" when metrics.listen is off.
func pageAddress(cfg *config.Config, bound net.Addr) string {
	if bound == nil {
		return ""
	}
	port := 0
	if a, ok := bound.(*net.TCPAddr); ok {
		port = a.Port
	}
	return cfg.MetricsAdvertisedAddress(port)
}
