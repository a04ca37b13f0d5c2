package admintool

import (
	"context"
	"errors"
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/urfave/cli/v2"
)

// kafkaBackend implements the topics verbs through the Kafka protocol (--bootstrap-server):
// Metadata, CreateTopics, DeleteTopics and, when a broker serves it, DescribeConfigs.
type kafkaBackend struct {
	c    *cli.Context
	addr string
	cl   *kgo.Client
	adm  *kadm.Client
}

func newKafkaBackend(c *cli.Context, bootstrap string) (*kafkaBackend, error) {
	cl, err := dialKafka(bootstrap, c.Duration("timeout"), "isrbroker-topics")
	if err != nil {
		return nil, err
	}
	return &kafkaBackend{c: c, addr: bootstrap, cl: cl, adm: kadm.NewClient(cl)}, nil
}

// dialKafka makes the client of a --bootstrap-server backend: the comma-separated seed
// brokers, with timeout as its retry timeout and request timeout overhead.
func dialKafka(bootstrap string, timeout time.Duration, clientID string) (*kgo.Client, error) {
	var seeds []string
	for _, s := range strings.Split(bootstrap, ",") {
		if s = strings.TrimSpace(s); s != "" {
			seeds = append(seeds, s)
		}
	}
	if len(seeds) == 0 {
		return nil, failf("--bootstrap-server %q names no broker", bootstrap)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.RetryTimeout(timeout),
		kgo.RequestTimeoutOverhead(timeout), kgo.ClientID(clientID))
	if err != nil {
		return nil, failf("invalid --bootstrap-server %q: %s", bootstrap, oneLine(err.Error()))
	}
	return cl, nil
}

func (b *kafkaBackend) close() { b.cl.Close() }

func (b *kafkaBackend) ctx(parent context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(parent, b.c.Duration("timeout"))
}

// reqErr turns a request failure into an operator message.
func (b *kafkaBackend) reqErr(err error) error {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, kgo.ErrClientClosed) {
		return failf("cannot reach Kafka brokers at %s within %v", b.addr, b.c.Duration("timeout"))
	}
	return failf("Kafka brokers at %s: %s", b.addr, oneLine(err.Error()))
}

func (b *kafkaBackend) metadata(parent context.Context, topics ...string) (kadm.Metadata, error) {
	ctx, cancel := b.ctx(parent)
	defer cancel()
	m, err := b.adm.Metadata(ctx, topics...)
	if err != nil {
		return kadm.Metadata{}, b.reqErr(err)
	}
	return m, nil
}

func (b *kafkaBackend) names(ctx context.Context) ([]topicInfo, error) {
	m, err := b.metadata(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]topicInfo, 0, len(m.Topics))
	for name, td := range m.Topics {
		if td.Err != nil {
			continue
		}
		out = append(out, topicInfo{Name: name, Internal: td.IsInternal})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func (b *kafkaBackend) describe(ctx context.Context, topics []string) ([]topicInfo, map[int32]bool, error) {
	m, err := b.metadata(ctx, topics...)
	if err != nil {
		return nil, nil, err
	}
	live := map[int32]bool{}
	for _, br := range m.Brokers {
		live[br.NodeID] = true
	}
	// Topic configs need DescribeConfigs (key 32); without it the overrides are unknown
	// and min.insync.replicas counts as 1. Like Kafka 2.4's TopicCommand through the admin
	// client, every config whose source is not DEFAULT_CONFIG is shown (topic overrides and
	// broker-level settings), so min.insync.replicas is the topic's effective value.
	configs := map[string]map[string]string{}
	cctx, cancel := b.ctx(ctx)
	rcs, cerr := b.adm.DescribeTopicConfigs(cctx, topics...)
	cancel()
	if cerr == nil {
		for _, rc := range rcs {
			if rc.Err != nil {
				continue
			}
			cfg := map[string]string{}
			for _, c := range rc.Configs {
				if c.Source != kmsg.ConfigSourceDefaultConfig && c.Value != nil {
					cfg[c.Key] = *c.Value
				}
			}
			configs[rc.Name] = cfg
		}
	}
	var out []topicInfo
	for _, name := range topics {
		td, ok := m.Topics[name]
		if !ok || errors.Is(td.Err, kerr.UnknownTopicOrPartition) {
			continue
		}
		if td.Err != nil {
			return nil, nil, failf("topic %q: %s", name, oneLine(td.Err.Error()))
		}
		t := topicInfo{Name: name, Internal: td.IsInternal, Configs: configs[name]}
		for _, pd := range td.Partitions.Sorted() {
			t.Partitions = append(t.Partitions, partitionInfo{ID: pd.Partition, Leader: pd.Leader, Replicas: pd.Replicas, ISR: pd.ISR})
		}
		out = append(out, t)
	}
	return out, live, nil
}

func (b *kafkaBackend) create(parent context.Context, name string, partitions int32, rf int16, assignment map[int32][]int32, configs map[string]string) error {
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = int32(b.c.Duration("timeout").Milliseconds())
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, partitions, rf
	if assignment != nil {
		rt.NumPartitions, rt.ReplicationFactor = -1, -1
		for p := int32(0); p < int32(len(assignment)); p++ {
			ra := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
			ra.Partition, ra.Replicas = p, assignment[p]
			rt.ReplicaAssignment = append(rt.ReplicaAssignment, ra)
		}
	}
	for _, k := range sortedKeys(configs) {
		v := configs[k]
		c := kmsg.NewCreateTopicsRequestTopicConfig()
		c.Name, c.Value = k, &v
		rt.Configs = append(rt.Configs, c)
	}
	req.Topics = append(req.Topics, rt)
	ctx, cancel := b.ctx(parent)
	defer cancel()
	resp, err := req.RequestWith(ctx, b.cl)
	if err != nil {
		return b.reqErr(err)
	}
	for _, t := range resp.Topics {
		if err := topicError(name, "create topic", kerr.ErrorForCode(t.ErrorCode), deref(t.ErrorMessage), kerr.TopicAlreadyExists, "topic %q already exists"); err != nil {
			return err
		}
	}
	return nil
}

// topicError turns a per-topic error of an admin answer into the command's failure: the
// error special gets its own message (format with the topic name), any other one
// "cannot <what> <topic>: <error>: <error_message>"; nil for no error.
func topicError(name, what string, err error, message string, special error, format string) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, special):
		return failf(format, name)
	}
	msg := oneLine(err.Error())
	if message != "" {
		msg += ": " + oneLine(message)
	}
	return failf("cannot %s %q: %s", what, name, msg)
}

// deref is a nullable string's value ("" for null).
func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func (b *kafkaBackend) delete(parent context.Context, name string) error {
	ctx, cancel := b.ctx(parent)
	defer cancel()
	rs, err := b.adm.DeleteTopics(ctx, name)
	if err != nil {
		return b.reqErr(err)
	}
	r, ok := rs[name]
	if !ok {
		return failf("cannot delete topic %q: the broker did not answer for it", name)
	}
	return topicError(name, "delete topic", r.Err, r.ErrMessage, kerr.UnknownTopicOrPartition, "topic %q does not exist")
}

// addPartitions sends CreatePartitions (routed to the controller by the client). Like
// kafka-topics.sh, --replica-assignment lists every partition; the new ones (after the
// current count from Metadata) are sent.
func (b *kafkaBackend) addPartitions(parent context.Context, name string, n int32, assignment map[int32][]int32) error {
	req := kmsg.NewPtrCreatePartitionsRequest()
	req.TimeoutMillis = int32(b.c.Duration("timeout").Milliseconds())
	rt := kmsg.NewCreatePartitionsRequestTopic()
	rt.Topic, rt.Count = name, n
	if assignment != nil {
		if int32(len(assignment)) != n {
			return failf("invalid --replica-assignment: it lists %d partitions, --partitions is %d", len(assignment), n)
		}
		md, err := b.metadata(parent, name)
		if err != nil {
			return err
		}
		td, ok := md.Topics[name]
		if !ok || errors.Is(td.Err, kerr.UnknownTopicOrPartition) {
			return failf("topic %q does not exist", name)
		}
		for p := int32(len(td.Partitions)); p < n; p++ {
			ra := kmsg.NewCreatePartitionsRequestTopicAssignment()
			ra.Replicas = assignment[p]
			rt.Assignment = append(rt.Assignment, ra)
		}
	}
	req.Topics = append(req.Topics, rt)
	ctx, cancel := b.ctx(parent)
	defer cancel()
	resp, err := req.RequestWith(ctx, b.cl)
	if err != nil {
		return b.reqErr(err)
	}
	for _, t := range resp.Topics {
		if err := topicError(name, "add partitions to topic", kerr.ErrorForCode(t.ErrorCode), deref(t.ErrorMessage), kerr.UnknownTopicOrPartition, "topic %q does not exist"); err != nil {
			return err
		}
	}
	return nil
}
