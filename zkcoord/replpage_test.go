package zkcoord

import (
	"strconv"
	"sync"
	"testing"
	"time"
)

type controllerChanges struct {
	mu  sync.Mutex
	got []string
}

func (c *controllerChanges) record(elected bool, epoch int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if elected {
		c.got = append(c.got, "elected@"+itoa(epoch))
	} else {
		c.got = append(c.got, "resigned@"+itoa(epoch))
	}
}

func (c *controllerChanges) list() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.got...)
}

func itoa(n int32) string { return strconv.Itoa(int(n)) }

// The replication page's ZooKeeper reads (docs/replication-page.md): each broker's published page
// address is found for every registered broker, a broker that published none has "", the
// controller and its epoch are /controller and /controller_epoch, and Config.OnControllerChange
// (the controller's own hook) reports this broker winning the election (with the epoch it won),
// its resignation when it closes, and, on the other broker, the failover.
func TestReplicationPagePeersAndControllerChanges(t *testing.T) {
	s := startZK(t)
	f1, f2 := newFakeBroker(t), newFakeBroker(t)
	var ch1, ch2 controllerChanges
	cfg1, cfg2 := testConfig(t, s.Addr, 1, f1.port()), testConfig(t, s.Addr, 2, f2.port())
	cfg1.OnControllerChange, cfg2.OnControllerChange = ch1.record, ch2.record
	c1 := connectT(t, cfg1)
	c2 := connectT(t, cfg2)
	if err := c1.PublishReplicationPage("b1:9101"); err != nil {
		t.Fatal(err)
	}
	if err := c1.PublishReplicationPage("b1:9102"); err != nil { // a restart with another address
		t.Fatal(err)
	}
	mustStart(t, c1)
	waitFor(t, 10*time.Second, "controller 1", c1.IsController)
	mustStart(t, c2)

	peers, err := c2.ReplicationPeers()
	if err != nil {
		t.Fatal(err)
	}
	if len(peers) != 2 || peers[0] != (ReplicationPeer{ID: 1, PageAddress: "b1:9102"}) || peers[1] != (ReplicationPeer{ID: 2}) {
		t.Fatalf("peers %+v", peers)
	}
	id, epoch, err := c2.Controller()
	if err != nil || id != 1 || epoch < 1 {
		t.Fatalf("Controller() = %d, %d, %v", id, epoch, err)
	}
	waitFor(t, 10*time.Second, "broker 1 sees its election", func() bool { return len(ch1.list()) == 1 })
	if got := ch1.list(); got[0] != "elected@"+itoa(epoch) {
		t.Fatalf("broker 1 changes %v, want elected@%d", got, epoch)
	}

	// Failover: broker 1's session ends, broker 2 wins at the next epoch.
	c1.Close()
	waitFor(t, 20*time.Second, "controller 2", c2.IsController)
	waitFor(t, 10*time.Second, "broker 2 sees its election", func() bool { return len(ch2.list()) == 1 })
	if got := ch2.list(); got[0] != "elected@"+itoa(epoch+1) {
		t.Fatalf("broker 2 changes %v, want elected@%d", got, epoch+1)
	}
	if got := ch1.list(); len(got) != 2 || got[1] != "resigned@"+itoa(epoch) {
		t.Errorf("broker 1 reported %v by its Close, want [elected@%d resigned@%d]", got, epoch, epoch)
	}
	peers, err = c2.ReplicationPeers()
	if err != nil || len(peers) != 1 || peers[0].ID != 2 {
		t.Fatalf("peers after broker 1 left: %+v %v", peers, err)
	}
}
