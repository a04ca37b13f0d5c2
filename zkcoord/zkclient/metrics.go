package zkclient

import (
	"github.com/go-zookeeper/zk"
	metrics "github.com/rcrowley/go-metrics"
)

// Kafka's ZooKeeper session meters (ZooKeeperClient's stateToMeterMap in Kafka 2.4):
// kafka.server:type=SessionExpireListener,name=ZooKeeper<Event>PerSec, one per session state
// change. go-zookeeper's StateHasSession is ZooKeeper's SyncConnected (the session is usable).
// docs/metrics.md lists them.
var sessionMeterNames = map[zk.State]string{
	zk.StateDisconnected:      "Disconnects",
	zk.StateHasSession:        "SyncConnects",
	zk.StateAuthFailed:        "AuthFailures",
	zk.StateConnectedReadOnly: "ReadOnlyConnects",
	zk.StateSaslAuthenticated: "SaslAuthentications",
	zk.StateExpired:           "Expires",
}

// SessionMetricName is the registry name of the meter of event ("Disconnects", "Expires", ...).
func SessionMetricName(event string) string {
	return "kafka.server:type=SessionExpireListener,name=ZooKeeper" + event + "PerSec"
}

// sessionMeters registers the meters in reg and returns the function marking the one of a
// state (a no-op for states without one). reg nil: nothing is counted.
func sessionMeters(reg metrics.Registry) func(zk.State) {
	if reg == nil {
		return func(zk.State) {}
	}
	meters := make(map[zk.State]metrics.Meter, len(sessionMeterNames))
	for st, ev := range sessionMeterNames {
		meters[st] = metrics.GetOrRegisterMeter(SessionMetricName(ev), reg)
	}
	return func(st zk.State) {
		if m := meters[st]; m != nil {
			m.Mark(1)
		}
	}
}
