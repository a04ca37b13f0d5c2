package admin

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/sirupsen/logrus"

	"github.com/isrbroker/isrbroker/zkcoord/zkdata"
	"github.com/isrbroker/isrbroker/zkcoord/zkmem"
)

// Issue 28 item 6: a partition count above MaxTopicPartitions is refused with
// ErrInvalidPartitions naming the limit, at once and without allocating for it, whether
// validating only or not, at creation (a count or an explicit assignment) and when growing.
func TestPartitionCountAboveLimitRefused(t *testing.T) {
	conn := zkmem.NewServer().Connect(nil)
	for _, p := range []string{"/brokers", zkdata.PathBrokerIDs, zkdata.PathBrokerTopics, "/config", zkdata.PathConfigTopics, "/admin", zkdata.PathDeleteTopics} {
		if _, err := conn.Create(p, nil, 0); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := conn.Create(zkdata.BrokerIDPath(1), zkdata.EncodeBroker([]zkdata.Endpoint{{Listener: "PLAINTEXT", Host: "127.0.0.1", Port: 9092, SecurityProtocol: "PLAINTEXT"}}, ""), zk.FlagEphemeral); err != nil {
		t.Fatal(err)
	}
	adm := New(conn, NewReader(conn, logrus.New()), true, logrus.New())
	ctx := context.Background()
	limit := strconv.Itoa(MaxTopicPartitions)
	refused := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, ErrInvalidPartitions) || !strings.Contains(err.Error(), limit) {
			t.Fatalf("%s: %v, want ErrInvalidPartitions naming the limit %s", what, err, limit)
		}
	}
	huge := make(map[int32][]int32, MaxTopicPartitions+1)
	for p := int32(0); p <= MaxTopicPartitions; p++ {
		huge[p] = []int32{1}
	}
	for _, validateOnly := range []bool{true, false} {
		_, err := adm.CreateTopic(ctx, TopicSpec{Name: "over", NumPartitions: MaxTopicPartitions + 1, ReplicationFactor: 1}, validateOnly)
		refused("CreateTopic limit+1", err)
		_, err = adm.CreateTopic(ctx, TopicSpec{Name: "over", Assignment: huge}, validateOnly)
		refused("CreateTopic assignment of limit+1", err)
		start := time.Now()
		_, err = adm.CreateTopic(ctx, TopicSpec{Name: "huge", NumPartitions: 1<<31 - 1, ReplicationFactor: 1}, validateOnly)
		refused("CreateTopic 2^31-1", err)
		if d := time.Since(start); d > time.Second {
			t.Fatalf("CreateTopic 2^31-1 took %v", d)
		}
	}
	if ok, _, _ := conn.Exists(zkdata.TopicPath("over")); ok {
		t.Fatal("a refused topic was written")
	}
	if _, err := adm.CreateTopic(ctx, TopicSpec{Name: "grow", NumPartitions: 2, ReplicationFactor: 1}, false); err != nil {
		t.Fatal(err)
	}
	for _, validateOnly := range []bool{true, false} {
		_, err := adm.AddPartitions(ctx, "grow", MaxTopicPartitions+1, nil, validateOnly)
		refused("AddPartitions limit+1", err)
		_, err = adm.AddPartitions(ctx, "grow", 1<<31-1, nil, validateOnly)
		refused("AddPartitions 2^31-1", err)
	}
	if _, err := AssignReplicasToBrokers([]int32{1}, 1<<31-1, 1, 0, 0); !errors.Is(err, ErrInvalidPartitions) {
		t.Fatalf("AssignReplicasToBrokers 2^31-1: %v", err)
	}
	// The limit itself is allowed.
	if _, err := adm.CreateTopic(ctx, TopicSpec{Name: "max", NumPartitions: MaxTopicPartitions, ReplicationFactor: 1}, true); err != nil {
		t.Fatalf("CreateTopic at the limit: %v", err)
	}
}
