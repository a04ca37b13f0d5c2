package integration

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/isrbroker/isrbroker/tests/cluster"
)

// rawRequest sends req to broker id only and returns its answer.
func rawRequest(t *testing.T, c *cluster.Cluster, id int32, req kmsg.Request) kmsg.Response {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Broker(id).Addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := cl.SeedBrokers()[0].Request(ctx, req)
	if err != nil {
		t.Fatalf("%s to broker %d: %v", kmsg.NameForKey(req.Key()), id, err)
	}
	return resp
}

// createPartitionsRaw sends one CreatePartitions request to broker id and returns the
// per-topic error codes.
func createPartitionsRaw(t *testing.T, c *cluster.Cluster, id int32, validateOnly bool, topics ...kmsg.CreatePartitionsRequestTopic) map[string]int16 {
	t.Helper()
	req := kmsg.NewPtrCreatePartitionsRequest()
	req.Topics, req.TimeoutMillis, req.ValidateOnly = topics, 15000, validateOnly
	resp := rawRequest(t, c, id, req).(*kmsg.CreatePartitionsResponse)
	out := map[string]int16{}
	for _, rt := range resp.Topics {
		if _, dup := out[rt.Topic]; dup && rt.ErrorCode != out[rt.Topic] {
			t.Fatalf("topic %s answered twice with different codes", rt.Topic)
		}
		out[rt.Topic] = rt.ErrorCode
	}
	return out
}

func cpTopic(topic string, count int32, assignment ...[]int32) kmsg.CreatePartitionsRequestTopic {
	rt := kmsg.NewCreatePartitionsRequestTopic()
	rt.Topic, rt.Count = topic, count
	for _, a := range assignment {
		ra := kmsg.NewCreatePartitionsRequestTopicAssignment()
		ra.Replicas = a
		rt.Assignment = append(rt.Assignment, ra)
	}
	return rt
}

// CreatePartitions (API key 37): an RF=3 topic grows from 3 to 6 partitions through kadm
// while a default acks=all producer writes to every partition: the answer comes once the new
// partitions have leaders, they get full ISRs and take records, and every acknowledged record
// is read back exactly once. validate_only creates nothing; 6→5 is INVALID_PARTITIONS; a
// duplicate topic, a bad explicit assignment, an unknown topic and a non-controller broker
// get Kafka's errors; an explicit assignment is applied as given.
func TestCreatePartitionsUnderLoad(t *testing.T) {
	c := cluster.Start(t, cluster.Options{Brokers: 3})
	ctrl, others := nonControllers(t, c)
	const topic = "grow"
	assignment := c.CreateTopic(topic, 3, 3)
	waitFullISR(t, c, topic, assignment, failoverTimeout)
	p := startAckProducer(t, c.Client(kgo.MetadataMaxAge(time.Second), kgo.MetadataMinAge(250*time.Millisecond)), topic,
		ackProducerOptions{every: 2 * time.Millisecond, perTick: 2, keys: 64})
	p.waitProgress(t, 300, failoverTimeout, "before growing")

	adm := c.Admin()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if rs, err := adm.ValidateUpdatePartitions(ctx, 6, topic); err != nil || rs[topic].Err != nil {
		t.Fatalf("validate_only 3→6: %v %+v", err, rs)
	}
	if a, _ := c.ZK.TopicAssignment(topic); len(a) != 3 {
		t.Fatalf("validate_only changed the assignment: %v", a)
	}
	rs, err := adm.UpdatePartitions(ctx, 6, topic)
	if err != nil || rs[topic].Err != nil {
		t.Fatalf("3→6: %v %+v", err, rs)
	}
	// Answered after every new partition has a leader in the answering broker's metadata.
	leaders, err := cluster.MetadataLeaders(ctx, c.Broker(ctrl).Addr, topic)
	if err != nil || len(leaders) != 6 {
		t.Fatalf("controller metadata right after the answer: %v %v", leaders, err)
	}
	for part, l := range leaders {
		if l < 0 {
			t.Fatalf("partition %d without a leader right after the answer: %v", part, leaders)
		}
	}
	grown, err := c.ZK.TopicAssignment(topic)
	if err != nil || len(grown) != 6 {
		t.Fatalf("assignment after growing: %v %v", grown, err)
	}
	waitFullISR(t, c, topic, grown, failoverTimeout)
	cluster.WaitFor(t, 30*time.Second, func() (bool, string) {
		for part := int32(3); part < 6; part++ {
			if n := p.countWhere(func(a acked) bool { return a.Partition == part }); n < 20 {
				return false, fmt.Sprintf("partition %d: %d records acknowledged", part, n)
			}
		}
		return true, ""
	})

	rs, err = adm.UpdatePartitions(ctx, 5, topic)
	if err != nil || !errors.Is(rs[topic].Err, kerr.InvalidPartitions) {
		t.Fatalf("6→5: %v %+v", err, rs)
	}
	codes := createPartitionsRaw(t, c, ctrl, false, cpTopic(topic, 8), cpTopic(topic, 8), cpTopic("nope", 4))
	if codes[topic] != kerr.InvalidRequest.Code || codes["nope"] != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("duplicate and unknown topics: %v", codes)
	}
	codes = createPartitionsRaw(t, c, ctrl, false, cpTopic(topic, 8, []int32{1, 2, 3}))
	if codes[topic] != kerr.InvalidReplicaAssignment.Code {
		t.Fatalf("one assignment for two new partitions: %v", codes)
	}
	codes = createPartitionsRaw(t, c, ctrl, false, cpTopic(topic, 7, []int32{1, 2, 99}))
	if codes[topic] != kerr.InvalidReplicaAssignment.Code {
		t.Fatalf("unknown broker in the assignment: %v", codes)
	}
	codes = createPartitionsRaw(t, c, others[0], false, cpTopic(topic, 7))
	if codes[topic] != kerr.NotController.Code {
		t.Fatalf("non-controller: %v", codes)
	}
	codes = createPartitionsRaw(t, c, ctrl, false, cpTopic(topic, 7, []int32{others[1], ctrl, others[0]}))
	if codes[topic] != 0 {
		t.Fatalf("explicit assignment: %v", codes)
	}
	if a, _ := c.ZK.TopicAssignment(topic); len(a) != 7 || fmt.Sprint(a[6]) != fmt.Sprint([]int32{others[1], ctrl, others[0]}) {
		t.Fatalf("assignment after the explicit growth: %v", a)
	}

	// `isrbroker topics --alter --partitions` through --bootstrap-server: automatic, then an
	// explicit --replica-assignment listing every partition (kafka-topics.sh's format).
	bs := "--bootstrap-server=" + strings.Join(c.BootstrapAddrs(), ",")
	if out := adminOK(t, "topics", bs, "--alter", "--topic", topic, "--partitions", "8"); !strings.Contains(out, "Adding partitions succeeded!") {
		t.Fatalf("topics --alter: %q", out)
	}
	a, _ := c.ZK.TopicAssignment(topic)
	var parts []string
	for part := int32(0); part < 8; part++ {
		parts = append(parts, joinInt32s(a[part], ":"))
	}
	parts = append(parts, joinInt32s([]int32{ctrl, others[1], others[0]}, ":"))
	adminOK(t, "topics", bs, "--alter", "--topic", topic, "--partitions", "9", "--replica-assignment", strings.Join(parts, ","))
	if a, _ := c.ZK.TopicAssignment(topic); len(a) != 9 || fmt.Sprint(a[8]) != fmt.Sprint([]int32{ctrl, others[1], others[0]}) {
		t.Fatalf("assignment after the tool's explicit growth: %v", a)
	}
	r := admin(t, "topics", bs, "--alter", "--topic", topic, "--partitions", "4")
	if r.ExitCode != 1 || !strings.Contains(r.Stderr, "INVALID_PARTITIONS") {
		t.Fatalf("topics --alter shrinking: exit %d\nstdout: %s\nstderr: %s", r.ExitCode, r.Stdout, r.Stderr)
	}
	final, _ := c.ZK.TopicAssignment(topic)
	waitFullISR(t, c, topic, final, failoverTimeout)

	acks, fails := p.stop(t)
	for _, f := range fails {
		if !f.Stopping {
			t.Errorf("produce seq %d failed: %v", f.Seq, f.Err)
		}
	}
	checkPartitionLogs(t, readAll(t, c, topic, 9), acks)
}

func joinInt32s(ids []int32, sep string) string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = fmt.Sprint(id)
	}
	return strings.Join(out, sep)
}
