package replview

import (
	"context"
	"embed"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/klauspost/compress/gzhttp"
	"github.com/sirupsen/logrus"

	"github.com/isrbroker/isrbroker/replicamanager"
	"github.com/isrbroker/isrbroker/zkcoord"
)

//go:embed static
var static embed.FS

// Local is the replica manager's snapshot (*replicamanager.Requests implements it).
type Local interface {
	Snapshot(afterSeq uint64) replicamanager.Snapshot
}

// Cluster is what the cluster view reads from ZooKeeper (zkcoord.Coordinator implements it).
type Cluster interface {
	ReplicationPeers() ([]zkcoord.ReplicationPeer, error)
	Controller() (id, epoch int32, err error)
}

// Config configures a View.
type Config struct {
	BrokerID int32
	Local    Local
	Cluster  Cluster // nil: cluster.json shows this broker only
	// PeerTimeout bounds one peer's local.json read (a SIGSTOPped broker never answers);
	// default 800 ms, so the page's once-a-second poll keeps its pace.
	PeerTimeout time.Duration
	Log         logrus.FieldLogger
}

// View serves the replication page and its JSON.
type View struct {
	cfg     Config
	client  *http.Client
	started time.Time
	log     logrus.FieldLogger
	mux     *http.ServeMux
}

// New returns a View.
func New(cfg Config) *View {
	if cfg.PeerTimeout <= 0 {
		cfg.PeerTimeout = 800 * time.Millisecond
	}
	if cfg.Log == nil {
		cfg.Log = logrus.StandardLogger()
	}
	v := &View{
		cfg: cfg, started: time.Now(),
		client: &http.Client{Timeout: cfg.PeerTimeout},
		log:    cfg.Log.WithField("component", "replication-page"),
		mux:    http.NewServeMux(),
	}
	sub, _ := fs.Sub(static, "static")
	v.mux.HandleFunc("GET /replication", v.page)
	v.mux.HandleFunc("GET /replication/{$}", v.page)
	v.mux.Handle("GET /replication/static/", http.StripPrefix("/replication/static/", http.FileServerFS(sub)))
	// The JSON is gzipped when the client accepts it (the browser, and the other brokers' Go
	// clients, whose transport asks for gzip and decodes it): cluster.json of 10,000 partitions
	// is megabytes of repeated keys, polled every second, and gzips about 30 times smaller
	// (docs/replication-page.md, "At scale"). net/http has no response compression of its own;
	// gzhttp, of klauspost/compress (already a dependency, for Kafka's codecs), handles
	// Accept-Encoding, Vary and the minimum size; zstd is left off, gzip is enough.
	gz, err := gzhttp.NewWrapper(gzhttp.EnableZstd(false))
	if err != nil {
		panic(err) // only for invalid options
	}
	v.mux.Handle("GET /replication/local.json", gz(http.HandlerFunc(v.localJSON)))
	v.mux.Handle("GET /replication/cluster.json", gz(http.HandlerFunc(v.clusterJSON)))
	return v
}

// ServeHTTP serves /replication, /replication/static/*, /replication/local.json and
// /replication/cluster.json.
func (v *View) ServeHTTP(w http.ResponseWriter, r *http.Request) { v.mux.ServeHTTP(w, r) }

func (v *View) page(w http.ResponseWriter, _ *http.Request) {
	b, err := static.ReadFile("static/index.html")
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(b)
}

// Local returns this broker's local view, with the events after afterSeq.
func (v *View) Local(afterSeq uint64) LocalView {
	return LocalView{Snapshot: v.cfg.Local.Snapshot(afterSeq), StartedMs: v.started.UnixMilli()}
}

func (v *View) localJSON(w http.ResponseWriter, r *http.Request) {
	var after uint64
	if s := r.URL.Query().Get("after"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			http.Error(w, "after: not a sequence number", http.StatusBadRequest)
			return
		}
		after = n
	}
	writeJSON(w, v.Local(after))
}

// clusterJSON serves the cluster view; with ?brief=1 (the page's poll) the healthy partitions
// come without their replicaStates, except those named in ?open=topic-partition,… (the cards
// the reader opened): at 10,000 partitions they are most of the bytes and the page draws only
// the unhealthy partitions' cards.
func (v *View) clusterJSON(w http.ResponseWriter, r *http.Request) {
	cv := v.Gather(r.Context())
	if q := r.URL.Query(); q.Get("brief") != "" {
		brief(&cv, q.Get("open"))
	}
	writeJSON(w, cv)
}

// brief drops the replicaStates of the healthy partitions not named in open.
func brief(cv *ClusterView, open string) {
	keep := map[string]bool{}
	for _, name := range strings.Split(open, ",") {
		if name != "" {
			keep[name] = true
		}
	}
	for i := range cv.Partitions {
		p := &cv.Partitions[i]
		if len(p.Problems) == 0 && !keep[p.Topic+"-"+strconv.Itoa(int(p.Partition))] {
			p.ReplicaStates = nil
		}
	}
}

func writeJSON(w http.ResponseWriter, x any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	enc := json.NewEncoder(w)
	_ = enc.Encode(x)
}

// Gather builds the cluster view: the controller and the registered brokers from ZooKeeper,
// this broker's snapshot, and every other registered broker's local.json read concurrently over
// HTTP (each bounded by PeerTimeout). A broker that does not answer is marked unreachable; the
// partitions are drawn from those that did.
func (v *View) Gather(ctx context.Context) ClusterView {
	self := v.Local(0)
	ctl := ControllerView{ID: -1}
	var errs []string
	var peers []peerResult
	if v.cfg.Cluster == nil {
		peers = []peerResult{{id: v.cfg.BrokerID, registered: true, view: &self}}
	} else {
		if id, epoch, err := v.cfg.Cluster.Controller(); err != nil {
			errs = append(errs, "reading the controller: "+err.Error())
		} else {
			ctl = ControllerView{ID: id, Epoch: epoch}
		}
		regs, err := v.cfg.Cluster.ReplicationPeers()
		if err != nil {
			errs = append(errs, "reading the registered brokers: "+err.Error())
		}
		selfListed := false
		for _, p := range regs {
			pr := peerResult{id: p.ID, address: p.PageAddress, registered: true}
			if p.ID == v.cfg.BrokerID {
				pr.view, selfListed = &self, true
			}
			peers = append(peers, pr)
		}
		if !selfListed {
			peers = append(peers, peerResult{id: v.cfg.BrokerID, view: &self, err: "not registered in ZooKeeper"})
		}
		var wg sync.WaitGroup
		for i := range peers {
			p := &peers[i]
			if p.view != nil {
				continue
			}
			if p.address == "" {
				p.err = "no replication page address published (metrics.listen off?)"
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				lv, err := v.fetchLocal(ctx, p.address)
				if err != nil {
					p.err = err.Error()
					return
				}
				p.view = lv
			}()
		}
		wg.Wait()
	}
	cv := merge(v.cfg.BrokerID, time.Now().UnixMilli(), ctl, self.ReplicaLagTimeMaxMs, peers)
	if errs != nil {
		cv.Errors = errs
	}
	return cv
}

func (v *View) fetchLocal(ctx context.Context, address string) (*LocalView, error) {
	ctx, cancel := context.WithTimeout(ctx, v.cfg.PeerTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+address+"/replication/local.json", nil)
	if err != nil {
		return nil, err
	}
	resp, err := v.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", req.URL, resp.Status)
	}
	var lv LocalView
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(&lv); err != nil {
		return nil, fmt.Errorf("GET %s: %w", req.URL, err)
	}
	return &lv, nil
}
