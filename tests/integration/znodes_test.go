package integration

import (
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/isrbroker/isrbroker/tests/cluster"
)

// decodeZNode reads path and decodes its JSON into a generic map, failing on anything else.
func decodeZNode(t *testing.T, c *cluster.Cluster, path string, ephemeral bool) map[string]any {
	t.Helper()
	data, stat, err := c.ZK.Get(path)
	if err != nil {
		t.Fatalf("get %s: %v", path, err)
	}
	if got := stat.EphemeralOwner != 0; got != ephemeral {
		t.Errorf("%s: ephemeral = %v, want %v", path, got, ephemeral)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatalf("%s: not a JSON object: %q: %v", path, data, err)
	}
	return m
}

// checkKeys fails unless m has exactly the given keys.
func checkKeys(t *testing.T, path string, m map[string]any, keys ...string) {
	t.Helper()
	var got []string
	for k := range m {
		got = append(got, k)
	}
	sort.Strings(got)
	sort.Strings(keys)
	if !reflect.DeepEqual(got, keys) {
		t.Errorf("%s: fields %v, Kafka writes exactly %v", path, got, keys)
	}
}

// checkNumber fails unless m[key] is a JSON number equal to want.
func checkNumber(t *testing.T, path string, m map[string]any, key string, want float64) {
	t.Helper()
	if v, ok := m[key].(float64); !ok || v != want {
		t.Errorf("%s: %q = %#v, want the number %v", path, key, m[key], want)
	}
}

var msTimestamp = regexp.MustCompile(`^[0-9]{13}$`)

// checkTimestamp fails unless m[key] is a JSON string holding milliseconds since the epoch
// within a minute of [from, now] (Kafka writes timestamps as strings).
func checkTimestamp(t *testing.T, path string, m map[string]any, key string, from time.Time) {
	t.Helper()
	s, ok := m[key].(string)
	if !ok || !msTimestamp.MatchString(s) {
		t.Errorf("%s: %q = %#v, want a string of epoch milliseconds", path, key, m[key])
		return
	}
	ms, _ := strconv.ParseInt(s, 10, 64)
	ts := time.UnixMilli(ms)
	if ts.Before(from.Add(-time.Minute)) || ts.After(time.Now().Add(time.Minute)) {
		t.Errorf("%s: %q = %v, not around the test's run (%v)", path, key, ts, from)
	}
}

// Issue 6 / docs/kafka-facts.md §1: every znode the cluster writes reads back exactly in Kafka
// 2.4's JSON, checked field by field with an independent ZooKeeper client.
func TestZNodes_ReadBackExactlyInKafkaJSON(t *testing.T) {
	start := time.Now()
	c := cluster.Start(t, cluster.Options{Brokers: 3})
	const topic, partitions = "znodes", 3
	assignment := c.CreateTopic(topic, partitions, 1)
	ctrl, epoch := c.ZK.WaitController(10 * time.Second)

	t.Run("persistent paths", func(t *testing.T) {
		for _, p := range []string{"/consumers", "/brokers/ids", "/brokers/topics", "/brokers/seqid",
			"/config/changes", "/config/topics", "/config/clients", "/config/users", "/config/brokers",
			"/admin/delete_topics", "/isr_change_notification", "/latest_producer_id_block",
			"/log_dir_event_notification", "/cluster"} {
			if ok, _, err := c.ZK.Conn().Exists(p); err != nil || !ok {
				t.Errorf("%s: exists=%v err=%v; Kafka creates it at start-up", p, ok, err)
			}
		}
	})

	t.Run("brokers/ids", func(t *testing.T) {
		for _, id := range c.IDs() {
			path := "/brokers/ids/" + cluster.Itoa32(id)
			m := decodeZNode(t, c, path, true)
			checkKeys(t, path, m, "listener_security_protocol_map", "endpoints", "jmx_port", "host", "timestamp", "port", "version")
			checkNumber(t, path, m, "version", 4)
			checkNumber(t, path, m, "jmx_port", -1)
			host, port := "127.0.0.1", 0
			fmt.Sscanf(c.Broker(id).Addr, "127.0.0.1:%d", &port)
			if m["host"] != host {
				t.Errorf("%s: host = %#v, want %q", path, m["host"], host)
			}
			checkNumber(t, path, m, "port", float64(port))
			if want := []any{"PLAINTEXT://" + c.Broker(id).Addr}; !reflect.DeepEqual(m["endpoints"], want) {
				t.Errorf("%s: endpoints = %#v, want %#v", path, m["endpoints"], want)
			}
			if want := map[string]any{"PLAINTEXT": "PLAINTEXT"}; !reflect.DeepEqual(m["listener_security_protocol_map"], want) {
				t.Errorf("%s: listener_security_protocol_map = %#v, want %#v", path, m["listener_security_protocol_map"], want)
			}
			checkTimestamp(t, path, m, "timestamp", start)
		}
	})

	t.Run("controller", func(t *testing.T) {
		m := decodeZNode(t, c, "/controller", true)
		checkKeys(t, "/controller", m, "version", "brokerid", "timestamp")
		checkNumber(t, "/controller", m, "version", 1)
		checkNumber(t, "/controller", m, "brokerid", float64(ctrl))
		checkTimestamp(t, "/controller", m, "timestamp", start)

		data, stat, err := c.ZK.Get("/controller_epoch")
		if err != nil {
			t.Fatalf("/controller_epoch: %v", err)
		}
		if stat.EphemeralOwner != 0 {
			t.Errorf("/controller_epoch is ephemeral; Kafka's is persistent")
		}
		// Created as 0; the first election makes it 1 (docs/kafka-facts.md §1).
		if string(data) != "1" || epoch != 1 {
			t.Errorf("/controller_epoch = %q, want plain integer text \"1\" after the first election", data)
		}
	})

	t.Run("cluster/id", func(t *testing.T) {
		m := decodeZNode(t, c, "/cluster/id", false)
		checkKeys(t, "/cluster/id", m, "version", "id")
		if m["version"] != "1" {
			t.Errorf("/cluster/id: version = %#v, Kafka writes the string \"1\"", m["version"])
		}
		// Kafka's cluster id is a random UUID in URL-safe base64 without padding: 22 characters.
		if id, ok := m["id"].(string); !ok || !regexp.MustCompile(`^[A-Za-z0-9_-]{22}$`).MatchString(id) {
			t.Errorf("/cluster/id: id = %#v, want 22 URL-safe base64 characters", m["id"])
		}
	})

	t.Run("brokers/topics", func(t *testing.T) {
		path := "/brokers/topics/" + topic
		m := decodeZNode(t, c, path, false)
		checkKeys(t, path, m, "version", "partitions", "adding_replicas", "removing_replicas")
		checkNumber(t, path, m, "version", 2)
		for _, k := range []string{"adding_replicas", "removing_replicas"} {
			if v, ok := m[k].(map[string]any); !ok || len(v) != 0 {
				t.Errorf("%s: %q = %#v, want {}", path, k, m[k])
			}
		}
		parts, ok := m["partitions"].(map[string]any)
		if !ok || len(parts) != partitions {
			t.Fatalf("%s: partitions = %#v, want %d entries", path, m["partitions"], partitions)
		}
		for p := int32(0); p < partitions; p++ {
			want := []any{float64(assignment[p][0])}
			if got := parts[cluster.Itoa32(p)]; !reflect.DeepEqual(got, want) {
				t.Errorf("%s: partition %d = %#v, want %#v", path, p, got, want)
			}
		}
	})

	t.Run("partition state", func(t *testing.T) {
		for p := int32(0); p < partitions; p++ {
			path := cluster.PartitionStatePath(topic, p)
			m := decodeZNode(t, c, path, false)
			checkKeys(t, path, m, "controller_epoch", "leader", "version", "leader_epoch", "isr")
			checkNumber(t, path, m, "version", 1)
			checkNumber(t, path, m, "controller_epoch", float64(epoch))
			leader := assignment[p][0] // New→Online: leader = first live replica
			checkNumber(t, path, m, "leader", float64(leader))
			checkNumber(t, path, m, "leader_epoch", 0)
			if want := []any{float64(leader)}; !reflect.DeepEqual(m["isr"], want) {
				t.Errorf("%s: isr = %#v, want %#v", path, m["isr"], want)
			}
		}
		if ok, _, err := c.ZK.Conn().Exists("/brokers/topics/" + topic + "/partitions"); err != nil || !ok {
			t.Errorf("/brokers/topics/%s/partitions missing", topic)
		}
	})

	t.Run("config/topics", func(t *testing.T) {
		path := "/config/topics/" + topic
		m := decodeZNode(t, c, path, false)
		checkKeys(t, path, m, "version", "config")
		checkNumber(t, path, m, "version", 1)
		if v, ok := m["config"].(map[string]any); !ok || len(v) != 0 {
			t.Errorf("%s: config = %#v, want {} (no overrides given)", path, m["config"])
		}
	})
}
