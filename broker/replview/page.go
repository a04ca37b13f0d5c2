package replview

import (
	"net/http"
	"sync"

	"github.com/sirupsen/logrus"

	"github.com/isrbroker/isrbroker/replicamanager/replevents"
)

// Publisher writes this broker's page address to ZooKeeper for the other brokers' cluster
// views (zkcoord.Coordinator implements it; only zkcoord knows the znode).
type Publisher interface {
	PublishReplicationPage(address string) error
}

// Page is one broker's replication page as main wires it: an http.Handler the metrics
// listener serves from the start (503 until Start), the event journal the replica manager
// records into, and the controller's elected/resigned hook (OnControllerChange) that records
// into the same journal.
type Page struct {
	brokerID int32
	events   *replevents.Recorder

	mu   sync.RWMutex
	view *View // nil until Start
}

// NewPage returns the page of brokerID over its event journal (the one the replica
// manager's Config.Events records into).
func NewPage(brokerID int32, events *replevents.Recorder) *Page {
	return &Page{brokerID: brokerID, events: events}
}

// OnControllerChange records this broker winning the controller election at epoch (elected)
// or resigning (S9). It is the controller's hook (zkcoord.Config.OnControllerChange), called
// on the controller's event goroutine: it only appends to the bounded in-memory journal and
// never blocks.
func (p *Page) OnControllerChange(elected bool, epoch int32) {
	kind := replevents.ControllerElected
	if !elected {
		kind = replevents.ControllerResigned
	}
	p.events.Record(replevents.Event{Kind: kind, Partition: replevents.Partitionless, Controller: p.brokerID, ControllerEpoch: epoch})
}

// Start installs the page's View over the replica manager's snapshot and the ZooKeeper
// reads of the cluster view (nil: this broker only).
func (p *Page) Start(local Local, cluster Cluster, log logrus.FieldLogger) {
	v := New(Config{BrokerID: p.brokerID, Local: local, Cluster: cluster, Log: log})
	p.mu.Lock()
	p.view = v
	p.mu.Unlock()
}

// Publish writes address ("host:port", metrics.advertised.listen or derived from
// metrics.listen) for the other brokers' cluster views. A failure is logged: it only hides
// this broker from the others' pages.
func (p *Page) Publish(pub Publisher, address string, log logrus.FieldLogger) {
	if err := pub.PublishReplicationPage(address); err != nil {
		log.WithError(err).WithField("addr", address).Warn("publishing the replication page address in ZooKeeper failed")
		return
	}
	log.WithField("addr", address).Info("replication page address published")
}

// ServeHTTP serves the View once started, 503 before: main binds the metrics listener before
// the replica manager and the coordinator exist.
func (p *Page) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.mu.RLock()
	v := p.view
	p.mu.RUnlock()
	if v == nil {
		http.Error(w, "the broker is starting", http.StatusServiceUnavailable)
		return
	}
	v.ServeHTTP(w, r)
}
