package cluster

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
)

// ZKConn returns the harness's own ZooKeeper client (closed at cleanup).
func (c *Cluster) ZKConn() *zk.Conn { return c.zkc }

// ZNode reads one znode's raw data.
func (c *Cluster) ZNode(path string) ([]byte, *zk.Stat, error) { return c.zkc.Get(path) }

// RegisteredBrokers returns the ids under /brokers/ids, sorted.
func (c *Cluster) RegisteredBrokers() ([]int32, error) {
	children, _, err := c.zkc.Children("/brokers/ids")
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

// WaitRegistered waits until every given broker (all brokers when none given) has its
// /brokers/ids/<id> znode. A broker process that exits meanwhile fails the test at once.
func (c *Cluster) WaitRegistered(ids ...int32) {
	c.t.Helper()
	if len(ids) == 0 {
		ids = c.ids
	}
	WaitFor(c.t, StartTimeout, func() (bool, string) {
		for _, id := range ids {
			if !c.Running(id) {
				code, _ := c.WaitExit(id, 0)
				c.t.Fatalf("cluster: broker %d exited (code %d) before registering; output:\n%s", id, code, c.Tail(id, 40))
			}
		}
		got, err := c.RegisteredBrokers()
		if err != nil {
			return false, err.Error()
		}
		have := map[int32]bool{}
		for _, id := range got {
			have[id] = true
		}
		for _, id := range ids {
			if !have[id] {
				return false, fmt.Sprintf("broker %d not registered; /brokers/ids = %v", id, got)
			}
		}
		return true, ""
	})
}

// WaitUnregistered waits until none of the given brokers has a /brokers/ids znode (a killed
// broker's ephemeral znode goes away once its session expires).
func (c *Cluster) WaitUnregistered(timeout time.Duration, ids ...int32) {
	c.t.Helper()
	WaitFor(c.t, timeout, func() (bool, string) {
		got, err := c.RegisteredBrokers()
		if err != nil {
			return false, err.Error()
		}
		for _, g := range got {
			for _, id := range ids {
				if g == id {
					return false, fmt.Sprintf("broker %d still registered; /brokers/ids = %v", id, got)
				}
			}
		}
		return true, ""
	})
}

// ControllerID returns the brokerid in /controller, or -1 when there is no controller.
func (c *Cluster) ControllerID() (int32, error) {
	data, _, err := c.zkc.Get("/controller")
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
func (c *Cluster) ControllerEpoch() (int32, error) {
	data, _, err := c.zkc.Get("/controller_epoch")
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
func (c *Cluster) WaitController(timeout time.Duration) (id, epoch int32) {
	c.t.Helper()
	WaitFor(c.t, timeout, func() (bool, string) {
		var err error
		if id, err = c.ControllerID(); err != nil {
			return false, err.Error()
		}
		if id < 0 {
			return false, "no /controller"
		}
		if epoch, err = c.ControllerEpoch(); err != nil {
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
func (c *Cluster) PartitionState(topic string, p int32) (PartitionState, error) {
	data, stat, err := c.zkc.Get(PartitionStatePath(topic, p))
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

// TopicAssignment reads /brokers/topics/<t>: partition → replicas.
func (c *Cluster) TopicAssignment(topic string) (map[int32][]int32, error) {
	data, _, err := c.zkc.Get("/brokers/topics/" + topic)
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
func (c *Cluster) WaitTopicOnline(topic string, timeout time.Duration) map[int32][]int32 {
	c.t.Helper()
	var assignment map[int32][]int32
	WaitFor(c.t, timeout, func() (bool, string) {
		var err error
		if assignment, err = c.TopicAssignment(topic); err != nil {
			return false, err.Error()
		}
		live, err := c.RegisteredBrokers()
		if err != nil {
			return false, err.Error()
		}
		for p := range assignment {
			st, err := c.PartitionState(topic, p)
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
