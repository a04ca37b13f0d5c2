package admin

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
)

// Rack-aware replica assignment (KIP-36; Kafka 2.4's AdminUtils.assignReplicasToBrokers,
// docs/kafka-facts.md §14). Brokers register their `broker.rack` in /brokers/ids/<id>; when
// every live broker has one, the replicas of each partition go to as many different racks as
// the replication factor allows.

// ErrRackInfoIncomplete: some live brokers have a rack and others do not, so a rack-aware
// assignment cannot be made (Kafka's AdminOperationException; CreateTopics answers
// UNKNOWN_SERVER_ERROR with its message, as Kafka 2.4 does). The errors returned wrap it with
// Kafka's two messages: errRackAssignment's (AdminUtils) and errRackEnforced's (AdminZkClient's
// getBrokerMetadatas, met first on the create and add-partitions paths).
var ErrRackInfoIncomplete = errors.New("incomplete broker rack information")

// rackError is an ErrRackInfoIncomplete with Kafka's message.
type rackError struct{ msg string }

func (e *rackError) Error() string        { return e.msg }
func (e *rackError) Is(target error) bool { return target == ErrRackInfoIncomplete }

var (
	errRackAssignment = &rackError{"Not all brokers have rack information for replica rack aware assignment"}
	errRackEnforced   = &rackError{"Not all brokers have rack information. Add --disable-rack-aware in command line to make replica assignment without rack information."}
)

// RackAwareMode is Kafka's RackAwareMode: how the brokers' racks enter an assignment.
type RackAwareMode int8

const (
	// RackAwareEnforced uses the racks when every broker has one and refuses a mix (Kafka's
	// default for CreateTopics, CreatePartitions and kafka-topics.sh).
	RackAwareEnforced RackAwareMode = iota
	// RackAwareDisabled ignores the racks (kafka-topics.sh --disable-rack-aware).
	RackAwareDisabled
	// RackAwareSafe uses the racks only when every broker has one.
	RackAwareSafe
)

// BrokerRack is a broker id with its rack ("" when it has none): Kafka's BrokerMetadata.
type BrokerRack struct {
	ID   int32
	Rack string
}

// brokerMetadatas returns the live brokers sorted by id, with their racks as mode allows
// (Kafka's AdminZkClient.getBrokerMetadatas).
func (adm *Admin) brokerMetadatas(mode RackAwareMode) ([]BrokerRack, error) {
	bs, err := adm.r.LiveBrokers()
	if err != nil {
		return nil, err
	}
	return BrokerRacks(bs, mode, nil)
}

// BrokerRacks is Kafka's AdminZkClient.getBrokerMetadatas over the registered brokers bs:
// those listed in only (all of them when only is nil), sorted by id, with their racks as mode
// allows; under RackAwareEnforced a mix of brokers with and without a rack is refused with
// Kafka's message (reassignment --generate uses it with its --broker-list).
func BrokerRacks(bs []BrokerInfo, mode RackAwareMode, only []int32) ([]BrokerRack, error) {
	out := make([]BrokerRack, 0, len(bs))
	withRack := 0
	for _, b := range bs {
		if only != nil && !slices.Contains(only, b.ID) {
			continue
		}
		out = append(out, BrokerRack{ID: b.ID, Rack: b.Rack})
		if b.Rack != "" {
			withRack++
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	switch {
	case mode == RackAwareDisabled, mode == RackAwareSafe && withRack < len(out):
		for i := range out {
			out[i].Rack = ""
		}
	case mode == RackAwareEnforced && withRack > 0 && withRack < len(out):
		return nil, errRackEnforced
	}
	return out, nil
}

// AssignReplicas is Kafka's AdminUtils.assignReplicasToBrokers over brokers sorted by id:
// rack-unaware (AssignReplicasToBrokers' rule) when no broker has a rack, rack-aware when all
// have one, ErrRackInfoIncomplete for a mix. fixedStartIndex < 0 picks the first replica's
// start and the replica shift at random; otherwise it is both, as in Kafka. Partition ids
// start at startPartition (addPartitions continues the existing layout).
func AssignReplicas(brokers []BrokerRack, nPartitions int32, rf int, fixedStartIndex int, startPartition int32) (map[int32][]int32, error) {
	if nPartitions <= 0 {
		return nil, fmt.Errorf("%w: number of partitions must be larger than 0", ErrInvalidPartitions)
	}
	if err := checkPartitionCount("", int64(startPartition)+int64(nPartitions)); err != nil {
		return nil, err
	}
	if rf <= 0 {
		return nil, fmt.Errorf("%w: replication factor must be larger than 0", ErrInvalidReplicationFactor)
	}
	if rf > len(brokers) {
		return nil, fmt.Errorf("%w: replication factor: %d larger than available brokers: %d", ErrInvalidReplicationFactor, rf, len(brokers))
	}
	withRack := 0
	ids := make([]int32, len(brokers))
	for i, b := range brokers {
		ids[i] = b.ID
		if b.Rack != "" {
			withRack++
		}
	}
	if withRack == 0 {
		start, shift := fixedStartIndex, fixedStartIndex
		if fixedStartIndex < 0 {
			start, shift = rand.IntN(len(ids)), rand.IntN(len(ids))
		}
		return assignRackUnaware(ids, nPartitions, rf, start, shift, startPartition), nil
	}
	if withRack < len(brokers) {
		return nil, errRackAssignment
	}
	return assignRackAware(brokers, nPartitions, rf, fixedStartIndex, startPartition), nil
}

// assignRackUnaware is Kafka's assignReplicasToBrokersRackUnaware: the first replica of
// partition p on broker (p + start) mod n, the others at a shift that grows by one every n
// partitions.
func assignRackUnaware(ids []int32, nPartitions int32, rf, start, shift int, startPartition int32) map[int32][]int32 {
	n := len(ids)
	out := make(map[int32][]int32, nPartitions)
	for p := startPartition; p < startPartition+nPartitions; p++ {
		if p > 0 && int(p)%n == 0 {
			shift++
		}
		first := (int(p) + start) % n
		r := make([]int32, 0, rf)
		r = append(r, ids[first])
		for j := 0; j < rf-1; j++ {
			r = append(r, ids[replicaIndex(first, shift, j, n)])
		}
		out[p] = r
	}
	return out
}

// replicaIndex is Kafka's: the j-th follower's index at a shift of 1 + (shift + j) mod (n - 1)
// from the first replica, so a follower never lands on the first replica's broker.
func replicaIndex(first, shift, j, n int) int {
	return (first + 1 + (shift+j)%(n-1)) % n
}

// assignRackAware is Kafka's assignReplicasToBrokersRackAware: round-robin over the
// rack-alternated broker list for the first replica; each further replica takes the next
// broker (at the growing shift, times the rack count) that is on a rack without a replica of
// the partition yet, until every rack has one, and that holds no replica yet, until every
// broker has one.
func assignRackAware(brokers []BrokerRack, nPartitions int32, rf, fixedStartIndex int, startPartition int32) map[int32][]int32 {
	rackOf := make(map[int32]string, len(brokers))
	racks := map[string]bool{}
	for _, b := range brokers {
		rackOf[b.ID] = b.Rack
		racks[b.Rack] = true
	}
	numRacks := len(racks)
	arranged := rackAlternatedBrokers(brokers)
	n := len(arranged)
	start, shift := fixedStartIndex, fixedStartIndex
	if fixedStartIndex < 0 {
		start, shift = rand.IntN(n), rand.IntN(n)
	}
	out := make(map[int32][]int32, nPartitions)
	for p := startPartition; p < startPartition+nPartitions; p++ {
		if p > 0 && int(p)%n == 0 {
			shift++
		}
		first := (int(p) + start) % n
		leader := arranged[first]
		r := make([]int32, 0, rf)
		r = append(r, leader)
		racksWith := map[string]bool{rackOf[leader]: true}
		brokersWith := map[int32]bool{leader: true}
		k := 0
		for len(r) < rf {
			b := arranged[replicaIndex(first, shift*numRacks, k, n)]
			k++
			rack := rackOf[b]
			if (!racksWith[rack] || len(racksWith) == numRacks) && (!brokersWith[b] || len(brokersWith) == n) {
				r = append(r, b)
				racksWith[rack] = true
				brokersWith[b] = true
			}
		}
		out[p] = r
	}
	return out
}

// rackAlternatedBrokers is Kafka's getRackAlternatedBrokerList: the racks in name order, each
// rack's brokers in id order, taken one broker per rack in turn (rack1: 0,1,2; rack2: 3,4,5 ->
// 0,3,1,4,2,5).
func rackAlternatedBrokers(brokers []BrokerRack) []int32 {
	byRack := map[string][]int32{}
	for _, b := range brokers {
		byRack[b.Rack] = append(byRack[b.Rack], b.ID)
	}
	racks := make([]string, 0, len(byRack))
	for rack, ids := range byRack {
		sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
		racks = append(racks, rack)
	}
	sort.Strings(racks)
	out := make([]int32, 0, len(brokers))
	for i := 0; len(out) < len(brokers); i++ {
		for _, rack := range racks {
			if i < len(byRack[rack]) {
				out = append(out, byRack[rack][i])
			}
		}
	}
	return out
}
