package admintool

import (
	"context"
	"errors"
	"sort"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/isrbroker/isrbroker/zkcoord/admin"
)

// zkBackend implements the topics verbs on the znodes, through zkcoord/admin.
type zkBackend struct {
	c     *cli.Context
	coord *admin.Session
}

func (b *zkBackend) close() { _ = b.coord.Close() }

func (b *zkBackend) names(ctx context.Context) ([]topicInfo, error) {
	ts, err := b.coord.Reader.Topics()
	if err != nil {
		return nil, zkErr(b.c, err)
	}
	del, err := b.coord.Reader.TopicsMarkedForDeletion()
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
func liveSet(coord *admin.Session) (map[int32]bool, []admin.BrokerInfo, error) {
	bs, err := coord.Reader.LiveBrokers()
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
// -1 and an empty ISR. admin.ErrUnknownTopic when the topic vanished meanwhile.
func readTopic(coord *admin.Session, name string, marked bool) (topicInfo, error) {
	a, err := coord.Reader.TopicAssignment(name)
	if err != nil {
		return topicInfo{}, err
	}
	cfg, err := coord.Reader.TopicConfig(name)
	if err != nil {
		return topicInfo{}, err
	}
	t := topicInfo{Name: name, Configs: cfg, MarkedForDeletion: marked, Internal: isInternal(name)}
	for p, r := range a {
		pi := partitionInfo{ID: p, Leader: -1, Replicas: r}
		st, err := coord.Reader.PartitionState(name, p)
		switch {
		case err == nil:
			pi.Leader, pi.ISR = st.Leader, st.ISR
		case errors.Is(err, admin.ErrUnknownTopic):
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
	del, err := b.coord.Reader.TopicsMarkedForDeletion()
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
		if errors.Is(err, admin.ErrUnknownTopic) {
			continue // deleted since it was listed
		}
		if err != nil {
			return nil, nil, zkErr(b.c, err)
		}
		out = append(out, t)
	}
	return out, live, nil
}

// rackAwareMode is Kafka's TopicCommand choice: Enforced unless --disable-rack-aware.
func (b *zkBackend) rackAwareMode() admin.RackAwareMode {
	if b.c.Bool("disable-rack-aware") {
		return admin.RackAwareDisabled
	}
	return admin.RackAwareEnforced
}

func (b *zkBackend) create(ctx context.Context, name string, partitions int32, rf int16, assignment map[int32][]int32, configs map[string]string) error {
	_, err := b.coord.Admin.CreateTopic(ctx, admin.TopicSpec{
		Name: name, NumPartitions: partitions, ReplicationFactor: rf, Assignment: assignment, Configs: configs,
		RackAwareMode: b.rackAwareMode(),
	}, false)
	return adminErr(b.c, name, err)
}

func (b *zkBackend) delete(ctx context.Context, name string) error {
	return adminErr(b.c, name, b.coord.Admin.DeleteTopic(ctx, name))
}

func (b *zkBackend) addPartitions(ctx context.Context, name string, n int32, assignment map[int32][]int32) error {
	var added map[int32][]int32
	if assignment != nil {
		// Like kafka-topics.sh, the assignment lists all partitions; the new ones are
		// those after the current count.
		cur, err := b.coord.Reader.TopicAssignment(name)
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
	_, err := b.coord.Admin.AddPartitionsWithRacks(ctx, name, n, added, false, b.rackAwareMode())
	return adminErr(b.c, name, err)
}

// adminErr maps zkcoord's admin errors to operator messages.
func adminErr(c *cli.Context, topic string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, admin.ErrUnknownTopic):
		return failf("topic %q does not exist", topic)
	case errors.Is(err, admin.ErrTopicExists):
		if strings.Contains(err.Error(), "marked for deletion") {
			return failf("topic %q is marked for deletion; wait for the deletion to finish", topic)
		}
		return failf("topic %q already exists", topic)
	case errors.Is(err, admin.ErrInvalidTopic), errors.Is(err, admin.ErrInvalidPartitions),
		errors.Is(err, admin.ErrInvalidReplicationFactor), errors.Is(err, admin.ErrInvalidReplicaAssignment):
		return failf("%s", clean(err))
	default:
		return zkErr(c, err)
	}
}
