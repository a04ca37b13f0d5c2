package admin

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/isrbroker/isrbroker/zkcoord/internal/sorted"
	"github.com/isrbroker/isrbroker/zkcoord/zkclient"
	"github.com/isrbroker/isrbroker/zkcoord/zkdata"
	"github.com/sirupsen/logrus"

	"github.com/go-zookeeper/zk"
)

// Admin is the admin API: topic creation, partition addition and deletion requests,
// reassignment and throttle configs, preferred election requests. Reads go through its
// Reader.
type Admin struct {
	conn              zkclient.Conn
	r                 *Reader
	log               logrus.FieldLogger
	deleteTopicEnable bool
}

// New returns the admin API over conn. deleteTopicEnable is delete.topic.enable (operator
// tools pass true: Kafka's TopicCommand marks topics for deletion whatever the brokers say).
func New(conn zkclient.Conn, r *Reader, deleteTopicEnable bool, log logrus.FieldLogger) *Admin {
	return &Admin{conn: conn, r: r, log: log, deleteTopicEnable: deleteTopicEnable}
}

// TopicSpec describes a topic to create. With Assignment set, NumPartitions and
// ReplicationFactor are ignored.
type TopicSpec struct {
	Name              string
	NumPartitions     int32
	ReplicationFactor int16
	Assignment        map[int32][]int32
	Configs           map[string]string
	// RackAwareMode: how brokers' racks enter a computed assignment (zero: Enforced, Kafka's
	// default; the operator CLI's --disable-rack-aware sets Disabled).
	RackAwareMode RackAwareMode
}

// AssignReplicasToBrokers is Kafka's rack-unaware AdminUtils.assignReplicasToBrokers:
// the first replica of partition p goes to broker (p + startIndex) mod n; the others follow
// at a shift that grows by one every n partitions, so leaders and followers spread evenly.
// startIndex / nextReplicaShift -1 mean random. brokers is sorted (Kafka sorts by id).
func AssignReplicasToBrokers(brokers []int32, nPartitions int32, rf int16, startIndex, nextReplicaShift int) (map[int32][]int32, error) {
	if nPartitions <= 0 {
		return nil, fmt.Errorf("%w: number of partitions must be larger than 0", ErrInvalidPartitions)
	}
	if err := checkPartitionCount("", int64(nPartitions)); err != nil {
		return nil, err
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
	return assignRackUnaware(b, nPartitions, int(rf), startIndex, nextReplicaShift, 0), nil
}

func (adm *Admin) liveBrokerIDs() ([]int32, error) {
	bs, err := adm.r.LiveBrokers()
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
func (adm *Admin) CreateTopic(ctx context.Context, spec TopicSpec, validateOnly bool) (map[int32][]int32, error) {
	if !zkdata.ValidTopicName(spec.Name) {
		return nil, fmt.Errorf("%w: %q", ErrInvalidTopic, spec.Name)
	}
	n := int64(spec.NumPartitions)
	if len(spec.Assignment) > 0 {
		n = int64(len(spec.Assignment))
	}
	if err := checkPartitionCount(spec.Name, n); err != nil {
		return nil, err
	}
	existing, err := adm.r.Topics()
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
	if ok, _, err := adm.conn.Exists(zkdata.DeleteTopicPath(spec.Name)); err != nil {
		return nil, err
	} else if ok {
		return nil, fmt.Errorf("%w: topic %s is marked for deletion", ErrTopicExists, spec.Name)
	}
	live, err := adm.liveBrokerIDs()
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
		brokers, err := adm.brokerMetadatas(spec.RackAwareMode)
		if err != nil {
			return nil, err
		}
		assignment, err = AssignReplicas(brokers, spec.NumPartitions, int(spec.ReplicationFactor), -1, 0)
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
	if _, err := adm.conn.Create(zkdata.TopicConfigPath(spec.Name), cfgData, 0); errors.Is(err, zk.ErrNodeExists) {
		if _, err := adm.conn.Set(zkdata.TopicConfigPath(spec.Name), cfgData, -1); err != nil {
			return nil, err
		}
	} else if err != nil {
		return nil, err
	}
	if _, err := adm.conn.Create(zkdata.TopicPath(spec.Name), zkdata.EncodeTopic(assignment), 0); err != nil {
		if errors.Is(err, zk.ErrNodeExists) {
			return nil, fmt.Errorf("%w: %s", ErrTopicExists, spec.Name)
		}
		return nil, err
	}
	adm.log.WithField("topic", spec.Name).WithField("partitions", len(assignment)).Info("created topic")
	return assignment, nil
}

// DeleteTopic asks the controller to delete topic by creating /admin/delete_topics/<t>.
func (adm *Admin) DeleteTopic(ctx context.Context, topic string) error {
	if !zkdata.ValidTopicName(topic) {
		return ErrUnknownTopic
	}
	if !adm.deleteTopicEnable {
		return ErrTopicDeletionDisabled
	}
	ok, _, err := adm.conn.Exists(zkdata.TopicPath(topic))
	if err != nil {
		return err
	}
	if !ok {
		return ErrUnknownTopic
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if _, err := adm.conn.Create(zkdata.DeleteTopicPath(topic), nil, 0); err != nil && !errors.Is(err, zk.ErrNodeExists) {
		return err
	}
	adm.log.WithField("topic", topic).Info("topic marked for deletion")
	return nil
}

// AddPartitions grows topic to numPartitions (Kafka's AdminZkClient.addPartitions). The new
// partitions get newAssignment when given (partition ids existing..numPartitions-1, each
// with the topic's replication factor and only live brokers), else they are assigned like
// at creation, continuing after the existing partitions: start index = position of the
// first live broker with id >= partition 0's preferred replica, start partition id = the
// current count. The existing assignment is kept; /brokers/topics/<t> is rewritten with a
// compare-and-set on its version, and the controller's data watch on it brings the new
// partitions online (processPartitionModification). Returns the new partitions' assignment.
// The partition count can only grow.
func (adm *Admin) AddPartitions(ctx context.Context, topic string, numPartitions int32, newAssignment map[int32][]int32, validateOnly bool) (map[int32][]int32, error) {
	return adm.AddPartitionsWithRacks(ctx, topic, numPartitions, newAssignment, validateOnly, RackAwareEnforced)
}

// AddPartitionsWithRacks is AddPartitions with the racks used as mode says (the operator CLI's
// --disable-rack-aware; CreatePartitions is always Enforced, as Kafka's).
func (adm *Admin) AddPartitionsWithRacks(ctx context.Context, topic string, numPartitions int32, newAssignment map[int32][]int32, validateOnly bool, mode RackAwareMode) (map[int32][]int32, error) {
	if !zkdata.ValidTopicName(topic) {
		return nil, ErrUnknownTopic
	}
	if err := checkPartitionCount(topic, int64(numPartitions)); err != nil {
		return nil, err
	}
	data, st, err := adm.conn.Get(zkdata.TopicPath(topic))
	if errors.Is(err, zk.ErrNoNode) {
		return nil, ErrUnknownTopic
	}
	if err != nil {
		return nil, err
	}
	full, err := zkdata.DecodeTopicFull(topic, data)
	if err != nil {
		return nil, err
	}
	existing := make(map[int32][]int32, len(full))
	for p, a := range full {
		// A KIP-455 reassignment keeps its adding/removing replicas in this znode; growing
		// the topic meanwhile is refused, as Kafka 2.4 refuses it while /admin/reassign_partitions
		// exists (docs/kafka-facts.md, "KIP-455 reassignments").
		if len(a.Adding) > 0 || len(a.Removing) > 0 {
			return nil, fmt.Errorf("%w: a partition reassignment is in progress for topic %s (partition %d)", ErrReassignmentInProgress, topic, p)
		}
		existing[p] = a.Replicas
	}
	if ok, _, err := adm.conn.Exists(zkdata.DeleteTopicPath(topic)); err != nil {
		return nil, err
	} else if ok {
		return nil, fmt.Errorf("%w: topic %s is marked for deletion", ErrInvalidPartitions, topic)
	}
	p0, ok := existing[0]
	if !ok || len(p0) == 0 {
		return nil, fmt.Errorf("%w: topic %s has no partition 0 in its assignment", ErrInvalidPartitions, topic)
	}
	cur := int32(len(existing))
	if numPartitions <= cur {
		return nil, fmt.Errorf("%w: topic %s currently has %d partitions, %d would not be an increase", ErrInvalidPartitions, topic, cur, numPartitions)
	}
	rf := len(p0)
	live, err := adm.liveBrokerIDs()
	if err != nil {
		return nil, err
	}
	live = sorted.Int32s(live)
	var added map[int32][]int32
	if len(newAssignment) > 0 {
		liveSet := map[int32]bool{}
		for _, id := range live {
			liveSet[id] = true
		}
		if int32(len(newAssignment)) != numPartitions-cur {
			return nil, fmt.Errorf("%w: increasing the number of partitions by %d but %d assignments provided", ErrInvalidReplicaAssignment, numPartitions-cur, len(newAssignment))
		}
		added = make(map[int32][]int32, len(newAssignment))
		for p := cur; p < numPartitions; p++ {
			r, ok := newAssignment[p]
			if !ok {
				return nil, fmt.Errorf("%w: no assignment for new partition %d", ErrInvalidReplicaAssignment, p)
			}
			if len(r) != rf {
				return nil, fmt.Errorf("%w: partition %d has %d replicas, the topic's replication factor is %d", ErrInvalidReplicaAssignment, p, len(r), rf)
			}
			seen := map[int32]bool{}
			for _, b := range r {
				if seen[b] {
					return nil, fmt.Errorf("%w: duplicate replica %d in partition %d", ErrInvalidReplicaAssignment, b, p)
				}
				seen[b] = true
				if !liveSet[b] {
					return nil, fmt.Errorf("%w: unknown broker %d in partition %d", ErrInvalidReplicaAssignment, b, p)
				}
			}
			added[p] = append([]int32(nil), r...)
		}
	} else {
		brokers, err := adm.brokerMetadatas(mode)
		if err != nil {
			return nil, err
		}
		start := 0
		for i, b := range brokers {
			if b.ID >= p0[0] {
				start = i
				break
			}
		}
		added, err = AssignReplicas(brokers, numPartitions-cur, rf, start, cur)
		if err != nil {
			return nil, err
		}
	}
	if validateOnly {
		return added, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	// The compare-and-set on the version read above keeps a reassignment that started since
	// from being overwritten: its write bumps the version and this Set fails.
	all := make(map[int32]zkdata.ReplicaAssignment, numPartitions)
	for p, r := range existing {
		all[p] = zkdata.ReplicaAssignment{Replicas: r}
	}
	for p, r := range added {
		all[p] = zkdata.ReplicaAssignment{Replicas: r}
	}
	if _, err := adm.conn.Set(zkdata.TopicPath(topic), zkdata.EncodeTopicFull(all), st.Version); err != nil {
		if errors.Is(err, zk.ErrBadVersion) {
			return nil, fmt.Errorf("zkcoord: topic %s was modified concurrently; retry", topic)
		}
		return nil, err
	}
	adm.log.WithField("topic", topic).WithField("partitions", numPartitions).Info("added partitions")
	return added, nil
}
