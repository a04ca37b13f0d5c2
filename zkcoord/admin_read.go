package zkcoord

import (
	"context"
	"errors"
	"fmt"
	"github.com/isrbroker/isrbroker/zkcoord/internal/sorted"
	"github.com/isrbroker/isrbroker/zkcoord/zkdata"
	"net"
	"sort"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/sirupsen/logrus"
)

// This file holds what operator tools (zkcoord/admintool, `isrbroker topics|cluster
// --zookeeper`) need beyond the broker's own API: a session that never writes the
// cluster skeleton, the topics marked for deletion, and adding partitions to a topic.

// ErrNoCluster means ZooKeeper answered but holds no isrbroker/Kafka cluster at the
// chroot (no /brokers/ids): usually a wrong --zookeeper chroot.
var ErrNoCluster = errors.New("zkcoord: no cluster found (no /brokers/ids znode; wrong chroot?)")

// ErrNoSession means no ZooKeeper session could be established within the connection
// timeout (ZooKeeper down or unreachable).
var ErrNoSession = errors.New("zkcoord: no ZooKeeper session")

// ConnectAdmin opens a ZooKeeper session for an operator tool. Unlike Connect it creates
// nothing (no chroot, persistent paths or cluster id): a tool pointed at the wrong
// ZooKeeper or chroot must not leave a cluster skeleton behind. It fails with ErrNoSession
// when no session is established within timeout, and with ErrNoCluster when the chroot has
// no /brokers/ids. The returned Coordinator has BrokerID -1, never registers, never runs
// a controller, and may mark topics for deletion (Kafka's TopicCommand writes
// /admin/delete_topics/<t> whatever the brokers' delete.topic.enable says).
func ConnectAdmin(ctx context.Context, connect string, timeout time.Duration, log logrus.FieldLogger) (*Coordinator, error) {
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	if log == nil {
		l := logrus.New()
		l.SetLevel(logrus.WarnLevel)
		log = l
	}
	servers, chroot, err := parseConnect(connect)
	if err != nil {
		return nil, err
	}
	c := &Coordinator{
		cfg: Config{
			Connect:           connect,
			SessionTimeout:    timeout,
			ConnectionTimeout: timeout,
			BrokerID:          -1,
			DeleteTopicEnable: true,
			Log:               log,
		},
		log:      log.WithField("broker", -1),
		chroot:   chroot,
		sessQ:    newQueue[zk.State](),
		firstSes: make(chan struct{}),
		done:     make(chan struct{}),
	}
	dialer := func(network, address string, t time.Duration) (net.Conn, error) {
		if t > timeout {
			t = timeout
		}
		return net.DialTimeout(network, address, t)
	}
	conn, _, err := zk.Connect(servers, timeout, zk.WithDialer(dialer),
		zk.WithLogger(zkLogger{c.log}), zk.WithLogInfo(false),
		zk.WithEventCallback(func(ev zk.Event) {
			if ev.Type == zk.EventSession {
				c.sessQ.put(ev.State)
			}
		}))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoSession, err)
	}
	c.conn = conn
	c.wg.Add(1)
	go c.sessionLoop()
	tctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	select {
	case <-c.firstSes:
	case <-tctx.Done():
		c.Close()
		return nil, fmt.Errorf("%w within %v", ErrNoSession, timeout)
	}
	ok, _, err := c.exists(zkdata.PathBrokerIDs)
	if err != nil {
		c.Close()
		return nil, err
	}
	if !ok {
		c.Close()
		return nil, ErrNoCluster
	}
	return c, nil
}

// TopicsMarkedForDeletion returns the children of /admin/delete_topics, sorted.
func (c *Coordinator) TopicsMarkedForDeletion() ([]string, error) {
	ts, err := c.children(zkdata.PathDeleteTopics)
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	sort.Strings(ts)
	return ts, nil
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
func (c *Coordinator) AddPartitions(ctx context.Context, topic string, numPartitions int32, newAssignment map[int32][]int32, validateOnly bool) (map[int32][]int32, error) {
	if !zkdata.ValidTopicName(topic) {
		return nil, ErrUnknownTopic
	}
	data, st, err := c.get(zkdata.TopicPath(topic))
	if errors.Is(err, zk.ErrNoNode) {
		return nil, ErrUnknownTopic
	}
	if err != nil {
		return nil, err
	}
	existing, err := zkdata.DecodeTopic(topic, data)
	if err != nil {
		return nil, err
	}
	if ok, _, err := c.exists(zkdata.DeleteTopicPath(topic)); err != nil {
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
	live, err := c.liveBrokerIDs()
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
		start := 0
		for i, id := range live {
			if id >= p0[0] {
				start = i
				break
			}
		}
		added, err = assignReplicasFrom(live, numPartitions-cur, rf, start, cur)
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
	all := make(map[int32][]int32, numPartitions)
	for p, r := range existing {
		all[p] = r
	}
	for p, r := range added {
		all[p] = r
	}
	if _, err := c.set(zkdata.TopicPath(topic), zkdata.EncodeTopic(all), st.Version); err != nil {
		if errors.Is(err, zk.ErrBadVersion) {
			return nil, fmt.Errorf("zkcoord: topic %s was modified concurrently; retry", topic)
		}
		return nil, err
	}
	c.log.WithField("topic", topic).WithField("partitions", numPartitions).Info("added partitions")
	return added, nil
}

// assignReplicasFrom is Kafka's assignReplicasToBrokersRackUnaware with a fixed start index
// (also the initial replica shift) and a start partition id, as used by addPartitions.
func assignReplicasFrom(brokers []int32, n int32, rf int, startIndex int, startPartition int32) (map[int32][]int32, error) {
	nb := len(brokers)
	if rf <= 0 || n <= 0 {
		return nil, fmt.Errorf("%w: nothing to assign", ErrInvalidPartitions)
	}
	if rf > nb {
		return nil, fmt.Errorf("%w: replication factor: %d larger than available brokers: %d", ErrInvalidReplicationFactor, rf, nb)
	}
	shift := startIndex
	out := make(map[int32][]int32, n)
	for i, p := int32(0), startPartition; i < n; i, p = i+1, p+1 {
		if p > 0 && int(p)%nb == 0 {
			shift++
		}
		first := (int(p) + startIndex) % nb
		r := make([]int32, 0, rf)
		r = append(r, brokers[first])
		for j := 0; j < rf-1; j++ {
			s := 1 + (shift+j)%(nb-1)
			r = append(r, brokers[(first+s)%nb])
		}
		out[p] = r
	}
	return out, nil
}
