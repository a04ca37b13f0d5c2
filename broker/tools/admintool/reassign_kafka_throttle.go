package admintool

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/isrbroker/isrbroker/zkcoord/admin"
)

// Replication throttles in `reassign-partitions --bootstrap-server` mode, as Kafka 2.6's
// ReassignPartitionsCommand sets them through IncrementalAlterConfigs: --execute --throttle R
// SETs leader.replication.throttled.rate and follower.replication.throttled.rate to R on every
// broker of the old and new replica sets, and per topic leader.replication.throttled.replicas
// (the pre-move replicas of its moving partitions) and follower.replication.throttled.replicas
// (the replicas they move to); --verify, once no partition of the plan is still moving, DELETEs
// them again (docs/kafka-facts.md §8).

var (
	brokerThrottleKeys = []string{"leader.replication.throttled.rate", "follower.replication.throttled.rate"}
	topicThrottleKeys  = []string{"leader.replication.throttled.replicas", "follower.replication.throttled.replicas"}
)

// setThrottles writes the plan's throttles at rate bytes/s.
func (k *reassignKafkaRun) setThrottles(ctx context.Context, rate int64, current, plan []admin.PartitionReassignment) error {
	brokers, leaders, followers := throttleTargets(current, plan)
	r := strconv.FormatInt(rate, 10)
	var brokerCfg []kadm.AlterConfig
	for _, key := range brokerThrottleKeys {
		brokerCfg = append(brokerCfg, kadm.AlterConfig{Op: kadm.SetConfig, Name: key, Value: &r})
	}
	sort.Slice(brokers, func(i, j int) bool { return brokers[i] < brokers[j] })
	for _, b := range brokers { // one request per broker: each is answered by that broker
		if err := k.alterResult("broker "+strconv.Itoa(int(b)), func() (kadm.AlterConfigsResponses, error) {
			return k.adm.AlterBrokerConfigs(ctx, brokerCfg, b)
		}); err != nil {
			return err
		}
	}
	topics := make([]string, 0, len(leaders))
	for t := range leaders {
		topics = append(topics, t)
	}
	sort.Strings(topics)
	for _, t := range topics {
		l, f := admin.FormatThrottledReplicas(leaders[t]), admin.FormatThrottledReplicas(followers[t])
		cfg := []kadm.AlterConfig{
			{Op: kadm.SetConfig, Name: topicThrottleKeys[0], Value: &l},
			{Op: kadm.SetConfig, Name: topicThrottleKeys[1], Value: &f},
		}
		if err := k.alterResult("topic "+t, func() (kadm.AlterConfigsResponses, error) { return k.adm.AlterTopicConfigs(ctx, cfg, t) }); err != nil {
			return err
		}
	}
	return nil
}

// clearThrottles deletes the throttle rates on every live broker and the throttled replicas
// of the plan's topics (Kafka's clearAllThrottles), printing what it clears.
func (k *reassignKafkaRun) clearThrottles(ctx context.Context, plan []admin.PartitionReassignment) error {
	m, err := k.adm.BrokerMetadata(ctx)
	if err != nil {
		return k.reqErr("metadata", err)
	}
	var brokers []int32
	for _, b := range m.Brokers {
		brokers = append(brokers, b.NodeID)
	}
	slices.Sort(brokers)
	var del []kadm.AlterConfig
	for _, key := range brokerThrottleKeys {
		del = append(del, kadm.AlterConfig{Op: kadm.DeleteConfig, Name: key})
	}
	fmt.Fprintf(k.out, "Clearing broker-level throttles on broker%s %s\n", plural(len(brokers)), joinIDs(brokers))
	for _, b := range brokers {
		if err := k.alterResult("broker "+strconv.Itoa(int(b)), func() (kadm.AlterConfigsResponses, error) {
			return k.adm.AlterBrokerConfigs(ctx, del, b)
		}); err != nil {
			return err
		}
	}
	topics := planTopics(plan)
	sort.Strings(topics)
	var tdel []kadm.AlterConfig
	for _, key := range topicThrottleKeys {
		tdel = append(tdel, kadm.AlterConfig{Op: kadm.DeleteConfig, Name: key})
	}
	fmt.Fprintf(k.out, "Clearing topic-level throttles on topic%s %s\n", plural(len(topics)), strings.Join(topics, ","))
	return k.alterResult("topics", func() (kadm.AlterConfigsResponses, error) { return k.adm.AlterTopicConfigs(ctx, tdel, topics...) })
}

// alterResult runs one config change and turns a request error or a per-resource error into
// the command's failure.
func (k *reassignKafkaRun) alterResult(what string, f func() (kadm.AlterConfigsResponses, error)) error {
	res, err := f()
	if err != nil {
		return k.reqErr("alter configs of "+what, err)
	}
	for _, r := range res {
		if r.Err != nil {
			return failf("setting the replication throttle on %s %s: %v %s", what, r.Name, r.Err, r.ErrMessage)
		}
	}
	return nil
}
