package agent

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/isrbroker/isrbroker/zkcoord/zkclient"
	"github.com/isrbroker/isrbroker/zkcoord/zkdata"
	"github.com/sirupsen/logrus"
)

var (
	// ErrBrokerIDInUse: another live broker's session owns /brokers/ids/<id>.
	ErrBrokerIDInUse = errors.New("zkcoord: broker id is registered by another live broker")
	errClosed        = errors.New("zkcoord: closed")
)

// RegistrarConfig configures a Registrar.
type RegistrarConfig struct {
	BrokerID       int32
	Endpoints      []zkdata.Endpoint // advertised listeners
	Rack           string
	SessionTimeout time.Duration
	OnBrokerEpoch  func(epoch int64) // called after every (re-)registration with the new broker epoch (czxid)
	Log            logrus.FieldLogger
}

// Registrar owns the broker's ephemeral registration /brokers/ids/<id> and its broker epoch.
type Registrar struct {
	cfg  RegistrarConfig
	conn zkclient.Conn
	log  logrus.FieldLogger

	mu            sync.Mutex
	oldSessionIDs []int64 // our expired sessions: their lingering ephemerals may be replaced
	registered    bool    // Register succeeded: re-register after session expiry
	brokerEpoch   int64
}

// NewRegistrar returns a registrar for conn; Register registers.
func NewRegistrar(conn zkclient.Conn, cfg RegistrarConfig) *Registrar {
	return &Registrar{cfg: cfg, conn: conn, log: cfg.Log}
}

// BrokerEpoch returns the broker epoch of the current registration (0 before Register).
func (r *Registrar) BrokerEpoch() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.brokerEpoch
}

// Register creates the broker's ephemeral /brokers/ids/<id> (Kafka's CheckedEphemeral) and
// arranges re-registration after every session expiry (OnNewSession). When the znode of an
// earlier, killed process of this broker still exists, it waits up to the session timeout for
// that session to expire; if the znode outlives it, another live broker holds the id:
// ErrBrokerIDInUse.
func (r *Registrar) Register(ctx context.Context) (int64, error) {
	epoch, err := r.register(ctx)
	if err != nil {
		return 0, err
	}
	r.mu.Lock()
	r.registered = true
	r.mu.Unlock()
	return epoch, nil
}

// SessionExpired records an expired session of ours: an ephemeral it left behind may be
// replaced (ZOOKEEPER-2985, KAFKA-7165).
func (r *Registrar) SessionExpired(sessionID int64) {
	if sessionID == 0 {
		return
	}
	r.mu.Lock()
	r.oldSessionIDs = append(r.oldSessionIDs, sessionID)
	r.mu.Unlock()
}

// OnNewSession re-registers the broker after a session expiry, retrying until it succeeds
// or the connection is closed (Kafka's RegisterBrokerAndReelect). It runs on the session
// goroutine.
func (r *Registrar) OnNewSession() {
	r.mu.Lock()
	registered := r.registered
	r.mu.Unlock()
	if !registered {
		return
	}
	for !isClosed(r.conn.Done()) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*r.cfg.SessionTimeout)
		_, err := r.register(ctx)
		cancel()
		if err == nil {
			return
		}
		r.log.WithError(err).Error("re-registration of the broker after session expiry failed; retrying")
		select {
		case <-r.conn.Done():
			return
		case <-time.After(time.Second):
		}
	}
}

func (r *Registrar) register(ctx context.Context) (int64, error) {
	path := zkdata.BrokerIDPath(r.cfg.BrokerID)
	data := zkdata.EncodeBroker(r.cfg.Endpoints, r.cfg.Rack)
	var waitUntil time.Time
	for {
		if isClosed(r.conn.Done()) {
			return 0, errClosed
		}
		epoch, err := r.checkedEphemeral(path, data)
		if err == nil {
			r.mu.Lock()
			r.brokerEpoch = epoch
			cb := r.cfg.OnBrokerEpoch
			r.mu.Unlock()
			r.log.WithField("brokerEpoch", epoch).Info("registered broker in ZooKeeper")
			if cb != nil {
				cb(epoch)
			}
			return epoch, nil
		}
		if !errors.Is(err, zk.ErrNodeExists) {
			return 0, fmt.Errorf("zkcoord: register %s: %w", path, err)
		}
		// Someone else's session owns the znode: a killed earlier process of this broker
		// (its session expires within the session timeout) or a live broker with our id.
		if waitUntil.IsZero() {
			// ZooKeeper expires sessions on tick boundaries: allow one extra second.
			waitUntil = time.Now().Add(r.cfg.SessionTimeout + time.Second)
			r.log.WithField("timeout", r.cfg.SessionTimeout).Warn("broker znode of an earlier session still exists; waiting for that session to expire")
		}
		if time.Now().After(waitUntil) {
			return 0, fmt.Errorf("%w: %s still owned by another session after %v", ErrBrokerIDInUse, path, r.cfg.SessionTimeout)
		}
		ok, _, ch, err := r.conn.ExistsW(path)
		if err != nil {
			ch = nil
		} else if !ok {
			continue
		}
		t := time.NewTimer(time.Until(waitUntil))
		select {
		case <-ch:
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return 0, ctx.Err()
		case <-r.conn.Done():
			t.Stop()
			return 0, errClosed
		}
		t.Stop()
		if ch == nil { // ExistsW failed: poll
			select {
			case <-time.After(100 * time.Millisecond):
			case <-ctx.Done():
				return 0, ctx.Err()
			}
		}
	}
}

// checkedEphemeral is Kafka's CheckedEphemeral: create + setData(v0) in one multi, so the
// result carries the czxid. On NODEEXISTS: owned by the current session → success; owned
// by one of our expired sessions → delete and re-create; else zk.ErrNodeExists.
func (r *Registrar) checkedEphemeral(path string, data []byte) (int64, error) {
	for attempt := 0; attempt < 5; attempt++ {
		res, err := r.conn.Multi(
			&zk.CreateRequest{Path: path, Data: data, Acl: zk.WorldACL(zk.PermAll), Flags: zk.FlagEphemeral},
			&zk.SetDataRequest{Path: path, Data: data, Version: 0})
		if err == nil && len(res) == 2 && res[1].Stat != nil {
			return res[1].Stat.Czxid, nil
		}
		if err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return 0, err
		}
		_, st, gerr := r.conn.Get(path)
		if errors.Is(gerr, zk.ErrNoNode) {
			continue
		}
		if gerr != nil {
			return 0, gerr
		}
		if st.EphemeralOwner == r.conn.SessionID() {
			return st.Czxid, nil // a retried create after connection loss
		}
		r.mu.Lock()
		ours := slices.Contains(r.oldSessionIDs, st.EphemeralOwner)
		r.mu.Unlock()
		if !ours {
			return 0, zk.ErrNodeExists
		}
		r.log.WithField("path", path).Info("deleting ephemeral znode of our expired session")
		if err := r.conn.Delete(path, st.Version); err != nil && !errors.Is(err, zk.ErrNoNode) && !errors.Is(err, zk.ErrBadVersion) {
			return 0, err
		}
	}
	return 0, zk.ErrNodeExists
}
