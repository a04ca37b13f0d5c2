package zkdata

import (
	"encoding/json"
	"fmt"
	"net"
	"strconv"
	"strings"
)

// ---- /brokers/ids/<id> (version 4) ----

// brokerZNode keeps Kafka's field order: {"listener_security_protocol_map":..,"endpoints":..,
// "jmx_port":-1,"host":..,"timestamp":"..","port":..,"version":4} (+ "rack").
type brokerZNode struct {
	ListenerSecurityProtocolMap map[string]string `json:"listener_security_protocol_map"`
	Endpoints                   []string          `json:"endpoints"`
	Rack                        *string           `json:"rack,omitempty"`
	JmxPort                     int32             `json:"jmx_port"`
	Host                        *string           `json:"host"`
	Timestamp                   string            `json:"timestamp"`
	Port                        int32             `json:"port"`
	Version                     int32             `json:"version"`
}

func EncodeBroker(endpoints []Endpoint, rack string) []byte {
	z := brokerZNode{
		ListenerSecurityProtocolMap: map[string]string{},
		Endpoints:                   []string{},
		JmxPort:                     -1,
		Timestamp:                   nowMsString(),
		Port:                        -1,
		Version:                     4,
	}
	for _, e := range endpoints {
		z.ListenerSecurityProtocolMap[e.Listener] = e.Protocol()
		z.Endpoints = append(z.Endpoints, e.Listener+"://"+net.JoinHostPort(e.Host, strconv.Itoa(int(e.Port))))
		// host/port are the first PLAINTEXT endpoint, else null/-1 (BrokerIdZNode.encode).
		if z.Host == nil && e.Protocol() == "PLAINTEXT" {
			h := e.Host
			z.Host = &h
			z.Port = e.Port
		}
	}
	if rack != "" {
		r := rack
		z.Rack = &r
	}
	b, _ := json.Marshal(z)
	return b
}

func DecodeBroker(id int32, data []byte) (BrokerInfo, error) {
	var z struct {
		ListenerSecurityProtocolMap map[string]string `json:"listener_security_protocol_map"`
		Endpoints                   []string          `json:"endpoints"`
		Rack                        *string           `json:"rack"`
		Host                        *string           `json:"host"`
		Port                        *int32            `json:"port"`
		Version                     int32             `json:"version"`
	}
	if err := json.Unmarshal(data, &z); err != nil {
		return BrokerInfo{}, fmt.Errorf("zkcoord: broker %d znode: %w", id, err)
	}
	bi := BrokerInfo{ID: id}
	if z.Rack != nil {
		bi.Rack = *z.Rack
	}
	for _, s := range z.Endpoints {
		i := strings.Index(s, "://")
		if i <= 0 {
			return BrokerInfo{}, fmt.Errorf("zkcoord: broker %d: bad endpoint %q", id, s)
		}
		listener := s[:i]
		host, portS, err := net.SplitHostPort(s[i+3:])
		if err != nil {
			return BrokerInfo{}, fmt.Errorf("zkcoord: broker %d: bad endpoint %q: %v", id, s, err)
		}
		port, err := strconv.ParseInt(portS, 10, 32)
		if err != nil {
			return BrokerInfo{}, fmt.Errorf("zkcoord: broker %d: bad endpoint port %q", id, s)
		}
		proto := z.ListenerSecurityProtocolMap[listener]
		if proto == "" {
			proto = listener // version 1-3 znodes name the protocol as the listener
		}
		bi.Endpoints = append(bi.Endpoints, Endpoint{Listener: listener, Host: host, Port: int32(port), SecurityProtocol: proto})
	}
	if len(bi.Endpoints) == 0 && z.Host != nil && z.Port != nil { // version 1 znodes
		bi.Endpoints = append(bi.Endpoints, Endpoint{Listener: "PLAINTEXT", Host: *z.Host, Port: *z.Port, SecurityProtocol: "PLAINTEXT"})
	}
	return bi, nil
}

// ---- /controller ----

type controllerZNode struct {
	Version   int32  `json:"version"`
	BrokerID  int32  `json:"brokerid"`
	Timestamp string `json:"timestamp"`
}

func EncodeController(id int32) []byte {
	b, _ := json.Marshal(controllerZNode{Version: 1, BrokerID: id, Timestamp: nowMsString()})
	return b
}

func DecodeController(data []byte) (int32, error) {
	var z struct {
		BrokerID *int32 `json:"brokerid"`
	}
	if err := json.Unmarshal(data, &z); err != nil {
		// Very old controllers wrote a bare integer.
		if n, err2 := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 32); err2 == nil {
			return int32(n), nil
		}
		return -1, fmt.Errorf("zkcoord: /controller: %w", err)
	}
	if z.BrokerID == nil {
		return -1, fmt.Errorf("zkcoord: /controller without brokerid")
	}
	return *z.BrokerID, nil
}

// ---- /controller_epoch: plain integer text ----

func EncodeControllerEpoch(e int32) []byte { return []byte(strconv.Itoa(int(e))) }

func DecodeControllerEpoch(data []byte) (int32, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 32)
	if err != nil {
		return 0, fmt.Errorf("zkcoord: /controller_epoch %q: %w", data, err)
	}
	return int32(n), nil
}

// ---- /cluster/id: {"version":"1","id":".."} (version is a string) ----

type clusterIDZNode struct {
	Version string `json:"version"`
	ID      string `json:"id"`
}

func EncodeClusterID(id string) []byte {
	b, _ := json.Marshal(clusterIDZNode{Version: "1", ID: id})
	return b
}

func DecodeClusterID(data []byte) (string, error) {
	var z clusterIDZNode
	if err := json.Unmarshal(data, &z); err != nil {
		return "", fmt.Errorf("zkcoord: /cluster/id: %w", err)
	}
	if z.ID == "" {
		return "", fmt.Errorf("zkcoord: /cluster/id without id")
	}
	return z.ID, nil
}

// ---- /brokers/topics/<t> (version 2, KIP-455) ----

type topicZNode struct {
	Version          int32              `json:"version"`
	Partitions       map[string][]int32 `json:"partitions"`
	AddingReplicas   map[string][]int32 `json:"adding_replicas"`
	RemovingReplicas map[string][]int32 `json:"removing_replicas"`
}

func EncodeTopic(assignment map[int32][]int32) []byte {
	z := topicZNode{Version: 2, Partitions: map[string][]int32{}, AddingReplicas: map[string][]int32{}, RemovingReplicas: map[string][]int32{}}
	for p, r := range assignment {
		if r == nil {
			r = []int32{}
		}
		z.Partitions[strconv.Itoa(int(p))] = r
	}
	b, _ := json.Marshal(z)
	return b
}

func DecodeTopic(topic string, data []byte) (map[int32][]int32, error) {
	var z topicZNode
	if err := json.Unmarshal(data, &z); err != nil {
		return nil, fmt.Errorf("zkcoord: topic %s znode: %w", topic, err)
	}
	out := make(map[int32][]int32, len(z.Partitions))
	for ps, r := range z.Partitions {
		p, err := strconv.ParseInt(ps, 10, 32)
		if err != nil || p < 0 {
			return nil, fmt.Errorf("zkcoord: topic %s: bad partition %q", topic, ps)
		}
		out[int32(p)] = r
	}
	return out, nil
}

// ---- partition state: {"controller_epoch":C,"leader":L,"version":1,"leader_epoch":E,"isr":[..]} ----

type stateZNode struct {
	ControllerEpoch int32   `json:"controller_epoch"`
	Leader          int32   `json:"leader"`
	Version         int32   `json:"version"`
	LeaderEpoch     int32   `json:"leader_epoch"`
	ISR             []int32 `json:"isr"`
}

func EncodeState(leader, leaderEpoch int32, isr []int32, controllerEpoch int32) []byte {
	if isr == nil {
		isr = []int32{}
	}
	b, _ := json.Marshal(stateZNode{ControllerEpoch: controllerEpoch, Leader: leader, Version: 1, LeaderEpoch: leaderEpoch, ISR: isr})
	return b
}

func DecodeState(data []byte) (PartitionState, error) {
	var z stateZNode
	if err := json.Unmarshal(data, &z); err != nil {
		return PartitionState{}, fmt.Errorf("zkcoord: partition state: %w", err)
	}
	return PartitionState{ControllerEpoch: z.ControllerEpoch, Leader: z.Leader, LeaderEpoch: z.LeaderEpoch, ISR: z.ISR}, nil
}

// ---- /config/topics/<t>: {"version":1,"config":{..}} ----

type configZNode struct {
	Version int32             `json:"version"`
	Config  map[string]string `json:"config"`
}

func EncodeConfig(cfg map[string]string) []byte {
	if cfg == nil {
		cfg = map[string]string{}
	}
	b, _ := json.Marshal(configZNode{Version: 1, Config: cfg})
	return b
}

func DecodeConfig(data []byte) (map[string]string, error) {
	var z configZNode
	if len(data) == 0 {
		return map[string]string{}, nil
	}
	if err := json.Unmarshal(data, &z); err != nil {
		return nil, fmt.Errorf("zkcoord: config znode: %w", err)
	}
	if z.Config == nil {
		z.Config = map[string]string{}
	}
	return z.Config, nil
}

// ---- /isr_change_notification/isr_change_<seq> ----

type tpJSON struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
}

type isrChangeZNode struct {
	Version    int32    `json:"version"`
	Partitions []tpJSON `json:"partitions"`
}

func EncodeIsrChange(tps []TopicPartition) []byte {
	z := isrChangeZNode{Version: 1, Partitions: make([]tpJSON, 0, len(tps))}
	for _, tp := range tps {
		z.Partitions = append(z.Partitions, tpJSON{Topic: tp.Topic, Partition: tp.Partition})
	}
	b, _ := json.Marshal(z)
	return b
}

func DecodeIsrChange(data []byte) ([]TopicPartition, error) {
	var z isrChangeZNode
	if err := json.Unmarshal(data, &z); err != nil {
		return nil, fmt.Errorf("zkcoord: isr change notification: %w", err)
	}
	out := make([]TopicPartition, 0, len(z.Partitions))
	for _, p := range z.Partitions {
		out = append(out, TopicPartition{Topic: p.Topic, Partition: p.Partition})
	}
	return out, nil
}

// ---- /admin/preferred_replica_election: {"version":1,"partitions":[{"topic":"t","partition":0}]} ----

// EncodePreferredElection writes the znode like Kafka's PreferredReplicaElectionZNode.
func EncodePreferredElection(tps []TopicPartition) []byte { return EncodeIsrChange(tps) }

// DecodePreferredElection reads the znode; a partition listed twice is an error (Kafka's
// tool refuses duplicates), as is a missing "partitions" list or a negative partition.
func DecodePreferredElection(data []byte) ([]TopicPartition, error) {
	var z struct {
		Partitions *[]struct {
			Topic     *string `json:"topic"`
			Partition *int32  `json:"partition"`
		} `json:"partitions"`
	}
	if err := json.Unmarshal(data, &z); err != nil {
		return nil, fmt.Errorf("zkcoord: preferred replica election: %w", err)
	}
	if z.Partitions == nil {
		return nil, fmt.Errorf("zkcoord: preferred replica election: no partitions list")
	}
	seen := map[TopicPartition]bool{}
	out := make([]TopicPartition, 0, len(*z.Partitions))
	for _, p := range *z.Partitions {
		if p.Topic == nil || p.Partition == nil || *p.Partition < 0 {
			return nil, fmt.Errorf("zkcoord: preferred replica election: entry without a valid topic and partition")
		}
		tp := TopicPartition{Topic: *p.Topic, Partition: *p.Partition}
		if seen[tp] {
			return nil, fmt.Errorf("zkcoord: preferred replica election: duplicate partition %s-%d", tp.Topic, tp.Partition)
		}
		seen[tp] = true
		out = append(out, tp)
	}
	return out, nil
}
