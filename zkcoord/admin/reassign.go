package admin

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/isrbroker/isrbroker/zkcoord/internal/sorted"
	"github.com/isrbroker/isrbroker/zkcoord/zkdata"

	"github.com/go-zookeeper/zk"
)

// Operator side of partition reassignment (`isrbroker reassign-partitions`, Kafka 2.4's
// ReassignPartitionsCommand with --zookeeper): reading and creating
// /admin/reassign_partitions and the replication throttle configs.

// Throttle config keys (Kafka's DynamicConfig / LogConfig names).
const (
	LeaderThrottledRate       = "leader.replication.throttled.rate"
	FollowerThrottledRate     = "follower.replication.throttled.rate"
	LeaderThrottledReplicas   = "leader.replication.throttled.replicas"
	FollowerThrottledReplicas = "follower.replication.throttled.replicas"
)

// ValidateReassignment checks a plan against ZooKeeper the way Kafka's
// ReassignPartitionsCommand does before writing it: a non-empty plan, no partition listed
// twice, every partition existing, non-empty replica lists without duplicates, and every
// replica a registered (live) broker. The error (ErrInvalidReplicaAssignment or
// ErrUnknownTopic) names the offending partition or broker.
func (adm *Admin) ValidateReassignment(parts []PartitionReassignment) error {
	if len(parts) == 0 {
		return fmt.Errorf("%w: partition reassignment data file is empty", ErrInvalidReplicaAssignment)
	}
	live, err := adm.liveBrokerIDs()
	if err != nil {
		return err
	}
	seenTP := map[TopicPartition]bool{}
	assignments := map[string]map[int32][]int32{}
	for _, p := range parts {
		name := fmt.Sprintf("%s-%d", p.Topic, p.Partition)
		tp := TopicPartition{Topic: p.Topic, Partition: p.Partition}
		if seenTP[tp] {
			return fmt.Errorf("%w: partition %s is listed twice", ErrInvalidReplicaAssignment, name)
		}
		seenTP[tp] = true
		if len(p.Replicas) == 0 {
			return fmt.Errorf("%w: partition %s has an empty replica list", ErrInvalidReplicaAssignment, name)
		}
		seen := map[int32]bool{}
		for _, r := range p.Replicas {
			if seen[r] {
				return fmt.Errorf("%w: partition %s lists broker %d twice", ErrInvalidReplicaAssignment, name, r)
			}
			seen[r] = true
			if !slices.Contains(live, r) {
				return fmt.Errorf("%w: partition %s names broker %d, which is not registered (dead or unknown)", ErrInvalidReplicaAssignment, name, r)
			}
		}
		a, ok := assignments[p.Topic]
		if !ok {
			a, err = adm.r.TopicAssignment(p.Topic)
			if errors.Is(err, ErrUnknownTopic) {
				return fmt.Errorf("%w: topic %q of partition %s does not exist", ErrUnknownTopic, p.Topic, name)
			}
			if err != nil {
				return err
			}
			assignments[p.Topic] = a
		}
		if _, ok := a[p.Partition]; !ok {
			return fmt.Errorf("%w: partition %s does not exist", ErrInvalidReplicaAssignment, name)
		}
	}
	return nil
}

// CurrentAssignment returns the current replicas of the partitions named in parts, in the
// reassignment JSON shape (the rollback plan).
func (adm *Admin) CurrentAssignment(parts []PartitionReassignment) ([]PartitionReassignment, error) {
	cache := map[string]map[int32][]int32{}
	var out []PartitionReassignment
	for _, p := range parts {
		a, ok := cache[p.Topic]
		if !ok {
			var err error
			if a, err = adm.r.TopicAssignment(p.Topic); err != nil {
				return nil, err
			}
			cache[p.Topic] = a
		}
		r, ok := a[p.Partition]
		if !ok {
			return nil, fmt.Errorf("%w: partition %s-%d does not exist", ErrInvalidReplicaAssignment, p.Topic, p.Partition)
		}
		out = append(out, PartitionReassignment{Topic: p.Topic, Partition: p.Partition, Replicas: slices.Clone(r)})
	}
	return out, nil
}

// StartReassignment validates parts (ValidateReassignment) and creates
// /admin/reassign_partitions; the controller's watch starts the moves. It fails with
// ErrReassignmentInProgress when the znode exists.
func (adm *Admin) StartReassignment(ctx context.Context, parts []PartitionReassignment) error {
	if ok, _, err := adm.conn.Exists(zkdata.PathReassignPartitions); err != nil {
		return err
	} else if ok {
		return ErrReassignmentInProgress
	}
	if err := adm.ValidateReassignment(parts); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if _, err := adm.conn.Create(zkdata.PathReassignPartitions, zkdata.EncodeReassignment(parts), 0); err != nil {
		if errors.Is(err, zk.ErrNodeExists) {
			return ErrReassignmentInProgress
		}
		return err
	}
	adm.log.WithField("partitions", len(parts)).Info("partition reassignment requested")
	return nil
}

// FormatThrottledReplicas renders Kafka's throttled replica list "p:b,p:b" (sorted).
func FormatThrottledReplicas(m map[int32][]int32) string {
	var s []string
	for _, p := range sorted.Keys(m) {
		for _, b := range sorted.Int32s(m[p]) {
			s = append(s, strconv.Itoa(int(p))+":"+strconv.Itoa(int(b)))
		}
	}
	return strings.Join(s, ",")
}

// SetReassignmentThrottle writes the throttle of a reassignment (Kafka 2.4 --execute
// --throttle): leader/follower.replication.throttled.rate = rate on each broker, and on each
// topic leader.replication.throttled.replicas = the pre-move replicas of its moving
// partitions, follower.replication.throttled.replicas = the moving destinations.
// Brokers enforce it only for replicas outside the ISR.
func (adm *Admin) SetReassignmentThrottle(rate int64, brokers []int32, leaderReplicas, followerReplicas map[string]map[int32][]int32) error {
	if rate <= 0 {
		return fmt.Errorf("zkcoord: throttle must be positive, got %d", rate)
	}
	v := strconv.FormatInt(rate, 10)
	for _, id := range sorted.Int32s(brokers) {
		err := adm.alterConfig(zkdata.BrokerConfigPath(id), zkdata.BrokerEntity(strconv.Itoa(int(id))), func(cfg map[string]string) {
			cfg[LeaderThrottledRate] = v
			cfg[FollowerThrottledRate] = v
		})
		if err != nil {
			return err
		}
	}
	topics := map[string]bool{}
	for t := range leaderReplicas {
		topics[t] = true
	}
	for t := range followerReplicas {
		topics[t] = true
	}
	names := make([]string, 0, len(topics))
	for t := range topics {
		names = append(names, t)
	}
	sort.Strings(names)
	for _, t := range names {
		if !zkdata.ValidTopicName(t) {
			return fmt.Errorf("%w: %q", ErrUnknownTopic, t)
		}
		l, f := FormatThrottledReplicas(leaderReplicas[t]), FormatThrottledReplicas(followerReplicas[t])
		err := adm.alterConfig(zkdata.TopicConfigPath(t), zkdata.TopicEntity(t), func(cfg map[string]string) {
			setOrDelete(cfg, LeaderThrottledReplicas, l)
			setOrDelete(cfg, FollowerThrottledReplicas, f)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// SetBrokerThrottleRate changes only the brokers' throttle rates (an --execute while a
// reassignment runs).
func (adm *Admin) SetBrokerThrottleRate(rate int64, brokers []int32) error {
	return adm.SetReassignmentThrottle(rate, brokers, nil, nil)
}

// ClearReassignmentThrottle removes the throttle rates from every broker's config (live
// brokers and those with a config znode) and the throttled replica lists from topics
// (Kafka's removeThrottle after a successful --verify). It reports whether anything was
// removed.
func (adm *Admin) ClearReassignmentThrottle(topics []string) (bool, error) {
	ids := map[int32]bool{}
	live, err := adm.liveBrokerIDs()
	if err != nil {
		return false, err
	}
	for _, id := range live {
		ids[id] = true
	}
	ch, err := adm.conn.Children(zkdata.PathConfigBrokers)
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		return false, err
	}
	for _, s := range ch {
		if id, err := strconv.ParseInt(s, 10, 32); err == nil {
			ids[int32(id)] = true
		}
	}
	removed := false
	for _, id := range sorted.Keys(ids) {
		err := adm.alterConfig(zkdata.BrokerConfigPath(id), zkdata.BrokerEntity(strconv.Itoa(int(id))), func(cfg map[string]string) {
			for _, k := range []string{LeaderThrottledRate, FollowerThrottledRate} {
				if _, ok := cfg[k]; ok {
					delete(cfg, k)
					removed = true
				}
			}
		})
		if err != nil {
			return removed, err
		}
	}
	for _, t := range topics {
		if !zkdata.ValidTopicName(t) {
			continue
		}
		if ok, _, err := adm.conn.Exists(zkdata.TopicConfigPath(t)); err != nil {
			return removed, err
		} else if !ok {
			continue
		}
		err := adm.alterConfig(zkdata.TopicConfigPath(t), zkdata.TopicEntity(t), func(cfg map[string]string) {
			for _, k := range []string{LeaderThrottledReplicas, FollowerThrottledReplicas} {
				if _, ok := cfg[k]; ok {
					delete(cfg, k)
					removed = true
				}
			}
		})
		if err != nil {
			return removed, err
		}
	}
	return removed, nil
}

func setOrDelete(cfg map[string]string, k, v string) {
	if v == "" {
		delete(cfg, k)
		return
	}
	cfg[k] = v
}

// RequestPreferredElection creates /admin/preferred_replica_election listing tps
// (Kafka's PreferredReplicaLeaderElectionCommand). ErrPreferredElectionInProgress when the
// znode already exists. The partitions are not checked against the cluster here; the
// controller skips unknown ones.
func (adm *Admin) RequestPreferredElection(ctx context.Context, tps []TopicPartition) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	_, err := adm.conn.Create(zkdata.PathPreferredReplicaElection, zkdata.EncodePreferredElection(tps), 0)
	if errors.Is(err, zk.ErrNodeExists) {
		return ErrPreferredElectionInProgress
	}
	return err
}
