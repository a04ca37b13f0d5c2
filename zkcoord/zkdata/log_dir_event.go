package zkdata

import (
	"encoding/json"
	"fmt"
	"strings"
)

// ---- /log_dir_event_notification/log_dir_event_<seq>: {"version":1,"broker":N,"event":1} ----
// (Kafka's LogDirEventNotificationZNode and LogDirEventNotificationSequenceZNode, KIP-112;
// docs/kafka-facts.md §12.)

const (
	// LogDirEventPrefix names the sequential log dir event children.
	LogDirEventPrefix = "log_dir_event_"
	// LogDirEventSequential is the path to create with the sequential flag for a new event.
	LogDirEventSequential = PathLogDirEvent + "/" + LogDirEventPrefix
	// LogDirFailureEvent is the only event type (LogDirEventNotificationHandler.LogDirFailureEvent).
	LogDirFailureEvent = 1
)

type logDirEventZNode struct {
	Version int32 `json:"version"`
	Broker  int32 `json:"broker"`
	Event   int32 `json:"event"`
}

// EncodeLogDirEvent writes a log dir failure event of broker.
func EncodeLogDirEvent(broker int32) []byte {
	b, _ := json.Marshal(logDirEventZNode{Version: 1, Broker: broker, Event: LogDirFailureEvent})
	return b
}

// DecodeLogDirEvent reads a log dir event: the broker that had a log dir fail.
func DecodeLogDirEvent(data []byte) (int32, error) {
	var z logDirEventZNode
	if err := json.Unmarshal(data, &z); err != nil {
		return 0, fmt.Errorf("zkcoord: log dir event notification: %w", err)
	}
	if z.Event != LogDirFailureEvent {
		return 0, fmt.Errorf("zkcoord: log dir event notification: unknown event %d", z.Event)
	}
	return z.Broker, nil
}

// IsLogDirEvent reports whether a child of PathLogDirEvent is a log dir event notification.
func IsLogDirEvent(child string) bool { return strings.HasPrefix(child, LogDirEventPrefix) }
