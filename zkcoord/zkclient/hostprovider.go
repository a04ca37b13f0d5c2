package zkclient

import (
	"fmt"
	"math/rand/v2"
	"net"
	"sync"

	"github.com/go-zookeeper/zk"
)

// nameHostProvider is the zk.HostProvider of the broker's session: it keeps the host:port
// entries of zookeeper.connect as written and leaves name resolution to the dialer, so each
// connection attempt resolves the name again, as the Java client (ZooKeeper 3.5+
// StaticHostProvider) does. go-zookeeper's default DNSHostProvider resolves every name once, in
// zk.Connect, and fails when one does not resolve: in a container network the name of a stopped
// ZooKeeper container does not resolve, so a broker could not start while one ensemble member
// is down, and a member restarted with a new address would never be reached again
// (docs/containers.md, "ZooKeeper ensemble").
type nameHostProvider struct {
	mu      sync.Mutex
	servers []string
	curr    int // index of the server returned last by Next
	last    int // index of the server of the last successful connection; -1: none yet
}

var _ zk.HostProvider = (*nameHostProvider)(nil)

// Init takes the host:port list (checked, not resolved) in a random order, so the brokers of a
// cluster spread their sessions over the ensemble.
func (hp *nameHostProvider) Init(servers []string) error {
	hp.mu.Lock()
	defer hp.mu.Unlock()
	if len(servers) == 0 {
		return fmt.Errorf("zookeeper.connect lists no server")
	}
	list := make([]string, len(servers))
	for i, s := range servers {
		host, port, err := net.SplitHostPort(s)
		if err != nil || host == "" || port == "" {
			return fmt.Errorf("zookeeper server %q is not host:port", s)
		}
		list[i] = s
	}
	rand.Shuffle(len(list), func(i, j int) { list[i], list[j] = list[j], list[i] })
	hp.servers, hp.curr, hp.last = list, -1, -1
	return nil
}

// Len is the number of servers.
func (hp *nameHostProvider) Len() int {
	hp.mu.Lock()
	defer hp.mu.Unlock()
	return len(hp.servers)
}

// Next returns the next server to try; retryStart is true once every server has been tried
// since the last successful connection (go-zookeeper then backs off before the next round).
func (hp *nameHostProvider) Next() (server string, retryStart bool) {
	hp.mu.Lock()
	defer hp.mu.Unlock()
	hp.curr = (hp.curr + 1) % len(hp.servers)
	retryStart = hp.curr == hp.last
	if hp.last == -1 {
		hp.last = 0
	}
	return hp.servers[hp.curr], retryStart
}

// Connected records that the server returned last by Next accepted the connection.
func (hp *nameHostProvider) Connected() {
	hp.mu.Lock()
	defer hp.mu.Unlock()
	hp.last = hp.curr
}
