package zkclient

import (
	"testing"

	"github.com/go-zookeeper/zk"
	metrics "github.com/rcrowley/go-metrics"
)

func TestSessionMeters(t *testing.T) {
	reg := metrics.NewRegistry()
	mark := sessionMeters(reg)
	for _, st := range []zk.State{zk.StateConnecting, zk.StateConnected, zk.StateHasSession, zk.StateDisconnected,
		zk.StateConnecting, zk.StateExpired, zk.StateHasSession, zk.StateDisconnected} {
		mark(st)
	}
	want := map[string]int64{"Disconnects": 2, "Expires": 1, "SyncConnects": 2, "AuthFailures": 0, "ReadOnlyConnects": 0, "SaslAuthentications": 0}
	for ev, n := range want {
		m, ok := reg.Get(SessionMetricName(ev)).(metrics.Meter)
		if !ok {
			t.Fatalf("meter %s not registered", SessionMetricName(ev))
		}
		if m.Count() != n {
			t.Errorf("%s = %d, want %d", ev, m.Count(), n)
		}
	}
	sessionMeters(nil)(zk.StateExpired) // no registry: no panic
}
