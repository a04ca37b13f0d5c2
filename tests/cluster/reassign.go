package cluster

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// Helpers for partition reassignment tests (issue 4 item 2): Kafka's reassignment JSON,
// running `isrbroker reassign-partitions` against the cluster, and polling its outcome.

// ReassignmentPath is Kafka's /admin/reassign_partitions znode.
const ReassignmentPath = "/admin/reassign_partitions"

// WriteReassignmentFile writes Kafka's reassignment JSON for topic (partition → target
// replicas) into a temp file and returns its path.
func WriteReassignmentFile(t testing.TB, topic string, target map[int32][]int32) string {
	t.Helper()
	type part struct {
		Topic     string  `json:"topic"`
		Partition int32   `json:"partition"`
		Replicas  []int32 `json:"replicas"`
	}
	doc := struct {
		Version    int    `json:"version"`
		Partitions []part `json:"partitions"`
	}{Version: 1}
	for p, r := range target {
		doc.Partitions = append(doc.Partitions, part{Topic: topic, Partition: p, Replicas: r})
	}
	sort.Slice(doc.Partitions, func(i, j int) bool { return doc.Partitions[i].Partition < doc.Partitions[j].Partition })
	data, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "reassignment.json")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// Reassign runs `isrbroker reassign-partitions --zookeeper <zk> args...` (60 s limit).
func (c *Cluster) Reassign(args ...string) RunResult {
	c.t.Helper()
	all := append([]string{"reassign-partitions", "--zookeeper=" + c.ZK.Addr}, args...)
	r := RunBinary(c.t, "", 60*time.Second, all...)
	if r.TimedOut {
		c.t.Fatalf("isrbroker %s timed out\nstdout: %s\nstderr: %s", strings.Join(all, " "), r.Stdout, r.Stderr)
	}
	return r
}

// WaitReassignmentVerified polls `reassign-partitions --verify` until it exits 0 (every
// partition completed) and returns its last output.
func (c *Cluster) WaitReassignmentVerified(file string, timeout time.Duration) string {
	c.t.Helper()
	var last RunResult
	WaitFor(c.t, timeout, func() (bool, string) {
		last = c.Reassign("--verify", "--reassignment-json-file", file)
		return last.ExitCode == 0, fmt.Sprintf("verify: exit %d\n%s%s", last.ExitCode, last.Stdout, last.Stderr)
	})
	return last.Stdout
}
