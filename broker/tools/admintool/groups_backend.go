package admintool

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// topicPartition is a partition of a topic; String prints it as Kafka's TopicPartition
// does ("orders-0").
type topicPartition struct {
	Topic     string
	Partition int32
}

func (p topicPartition) String() string { return fmt.Sprintf("%s-%d", p.Topic, p.Partition) }

func sortPartitions(ps []topicPartition) {
	sort.Slice(ps, func(i, j int) bool {
		if ps[i].Topic != ps[j].Topic {
			return ps[i].Topic < ps[j].Topic
		}
		return ps[i].Partition < ps[j].Partition
	})
}

// groupMember is one member of a described group.
type groupMember struct {
	ID, ClientID, Host string
	Assignment         []topicPartition // sorted by topic, partition
}

// coordinatorNode is the broker coordinating a group.
type coordinatorNode struct {
	ID   int32
	Host string
	Port int32
}

// groupDescription is a DescribeGroups answer for one group. State is one of Kafka's group
// states: Empty, PreparingRebalance, CompletingRebalance, Stable, Dead (the coordinator
// describes an unknown group as Dead).
type groupDescription struct {
	Group        string
	State        string
	ProtocolType string // "consumer", or "" for a group that only commits offsets
	Protocol     string // the partition assignor (range, roundrobin, ...)
	Coordinator  coordinatorNode
	Members      []groupMember
}

// groupsBackend is what `consumer-groups` needs from the cluster: the group APIs
// (ListGroups, DescribeGroups, OffsetFetch, OffsetCommit, DeleteGroups, OffsetDelete)
// and ListOffsets/Metadata for the partitions' offsets.
type groupsBackend interface {
	// listGroups returns the ids of the consumer groups (protocol type "consumer" or "").
	listGroups(ctx context.Context) ([]string, error)
	describeGroups(ctx context.Context, groups []string) (map[string]groupDescription, error)
	// committedOffsets returns the group's committed offsets.
	committedOffsets(ctx context.Context, group string) (map[topicPartition]int64, error)
	// startOffsets, endOffsets (the high watermark, what a read_uncommitted consumer can
	// read up to) and offsetsForTime (the first offset whose timestamp is at or after ms,
	// else the end offset) leave out partitions whose offset is unknown.
	startOffsets(ctx context.Context, ps []topicPartition) (map[topicPartition]int64, error)
	endOffsets(ctx context.Context, ps []topicPartition) (map[topicPartition]int64, error)
	offsetsForTime(ctx context.Context, ps []topicPartition, ms int64) (map[topicPartition]int64, error)
	// partitions returns the partition ids of an existing topic.
	partitions(ctx context.Context, topic string) ([]int32, error)
	// commit commits offsets for the group as a client outside the group (generation -1).
	commit(ctx context.Context, group string, offsets map[topicPartition]int64) error
	// deleteGroups returns the per-group error (nil: deleted).
	deleteGroups(ctx context.Context, groups []string) (map[string]error, error)
	// deleteOffsets deletes the group's offsets of ps (KIP-496). groupErr is the
	// group-level error code (GROUP_ID_NOT_FOUND, NON_EMPTY_GROUP, ...); perPartition the
	// partition-level ones (nil: deleted).
	deleteOffsets(ctx context.Context, group string, ps []topicPartition) (groupErr error, perPartition map[topicPartition]error, err error)
	close()
}

// kafkaGroupsBackend implements groupsBackend with franz-go's kadm.
type kafkaGroupsBackend struct {
	addr    string
	timeout time.Duration
	cl      *kgo.Client
	adm     *kadm.Client
}

func dialGroupsBackend(bootstrap string, timeout time.Duration) (groupsBackend, error) {
	cl, err := dialKafka(bootstrap, timeout, "isrbroker-consumer-groups")
	if err != nil {
		return nil, err
	}
	return &kafkaGroupsBackend{addr: bootstrap, timeout: timeout, cl: cl, adm: kadm.NewClient(cl)}, nil
}

func (b *kafkaGroupsBackend) close() { b.cl.Close() }

func (b *kafkaGroupsBackend) ctx(parent context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(parent, b.timeout)
}

// reqErr turns a request failure into an operator message.
func (b *kafkaGroupsBackend) reqErr(what string, err error) error {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, kgo.ErrClientClosed) {
		return failf("%s: no answer from the Kafka brokers at %s within %v", what, b.addr, b.timeout)
	}
	return failf("%s: Kafka brokers at %s: %s", what, b.addr, oneLine(err.Error()))
}

func (b *kafkaGroupsBackend) listGroups(parent context.Context) ([]string, error) {
	ctx, cancel := b.ctx(parent)
	defer cancel()
	ls, err := b.adm.ListGroups(ctx)
	if err != nil {
		return nil, b.reqErr("list groups", err)
	}
	var out []string
	for _, g := range ls.Sorted() {
		// Kafka's AdminClient.listConsumerGroups: protocol type "consumer", or empty for
		// groups that only commit offsets.
		if g.ProtocolType == "consumer" || g.ProtocolType == "" {
			out = append(out, g.Group)
		}
	}
	return out, nil
}

func (b *kafkaGroupsBackend) describeGroups(parent context.Context, groups []string) (map[string]groupDescription, error) {
	ctx, cancel := b.ctx(parent)
	defer cancel()
	ds, err := b.adm.DescribeGroups(ctx, groups...)
	if err != nil {
		return nil, b.reqErr("describe groups", err)
	}
	out := map[string]groupDescription{}
	for _, g := range groups {
		d, ok := ds[g]
		if !ok {
			return nil, failf("describe group %q: the coordinator did not answer for it", g)
		}
		if d.Err != nil {
			msg := oneLine(d.Err.Error())
			if d.ErrMessage != "" {
				msg += ": " + oneLine(d.ErrMessage)
			}
			return nil, failf("describe group %q: %s", g, msg)
		}
		gd := groupDescription{
			Group: g, State: d.State, ProtocolType: d.ProtocolType, Protocol: d.Protocol,
			Coordinator: coordinatorNode{ID: d.Coordinator.NodeID, Host: d.Coordinator.Host, Port: d.Coordinator.Port},
		}
		for _, m := range d.Members {
			gm := groupMember{ID: m.MemberID, ClientID: m.ClientID, Host: m.ClientHost}
			if a, ok := m.Assigned.AsConsumer(); ok {
				for _, t := range a.Topics {
					for _, p := range t.Partitions {
						gm.Assignment = append(gm.Assignment, topicPartition{t.Topic, p})
					}
				}
			}
			sortPartitions(gm.Assignment)
			gd.Members = append(gd.Members, gm)
		}
		out[g] = gd
	}
	return out, nil
}

func (b *kafkaGroupsBackend) committedOffsets(parent context.Context, group string) (map[topicPartition]int64, error) {
	ctx, cancel := b.ctx(parent)
	defer cancel()
	rs, err := b.adm.FetchOffsets(ctx, group)
	if err != nil {
		return nil, b.reqErr(fmt.Sprintf("fetch the offsets of group %q", group), err)
	}
	out := map[topicPartition]int64{}
	for t, ps := range rs {
		for p, r := range ps {
			if r.Err != nil {
				return nil, failf("fetch the offsets of group %q: %s-%d: %s", group, t, p, oneLine(r.Err.Error()))
			}
			if r.At >= 0 {
				out[topicPartition{t, p}] = r.At
			}
		}
	}
	return out, nil
}

func topicsOf(ps []topicPartition) []string {
	seen := map[string]bool{}
	var ts []string
	for _, p := range ps {
		if !seen[p.Topic] {
			seen[p.Topic] = true
			ts = append(ts, p.Topic)
		}
	}
	sort.Strings(ts)
	return ts
}

// listOffsets runs one of kadm's ListOffsets calls for the topics of ps and keeps the
// answers for ps. A partly failed request keeps what was answered.
func (b *kafkaGroupsBackend) listOffsets(parent context.Context, what string, ps []topicPartition,
	list func(context.Context, ...string) (kadm.ListedOffsets, error)) (map[topicPartition]int64, error) {
	out := map[topicPartition]int64{}
	if len(ps) == 0 {
		return out, nil
	}
	ctx, cancel := b.ctx(parent)
	defer cancel()
	lo, err := list(ctx, topicsOf(ps)...)
	var se *kadm.ShardErrors
	if err != nil && (!errors.As(err, &se) || se.AllFailed) {
		return nil, b.reqErr(what, err)
	}
	for _, p := range ps {
		if o, ok := lo.Lookup(p.Topic, p.Partition); ok && o.Err == nil && o.Offset >= 0 {
			out[p] = o.Offset
		}
	}
	return out, nil
}

func (b *kafkaGroupsBackend) startOffsets(ctx context.Context, ps []topicPartition) (map[topicPartition]int64, error) {
	return b.listOffsets(ctx, "list log start offsets", ps, b.adm.ListStartOffsets)
}

func (b *kafkaGroupsBackend) endOffsets(ctx context.Context, ps []topicPartition) (map[topicPartition]int64, error) {
	return b.listOffsets(ctx, "list log end offsets", ps, b.adm.ListEndOffsets)
}

func (b *kafkaGroupsBackend) offsetsForTime(ctx context.Context, ps []topicPartition, ms int64) (map[topicPartition]int64, error) {
	return b.listOffsets(ctx, "list offsets by timestamp", ps, func(ctx context.Context, ts ...string) (kadm.ListedOffsets, error) {
		return b.adm.ListOffsetsAfterMilli(ctx, ms, ts...)
	})
}

func (b *kafkaGroupsBackend) partitions(parent context.Context, topic string) ([]int32, error) {
	ctx, cancel := b.ctx(parent)
	defer cancel()
	m, err := b.adm.Metadata(ctx, topic)
	if err != nil {
		return nil, b.reqErr("metadata", err)
	}
	td, ok := m.Topics[topic]
	if !ok || errors.Is(td.Err, kerr.UnknownTopicOrPartition) {
		return nil, kerr.UnknownTopicOrPartition
	}
	if td.Err != nil {
		return nil, td.Err
	}
	var ids []int32
	for _, p := range td.Partitions.Sorted() {
		ids = append(ids, p.Partition)
	}
	return ids, nil
}

func (b *kafkaGroupsBackend) commit(parent context.Context, group string, offsets map[topicPartition]int64) error {
	os := kadm.Offsets{}
	for p, o := range offsets {
		os.Add(kadm.Offset{Topic: p.Topic, Partition: p.Partition, At: o, LeaderEpoch: -1})
	}
	ctx, cancel := b.ctx(parent)
	defer cancel()
	rs, err := b.adm.CommitOffsets(ctx, group, os)
	if err != nil {
		return b.reqErr(fmt.Sprintf("commit the offsets of group %q", group), err)
	}
	var failed []string
	for _, r := range rs.Sorted() {
		if r.Err != nil {
			failed = append(failed, fmt.Sprintf("%s-%d: %s", r.Topic, r.Partition, oneLine(r.Err.Error())))
		}
	}
	if len(failed) > 0 {
		return failf("commit the offsets of group %q: %s", group, strings.Join(failed, "; "))
	}
	return nil
}

func (b *kafkaGroupsBackend) deleteGroups(parent context.Context, groups []string) (map[string]error, error) {
	ctx, cancel := b.ctx(parent)
	defer cancel()
	rs, err := b.adm.DeleteGroups(ctx, groups...)
	var se *kadm.ShardErrors
	if err != nil && (!errors.As(err, &se) || se.AllFailed) {
		return nil, b.reqErr("delete groups", err)
	}
	out := map[string]error{}
	for _, g := range groups {
		r, ok := rs[g]
		switch {
		case !ok:
			out[g] = errors.New("the coordinator did not answer for it")
		default:
			out[g] = r.Err
		}
	}
	return out, nil
}

func (b *kafkaGroupsBackend) deleteOffsets(parent context.Context, group string, ps []topicPartition) (error, map[topicPartition]error, error) {
	set := kadm.TopicsSet{}
	for _, p := range ps {
		set.Add(p.Topic, p.Partition)
	}
	ctx, cancel := b.ctx(parent)
	defer cancel()
	rs, err := b.adm.DeleteOffsets(ctx, group, set)
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke, nil, nil
	}
	if err != nil {
		return nil, nil, b.reqErr(fmt.Sprintf("delete the offsets of group %q", group), err)
	}
	out := map[topicPartition]error{}
	for _, p := range ps {
		perr, ok := rs.Lookup(p.Topic, p.Partition)
		if !ok {
			perr = errors.New("the coordinator did not answer for it")
		}
		out[p] = perr
	}
	return nil, out, nil
}
