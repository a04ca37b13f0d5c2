package zkcoord

import (
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/isrbroker/isrbroker/zkcoord/admin"
	"github.com/isrbroker/isrbroker/zkcoord/zkdata"

	"github.com/go-zookeeper/zk"
)

// configRecorder keeps the latest config delivered per entity and every delivery in order.
type configRecorder struct {
	mu     sync.Mutex
	latest map[string]map[string]string
	log    []string
}

func (r *configRecorder) record(entity string, cfg map[string]string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.latest == nil {
		r.latest = map[string]map[string]string{}
	}
	r.latest[entity] = maps.Clone(cfg)
	r.log = append(r.log, entity)
}

func (r *configRecorder) get(entity string) (map[string]string, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	cfg, ok := r.latest[entity]
	return maps.Clone(cfg), ok
}

func (r *configRecorder) seen(entity string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range r.log {
		if e == entity {
			return true
		}
	}
	return false
}

// TestDynamicConfigListener: the start-up scan delivers this broker's, the default broker's and
// every topic's config; later changes arrive through /config/changes notifications; other
// brokers' configs and malformed notifications are skipped (issue 4).
func TestDynamicConfigListener(t *testing.T) {
	s := startZK(t)
	op := connectT(t, testConfig(t, s.Addr, 9, 1))
	b1 := connectT(t, testConfig(t, s.Addr, 1, 2))

	// Written before the broker listens: found by the start-up scan.
	if err := op.Admin.SetReassignmentThrottle(1000, []int32{1, 2},
		map[string]map[int32][]int32{"t": {0: {1}}}, map[string]map[int32][]int32{"t": {0: {2}}}); err != nil {
		t.Fatal(err)
	}
	if err := op.writeRawConfig(zkdata.BrokerEntityConfigPath(zkdata.DefaultBrokerEntity), `{"version":1,"config":{"follower.replication.throttled.rate":"5"}}`); err != nil {
		t.Fatal(err)
	}
	rec := &configRecorder{}
	b1.ConfigListener.OnDynamicConfig(rec.record)
	waitFor(t, 10*time.Second, "start-up scan", func() bool {
		b, _ := rec.get("brokers/1")
		d, _ := rec.get("brokers/<default>")
		tc, _ := rec.get("topics/t")
		return b[admin.LeaderThrottledRate] == "1000" && d[admin.FollowerThrottledRate] == "5" &&
			tc[admin.LeaderThrottledReplicas] == "0:1" && tc[admin.FollowerThrottledReplicas] == "0:2"
	})

	// A change notification after start: the rate changes.
	if err := op.Admin.SetBrokerThrottleRate(2000, []int32{1, 2}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "rate change", func() bool {
		b, _ := rec.get("brokers/1")
		return b[admin.LeaderThrottledRate] == "2000"
	})

	// Garbage notifications are skipped; the next good one is still processed.
	for _, bad := range []string{"not json", `{"version":2,"entity_path":"nope"}`, `{"version":7}`} {
		if _, err := op.zk.Create(zkdata.ConfigChangeSequential, []byte(bad), zk.FlagSequence); err != nil {
			t.Fatal(err)
		}
	}
	// Version 1 notifications (entity_type/entity_name) are understood too.
	if err := op.writeRawConfig(zkdata.TopicConfigPath("u"), `{"version":1,"config":{"follower.replication.throttled.replicas":"*"}}`); err != nil {
		t.Fatal(err)
	}
	if _, err := op.zk.Create(zkdata.ConfigChangeSequential, []byte(`{"version":1,"entity_type":"topics","entity_name":"u"}`), zk.FlagSequence); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "version 1 notification", func() bool {
		u, _ := rec.get("topics/u")
		return u[admin.FollowerThrottledReplicas] == "*"
	})

	// Removing the throttle (what --verify does) delivers the configs without the keys.
	if _, err := op.Admin.ClearReassignmentThrottle([]string{"t"}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "throttle removal", func() bool {
		b, _ := rec.get("brokers/1")
		tc, _ := rec.get("topics/t")
		_, hasRate := b[admin.LeaderThrottledRate]
		_, hasList := tc[admin.LeaderThrottledReplicas]
		return !hasRate && !hasList
	})
	if rec.seen("brokers/2") || rec.seen("brokers/9") {
		t.Fatal("another broker's config was delivered")
	}
}

// writeRawConfig writes raw config JSON at path (created when missing) without a notification.
func (c *Coordinator) writeRawConfig(path, data string) error {
	if _, err := c.zk.Create(path, []byte(data), 0); err == nil {
		return nil
	}
	_, err := c.zk.Set(path, []byte(data), -1)
	return err
}
