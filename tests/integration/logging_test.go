package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/isrbroker/isrbroker/tests/cluster"
)

// jsonLogLine is one line of a broker's output with isrbroker.log.format=json, decoded.
type jsonLogLine map[string]any

func (l jsonLogLine) str(k string) string { s, _ := l[k].(string); return s }

// jsonLogLines parses a broker's output: every line but the harness's own "=== cluster:" headers
// must be one JSON object with time, level, msg, component and brokerId (docs/logging.md).
func jsonLogLines(out string) ([]jsonLogLine, []string) {
	var lines []jsonLogLine
	var bad []string
	for _, raw := range strings.Split(out, "\n") {
		if raw == "" || strings.HasPrefix(raw, "=== cluster:") {
			continue
		}
		var l jsonLogLine
		if err := json.Unmarshal([]byte(raw), &l); err != nil {
			bad = append(bad, fmt.Sprintf("not JSON (%v): %s", err, raw))
			continue
		}
		for _, k := range []string{"time", "level", "msg", "component"} {
			if l.str(k) == "" {
				bad = append(bad, fmt.Sprintf("no %q: %s", k, raw))
			}
		}
		if _, ok := l["brokerId"].(float64); !ok {
			bad = append(bad, "no brokerId: "+raw)
		}
		lines = append(lines, l)
	}
	return lines, bad
}

// Issue 14 item 5 (docs/logging.md): with isrbroker.log.format=json every line a real broker
// writes parses as JSON and carries a component, the way Kafka separates controller.log,
// state-change.log and the fetcher threads' lines: the controller election is
// component=controller, the controller's partition transitions component=state-change, the
// follower's fetcher lines component=fetcher, the leadership lines component=replica-manager,
// start-up component=server; after a leader's kill -9 the election is component=state-change. Fields use the documented spellings (leaderEpoch, not epoch).
func TestLogsJSONWithAComponentOnEveryLine(t *testing.T) {
	// Debug level: the lines of every level must be JSON with a component, and the controller's
	// per-partition state-change lines are debug when summarised at info.
	t.Setenv("ISRBROKER_LOG_LEVEL", "debug")
	c := cluster.Start(t, cluster.Options{
		Brokers:   2,
		Overrides: map[string]string{"isrbroker.log.format": "json"},
	})
	const topic = "json-logs"
	c.CreateTopicWithAssignment(topic, map[int32][]int32{0: {1, 2}, 1: {2, 1}}, nil)
	c.WaitMetadataLeaders(topic, 2, 30*time.Second)
	cl := c.Client(kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RequiredAcks(kgo.AllISRAcks()))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := 0; i < 10; i++ {
		if err := cl.ProduceSync(ctx, &kgo.Record{Partition: int32(i % 2), Value: []byte(fmt.Sprint("v", i))}).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
	}

	// Each wanted line: its message, the component it must have, a field it must carry.
	type want struct{ msg, component, field string }
	wants := []want{
		{"broker started", "server", "brokerEpoch"},
		{"elected controller", "controller", "controllerEpoch"},
		{"new partitions online", "state-change", "count"},
		{"became leader", "replica-manager", "highWatermark"},
		{"became follower", "replica-manager", "logEndOffset"},
		{"added partition, truncating", "fetcher", "fetcherId"},
		{"connected to ZooKeeper", "zookeeper", "clusterId"},
	}
	cluster.WaitFor(t, 30*time.Second, func() (bool, string) {
		var all []jsonLogLine
		for _, id := range c.IDs() {
			lines, bad := jsonLogLines(c.Broker(id).Output())
			if len(bad) > 0 {
				return false, fmt.Sprintf("broker %d: %d bad lines, first: %s", id, len(bad), bad[0])
			}
			all = append(all, lines...)
		}
		for _, w := range wants {
			found := false
			for _, l := range all {
				if l.str("msg") != w.msg {
					continue
				}
				if l.str("component") != w.component {
					return false, fmt.Sprintf("%q has component %q, want %q", w.msg, l.str("component"), w.component)
				}
				if _, ok := l[w.field]; ok {
					found = true
				}
			}
			if !found {
				return false, fmt.Sprintf("no line %q with component %q and field %q yet", w.msg, w.component, w.field)
			}
		}
		return true, ""
	})

	// Every line so far, of both brokers, is JSON with a component (checked again after the
	// wait: the lines written meanwhile too).
	for _, id := range c.IDs() {
		lines, bad := jsonLogLines(c.Broker(id).Output())
		for _, b := range bad {
			t.Errorf("broker %d: %s", id, b)
		}
		if len(lines) < 10 {
			t.Errorf("broker %d wrote %d lines", id, len(lines))
		}
	}

	// Kafka's state-change.log: after kill -9 of broker 2, the leader of partition 1, the
	// controller (broker 1, elected anew if broker 2 held the role) elects broker 1 with a new
	// leader epoch and logs the partition's transition as component=state-change.
	c.Broker(2).Kill()
	cluster.WaitFor(t, 60*time.Second, func() (bool, string) {
		lines, bad := jsonLogLines(c.Broker(1).Output())
		if len(bad) > 0 {
			return false, "broker 1: " + bad[0]
		}
		for _, l := range lines {
			if l.str("msg") == "partition state changed" && l.str("topic") == topic && l["partition"] == 1.0 {
				if l.str("component") != "state-change" || l["leader"] != 1.0 || l["leaderEpoch"] != 1.0 {
					return false, fmt.Sprintf("election line %v: want component state-change, leader 1, leaderEpoch 1", l)
				}
				return true, ""
			}
		}
		return false, "no \"partition state changed\" line for partition 1 on broker 1 yet"
	})
}
