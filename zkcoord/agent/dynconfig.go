package agent

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/isrbroker/isrbroker/zkcoord/zkclient"
	"github.com/isrbroker/isrbroker/zkcoord/zkdata"
	"github.com/sirupsen/logrus"
)

// Dynamic configuration on the broker side: Kafka's DynamicConfigManager with its
// ZkNodeChangeNotificationListener on /config/changes. At start the listener reads the configs
// of this broker (/config/brokers/<id>), of the cluster default (/config/brokers/<default>) and
// of every topic (/config/topics/<t>); afterwards it processes every config_change_<seq>
// notification whose sequence number is above the last one processed, re-reads the entity it
// names and hands the entity's complete config to the registered callbacks. Notifications older
// than 15 minutes are purged, as every Kafka broker does. The ZooKeeper watch only wakes the
// listener goroutine; nothing blocks the session path.

const (
	// configChangeExpiry is Kafka's ZkNodeChangeNotificationListener changeExpirationMs.
	configChangeExpiry = 15 * time.Minute
	// dynConfigRetry is the pause after a ZooKeeper error before the listener tries again.
	dynConfigRetry = time.Second
)

// ConfigListener is the dynamic config listener of one broker.
type ConfigListener struct {
	conn     zkclient.Conn
	brokerID int32
	log      logrus.FieldLogger
	wg       sync.WaitGroup

	mu        sync.Mutex
	callbacks []func(entity string, cfg map[string]string)
	users     []func(user string, cfg map[string]string)         // OnUserConfig
	quotas    []func(user, client string, cfg map[string]string) // OnQuotaConfig (quotas.go)
	started   bool
	closed    bool
	fullScan  bool // a callback was added: deliver every entity again
	wake      chan struct{}
}

// NewConfigListener returns the listener of broker brokerID; it starts with the first
// OnDynamicConfig.
func NewConfigListener(conn zkclient.Conn, brokerID int32, log logrus.FieldLogger) *ConfigListener {
	return &ConfigListener{conn: conn, brokerID: brokerID, log: log.WithField("component", "dynamic-config"), wake: make(chan struct{}, 1)}
}

// OnDynamicConfig registers f to receive dynamic configs (replicamanager.DynamicConfigSource):
// f(entity, cfg) with entity "brokers/<this id>", "brokers/<default>" or "topics/<t>" and the
// entity's complete current config (empty when its znode is absent). The first registration
// starts the listener; every registration makes it deliver all entities again. f is called from
// the listener goroutine, one call at a time, and must not block.
func (d *ConfigListener) OnDynamicConfig(f func(entity string, cfg map[string]string)) {
	if f == nil {
		return
	}
	d.register(func() { d.callbacks = append(d.callbacks, f) })
}

// OnUserConfig registers f to receive user configs (/config/users/<sanitized user>, the SCRAM
// credentials of docs/sasl.md §3): f(user, cfg) with the desanitized user name and the user's
// complete config (empty when its znode is absent), for every user at the first scan and then
// for each users/<user> notification (Kafka's UserConfigHandler; users/<u>/clients/<c> and
// <default> quota entities go to OnQuotaConfig only). Otherwise as OnDynamicConfig.
func (d *ConfigListener) OnUserConfig(f func(user string, cfg map[string]string)) {
	if f == nil {
		return
	}
	d.register(func() { d.users = append(d.users, f) })
}

// register adds a callback under the lock and starts the listener or asks for a full scan.
func (d *ConfigListener) register(add func()) {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return
	}
	add()
	d.fullScan = true
	start := !d.started
	if start {
		d.started = true
		d.wg.Add(1)
	}
	d.mu.Unlock()
	if start {
		go d.loop()
	}
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// Close waits for the listener goroutine, which ends with the connection.
func (d *ConfigListener) Close() {
	d.mu.Lock()
	d.closed = true
	d.mu.Unlock()
	d.wg.Wait()
}

// loop is the listener goroutine.
func (d *ConfigListener) loop() {
	defer d.wg.Done()
	l := &configChangeListener{d: d, lastSeq: -1, ctimes: map[int64]int64{}}
	done := d.conn.Done()
	var watch <-chan zk.Event
	for {
		var err error
		watch, err = l.step()
		if err != nil && !isClosed(done) {
			d.log.WithError(err).Warn("processing dynamic config changes failed; retrying")
			watch = nil
		}
		var timer *time.Timer
		var retryC <-chan time.Time
		if watch == nil {
			timer = time.NewTimer(dynConfigRetry)
			retryC = timer.C
		}
		select {
		case <-done:
		case <-d.wake:
		case <-watch:
		case <-retryC:
		}
		if timer != nil {
			timer.Stop()
		}
		if isClosed(done) {
			return
		}
	}
}

// configChangeListener is the state of the listener goroutine.
type configChangeListener struct {
	d       *ConfigListener
	lastSeq int64           // highest notification sequence number processed; -1 before the first scan
	ctimes  map[int64]int64 // known notifications: seq → creation time (ms), for the purge
}

// step runs one round: a full scan when asked for (or first), else the notifications above
// lastSeq; then the purge. It returns the re-armed children watch of /config/changes.
func (l *configChangeListener) step() (<-chan zk.Event, error) {
	d := l.d
	children, watch, err := d.conn.ChildrenW(zkdata.PathConfigChanges)
	if err != nil {
		return nil, fmt.Errorf("zkcoord: watch %s: %w", zkdata.PathConfigChanges, err)
	}
	seqs := zkdata.ConfigChangeSeqs(children)

	d.mu.Lock()
	full := d.fullScan || l.lastSeq < 0
	d.fullScan = false
	d.mu.Unlock()

	if full {
		// Everything up to the newest notification seen is covered by reading every entity
		// afterwards; later notifications are processed one by one.
		for _, s := range seqs {
			if s > l.lastSeq {
				l.lastSeq = s
			}
			if _, ok := l.ctimes[s]; !ok {
				if ok, st, err := d.conn.Exists(zkdata.ConfigChangePath(s)); err == nil && ok {
					l.ctimes[s] = st.Ctime
				}
			}
		}
		if err := l.deliverAll(); err != nil {
			d.mu.Lock()
			d.fullScan = true // try the whole scan again
			d.mu.Unlock()
			return nil, err
		}
	} else {
		var entities []string
		seen := map[string]bool{}
		for _, s := range seqs {
			if s <= l.lastSeq {
				continue
			}
			data, st, err := d.conn.Get(zkdata.ConfigChangePath(s))
			if errors.Is(err, zk.ErrNoNode) {
				l.lastSeq = s
				continue // purged meanwhile
			}
			if err != nil {
				return nil, err
			}
			l.ctimes[s] = st.Ctime
			l.lastSeq = s
			entity, err := zkdata.DecodeConfigChange(data)
			if err != nil {
				d.log.WithFields(logrus.Fields{"notification": zkdata.ConfigChangePath(s)}).WithError(err).Warn("ignoring malformed config change notification")
				continue
			}
			if !seen[entity] {
				seen[entity] = true
				entities = append(entities, entity)
			}
		}
		for _, e := range entities {
			if err := l.deliverEntity(e); err != nil {
				return nil, err
			}
		}
	}
	l.purge(seqs)
	return watch, nil
}

// deliverAll hands every relevant entity's config to the callbacks: this broker, the default
// broker entity and every topic with a config znode.
func (l *configChangeListener) deliverAll() error {
	d := l.d
	for _, name := range []string{zkdata.DefaultBrokerEntity, strconv.Itoa(int(d.brokerID))} {
		if err := l.deliverEntity(zkdata.BrokerEntity(name)); err != nil {
			return err
		}
	}
	topics, err := d.conn.Children(zkdata.PathConfigTopics)
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		return err
	}
	sort.Strings(topics)
	for _, t := range topics {
		if err := l.deliverEntity(zkdata.TopicEntity(t)); err != nil {
			return err
		}
	}
	d.mu.Lock()
	wantUsers, wantQuotas := len(d.users) > 0, len(d.quotas) > 0
	d.mu.Unlock()
	if wantQuotas {
		if err := l.deliverAllQuotas(); err != nil {
			return err
		}
	}
	if !wantUsers {
		return nil
	}
	users, err := d.conn.Children(zkdata.PathConfigUsers)
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		return err
	}
	sort.Strings(users)
	for _, u := range users {
		if err := l.deliverUser(u); err != nil {
			return err
		}
	}
	return nil
}

// deliverUser re-reads /config/users/<sanitized> and hands it to the user callbacks.
func (l *configChangeListener) deliverUser(sanitized string) error {
	d := l.d
	d.mu.Lock()
	cbs := append([]func(string, map[string]string){}, d.users...)
	d.mu.Unlock()
	if len(cbs) == 0 || sanitized == zkdata.DefaultBrokerEntity {
		return nil
	}
	user, err := zkdata.DesanitizeUser(sanitized)
	if err != nil {
		d.log.WithField("entity", "users/"+sanitized).WithError(err).Warn("ignoring user config of a name Kafka's Sanitizer did not write")
		return nil
	}
	path := zkdata.UserConfigPath(user)
	cfg := map[string]string{}
	data, _, err := d.conn.Get(path)
	switch {
	case errors.Is(err, zk.ErrNoNode), err == nil && len(data) == 0: // a user+client entity's bare parent
	case err != nil:
		return err
	default:
		if cfg, err = zkdata.DecodeConfig(data); err != nil {
			d.log.WithFields(logrus.Fields{"path": path}).WithError(err).Warn("ignoring undecodable config znode")
			return nil
		}
	}
	for _, f := range cbs {
		cp := make(map[string]string, len(cfg))
		for k, v := range cfg {
			cp[k] = v
		}
		f(user, cp)
	}
	return nil
}

// deliverEntity re-reads one entity's config and calls the callbacks; entities that do not
// concern this broker (another broker's config) are skipped; users, clients and users' client
// entities go to the quota callbacks (quotas.go), users also to the user callbacks.
func (l *configChangeListener) deliverEntity(entity string) error {
	d := l.d
	kind, name, _ := strings.Cut(entity, "/")
	var path string
	switch {
	case kind == "brokers" && (name == zkdata.DefaultBrokerEntity || name == strconv.Itoa(int(d.brokerID))):
		path = zkdata.BrokerEntityConfigPath(name)
	case kind == "topics" && zkdata.ValidTopicName(name):
		path = zkdata.TopicConfigPath(name)
	case kind == "users" && name != "" && !strings.Contains(name, "/"):
		if err := l.deliverQuota(entity); err != nil {
			return err
		}
		return l.deliverUser(name)
	case kind == "users" || kind == "clients":
		return l.deliverQuota(entity)
	default:
		return nil
	}
	cfg := map[string]string{}
	data, _, err := d.conn.Get(path)
	switch {
	case errors.Is(err, zk.ErrNoNode):
	case err != nil:
		return err
	default:
		if cfg, err = zkdata.DecodeConfig(data); err != nil {
			d.log.WithFields(logrus.Fields{"path": path}).WithError(err).Warn("ignoring undecodable config znode")
			return nil
		}
	}
	d.mu.Lock()
	cbs := append([]func(string, map[string]string){}, d.callbacks...)
	d.mu.Unlock()
	for _, f := range cbs {
		cp := make(map[string]string, len(cfg))
		for k, v := range cfg {
			cp[k] = v
		}
		f(entity, cp)
	}
	return nil
}

// purge deletes processed notifications older than configChangeExpiry (Kafka's
// purgeObsoleteNotifications). Several brokers purge concurrently: a missing node is fine.
func (l *configChangeListener) purge(present []int64) {
	d := l.d
	live := make(map[int64]bool, len(present))
	for _, s := range present {
		live[s] = true
	}
	cutoff := time.Now().Add(-configChangeExpiry).UnixMilli()
	for s, ctime := range l.ctimes {
		if !live[s] {
			delete(l.ctimes, s)
			continue
		}
		if s > l.lastSeq || ctime >= cutoff {
			continue
		}
		err := d.conn.Delete(zkdata.ConfigChangePath(s), -1)
		if err != nil && !errors.Is(err, zk.ErrNoNode) {
			d.log.WithField("notification", zkdata.ConfigChangePath(s)).WithError(err).Debug("purging config change notification failed")
			continue
		}
		delete(l.ctimes, s)
	}
}
