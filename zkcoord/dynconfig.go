package zkcoord

import (
	"errors"
	"fmt"
	"github.com/isrbroker/isrbroker/zkcoord/zkdata"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/sirupsen/logrus"
)

// Dynamic configuration on the broker side (issue 4): Kafka's DynamicConfigManager with its
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

// dynConfig is the listener state embedded in Coordinator (zero value ready).
type dynConfig struct {
	mu        sync.Mutex
	callbacks []func(entity string, cfg map[string]string)
	started   bool
	fullScan  bool // a callback was added: deliver every entity again
	wake      chan struct{}
}

// OnDynamicConfig registers f to receive dynamic configs (replicamanager.DynamicConfigSource):
// f(entity, cfg) with entity "brokers/<this id>", "brokers/<default>" or "topics/<t>" and the
// entity's complete current config (empty when its znode is absent). The first registration
// starts the listener; every registration makes it deliver all entities again. f is called from
// the listener goroutine, one call at a time, and must not block.
func (c *Coordinator) OnDynamicConfig(f func(entity string, cfg map[string]string)) {
	if f == nil {
		return
	}
	// c.mu makes the start and Close's wg.Wait mutually ordered.
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	d := &c.dyn
	d.mu.Lock()
	d.callbacks = append(d.callbacks, f)
	d.fullScan = true
	start := !d.started
	if start {
		d.started = true
		d.wake = make(chan struct{}, 1)
	}
	wake := d.wake
	d.mu.Unlock()
	if start {
		c.wg.Add(1)
		go c.dynConfigLoop()
	}
	select {
	case wake <- struct{}{}:
	default:
	}
}

// dynConfigLoop is the listener goroutine.
func (c *Coordinator) dynConfigLoop() {
	defer c.wg.Done()
	l := &configChangeListener{c: c, lastSeq: -1, ctimes: map[int64]int64{}}
	log := c.log.WithField("component", "dynamic-config")
	var watch <-chan zk.Event
	for {
		var err error
		watch, err = l.step()
		if err != nil && !c.isClosed() {
			log.WithError(err).Warn("processing dynamic config changes failed; retrying")
			watch = nil
		}
		var timer *time.Timer
		var retryC <-chan time.Time
		if watch == nil {
			timer = time.NewTimer(dynConfigRetry)
			retryC = timer.C
		}
		select {
		case <-c.done:
		case <-c.dyn.wake:
		case <-watch:
		case <-retryC:
		}
		if timer != nil {
			timer.Stop()
		}
		if c.isClosed() {
			return
		}
	}
}

// configChangeListener is the state of dynConfigLoop.
type configChangeListener struct {
	c       *Coordinator
	lastSeq int64           // highest notification sequence number processed; -1 before the first scan
	ctimes  map[int64]int64 // known notifications: seq → creation time (ms), for the purge
}

// step runs one round: a full scan when asked for (or first), else the notifications above
// lastSeq; then the purge. It returns the re-armed children watch of /config/changes.
func (l *configChangeListener) step() (<-chan zk.Event, error) {
	c := l.c
	var children []string
	var watch <-chan zk.Event
	err := retry(c, func() (err error) {
		children, _, watch, err = c.conn.ChildrenW(c.p(zkdata.PathConfigChanges))
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("zkcoord: watch %s: %w", zkdata.PathConfigChanges, err)
	}
	seqs := zkdata.ConfigChangeSeqs(children)

	c.dyn.mu.Lock()
	full := c.dyn.fullScan || l.lastSeq < 0
	c.dyn.fullScan = false
	c.dyn.mu.Unlock()

	if full {
		// Everything up to the newest notification seen is covered by reading every entity
		// afterwards; later notifications are processed one by one.
		for _, s := range seqs {
			if s > l.lastSeq {
				l.lastSeq = s
			}
			if _, ok := l.ctimes[s]; !ok {
				if ok, st, err := c.exists(zkdata.ConfigChangePath(s)); err == nil && ok {
					l.ctimes[s] = st.Ctime
				}
			}
		}
		if err := l.deliverAll(); err != nil {
			c.dyn.mu.Lock()
			c.dyn.fullScan = true // try the whole scan again
			c.dyn.mu.Unlock()
			return nil, err
		}
	} else {
		var entities []string
		seen := map[string]bool{}
		for _, s := range seqs {
			if s <= l.lastSeq {
				continue
			}
			data, st, err := c.get(zkdata.ConfigChangePath(s))
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
				c.log.WithFields(logrus.Fields{"notification": zkdata.ConfigChangePath(s)}).WithError(err).Warn("ignoring malformed config change notification")
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
	c := l.c
	for _, name := range []string{zkdata.DefaultBrokerEntity, strconv.Itoa(int(c.cfg.BrokerID))} {
		if err := l.deliverEntity("brokers/" + name); err != nil {
			return err
		}
	}
	topics, err := c.children(zkdata.PathConfigTopics)
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		return err
	}
	sort.Strings(topics)
	for _, t := range topics {
		if err := l.deliverEntity("topics/" + t); err != nil {
			return err
		}
	}
	return nil
}

// deliverEntity re-reads one entity's config and calls the callbacks; entities that do not
// concern this broker (another broker's config, clients, users) are skipped.
func (l *configChangeListener) deliverEntity(entity string) error {
	c := l.c
	kind, name, _ := strings.Cut(entity, "/")
	var path string
	switch {
	case kind == "brokers" && (name == zkdata.DefaultBrokerEntity || name == strconv.Itoa(int(c.cfg.BrokerID))):
		path = zkdata.PathConfigBrokers + "/" + name
	case kind == "topics" && zkdata.ValidTopicName(name):
		path = zkdata.TopicConfigPath(name)
	default:
		return nil
	}
	cfg := map[string]string{}
	data, _, err := c.get(path)
	switch {
	case errors.Is(err, zk.ErrNoNode):
	case err != nil:
		return err
	default:
		if cfg, err = zkdata.DecodeConfig(data); err != nil {
			c.log.WithFields(logrus.Fields{"path": path}).WithError(err).Warn("ignoring undecodable config znode")
			return nil
		}
	}
	c.dyn.mu.Lock()
	cbs := append([]func(string, map[string]string){}, c.dyn.callbacks...)
	c.dyn.mu.Unlock()
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
	c := l.c
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
		err := retry(c, func() error { return c.conn.Delete(c.p(zkdata.ConfigChangePath(s)), -1) })
		if err != nil && !errors.Is(err, zk.ErrNoNode) {
			c.log.WithField("notification", zkdata.ConfigChangePath(s)).WithError(err).Debug("purging config change notification failed")
			continue
		}
		delete(l.ctimes, s)
	}
}
