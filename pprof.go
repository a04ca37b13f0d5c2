package main

import (
	"net/http"
	"net/http/pprof"
	"runtime"

	"github.com/sirupsen/logrus"

	"github.com/isrbroker/isrbroker/broker/config"
)

// Sampling rates set when isrbroker.pprof.enable is on. The mutex profile records one in
// pprofMutexFraction contention events; the block profile one blocking event per
// pprofBlockRateNs nanoseconds blocked on average. Both cost a little on every contended lock
// and channel operation, which is why they are off unless profiling is asked for
// (docs/performance.md, "Profiling a broker").
const (
	pprofMutexFraction = 10
	pprofBlockRateNs   = 10_000
)

// pprofRoutes returns the /debug/pprof/ routes for the metrics listener when
// isrbroker.pprof.enable is set, nil otherwise. Go's net/http/pprof handlers are registered
// on the listener's own mux, never on http.DefaultServeMux.
func pprofRoutes(cfg *config.Config, log logrus.FieldLogger) func(*http.ServeMux) {
	if !cfg.PprofEnable {
		return nil
	}
	runtime.SetMutexProfileFraction(pprofMutexFraction)
	runtime.SetBlockProfileRate(pprofBlockRateNs)
	log.WithFields(logrus.Fields{"path": "/debug/pprof/", "mutexFraction": pprofMutexFraction, "blockRateNs": pprofBlockRateNs}).
		Info("serving Go profiles on the metrics listener (isrbroker.pprof.enable)")
	return func(mux *http.ServeMux) {
		mux.HandleFunc("/debug/pprof/", pprof.Index) // heap, allocs, mutex, block, goroutine, ...
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
}
