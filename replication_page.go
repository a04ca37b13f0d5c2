package main

import (
	"net"
	"net/http"

	metrics "github.com/rcrowley/go-metrics"
	"github.com/sirupsen/logrus"

	"github.com/isrbroker/isrbroker/broker/config"
	"github.com/isrbroker/isrbroker/broker/metricsexport"
	"github.com/isrbroker/isrbroker/broker/replview"
	"github.com/isrbroker/isrbroker/replicamanager/replevents"
)

// httpMux is the metrics listener's routes: /metrics and the replication page
// (docs/replication-page.md), which answers 503 until the broker's parts exist, plus the
// profiling routes when isrbroker.pprof.enable is set (extra: nil or pprofRoutes).
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

// startReplicationPage installs the replication page over the replica manager and the
// coordinator, and records this broker's controller elections (S9) in the event journal.
func startReplicationPage(cfg *config.Config, b *runningBroker, events *replevents.Recorder, log logrus.FieldLogger) {
	b.zk.OnControllerChange(func(elected bool, epoch int32) {
		kind := replevents.ControllerElected
		if !elected {
			kind = replevents.ControllerResigned
		}
		events.Record(replevents.Event{Kind: kind, Partition: replevents.Partitionless, Controller: cfg.BrokerID, ControllerEpoch: epoch})
	})
	b.page.Set(replview.New(replview.Config{BrokerID: cfg.BrokerID, Local: b.rmgr.Requests(), Cluster: b.zk, Log: log}))
}

// publishReplicationPage writes this broker's page address to ZooKeeper for the other brokers'
// cluster views (metrics.advertised.listen, or derived from metrics.listen). A failure only
// hides this broker from the others' pages.
func publishReplicationPage(cfg *config.Config, b *runningBroker, log logrus.FieldLogger) {
	if b.metrics == nil {
		return
	}
	port := 0
	if a, ok := b.metrics.(*net.TCPAddr); ok {
		port = a.Port
	}
	addr := cfg.MetricsAdvertisedAddress(port)
	if err := b.zk.PublishReplicationPage(addr); err != nil {
		log.WithError(err).WithField("addr", addr).Warn("publishing the replication page address in ZooKeeper failed")
		return
	}
	log.WithField("addr", addr).Info("replication page address published")
}
