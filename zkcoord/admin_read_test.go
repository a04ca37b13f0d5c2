package zkcoord

import (
	"reflect"
	"testing"
)

// assignReplicasFrom is Kafka's assignReplicasToBrokersRackUnaware with a fixed start index:
// from partition 0 it equals AssignReplicasToBrokers with that start index and shift; from
// partition k the shift starts again at the start index (as in Kafka's addPartitions).
func TestAssignReplicasFromContinuesCreationLayout(t *testing.T) {
	brokers := []int32{1, 2, 3, 4, 5}
	for start := 0; start < len(brokers); start++ {
		full, err := AssignReplicasToBrokers(brokers, 12, 3, start, start)
		if err != nil {
			t.Fatal(err)
		}
		got, err := assignReplicasFrom(brokers, 12, 3, start, 0)
		if err != nil || !reflect.DeepEqual(got, full) {
			t.Fatalf("start %d: %v %v, want %v", start, got, err, full)
		}
	}
	// Brokers 1..5, start index 0, partitions 7 and 10: first replica at index p%5, shift 0
	// for p=7, 1 for p=10 (p%5 == 0).
	got, err := assignReplicasFrom(brokers, 4, 3, 0, 7)
	want := map[int32][]int32{7: {3, 4, 5}, 8: {4, 5, 1}, 9: {5, 1, 2}, 10: {1, 3, 4}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v %v, want %v", got, err, want)
	}
	if _, err := assignReplicasFrom(brokers, 1, 6, 0, 0); err == nil {
		t.Fatal("replication factor above the broker count accepted")
	}
}
