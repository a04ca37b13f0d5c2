package cluster

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/isrbroker/isrbroker/zkcoord/zktest"
)

// ZooKeeper is the cluster's ZooKeeper: the zktest server process (Addr, Pause, Resume, Restart)
// and the harness's own client of it, which reads Kafka's znodes and decodes their JSON itself
// (docs/kafka-facts.md §1), so checks do not trust the code under test.
type ZooKeeper struct {
	*zktest.Server

	t    testing.TB
	conn *zk.Conn
}

// Conn returns the harness's own ZooKeeper client (closed at cleanup).
func (z *ZooKeeper) Conn() *zk.Conn { return z.conn }

// Get reads one znode's raw data.
func (z *ZooKeeper) Get(path string) ([]byte, *zk.Stat, error) { return z.conn.Get(path) }

// Exists reports whether path exists in the cluster's ZooKeeper.
func (z *ZooKeeper) Exists(path string) bool {
	ok, _, err := z.conn.Exists(path)
	return err == nil && ok
}

// ReassignmentRunning reports whether /admin/reassign_partitions exists.
func (z *ZooKeeper) ReassignmentRunning() (bool, error) {
	ok, _, err := z.conn.Exists(ReassignmentPath)
	return ok, err
}

func (z *ZooKeeper) close() {
	if z.conn != nil {
		z.conn.Close()
	}
}

// RegisteredBrokers returns the ids under /brokers/ids, sorted.
func (z *ZooKeeper) RegisteredBrokers() ([]int32, error) {
	children, _, err := z.conn.Children("/brokers/ids")
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	ids := make([]int32, 0, len(children))
	for _, ch := range children {
		id, err := strconv.ParseInt(ch, 10, 32)
		if err != nil {
			return nil, fmt.Errorf("cluster: /brokers/ids/%s is not a broker id", ch)
		}
		ids = append(ids, int32(id))
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids, nil
}

// ControllerID returns the brokerid in /controller, or -1 when there is no controller.
func (z *ZooKeeper) ControllerID() (int32, error) {
	data, _, err := z.conn.Get("/controller")
	if errors.Is(err, zk.ErrNoNode) {
		return -1, nil
	}
	if err != nil {
		return -1, err
	}
	var v struct {
		BrokerID *int32 `json:"brokerid"`
	}
	if err := json.Unmarshal(data, &v); err != nil || v.BrokerID == nil {
		return -1, fmt.Errorf("cluster: /controller is not Kafka's JSON: %q", data)
	}
	return *v.BrokerID, nil
}

// ControllerEpoch returns the integer in /controller_epoch (0 before the first election).
func (z *ZooKeeper) ControllerEpoch() (int32, error) {
	data, _, err := z.conn.Get("/controller_epoch")
	if errors.Is(err, zk.ErrNoNode) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	e, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 32)
	if err != nil {
		return 0, fmt.Errorf("cluster: /controller_epoch is not an integer: %q", data)
	}
	return int32(e), nil
}

// WaitController waits until some broker holds /controller and returns its id and the epoch.
func (z *ZooKeeper) WaitController(timeout time.Duration) (id, epoch int32) {
	z.t.Helper()
	WaitFor(z.t, timeout, func() (bool, string) {
		var err error
		if id, err = z.ControllerID(); err != nil {
			return false, err.Error()
		}
		if id < 0 {
			return false, "no /controller"
		}
		if epoch, err = z.ControllerEpoch(); err != nil {
			return false, err.Error()
		}
		return true, ""
	})
	return id, epoch
}

// PartitionState is a decoded /brokers/topics/<t>/partitions/<p>/state znode.
type PartitionState struct {
	ControllerEpoch int32   `json:"controller_epoch"`
	Leader          int32   `json:"leader"`
	Version         int32   `json:"version"`
	LeaderEpoch     int32   `json:"leader_epoch"`
	ISR             []int32 `json:"isr"`
	ZkVersion       int32   `json:"-"` // Stat.version
	// Modified is Stat.mtime: when ZooKeeper applied the write of this version (the server's
	// clock, the same machine's in these tests).
	Modified time.Time `json:"-"`
}

// PartitionStatePath is the state znode of one partition.
func PartitionStatePath(topic string, p int32) string {
	return "/brokers/topics/" + topic + "/partitions/" + Itoa32(p) + "/state"
}

// PartitionState reads one partition's state znode.
func (z *ZooKeeper) PartitionState(topic string, p int32) (PartitionState, error) {
	data, stat, err := z.conn.Get(PartitionStatePath(topic, p))
	if err != nil {
		return PartitionState{}, fmt.Errorf("%s: %w", PartitionStatePath(topic, p), err)
	}
	var st PartitionState
	if err := json.Unmarshal(data, &st); err != nil {
		return PartitionState{}, fmt.Errorf("%s: %q: %w", PartitionStatePath(topic, p), data, err)
	}
	st.ZkVersion = stat.Version
	st.Modified = time.UnixMilli(stat.Mtime)
	return st, nil
}

// WaitPartitionState polls topic-p's state znode until cond accepts it and returns that state;
// the test fails with cond's last message after timeout.
func (z *ZooKeeper) WaitPartitionState(topic string, p int32, timeout time.Duration, cond func(PartitionState) (bool, string)) PartitionState {
	z.t.Helper()
	var st PartitionState
	WaitFor(z.t, timeout, func() (bool, string) {
		var err error
		if st, err = z.PartitionState(topic, p); err != nil {
			return false, err.Error()
		}
		ok, msg := cond(st)
		return ok, fmt.Sprintf("%s-%d state %+v: %s", topic, p, st, msg)
	})
	return st
}

// TopicAssignment reads /brokers/topics/<t>: partition → replicas.
func (z *ZooKeeper) TopicAssignment(topic string) (map[int32][]int32, error) {
	data, _, err := z.conn.Get("/brokers/topics/" + topic)
	if err != nil {
		return nil, fmt.Errorf("/brokers/topics/%s: %w", topic, err)
	}
	var v struct {
		Partitions map[string][]int32 `json:"partitions"`
	}
	if err := json.Unmarshal(data, &v); err != nil {
		return nil, fmt.Errorf("/brokers/topics/%s: %q: %w", topic, data, err)
	}
	out := make(map[int32][]int32, len(v.Partitions))
	for k, r := range v.Partitions {
		p, err := strconv.ParseInt(k, 10, 32)
		if err != nil {
			return nil, fmt.Errorf("/brokers/topics/%s: partition key %q", topic, k)
		}
		out[int32(p)] = r
	}
	return out, nil
}

// WaitTopicOnline waits until /brokers/topics/<t> exists and every partition's state znode names
// a leader that is a live registered broker; it returns the assignment.
func (z *ZooKeeper) WaitTopicOnline(topic string, timeout time.Duration) map[int32][]int32 {
	z.t.Helper()
	var assignment map[int32][]int32
	WaitFor(z.t, timeout, func() (bool, string) {
		var err error
		if assignment, err = z.TopicAssignment(topic); err != nil {
			return false, err.Error()
		}
		live, err := z.RegisteredBrokers()
		if err != nil {
			return false, err.Error()
		}
		for p := range assignment {
			st, err := z.PartitionState(topic, p)
			if err != nil {
				return false, err.Error()
			}
			if !contains(live, st.Leader) {
				return false, fmt.Sprintf("%s-%d leader %d not live (live %v)", topic, p, st.Leader, live)
			}
		}
		return true, ""
	})
	return assignment
}

func contains(s []int32, v int32) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
