package admin

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/go-zookeeper/zk"
	"github.com/sirupsen/logrus"

	"github.com/isrbroker/isrbroker/zkcoord/zkdata"
	"github.com/isrbroker/isrbroker/zkcoord/zkmem"
)

// AddPartitions reads and writes the version 2 topic znode: a KIP-455 reassignment's
// adding/removing replicas refuse the change (REASSIGNMENT_IN_PROGRESS), and a topic without
// one grows with its existing partitions kept as they are.
func TestAddPartitionsKeepsTheFullTopicZNode(t *testing.T) {
	conn := zkmem.NewServer().Connect(nil)
	for _, p := range []string{"/brokers", zkdata.PathBrokerIDs, zkdata.PathBrokerTopics, "/admin", zkdata.PathDeleteTopics} {
		if _, err := conn.Create(p, nil, 0); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []int32{1, 2, 3} {
		if _, err := conn.Create(zkdata.BrokerIDPath(id), zkdata.EncodeBroker([]zkdata.Endpoint{{Listener: "PLAINTEXT", Host: "127.0.0.1", Port: 9092 + id, SecurityProtocol: "PLAINTEXT"}}, ""), zk.FlagEphemeral); err != nil {
			t.Fatal(err)
		}
	}
	adm := New(conn, NewReader(conn, logrus.New()), true, logrus.New())

	moving := map[int32]zkdata.ReplicaAssignment{
		0: {Replicas: []int32{1, 2, 3}, Adding: []int32{3}, Removing: []int32{1}},
		1: {Replicas: []int32{2, 3}},
	}
	if _, err := conn.Create(zkdata.TopicPath("moving"), zkdata.EncodeTopicFull(moving), 0); err != nil {
		t.Fatal(err)
	}
	if _, err := adm.AddPartitions(context.Background(), "moving", 3, nil, false); !errors.Is(err, ErrReassignmentInProgress) {
		t.Fatalf("AddPartitions during a KIP-455 reassignment: %v, want ErrReassignmentInProgress", err)
	}
	data, _, _ := conn.Get(zkdata.TopicPath("moving"))
	if got, _ := zkdata.DecodeTopicFull("moving", data); !reflect.DeepEqual(got, moving) {
		t.Fatalf("topic znode changed by a refused AddPartitions: %+v", got)
	}

	still := map[int32]zkdata.ReplicaAssignment{0: {Replicas: []int32{1, 2}}, 1: {Replicas: []int32{2, 3}}}
	if _, err := conn.Create(zkdata.TopicPath("still"), zkdata.EncodeTopicFull(still), 0); err != nil {
		t.Fatal(err)
	}
	added, err := adm.AddPartitions(context.Background(), "still", 4, nil, false)
	if err != nil || len(added) != 2 {
		t.Fatalf("AddPartitions: %v %v", added, err)
	}
	data, _, _ = conn.Get(zkdata.TopicPath("still"))
	got, err := zkdata.DecodeTopicFull("still", data)
	if err != nil || len(got) != 4 || !reflect.DeepEqual(got[0], still[0]) || !reflect.DeepEqual(got[1], still[1]) {
		t.Fatalf("grown topic znode %+v %v", got, err)
	}
}
