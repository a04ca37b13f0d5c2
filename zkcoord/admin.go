package zkcoord

import (
	"context"
	"errors"
	"fmt"
	"github.com/isrbroker/isrbroker/zkcoord/internal/sorted"
	"github.com/isrbroker/isrbroker/zkcoord/zkdata"
	"math/rand/v2"
	"sort"
	"strings"

	"github.com/go-zookeeper/zk"
)

// TopicSpec describes a topic to create. With Assignment set, NumPartitions and
// ReplicationFactor are ignored.
type TopicSpec struct {
	Name              string
	NumPartitions     int32
	ReplicationFactor int16
	Assignment        map[int32][]int32
	Configs           map[string]string
}

// AssignReplicasToBrokers is Kafka's rack-unaware AdminUtils.assignReplicasToBrokers:
// the first replica of partition p goes to broker (p + startIndex) mod n; the others follow
// at a shift that grows by one every n partitions, so leaders and followers spread evenly.
// startIndex / nextReplicaShift -1 mean random. brokers is sorted (Kafka sorts by id).
func AssignReplicasToBrokers(brokers []int32, nPartitions int32, rf int16, startIndex, nextReplicaShift int) (map[int32][]int32, error) {
	if nPartitions <= 0 {
		return nil, fmt.Errorf("%w: number of partitions must be larger than 0", ErrInvalidPartitions)
	}
	if rf <= 0 {
		return nil, fmt.Errorf("%w: replication factor must be larger than 0", ErrInvalidReplicationFactor)
	}
	b := sorted.Int32s(brokers)
	for i := 1; i < len(b); i++ {
		if b[i] == b[i-1] {
			return nil, fmt.Errorf("%w: duplicate broker %d", ErrInvalidReplicaAssignment, b[i])
		}
	}
	n := len(b)
	if int(rf) > n {
		return nil, fmt.Errorf("%w: replication factor: %d larger than available brokers: %d", ErrInvalidReplicationFactor, rf, n)
	}
	if startIndex < 0 {
		startIndex = rand.IntN(n)
	}
	if nextReplicaShift < 0 {
		nextReplicaShift = rand.IntN(n)
	}
	out := make(map[int32][]int32, nPartitions)
	for p := 0; p < int(nPartitions); p++ {
		if p > 0 && p%n == 0 {
			nextReplicaShift++
		}
		first := (p + startIndex) % n
		replicas := make([]int32, 0, rf)
		replicas = append(replicas, b[first])
		for j := 0; j < int(rf)-1; j++ {
			shift := 1 + (nextReplicaShift+j)%(n-1)
			replicas = append(replicas, b[(first+shift)%n])
		}
		out[int32(p)] = replicas
	}
	return out, nil
}

func (c *Coordinator) liveBrokerIDs() ([]int32, error) {
	bs, err := c.LiveBrokers()
	if err != nil {
		return nil, err
	}
	ids := make([]int32, 0, len(bs))
	for _, b := range bs {
		ids = append(ids, b.ID)
	}
	return ids, nil
}

// validateAssignment checks an explicit assignment: partitions 0..n-1, equal sizes, no
// duplicate broker within a partition, only live brokers.
func validateAssignment(a map[int32][]int32, live []int32) error {
	if len(a) == 0 {
		return fmt.Errorf("%w: empty assignment", ErrInvalidReplicaAssignment)
	}
	liveSet := make(map[int32]bool, len(live))
	for _, id := range live {
		liveSet[id] = true
	}
	size := -1
	for p := int32(0); p < int32(len(a)); p++ {
		r, ok := a[p]
		if !ok {
			return fmt.Errorf("%w: partitions should be a consecutive 0-based integer sequence", ErrInvalidReplicaAssignment)
		}
		if len(r) == 0 {
			return fmt.Errorf("%w: partition %d has no replicas", ErrInvalidReplicaAssignment, p)
		}
		if size >= 0 && len(r) != size {
			return fmt.Errorf("%w: all partitions should have the same number of replicas", ErrInvalidReplicaAssignment)
		}
		size = len(r)
		seen := map[int32]bool{}
		for _, b := range r {
			if seen[b] {
				return fmt.Errorf("%w: duplicate replica %d in partition %d", ErrInvalidReplicaAssignment, b, p)
			}
			seen[b] = true
			if !liveSet[b] {
				return fmt.Errorf("%w: unknown broker %d in partition %d", ErrInvalidReplicaAssignment, b, p)
			}
		}
	}
	return nil
}

// CreateTopic validates spec, computes the assignment when none is given, writes
// /config/topics/<t> and then /brokers/topics/<t> (version 2), and returns the assignment.
// With validateOnly it only checks. The controller notices the new topic through its watch
// and brings the partitions online.
func (c *Coordinator) CreateTopic(ctx context.Context, spec TopicSpec, validateOnly bool) (map[int32][]int32, error) {
	if !zkdata.ValidTopicName(spec.Name) {
		return nil, fmt.Errorf("%w: %q", ErrInvalidTopic, spec.Name)
	}
	existing, err := c.Topics()
	if err != nil {
		return nil, err
	}
	// Kafka rejects names that collide once '.' and '_' are treated alike (metric names).
	norm := func(s string) string { return strings.ReplaceAll(s, ".", "_") }
	for _, t := range existing {
		if t == spec.Name {
			return nil, fmt.Errorf("%w: %s", ErrTopicExists, spec.Name)
		}
		if norm(t) == norm(spec.Name) {
			return nil, fmt.Errorf("%w: topic %q collides with existing topic %q", ErrInvalidTopic, spec.Name, t)
		}
	}
	if ok, _, err := c.exists(zkdata.DeleteTopicPath(spec.Name)); err != nil {
		return nil, err
	} else if ok {
		return nil, fmt.Errorf("%w: topic %s is marked for deletion", ErrTopicExists, spec.Name)
	}
	live, err := c.liveBrokerIDs()
	if err != nil {
		return nil, err
	}
	var assignment map[int32][]int32
	if len(spec.Assignment) > 0 {
		if err := validateAssignment(spec.Assignment, live); err != nil {
			return nil, err
		}
		assignment = make(map[int32][]int32, len(spec.Assignment))
		for p, r := range spec.Assignment {
			assignment[p] = append([]int32(nil), r...)
		}
	} else {
		if spec.NumPartitions <= 0 {
			return nil, fmt.Errorf("%w: number of partitions must be larger than 0", ErrInvalidPartitions)
		}
		if spec.ReplicationFactor <= 0 {
			return nil, fmt.Errorf("%w: replication factor must be larger than 0", ErrInvalidReplicationFactor)
		}
		assignment, err = AssignReplicasToBrokers(live, spec.NumPartitions, spec.ReplicationFactor, -1, -1)
		if err != nil {
			return nil, err
		}
	}
	if validateOnly {
		return assignment, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	// Config first, then the assignment (AdminZkClient.createTopicWithAssignment): the
	// controller reads the config when it sees the topic.
	cfgData := zkdata.EncodeConfig(spec.Configs)
	if _, err := c.create(zkdata.TopicConfigPath(spec.Name), cfgData, 0); errors.Is(err, zk.ErrNodeExists) {
		if _, err := c.set(zkdata.TopicConfigPath(spec.Name), cfgData, -1); err != nil {
			return nil, err
		}
	} else if err != nil {
		return nil, err
	}
	if _, err := c.create(zkdata.TopicPath(spec.Name), zkdata.EncodeTopic(assignment), 0); err != nil {
		if errors.Is(err, zk.ErrNodeExists) {
			return nil, fmt.Errorf("%w: %s", ErrTopicExists, spec.Name)
		}
		return nil, err
	}
	c.log.WithField("topic", spec.Name).WithField("partitions", len(assignment)).Info("created topic")
	return assignment, nil
}

// DeleteTopic asks the controller to delete topic by creating /admin/delete_topics/<t>.
func (c *Coordinator) DeleteTopic(ctx context.Context, topic string) error {
	if !zkdata.ValidTopicName(topic) {
		return ErrUnknownTopic
	}
	if !c.cfg.DeleteTopicEnable {
		return ErrTopicDeletionDisabled
	}
	ok, _, err := c.exists(zkdata.TopicPath(topic))
	if err != nil {
		return err
	}
	if !ok {
		return ErrUnknownTopic
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if _, err := c.create(zkdata.DeleteTopicPath(topic), nil, 0); err != nil && !errors.Is(err, zk.ErrNodeExists) {
		return err
	}
	c.log.WithField("topic", topic).Info("topic marked for deletion")
	return nil
}

// sortedPartitions returns the partition ids of an assignment in order.
func sortedPartitions(a map[int32][]int32) []int32 {
	ps := make([]int32, 0, len(a))
	for p := range a {
		ps = append(ps, p)
	}
	sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
	return ps
}
