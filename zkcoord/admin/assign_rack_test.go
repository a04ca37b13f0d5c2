package admin

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"testing"

	"github.com/go-zookeeper/zk"
	"github.com/sirupsen/logrus"

	"github.com/isrbroker/isrbroker/zkcoord/zkdata"
	"github.com/isrbroker/isrbroker/zkcoord/zkmem"
)

// racks pairs ids with rackOf (nil: no racks), keeping the order of ids.
func racks(ids []int32, rackOf map[int32]string) []BrokerRack {
	out := make([]BrokerRack, len(ids))
	for i, id := range ids {
		out[i] = BrokerRack{ID: id, Rack: rackOf[id]}
	}
	return out
}

// Kafka's own example (AdminUtils' doc, docs/kafka-facts.md §14): the rack-alternated list and
// the assignment from start index 0, including the shifted partition 6.
func TestRackAwareAssignmentKafkaExample(t *testing.T) {
	rackOf := map[int32]string{0: "rack1", 1: "rack3", 2: "rack3", 3: "rack2", 4: "rack2", 5: "rack1"}
	brokers := racks([]int32{0, 1, 2, 3, 4, 5}, rackOf)
	if got, want := rackAlternatedBrokers(brokers), []int32{0, 3, 1, 5, 4, 2}; !reflect.DeepEqual(got, want) {
		t.Fatalf("rack-alternated list %v, want %v", got, want)
	}
	got, err := AssignReplicas(brokers, 7, 3, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := map[int32][]int32{
		0: {0, 3, 1}, 1: {3, 1, 5}, 2: {1, 5, 4}, 3: {5, 4, 2}, 4: {4, 2, 0}, 5: {2, 0, 3},
		6: {0, 4, 2},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v\nwant %v", got, want)
	}
}

// The properties Kafka's RackAwareTest checks: every partition's replicas are distinct and span
// min(rf, racks) racks; each broker leads and holds an even share when racks are even.
func TestRackAwareAssignmentProperties(t *testing.T) {
	cases := []struct {
		name   string
		rackOf map[int32]string
		parts  int32
		rf     int
		even   bool
	}{
		{"3 racks of 2, rf 3", map[int32]string{1: "a", 2: "a", 3: "b", 4: "b", 5: "c", 6: "c"}, 60, 3, true},
		{"3 racks of 1, rf 2", map[int32]string{1: "a", 2: "b", 3: "c"}, 30, 2, true},
		{"2 racks, rf 3 (more replicas than racks)", map[int32]string{1: "a", 2: "a", 3: "b", 4: "b"}, 40, 3, true},
		{"uneven racks, rf 2", map[int32]string{1: "a", 2: "a", 3: "a", 4: "b"}, 20, 2, false},
	}
	for _, tc := range cases {
		var ids []int32
		for id := range tc.rackOf {
			ids = append(ids, id)
		}
		brokers := racks(sortedIDs(ids), tc.rackOf)
		numRacks := map[string]bool{}
		for _, r := range tc.rackOf {
			numRacks[r] = true
		}
		for _, start := range []int{-1, 0, 3} {
			a, err := AssignReplicas(brokers, tc.parts, tc.rf, start, 0)
			if err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			leaders, replicas := map[int32]int{}, map[int32]int{}
			for p := int32(0); p < tc.parts; p++ {
				r := a[p]
				if len(r) != tc.rf {
					t.Fatalf("%s: partition %d has %v", tc.name, p, r)
				}
				seenB, seenR := map[int32]bool{}, map[string]bool{}
				for _, b := range r {
					if seenB[b] {
						t.Fatalf("%s: partition %d repeats broker %d: %v", tc.name, p, b, r)
					}
					seenB[b], seenR[tc.rackOf[b]] = true, true
					replicas[b]++
				}
				if want := min(tc.rf, len(numRacks)); len(seenR) != want {
					t.Fatalf("%s: partition %d %v spans %d racks, want %d", tc.name, p, r, len(seenR), want)
				}
				leaders[r[0]]++
			}
			if tc.even {
				for _, id := range ids {
					if leaders[id] != int(tc.parts)/len(ids) || replicas[id] != int(tc.parts)*tc.rf/len(ids) {
						t.Fatalf("%s start %d: broker %d leads %d and holds %d, want %d and %d", tc.name, start, id,
							leaders[id], replicas[id], int(tc.parts)/len(ids), int(tc.parts)*tc.rf/len(ids))
					}
				}
			}
		}
	}
}

func sortedIDs(ids []int32) []int32 {
	out := append([]int32(nil), ids...)
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j] < out[j-1]; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// A mix of brokers with and without racks is refused (Kafka's AdminOperationException); too
// few brokers for the replication factor is INVALID_REPLICATION_FACTOR either way.
func TestRackAwareAssignmentErrors(t *testing.T) {
	mixed := racks([]int32{1, 2, 3}, map[int32]string{1: "a", 2: "b"})
	if _, err := AssignReplicas(mixed, 3, 2, -1, 0); !errors.Is(err, ErrRackInfoIncomplete) {
		t.Fatalf("mixed racks: %v, want ErrRackInfoIncomplete", err)
	}
	all := racks([]int32{1, 2}, map[int32]string{1: "a", 2: "b"})
	if _, err := AssignReplicas(all, 3, 3, -1, 0); !errors.Is(err, ErrInvalidReplicationFactor) {
		t.Fatalf("rf 3 over 2 brokers: %v, want ErrInvalidReplicationFactor", err)
	}
	if _, err := AssignReplicas(all, 0, 1, -1, 0); !errors.Is(err, ErrInvalidPartitions) {
		t.Fatalf("0 partitions: %v, want ErrInvalidPartitions", err)
	}
}

// CreateTopic and AddPartitions read the racks from /brokers/ids (Kafka's getBrokerMetadatas):
// with every broker in a rack the replicas of each partition span distinct racks; a broker
// without a rack makes Enforced refuse, Disabled and Safe assign rack-unaware.
func TestCreateTopicUsesRegisteredRacks(t *testing.T) {
	conn := zkmem.NewServer().Connect(nil)
	for _, p := range []string{"/brokers", zkdata.PathBrokerIDs, zkdata.PathBrokerTopics, "/admin", zkdata.PathDeleteTopics, "/config", "/config/topics"} {
		if _, err := conn.Create(p, nil, 0); err != nil {
			t.Fatal(err)
		}
	}
	register := func(id int32, rack string) {
		t.Helper()
		if _, err := conn.Create(zkdata.BrokerIDPath(id), zkdata.EncodeBroker([]zkdata.Endpoint{{Listener: "PLAINTEXT", Host: "127.0.0.1", Port: 9092 + id, SecurityProtocol: "PLAINTEXT"}}, rack), zk.FlagEphemeral); err != nil {
			t.Fatal(err)
		}
	}
	rackOf := map[int32]string{1: "az-a", 2: "az-a", 3: "az-b", 4: "az-b"}
	for id, rack := range rackOf {
		register(id, rack)
	}
	adm := New(conn, NewReader(conn, logrus.New()), true, logrus.New())
	ctx := context.Background()
	spansRacks := func(a map[int32][]int32) {
		t.Helper()
		for p, r := range a {
			if rackOf[r[0]] == rackOf[r[1]] {
				t.Fatalf("partition %d on %v: both replicas in rack %s", p, r, rackOf[r[0]])
			}
		}
	}
	a, err := adm.CreateTopic(ctx, TopicSpec{Name: "racked", NumPartitions: 8, ReplicationFactor: 2}, false)
	if err != nil {
		t.Fatal(err)
	}
	spansRacks(a)
	added, err := adm.AddPartitions(ctx, "racked", 12, nil, false)
	if err != nil || len(added) != 4 {
		t.Fatalf("AddPartitions: %v %v", added, err)
	}
	spansRacks(added)

	register(5, "") // a broker without broker.rack
	if _, err := adm.CreateTopic(ctx, TopicSpec{Name: "mixed", NumPartitions: 2, ReplicationFactor: 2}, true); !errors.Is(err, ErrRackInfoIncomplete) {
		t.Fatalf("Enforced with a broker without a rack: %v, want ErrRackInfoIncomplete", err)
	}
	for _, mode := range []RackAwareMode{RackAwareDisabled, RackAwareSafe} {
		if _, err := adm.CreateTopic(ctx, TopicSpec{Name: "mixed", NumPartitions: 10, ReplicationFactor: 2, RackAwareMode: mode}, true); err != nil {
			t.Fatalf("mode %d with a broker without a rack: %v", mode, err)
		}
	}
}

// TestBrokerRacksFiltersAndModes: reassignment --generate's broker metadata (Kafka's
// getBrokerMetadatas with a broker list): only the listed brokers, sorted, racks as the mode
// allows; a mix is refused only when enforced.
func TestBrokerRacksFiltersAndModes(t *testing.T) {
	bs := []BrokerInfo{{ID: 3, Rack: "b"}, {ID: 1, Rack: "a"}, {ID: 2}, {ID: 4, Rack: "a"}}
	got, err := BrokerRacks(bs, RackAwareEnforced, []int32{4, 3, 1})
	if err != nil {
		t.Fatal(err)
	}
	if want := []BrokerRack{{1, "a"}, {3, "b"}, {4, "a"}}; !slices.Equal(got, want) {
		t.Fatalf("enforced over 4,3,1: %v, want %v", got, want)
	}
	if _, err := BrokerRacks(bs, RackAwareEnforced, nil); !errors.Is(err, ErrRackInfoIncomplete) {
		t.Fatalf("enforced over a mix: %v, want ErrRackInfoIncomplete", err)
	}
	got, err = BrokerRacks(bs, RackAwareSafe, nil)
	if err != nil || len(got) != 4 || got[0] != (BrokerRack{ID: 1}) {
		t.Fatalf("safe over a mix: %v %v, want 4 brokers without racks", got, err)
	}
	got, err = BrokerRacks(bs, RackAwareDisabled, []int32{1, 3})
	if err != nil || !slices.Equal(got, []BrokerRack{{ID: 1}, {ID: 3}}) {
		t.Fatalf("disabled: %v %v", got, err)
	}
}
