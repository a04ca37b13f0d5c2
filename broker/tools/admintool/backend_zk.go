package admintool

import (
	"context"
	"errors"
	"sort"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/isrbroker/isrbroker/zkcoord"
)

// zkBackend implements the topics verbs on the znodes, through zkcoord.
type zkBackend struct {
	c     *cli.Context
	coord *zkcoord.Coordinator
}

func (b *zkBackend) close() { _ = b.coord.Close() }

func (b *zkBackend) names(ctx context.Context) ([]topicInfo, error) {
	ts, err := b.coord.Topics()
	if err != nil {
		return nil, zkErr(b.c, err)
	}
	del, err := b.coord.TopicsMarkedForDeletion()
	if err != nil {
		return nil, zkErr(b.c, err)
	}
	marked := map[string]bool{}
	for _, t := range del {
		marked[t] = true
	}
	out := make([]topicInfo, 0, len(ts))
	for _, t := range ts {
		out = append(out, topicInfo{Name: t, MarkedForDeletion: marked[t], Internal: isInternal(t)})
	}
	return out, nil
}

func isInternal(t string) bool { return t == "__consumer_offsets" || t == "__transaction_state" }

// liveSet returns the ids registered under /brokers/ids.
func liveSet(coord *zkcoord.Coordinator) (map[int32]bool, []zkcoord.BrokerInfo, error) {
	bs, err := coord.LiveBrokers()
	if err != nil {
		return nil, nil, err
	}
	live := make(map[int32]bool, len(bs))
	for _, br := range bs {
		live[br.ID] = true
	}
	return live, bs, nil
}

// readTopic reads one topic's assignment, partition states and config overrides. A
// partition without a state znode (not yet brought online by the controller) has leader
// -1 and an empty ISR. zkcoord.ErrUnknownTopic when the topic vanished meanwhile.
func readTopic(coord *zkcoord.Coordinator, name string, marked bool) (topicInfo, error) {
	a, err := coord.TopicAssignment(name)
	if err != nil {
		return topicInfo{}, err
	}
	cfg, err := coord.TopicConfig(name)
	if err != nil {
		return topicInfo{}, err
	}
	t := topicInfo{Name: name, Configs: cfg, MarkedForDeletion: marked, Internal: isInternal(name)}
	for p, r := range a {
		pi := partitionInfo{ID: p, Leader: -1, Replicas: r}
		st, err := coord.PartitionState(name, p)
		switch {
		case err == nil:
			pi.Leader, pi.ISR = st.Leader, st.ISR
		case errors.Is(err, zkcoord.ErrUnknownTopic):
		default:
			return topicInfo{}, err
		}
		t.Partitions = append(t.Partitions, pi)
	}
	sort.Slice(t.Partitions, func(i, j int) bool { return t.Partitions[i].ID < t.Partitions[j].ID })
	return t, nil
}

func (b *zkBackend) describe(ctx context.Context, topics []string) ([]topicInfo, map[int32]bool, error) {
	live, _, err := liveSet(b.coord)
	if err != nil {
		return nil, nil, zkErr(b.c, err)
	}
	del, err := b.coord.TopicsMarkedForDeletion()
	if err != nil {
		return nil, nil, zkErr(b.c, err)
	}
	marked := map[string]bool{}
	for _, t := range del {
		marked[t] = true
	}
	var out []topicInfo
	for _, name := range topics {
		if err := ctx.Err(); err != nil {
			return nil, nil, failf("%s", err)
		}
		t, err := readTopic(b.coord, name, marked[name])
		if errors.Is(err, zkcoord.ErrUnknownTopic) {
			continue // deleted since it was listed
		}
		if err != nil {
			return nil, nil, zkErr(b.c, err)
		}
		out = append(out, t)
	}
	return out, live, nil
}

func (b *zkBackend) create(ctx context.Context, name string, partitions int32, rf int16, assignment map[int32][]int32, configs map[string]string) error {
	_, err := b.coord.CreateTopic(ctx, zkcoord.TopicSpec{
		Name: name, NumPartitions: partitions, ReplicationFactor: rf, Assignment: assignment, Configs: configs,
	}, false)
	return adminErr(b.c, name, err)
}

func (b *zkBackend) delete(ctx context.Context, name string) error {
	return adminErr(b.c, name, b.coord.DeleteTopic(ctx, name))
}

func (b *zkBackend) addPartitions(ctx context.Context, name string, n int32, assignment map[int32][]int32) error {
	var added map[int32][]int32
	if assignment != nil {
		// Like kafka-topics.sh, the assignment lists all partitions; the new ones are
		// those after the current count.
		cur, err := b.coord.TopicAssignment(name)
		if err != nil {
			return adminErr(b.c, name, err)
		}
		if int32(len(assignment)) != n {
			return failf("invalid --replica-assignment: it lists %d partitions, --partitions is %d", len(assignment), n)
		}
		added = map[int32][]int32{}
		for p, r := range assignment {
			if p >= int32(len(cur)) {
				added[p] = r
			}
		}
	}
	_, err := b.coord.AddPartitions(ctx, name, n, added, false)
	return adminErr(b.c, name, err)
}

// adminErr maps zkcoord's admin errors to operator messages.
func adminErr(c *cli.Context, topic string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, zkcoord.ErrUnknownTopic):
		return failf("topic %q does not exist", topic)
	case errors.Is(err, zkcoord.ErrTopicExists):
		if strings.Contains(err.Error(), "marked for deletion") {
			return failf("topic %q is marked for deletion; wait for the deletion to finish", topic)
		}
		return failf("topic %q already exists", topic)
	case errors.Is(err, zkcoord.ErrInvalidTopic), errors.Is(err, zkcoord.ErrInvalidPartitions),
		errors.Is(err, zkcoord.ErrInvalidReplicationFactor), errors.Is(err, zkcoord.ErrInvalidReplicaAssignment):
		return failf("%s", clean(err))
	default:
		return zkErr(c, err)
	}
}
