package agent

import (
	"fmt"

	"github.com/go-zookeeper/zk"
	"github.com/isrbroker/isrbroker/zkcoord/zkclient"
	"github.com/isrbroker/isrbroker/zkcoord/zkdata"
)

// LogDirEvents tells the controller that a log dir of this broker went offline (Kafka's
// KafkaZkClient.propagateLogDirEvent, KIP-112; docs/kafka-facts.md §12): a persistent
// sequential /log_dir_event_notification/log_dir_event_<seq> with
// {"version":1,"broker":<id>,"event":1}. The controller watches the children, sends
// LeaderAndIsr for every replica of the broker and deletes the notification.
type LogDirEvents struct {
	conn     zkclient.Conn
	brokerID int32
}

// NewLogDirEvents returns the log dir event writer of broker brokerID.
func NewLogDirEvents(conn zkclient.Conn, brokerID int32) *LogDirEvents {
	return &LogDirEvents{conn: conn, brokerID: brokerID}
}

// PropagateLogDirEvent writes one log dir failure notification.
func (e *LogDirEvents) PropagateLogDirEvent() error {
	if _, err := e.conn.Create(zkdata.LogDirEventSequential, zkdata.EncodeLogDirEvent(e.brokerID), zk.FlagSequence); err != nil {
		return fmt.Errorf("zkcoord: writing log dir event notification: %w", err)
	}
	return nil
}
