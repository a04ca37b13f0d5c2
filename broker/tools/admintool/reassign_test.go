package admintool

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/isrbroker/isrbroker/zkcoord"
	"github.com/isrbroker/isrbroker/zkcoord/zkdata"
	"github.com/isrbroker/isrbroker/zkcoord/zktest"
)

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// jsonAfter decodes the JSON document on the line after header in out.
func jsonAfter(t *testing.T, out, header string) []zkcoord.PartitionReassignment {
	t.Helper()
	i := strings.Index(out, header)
	if i < 0 {
		t.Fatalf("no %q in %q", header, out)
	}
	for _, line := range strings.Split(out[i+len(header):], "\n") {
		if strings.HasPrefix(line, "{") {
			parts, err := zkdata.DecodeReassignment([]byte(line))
			if err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			return parts
		}
	}
	t.Fatalf("no JSON after %q in %q", header, out)
	return nil
}

// TestReassignPartitions drives generate/execute/verify against ZooKeeper (no controller:
// the test plays the controller's part by rewriting the assignment and the znode).
func TestReassignPartitions(t *testing.T) {
	srv := zktest.Start(t)
	e := newEnv(t, srv, "/re", 1, 2, 3, 4)
	zkArg := "--zookeeper=" + e.connect()
	mustOK(t, run("topics", zkArg, "--create", "--topic", "t", "--replica-assignment", "1:2:3,2:3:1"))
	mustOK(t, run("topics", zkArg, "--create", "--topic", "one", "--replica-assignment", "1"))

	t.Run("generate", func(t *testing.T) {
		f := writeFile(t, "move.json", `{"version":1,"topics":[{"topic":"t"}]}`)
		out := mustOK(t, run("reassign-partitions", zkArg, "--generate", "--topics-to-move-json-file", f, "--broker-list", "2,3,4"))
		cur := jsonAfter(t, out, "Current partition replica assignment\n")
		if len(cur) != 2 || !reflect.DeepEqual(cur[0].Replicas, []int32{1, 2, 3}) || !reflect.DeepEqual(cur[1].Replicas, []int32{2, 3, 1}) {
			t.Fatalf("current %+v", cur)
		}
		prop := jsonAfter(t, out, "Proposed partition reassignment configuration\n")
		if len(prop) != 2 {
			t.Fatalf("proposed %+v", prop)
		}
		for _, p := range prop {
			if len(p.Replicas) != 3 {
				t.Fatalf("proposed %+v keeps RF 3?", p)
			}
			for _, r := range p.Replicas {
				if r < 2 || r > 4 {
					t.Fatalf("proposed %+v outside the broker list", p)
				}
			}
		}
		mustFail(t, run("reassign-partitions", zkArg, "--generate", "--topics-to-move-json-file", f, "--broker-list", "2,9,4"), 1, "broker 9, which is not registered")
		mustFail(t, run("reassign-partitions", zkArg, "--generate", "--topics-to-move-json-file", f, "--broker-list", "2,3"), 1, "replication factor 3, larger than the 2 brokers")
		mustFail(t, run("reassign-partitions", zkArg, "--generate", "--topics-to-move-json-file", f, "--broker-list", "2,x"), 1, `"x" is not a broker id`)
		// Broker 1 has a rack and 2, 3 none: Kafka's generateAssignment enforces rack awareness
		// over the listed brokers unless --disable-rack-aware.
		mustFail(t, run("reassign-partitions", zkArg, "--generate", "--topics-to-move-json-file", f, "--broker-list", "1,2,3"), 1,
			"Not all brokers have rack information. Add --disable-rack-aware in command line to make replica assignment without rack information.")
		out = mustOK(t, run("reassign-partitions", zkArg, "--generate", "--topics-to-move-json-file", f, "--broker-list", "1,2,3", "--disable-rack-aware"))
		for _, p := range jsonAfter(t, out, "Proposed partition reassignment configuration\n") {
			if len(p.Replicas) != 3 {
				t.Fatalf("proposed %+v keeps RF 3?", p)
			}
		}
		bad := writeFile(t, "bad.json", "{\"version\":1,\n \"topics\":[{\"name\":\"t\"}]}")
		mustFail(t, run("reassign-partitions", zkArg, "--generate", "--topics-to-move-json-file", bad, "--broker-list", "2,3,4"), 1, "field topics[0].topic: missing")
		missing := writeFile(t, "m.json", `{"version":1,"topics":[{"topic":"nope"}]}`)
		mustFail(t, run("reassign-partitions", zkArg, "--generate", "--topics-to-move-json-file", missing, "--broker-list", "2,3,4"), 1, `topic "nope" does not exist`)
	})

	plan := writeFile(t, "plan.json", `{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[2,3,4],"log_dirs":["any","any","any"]},
{"topic":"one","partition":0,"replicas":[1,2,3]}]}`)

	t.Run("malformed and invalid plans", func(t *testing.T) {
		syntax := writeFile(t, "syntax.json", "{\"version\":1,\n\"partitions\":[\n  {\"topic\":\"t\" \"partition\":0}]}")
		mustFail(t, run("reassign-partitions", zkArg, "--execute", "--reassignment-json-file", syntax), 1, "line 3, column 16")
		typ := writeFile(t, "type.json", "{\"version\":1,\n\"partitions\":[{\"topic\":\"t\",\"partition\":0,\"replicas\":[\"2\"]}]}")
		mustFail(t, run("reassign-partitions", zkArg, "--verify", "--reassignment-json-file", typ), 1, "line 2, column")
		field := writeFile(t, "field.json", `{"version":1,"partitions":[{"topic":"t","replicas":[2]}]}`)
		mustFail(t, run("reassign-partitions", zkArg, "--execute", "--reassignment-json-file", field), 1, "field partitions[0].partition: missing")
		mustFail(t, run("reassign-partitions", zkArg, "--execute", "--reassignment-json-file", writeFile(t, "e.json", "")), 1, "line 1, column 1")
		dead := writeFile(t, "dead.json", `{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[2,3,7]}]}`)
		mustFail(t, run("reassign-partitions", zkArg, "--execute", "--reassignment-json-file", dead), 1, "names broker 7, which is not registered (dead or unknown)")
		dup := writeFile(t, "dup.json", `{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[2,3,2]}]}`)
		mustFail(t, run("reassign-partitions", zkArg, "--execute", "--reassignment-json-file", dup), 1, "lists broker 2 twice")
		unknown := writeFile(t, "u.json", `{"version":1,"partitions":[{"topic":"t","partition":5,"replicas":[2,3,4]}]}`)
		mustFail(t, run("reassign-partitions", zkArg, "--execute", "--reassignment-json-file", unknown), 1, "partition t-5 does not exist")
		mustFail(t, run("reassign-partitions", zkArg, "--execute", "--reassignment-json-file", "/nonexistent/plan.json"), 1, "cannot read --reassignment-json-file")
		mustFail(t, run("reassign-partitions", zkArg, "--verify", "--execute", "--reassignment-json-file", plan), 1, "exactly one of")
		mustFail(t, run("reassign-partitions", zkArg, "--verify", "--reassignment-json-file", plan, "--throttle", "10"), 1, "--throttle is only valid with --execute")
		if ok, _, _ := e.raw.Exists(e.chroot + "/admin/reassign_partitions"); ok {
			t.Fatal("a rejected plan created /admin/reassign_partitions")
		}
	})

	t.Run("execute", func(t *testing.T) {
		out := mustOK(t, run("reassign-partitions", zkArg, "--execute", "--reassignment-json-file", plan, "--throttle", "1000000"))
		if !strings.HasPrefix(out, "Current partition replica assignment\n\n") ||
			!strings.Contains(out, "\n\nSave this to use as the --reassignment-json-file option during rollback\n") ||
			!strings.HasSuffix(out, "Successfully started reassignment of partitions.\n") ||
			!strings.Contains(out, "The inter-broker throttle limit was set to 1000000 B/s") {
			t.Fatalf("execute output %q", out)
		}
		rollback := jsonAfter(t, out, "Current partition replica assignment\n")
		want := []zkcoord.PartitionReassignment{
			{Topic: "one", Partition: 0, Replicas: []int32{1}, LogDirs: []string{"any"}},
			{Topic: "t", Partition: 0, Replicas: []int32{1, 2, 3}, LogDirs: []string{"any", "any", "any"}},
		}
		if !reflect.DeepEqual(rollback, want) {
			t.Fatalf("rollback %+v", rollback)
		}
		parts, err := zkdata.DecodeReassignment([]byte(e.znode("/admin/reassign_partitions")))
		if err != nil || len(parts) != 2 || !reflect.DeepEqual(parts[1].Replicas, []int32{2, 3, 4}) {
			t.Fatalf("znode %+v %v", parts, err)
		}
		// Throttle: rates on every broker involved, replicas on the topics.
		for _, id := range []string{"1", "2", "3", "4"} {
			var z struct {
				Version int               `json:"version"`
				Config  map[string]string `json:"config"`
			}
			if err := json.Unmarshal([]byte(e.znode("/config/brokers/"+id)), &z); err != nil {
				t.Fatal(err)
			}
			if z.Version != 1 || z.Config["leader.replication.throttled.rate"] != "1000000" || z.Config["follower.replication.throttled.rate"] != "1000000" {
				t.Fatalf("broker %s config %+v", id, z)
			}
		}
		if got := e.znode("/config/topics/t"); !strings.Contains(got, `"leader.replication.throttled.replicas":"0:1,0:2,0:3"`) ||
			!strings.Contains(got, `"follower.replication.throttled.replicas":"0:4"`) {
			t.Fatalf("topic t config %s", got)
		}
		if got := e.znode("/config/topics/one"); !strings.Contains(got, `"leader.replication.throttled.replicas":"0:1"`) ||
			!strings.Contains(got, `"follower.replication.throttled.replicas":"0:2,0:3"`) {
			t.Fatalf("topic one config %s", got)
		}
		changes, _, err := e.raw.Children(e.chroot + "/config/changes")
		if err != nil || len(changes) < 6 {
			t.Fatalf("config change notifications %v %v", changes, err)
		}
		var sawTopic bool
		for _, ch := range changes {
			if d := e.znode("/config/changes/" + ch); d == `{"version":2,"entity_path":"topics/t"}` {
				sawTopic = true
			}
		}
		if !sawTopic {
			t.Fatalf("no notification for topics/t among %v", changes)
		}
		// A second execute is refused (the throttle rate is still updated).
		r := run("reassign-partitions", zkArg, "--execute", "--reassignment-json-file", plan, "--throttle", "2000000")
		mustFail(t, r, 1, "There is an existing assignment running.")
		if !strings.Contains(e.znode("/config/brokers/4"), `"2000000"`) {
			t.Fatal("the running reassignment's throttle was not updated")
		}
	})

	t.Run("verify", func(t *testing.T) {
		r := run("reassign-partitions", zkArg, "--verify", "--reassignment-json-file", plan)
		mustFail(t, r, 1, "2 partitions is still in progress")
		if r.out != "Status of partition reassignment:\nReassignment of partition one-0 is still in progress\nReassignment of partition t-0 is still in progress\n" {
			t.Fatalf("verify output %q", r.out)
		}
		// The controller finishes t-0 but one-0 fails (its assignment did not change).
		e.setAssignment("t", `{"version":2,"partitions":{"0":[2,3,4],"1":[2,3,1]},"adding_replicas":{},"removing_replicas":{}}`)
		if err := e.raw.Delete(e.chroot+"/admin/reassign_partitions", -1); err != nil {
			t.Fatal(err)
		}
		r = run("reassign-partitions", zkArg, "--verify", "--reassignment-json-file", plan)
		mustFail(t, r, 1, "1 of 2 partitions failed")
		want := "Status of partition reassignment:\nReassignment of partition one-0 failed\nReassignment of partition t-0 completed successfully\nThrottle was removed.\n"
		if r.out != want {
			t.Fatalf("verify output %q, want %q", r.out, want)
		}
		if got := e.znode("/config/brokers/2"); strings.Contains(got, "throttled") {
			t.Fatalf("throttle left on broker 2: %s", got)
		}
		if got := e.znode("/config/topics/t"); strings.Contains(got, "throttled") {
			t.Fatalf("throttle left on topic t: %s", got)
		}
		e.setAssignment("one", `{"version":2,"partitions":{"0":[1,2,3]},"adding_replicas":{},"removing_replicas":{}}`)
		out := mustOK(t, run("reassign-partitions", zkArg, "--verify", "--reassignment-json-file", plan))
		if out != "Status of partition reassignment:\nReassignment of partition one-0 completed successfully\nReassignment of partition t-0 completed successfully\n" {
			t.Fatalf("verify output %q", out)
		}
	})
}

func (e *env) setAssignment(topic, data string) {
	e.t.Helper()
	if _, err := e.raw.Set(e.chroot+"/brokers/topics/"+topic, []byte(data), -1); err != nil {
		e.t.Fatal(err)
	}
}

func TestLineCol(t *testing.T) {
	data := []byte("ab\ncd\nef")
	for off, want := range map[int64][2]int{0: {1, 1}, 1: {1, 1}, 2: {1, 2}, 4: {2, 1}, 5: {2, 2}, 8: {3, 2}, 99: {3, 2}} {
		l, c := lineCol(data, off)
		if l != want[0] || c != want[1] {
			t.Errorf("offset %d: line %d column %d, want %v", off, l, c, want)
		}
	}
}
