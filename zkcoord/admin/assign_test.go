package admin

import (
	"errors"
	"reflect"
	"testing"
)

// AssignReplicas without racks is Kafka's assignReplicasToBrokersRackUnaware with a fixed start index:
// from partition 0 it equals AssignReplicasToBrokers with that start index and shift; from
// partition k the shift starts again at the start index (as in Kafka's addPartitions).
func TestAssignReplicasFromContinuesCreationLayout(t *testing.T) {
	brokers := []int32{1, 2, 3, 4, 5}
	for start := 0; start < len(brokers); start++ {
		full, err := AssignReplicasToBrokers(brokers, 12, 3, start, start)
		if err != nil {
			t.Fatal(err)
		}
		got, err := AssignReplicas(racks(brokers, nil), 12, 3, start, 0)
		if err != nil || !reflect.DeepEqual(got, full) {
			t.Fatalf("start %d: %v %v, want %v", start, got, err, full)
		}
	}
	// Brokers 1..5, start index 0, partitions 7 and 10: first replica at index p%5, shift 0
	// for p=7, 1 for p=10 (p%5 == 0).
	got, err := AssignReplicas(racks(brokers, nil), 4, 3, 0, 7)
	want := map[int32][]int32{7: {3, 4, 5}, 8: {4, 5, 1}, 9: {5, 1, 2}, 10: {1, 3, 4}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v %v, want %v", got, err, want)
	}
	if _, err := AssignReplicas(racks(brokers, nil), 1, 6, 0, 0); err == nil {
		t.Fatal("replication factor above the broker count accepted")
	}
}

func TestAssignReplicasToBrokersKafkaTable(t *testing.T) {
	// Kafka's AdminTest.testReplicaAssignment: 5 brokers, 10 partitions, RF 3, start index 0.
	want := map[int32][]int32{
		0: {0, 1, 2}, 1: {1, 2, 3}, 2: {2, 3, 4}, 3: {3, 4, 0}, 4: {4, 0, 1},
		5: {0, 2, 3}, 6: {1, 3, 4}, 7: {2, 4, 0}, 8: {3, 0, 1}, 9: {4, 1, 2},
	}
	got, err := AssignReplicasToBrokers([]int32{4, 3, 2, 1, 0}, 10, 3, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v\nwant %v", got, want)
	}
}

func TestAssignReplicasToBrokersProperties(t *testing.T) {
	cases := []struct {
		brokers []int32
		parts   int32
		rf      int16
	}{
		{[]int32{1}, 1, 1}, {[]int32{1}, 8, 1}, {[]int32{1, 2, 3}, 3, 3}, {[]int32{1, 2, 3}, 30, 2},
		{[]int32{10, 20, 30, 40}, 12, 3}, {[]int32{0, 1, 2, 3, 4, 5}, 60, 3},
	}
	for _, tc := range cases {
		for rep := 0; rep < 5; rep++ {
			a, err := AssignReplicasToBrokers(tc.brokers, tc.parts, tc.rf, -1, -1)
			if err != nil {
				t.Fatal(err)
			}
			if int32(len(a)) != tc.parts {
				t.Fatalf("%v: %d partitions", tc, len(a))
			}
			leaders := map[int32]int{}
			replicas := map[int32]int{}
			for p := int32(0); p < tc.parts; p++ {
				r := a[p]
				if len(r) != int(tc.rf) {
					t.Fatalf("partition %d has %v", p, r)
				}
				seen := map[int32]bool{}
				for _, b := range r {
					if seen[b] {
						t.Fatalf("duplicate broker in partition %d: %v", p, r)
					}
					seen[b] = true
					replicas[b]++
				}
				leaders[r[0]]++
			}
			// Leaders and replicas spread evenly when partitions are a multiple of brokers.
			if int(tc.parts)%len(tc.brokers) == 0 {
				for _, b := range tc.brokers {
					if leaders[b] != int(tc.parts)/len(tc.brokers) {
						t.Fatalf("%v: uneven leaders %v", tc, leaders)
					}
					if replicas[b] != int(tc.parts)*int(tc.rf)/len(tc.brokers) {
						t.Fatalf("%v: uneven replicas %v", tc, replicas)
					}
				}
			}
		}
	}
}

func TestAssignReplicasToBrokersErrors(t *testing.T) {
	if _, err := AssignReplicasToBrokers([]int32{1, 2}, 3, 3, -1, -1); !errors.Is(err, ErrInvalidReplicationFactor) {
		t.Fatalf("rf > brokers: %v", err)
	}
	if _, err := AssignReplicasToBrokers([]int32{1, 2}, 3, 0, -1, -1); !errors.Is(err, ErrInvalidReplicationFactor) {
		t.Fatalf("rf 0: %v", err)
	}
	if _, err := AssignReplicasToBrokers([]int32{1, 2}, 0, 1, -1, -1); !errors.Is(err, ErrInvalidPartitions) {
		t.Fatalf("0 partitions: %v", err)
	}
	if _, err := AssignReplicasToBrokers(nil, 1, 1, -1, -1); !errors.Is(err, ErrInvalidReplicationFactor) {
		t.Fatalf("no brokers: %v", err)
	}
}
