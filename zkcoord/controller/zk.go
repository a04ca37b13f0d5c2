package controller

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/go-zookeeper/zk"
	"github.com/isrbroker/isrbroker/zkcoord/zkdata"

	"golang.org/x/sync/errgroup"
)

const (
	pathController      = zkdata.PathController
	pathControllerEpoch = zkdata.PathControllerEpoch
)

// controllerZk is the controller's ZooKeeper access (the controller part of Kafka's
// KafkaZkClient): reads, one-shot watches that enqueue events, and writes fenced by
// /controller_epoch. Only the event goroutine uses it.
type controllerZk struct {
	ct        *Controller
	armed     map[string]uint64 // watch key → token of the registration whose event counts
	nextToken uint64
}

// accept reports whether ev should be processed: a watch event counts only when it is the
// latest registration of its key (the key is then disarmed until re-armed).
func (z *controllerZk) accept(ev event) bool {
	if ev.token == 0 {
		return true
	}
	if z.armed[ev.key] != ev.token {
		return false
	}
	delete(z.armed, ev.key)
	return true
}

func (z *controllerZk) isArmed(key string) bool {
	_, ok := z.armed[key]
	return ok
}

func (z *controllerZk) disarm(key string) { delete(z.armed, key) }

func (z *controllerZk) disarmAll() { z.armed = map[string]uint64{} }

func (z *controllerZk) disarmAllBut(keep string) {
	for k := range z.armed {
		if k != keep {
			delete(z.armed, k)
		}
	}
}

// arm forwards the watch's event to the queue as ev.
func (z *controllerZk) arm(key string, ev event, wch <-chan zk.Event) {
	z.nextToken++
	ev.token = z.nextToken
	ev.key = key
	z.armed[key] = ev.token
	ct := z.ct
	go func() {
		select {
		case zev, ok := <-wch:
			// EventNotWatching means the session ended (expiry or Close): the session
			// goroutine's Expire/Elect events re-arm everything, so it is not forwarded.
			if ok && zev.Type != zk.EventNotWatching {
				ct.enqueue(ev)
			}
		case <-ct.done:
		}
	}()
}

// watchChildren reads path's children and (re-)arms a children watch that enqueues kind.
func (z *controllerZk) watchChildren(path string, kind evKind) ([]string, error) {
	key := "children:" + path
	if z.isArmed(key) {
		return z.ct.conn.Children(path)
	}
	ch, wch, err := z.ct.conn.ChildrenW(path)
	if err != nil {
		return nil, err
	}
	z.arm(key, event{kind: kind}, wch)
	return ch, nil
}

// watchTopic reads a topic's assignment and (re-)arms a data watch (partition modification).
func (z *controllerZk) watchTopic(topic string) (map[int32][]int32, error) {
	path := zkdata.TopicPath(topic)
	key := "data:" + path
	var data []byte
	var err error
	if z.isArmed(key) {
		data, _, err = z.ct.conn.Get(path)
	} else {
		var wch <-chan zk.Event
		data, _, wch, err = z.ct.conn.GetW(path)
		if err == nil {
			z.arm(key, event{kind: evPartitionModification, topic: topic}, wch)
		}
	}
	if err != nil {
		return nil, err
	}
	return zkdata.DecodeTopic(topic, data)
}

// watchExists (re-)arms an exists watch on path (it fires on creation, data change and
// deletion) that enqueues kind, and returns the znode's data: nil when it does not exist,
// non-nil (possibly empty) when it does.
func (z *controllerZk) watchExists(path string, kind evKind) ([]byte, error) {
	key := "exists:" + path
	if !z.isArmed(key) {
		_, _, wch, err := z.ct.conn.ExistsW(path)
		if err != nil {
			return nil, err
		}
		z.arm(key, event{kind: kind}, wch)
	}
	data, _, err := z.ct.conn.Get(path)
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if data == nil {
		data = []byte{}
	}
	return data, nil
}

// watchState (re-)arms a data watch on tp's state znode that enqueues kind, and refreshes the
// cached state from it.
func (z *controllerZk) watchState(tp TopicPartition, kind evKind) error {
	path := zkdata.PartitionStatePath(tp.Topic, tp.Partition)
	key := "data:" + path
	if z.isArmed(key) {
		return z.loadState(tp)
	}
	_, _, wch, err := z.ct.conn.GetW(path)
	if errors.Is(err, zk.ErrNoNode) {
		delete(z.ct.ctx.states, tp)
		return nil
	}
	if err != nil {
		return err
	}
	z.arm(key, event{kind: kind, topic: tp.Topic}, wch)
	return z.loadState(tp)
}

func (z *controllerZk) unwatchState(tp TopicPartition) {
	z.disarm("data:" + zkdata.PartitionStatePath(tp.Topic, tp.Partition))
}

// fencedMulti runs ops in one multi behind check(/controller_epoch, epochZkVersion)
// (wrapRequestWithControllerEpochCheck). A failed check is ErrControllerMoved; otherwise the
// first failing op's error is returned. The results exclude the check.
func (z *controllerZk) fencedMulti(ops ...any) ([]zk.MultiResponse, error) {
	v := z.ct.ctx.epochZkVersion
	all := make([]any, 0, len(ops)+1)
	all = append(all, &zk.CheckVersionRequest{Path: pathControllerEpoch, Version: v})
	all = append(all, ops...)
	res, err := z.ct.conn.Multi(all...)
	if err == nil {
		return res[1:], nil
	}
	if len(res) > 0 && res[0].Error != nil {
		return nil, fmt.Errorf("%w: epoch zkVersion %d: %v", ErrControllerMoved, v, res[0].Error)
	}
	return res, err
}

func (z *controllerZk) readBrokers(ids []string) (map[int32]BrokerInfo, error) {
	out := map[int32]BrokerInfo{}
	for _, s := range ids {
		id, err := strconv.ParseInt(s, 10, 32)
		if err != nil {
			continue
		}
		data, st, err := z.ct.conn.Get(zkdata.BrokerIDPath(int32(id)))
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return nil, err
		}
		bi, err := zkdata.DecodeBroker(int32(id), data)
		if err != nil {
			z.ct.log.WithError(err).Warn("ignoring undecodable broker znode")
			continue
		}
		bi.Epoch = st.Czxid
		out[bi.ID] = bi
	}
	return out, nil
}

// loadState reads a partition's state znode into the cache (absent: a new partition).
func (z *controllerZk) loadState(tp TopicPartition) error {
	data, st, err := z.ct.conn.Get(zkdata.PartitionStatePath(tp.Topic, tp.Partition))
	if errors.Is(err, zk.ErrNoNode) {
		delete(z.ct.ctx.states, tp)
		return nil
	}
	if err != nil {
		return err
	}
	ps, err := zkdata.DecodeState(data)
	if err != nil {
		z.ct.log.WithError(err).WithField("topic", tp.Topic).WithField("partition", tp.Partition).Error("undecodable partition state")
		delete(z.ct.ctx.states, tp)
		return nil
	}
	z.ct.ctx.states[tp] = &leaderIsr{leader: ps.Leader, leaderEpoch: ps.LeaderEpoch, isr: ps.ISR, controllerEpoch: ps.ControllerEpoch, zkVersion: st.Version}
	return nil
}

// subtree lists path and its descendants, children before parents.
func (z *controllerZk) subtree(path string) ([]string, error) {
	ch, err := z.ct.conn.Children(path)
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, c := range ch {
		sub, err := z.subtree(zkdata.Child(path, c))
		if err != nil {
			return nil, err
		}
		out = append(out, sub...)
	}
	return append(out, path), nil
}

// deletePaths deletes paths (in order) with fenced multis of at most 500 ops; nodes that
// are already gone are skipped.
func (z *controllerZk) deletePaths(paths []string) error {
	for len(paths) > 0 {
		n := min(len(paths), 500)
		chunk := paths[:n]
		ops := make([]any, 0, n)
		for _, p := range chunk {
			ops = append(ops, &zk.DeleteRequest{Path: p, Version: -1})
		}
		_, err := z.fencedMulti(ops...)
		if errors.Is(err, zk.ErrNoNode) {
			// Some are gone already: one at a time.
			for _, p := range chunk {
				if _, err := z.fencedMulti(&zk.DeleteRequest{Path: p, Version: -1}); err != nil && !errors.Is(err, zk.ErrNoNode) {
					return err
				}
			}
		} else if err != nil {
			return err
		}
		paths = paths[n:]
	}
	return nil
}

func (z *controllerZk) deleteChildren(parent string, children []string) error {
	paths := make([]string, 0, len(children))
	for _, c := range children {
		paths = append(paths, zkdata.Child(parent, c))
	}
	return z.deletePaths(paths)
}

func (z *controllerZk) readOrCreateControllerEpoch() (int32, int32, error) {
	for {
		data, st, err := z.ct.conn.Get(pathControllerEpoch)
		if errors.Is(err, zk.ErrNoNode) {
			_, err = z.ct.conn.Create(pathControllerEpoch, zkdata.EncodeControllerEpoch(zkdata.InitialControllerEpoch), 0)
			if err != nil && !errors.Is(err, zk.ErrNodeExists) {
				return 0, 0, err
			}
			continue
		}
		if err != nil {
			return 0, 0, err
		}
		e, err := zkdata.DecodeControllerEpoch(data)
		return e, st.Version, err
	}
}

// controllerID returns the broker id in /controller, -1 if there is none.
func (z *controllerZk) controllerID() int32 {
	data, _, err := z.ct.conn.Get(pathController)
	if err != nil {
		return -1
	}
	id, err := zkdata.DecodeController(data)
	if err != nil {
		return -1
	}
	return id
}

// uncleanAllowed is unclean.leader.election.enable for topic: its /config/topics override,
// else this broker's dynamic or static default (K6, dynamicUncleanDefault). Read from
// ZooKeeper at every election, so a config turned on dynamically is seen at once.
func (z *controllerZk) uncleanAllowed(topic string) bool {
	if zkdata.ValidTopicName(topic) {
		if v, ok := z.configBool(zkdata.TopicConfigPath(topic)); ok {
			return v
		}
	}
	return z.dynamicUncleanDefault()
}

// Pipelining and batching of the controller's ZooKeeper traffic (Kafka 1.1's controller
// improvements, KAFKA-5642: asynchronous, batched ZooKeeper requests; docs/performance.md,
// "Controller at scale"). The ZooKeeper client sends concurrent requests on its one session
// without waiting for each answer, so the reads below keep many requests in flight and the
// writes go as a few large multis instead of one round trip per partition.
const (
	// maxBatchOps is the number of ops of one fenced multi (the epoch check excluded): large
	// enough to amortise the round trip, small enough to stay far below ZooKeeper's 1 MB
	// request limit (jute.maxbuffer) with partition-state JSON.
	maxBatchOps = 300
	// pipelineDepth is the number of ZooKeeper requests kept in flight by the reads and
	// batched writes.
	pipelineDepth = 32
)

// loadStates reads the state znodes of tps with pipelined Gets and then updates the cache as
// loadState does (absent: a new partition). The first read error is returned and nothing is
// cached then.
func (z *controllerZk) loadStates(tps []TopicPartition) error {
	type read struct {
		data []byte
		st   *zk.Stat
		err  error
	}
	reads := make([]read, len(tps))
	var g errgroup.Group
	g.SetLimit(pipelineDepth)
	for i, tp := range tps {
		g.Go(func() error {
			r := &reads[i]
			r.data, r.st, r.err = z.ct.conn.Get(zkdata.PartitionStatePath(tp.Topic, tp.Partition))
			return nil
		})
	}
	_ = g.Wait() // each read's error is in reads
	for _, r := range reads {
		if r.err != nil && !errors.Is(r.err, zk.ErrNoNode) {
			return r.err
		}
	}
	undecodable := 0
	for i, tp := range tps {
		r := reads[i]
		if r.err != nil {
			delete(z.ct.ctx.states, tp)
			continue
		}
		ps, err := zkdata.DecodeState(r.data)
		if err != nil {
			if undecodable == 0 {
				z.ct.log.WithError(err).WithField("topic", tp.Topic).WithField("partition", tp.Partition).Error("undecodable partition state")
			}
			undecodable++
			delete(z.ct.ctx.states, tp)
			continue
		}
		z.ct.ctx.states[tp] = &leaderIsr{leader: ps.Leader, leaderEpoch: ps.LeaderEpoch, isr: ps.ISR, controllerEpoch: ps.ControllerEpoch, zkVersion: r.st.Version}
	}
	if undecodable > 1 {
		z.ct.log.WithField("count", undecodable).Error("undecodable partition states ignored")
	}
	return nil
}

// batchResult is the outcome of one group of a fencedBatch: the responses of its ops, or the
// error of its first failing op.
type batchResult struct {
	res []zk.MultiResponse
	err error
}

// fencedBatch writes groups of ops, each group atomically, as fenced multis of about
// maxBatchOps ops (every multi starts with the /controller_epoch check, K3/KAFKA-6082),
// several in flight at once. Groups must be independent of each other: a multi that fails is
// retried in halves until the failing group is alone, so one bad group (BADVERSION, NONODE,
// NODEEXISTS) costs a few round trips and the others are still written. It returns each
// group's result, or ErrControllerMoved as soon as a fencing check fails (the remaining
// groups are then not all written).
func (z *controllerZk) fencedBatch(groups [][]any) ([]batchResult, error) {
	out := make([]batchResult, len(groups))
	// Chunks of whole groups.
	var chunks [][2]int
	for i := 0; i < len(groups); {
		j, ops := i, 0
		for j < len(groups) && (j == i || ops+len(groups[j]) <= maxBatchOps) {
			ops += len(groups[j])
			j++
		}
		chunks = append(chunks, [2]int{i, j})
		i = j
	}
	var g errgroup.Group
	g.SetLimit(pipelineDepth)
	for _, c := range chunks {
		g.Go(func() error { return z.writeGroups(groups, out, c[0], c[1]) })
	}
	return out, g.Wait()
}

// writeGroups writes groups[lo:hi] in one fenced multi; when it fails for a reason other
// than fencing, each half is written on its own, down to single groups whose error is kept.
func (z *controllerZk) writeGroups(groups [][]any, out []batchResult, lo, hi int) error {
	var ops []any
	for _, g := range groups[lo:hi] {
		ops = append(ops, g...)
	}
	res, err := z.fencedMulti(ops...)
	if errors.Is(err, ErrControllerMoved) || (err != nil && len(res) == 0) {
		return err // fenced, or no per-op answer (the session failed): nothing to split
	}
	if err == nil {
		for i := lo; i < hi; i++ {
			n := len(groups[i])
			out[i] = batchResult{res: res[:n]}
			res = res[n:]
		}
		return nil
	}
	if hi-lo == 1 {
		out[lo] = batchResult{err: err}
		return nil
	}
	mid := lo + (hi-lo)/2
	if err := z.writeGroups(groups, out, lo, mid); err != nil {
		return err
	}
	return z.writeGroups(groups, out, mid, hi)
}
