package zkclient

import (
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/sirupsen/logrus"

	"github.com/isrbroker/isrbroker/zkcoord/zktest"
)

func TestNameHostProviderRotation(t *testing.T) {
	var hp nameHostProvider
	if err := hp.Init([]string{"zookeeper1:2181", "zookeeper2:2181", "zookeeper3:2181"}); err != nil {
		t.Fatal(err)
	}
	if hp.Len() != 3 {
		t.Fatalf("Len %d", hp.Len())
	}
	// The first round returns every server once, names unresolved; retryStart only when the
	// round comes back to the first server.
	var seen []string
	for i := 0; i < 3; i++ {
		s, retry := hp.Next()
		if retry {
			t.Fatalf("retryStart on attempt %d of the first round", i+1)
		}
		seen = append(seen, s)
	}
	slices.Sort(seen)
	if !slices.Equal(seen, []string{"zookeeper1:2181", "zookeeper2:2181", "zookeeper3:2181"}) {
		t.Fatalf("first round %q", seen)
	}
	if _, retry := hp.Next(); !retry {
		t.Fatal("no retryStart after a round without a connection")
	}
	// After a connection to the current server, a full round starts from the next one.
	cur := hp.servers[hp.curr]
	hp.Connected()
	for i := 0; i < 2; i++ {
		if s, retry := hp.Next(); retry || s == cur {
			t.Fatalf("attempt %d after a connection to %s: %s, retryStart %v", i+1, cur, s, retry)
		}
	}
	if s, retry := hp.Next(); !retry || s != cur {
		t.Fatalf("third attempt: %s, retryStart %v; want %s, true", s, retry, cur)
	}

	for _, bad := range [][]string{nil, {"zookeeper1"}, {":2181"}, {"zookeeper1:"}} {
		if err := (&nameHostProvider{}).Init(bad); err == nil {
			t.Errorf("Init(%q) accepted", bad)
		}
	}
}

// TestDialWithUnresolvableMember: a zookeeper.connect member whose name does not resolve (a
// stopped container of the ensemble) neither stops Dial nor the session on the other member,
// and the name reaches the dialer unresolved, so it is looked up again at each attempt (the
// test's dialer plays the resolver for it). go-zookeeper's default host provider fails this
// test: it resolves every name in zk.Connect.
func TestDialWithUnresolvableMember(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a ZooKeeper")
	}
	srv := zktest.Start(t)
	const stopped = "zookeeper-stopped.invalid:2181"
	var mu sync.Mutex
	var dialed []string
	connected := make(chan struct{}, 1)
	c, err := Dial(Options{
		Servers:        []string{stopped, srv.Addr},
		SessionTimeout: 4 * time.Second,
		Log:            logrus.New(),
		Dialer: func(network, addr string, timeout time.Duration) (net.Conn, error) {
			mu.Lock()
			dialed = append(dialed, addr)
			mu.Unlock()
			if addr == stopped { // what the resolver answers for a stopped container (no DNS query here)
				return nil, &net.OpError{Op: "dial", Net: network, Err: &net.DNSError{Err: "no such host", Name: "zookeeper-stopped.invalid", IsNotFound: true}}
			}
			return net.DialTimeout(network, addr, timeout)
		},
		OnSession: func(s zk.State) {
			if s == zk.StateHasSession {
				select {
				case connected <- struct{}{}:
				default:
				}
			}
		},
	})
	if err != nil {
		t.Fatalf("Dial with an unresolvable member: %v", err)
	}
	defer c.Close()
	select {
	case <-connected:
	case <-time.After(30 * time.Second):
		t.Fatal("no session within 30 s")
	}
	if _, err := c.Create("/hostprovider", nil, 0); err != nil {
		t.Fatal(err)
	}
	// The stopped member may or may not have been tried first (the order is random); when it
	// was, the dialer got its name, not an address.
	mu.Lock()
	defer mu.Unlock()
	for _, a := range dialed {
		if a != stopped && a != srv.Addr {
			t.Errorf("dialer got %q, want one of the configured host:port entries", a)
		}
	}
}
