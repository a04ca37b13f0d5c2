package zkdata

import (
	"errors"

	"github.com/isrbroker/isrbroker/logstore/record"
)

// TopicPartition names one partition (the log layer's type, shared).
type TopicPartition = record.TopicPartition

// Endpoint is one advertised listener of a broker.
type Endpoint struct {
	Listener         string
	Host             string
	Port             int32
	SecurityProtocol string // "PLAINTEXT"
}

// Protocol is the endpoint's security protocol, PLAINTEXT when unset.
func (e Endpoint) Protocol() string {
	if e.SecurityProtocol == "" {
		return "PLAINTEXT"
	}
	return e.SecurityProtocol
}

// BrokerInfo is one registered broker; Epoch is the czxid of its /brokers/ids znode (KIP-380).
type BrokerInfo struct {
	ID        int32
	Endpoints []Endpoint
	Rack      string
	Epoch     int64
}

// Endpoint returns the broker's endpoint for listener ("" or an unknown name: its first
// one when listener is ""), e.g. to reach the controller for a controlled shutdown (K7).
func (b BrokerInfo) Endpoint(listener string) (Endpoint, bool) {
	for _, e := range b.Endpoints {
		if e.Listener == listener {
			return e, true
		}
	}
	if listener == "" && len(b.Endpoints) > 0 {
		return b.Endpoints[0], true
	}
	return Endpoint{}, false
}

// PartitionState is a partition's state znode plus its zkVersion.
type PartitionState struct {
	ControllerEpoch, Leader, LeaderEpoch int32
	ISR                                  []int32
	ZkVersion                            int32
}

// ErrUnknownTopic: the topic (or its partition) has no znode, or its name is not valid.
var ErrUnknownTopic = errors.New("zkcoord: unknown topic")
