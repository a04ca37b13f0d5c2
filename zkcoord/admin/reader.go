package admin

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"

	"github.com/go-zookeeper/zk"
	"github.com/isrbroker/isrbroker/zkcoord/zkclient"
	"github.com/isrbroker/isrbroker/zkcoord/zkdata"
	"github.com/sirupsen/logrus"
)

// Reader reads the cluster's state from ZooKeeper for the broker, operator tools and tests.
type Reader struct {
	conn zkclient.Conn
	log  logrus.FieldLogger
}

// NewReader returns a Reader over conn.
func NewReader(conn zkclient.Conn, log logrus.FieldLogger) *Reader {
	return &Reader{conn: conn, log: log}
}

// LiveBrokers returns the registered brokers sorted by id.
func (r *Reader) LiveBrokers() ([]BrokerInfo, error) {
	ids, err := r.conn.Children(zkdata.PathBrokerIDs)
	if err != nil {
		return nil, err
	}
	var out []BrokerInfo
	for _, s := range ids {
		id, err := strconv.ParseInt(s, 10, 32)
		if err != nil {
			continue
		}
		data, st, err := r.conn.Get(zkdata.BrokerIDPath(int32(id)))
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return nil, err
		}
		bi, err := zkdata.DecodeBroker(int32(id), data)
		if err != nil {
			r.log.WithError(err).Warn("skipping undecodable broker znode")
			continue
		}
		bi.Epoch = st.Czxid
		out = append(out, bi)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// Topics returns all topics, sorted.
func (r *Reader) Topics() ([]string, error) {
	ts, err := r.conn.Children(zkdata.PathBrokerTopics)
	if err != nil {
		return nil, err
	}
	sort.Strings(ts)
	return ts, nil
}

// TopicAssignment returns the replica assignment of topic.
func (r *Reader) TopicAssignment(topic string) (map[int32][]int32, error) {
	if !zkdata.ValidTopicName(topic) {
		return nil, ErrUnknownTopic
	}
	data, _, err := r.conn.Get(zkdata.TopicPath(topic))
	if errors.Is(err, zk.ErrNoNode) {
		return nil, ErrUnknownTopic
	}
	if err != nil {
		return nil, err
	}
	return zkdata.DecodeTopic(topic, data)
}

// PartitionState reads a partition's state znode.
func (r *Reader) PartitionState(topic string, partition int32) (PartitionState, error) {
	if !zkdata.ValidTopicName(topic) {
		return PartitionState{}, ErrUnknownTopic
	}
	data, st, err := r.conn.Get(zkdata.PartitionStatePath(topic, partition))
	if errors.Is(err, zk.ErrNoNode) {
		return PartitionState{}, ErrUnknownTopic
	}
	if err != nil {
		return PartitionState{}, err
	}
	ps, err := zkdata.DecodeState(data)
	if err != nil {
		return PartitionState{}, err
	}
	ps.ZkVersion = st.Version
	return ps, nil
}

// ControllerID returns the broker id in /controller, -1 if there is none.
func (r *Reader) ControllerID() (int32, error) {
	data, _, err := r.conn.Get(zkdata.PathController)
	if errors.Is(err, zk.ErrNoNode) {
		return -1, nil
	}
	if err != nil {
		return -1, err
	}
	return zkdata.DecodeController(data)
}

// ControllerEpoch returns /controller_epoch and its zkVersion (0, -1 when missing).
func (r *Reader) ControllerEpoch() (int32, int32, error) {
	data, st, err := r.conn.Get(zkdata.PathControllerEpoch)
	if errors.Is(err, zk.ErrNoNode) {
		return zkdata.InitialControllerEpoch, -1, nil
	}
	if err != nil {
		return 0, 0, err
	}
	e, err := zkdata.DecodeControllerEpoch(data)
	return e, st.Version, err
}

// TopicConfig returns the "config" map of /config/topics/<t>.
func (r *Reader) TopicConfig(topic string) (map[string]string, error) {
	if !zkdata.ValidTopicName(topic) {
		return nil, ErrUnknownTopic
	}
	data, _, err := r.conn.Get(zkdata.TopicConfigPath(topic))
	if errors.Is(err, zk.ErrNoNode) {
		ok, _, err := r.conn.Exists(zkdata.TopicPath(topic))
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, ErrUnknownTopic
		}
		return map[string]string{}, nil
	}
	if err != nil {
		return nil, err
	}
	return zkdata.DecodeConfig(data)
}

// ReassignmentInProgress returns the entries of /admin/reassign_partitions and whether the
// znode exists.
func (r *Reader) ReassignmentInProgress() ([]PartitionReassignment, bool, error) {
	data, _, err := r.conn.Get(zkdata.PathReassignPartitions)
	if errors.Is(err, zk.ErrNoNode) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	parts, err := zkdata.DecodeReassignment(data)
	if err != nil {
		return nil, true, fmt.Errorf("zkcoord: %s: %w", zkdata.PathReassignPartitions, err)
	}
	return parts, true, nil
}

// BrokerConfig returns the "config" map of /config/brokers/<id> (empty when absent).
func (r *Reader) BrokerConfig(id int32) (map[string]string, error) {
	data, _, err := r.conn.Get(zkdata.BrokerConfigPath(id))
	if errors.Is(err, zk.ErrNoNode) {
		return map[string]string{}, nil
	}
	if err != nil {
		return nil, err
	}
	return zkdata.DecodeConfig(data)
}

// TopicsMarkedForDeletion returns the children of /admin/delete_topics, sorted.
func (r *Reader) TopicsMarkedForDeletion() ([]string, error) {
	ts, err := r.conn.Children(zkdata.PathDeleteTopics)
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	sort.Strings(ts)
	return ts, nil
}

// PreferredElectionPending reports whether /admin/preferred_replica_election exists.
func (r *Reader) PreferredElectionPending() (bool, error) {
	ok, _, err := r.conn.Exists(zkdata.PathPreferredReplicaElection)
	return ok, err
}

// WaitPreferredElectionDone waits until /admin/preferred_replica_election is gone (the
// controller deletes it after writing the new partition states), or ctx ends.
func (r *Reader) WaitPreferredElectionDone(ctx context.Context) error {
	for {
		ok, _, wch, err := r.conn.ExistsW(zkdata.PathPreferredReplicaElection)
		if err != nil {
			return err
		}
		if !ok {
			return nil
		}
		select {
		case <-wch:
		case <-ctx.Done():
			return ctx.Err()
		case <-r.conn.Done():
			return errClosed
		}
	}
}
