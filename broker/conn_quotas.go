package broker

import (
	"math"
	"net"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
)

// ConnectionLimits are the broker's connection settings (Kafka 2.4's ConnectionQuotas and
// Selector; docs/configuration.md, docs/compatibility.md "Connection limits").
type ConnectionLimits struct {
	// MaxConnections is max.connections: the connections of the broker, all listeners
	// together. At the limit the accept loops stop accepting (new connections wait in the
	// listen backlog) until one closes; the inter-broker listener (ProtectedListener) is not
	// held back when the broker has other listeners, as in Kafka 2.4 (KIP-402).
	MaxConnections int
	// MaxConnectionsPerIP is max.connections.per.ip: a connection from an address that
	// already has that many is accepted and closed at once.
	MaxConnectionsPerIP int
	// PerIPOverrides is max.connections.per.ip.overrides: host name or IP address → its own
	// limit (host names are resolved once, by New).
	PerIPOverrides map[string]int
	// IdleTimeout is connections.max.idle.ms: a connection with nothing read or written for
	// that long, and no request being served, is closed. <= 0: never.
	IdleTimeout time.Duration
	// ProtectedListener is the inter-broker listener's name.
	ProtectedListener string
}

// DefaultConnectionLimits are Kafka 2.4's defaults: no limits, idle connections closed after
// 10 minutes.
func DefaultConnectionLimits() ConnectionLimits {
	return ConnectionLimits{MaxConnections: math.MaxInt32, MaxConnectionsPerIP: math.MaxInt32, IdleTimeout: 600000 * time.Millisecond}
}

// connQuotas counts the broker's connections by address and listener (Kafka's
// ConnectionQuotas). Accept loops wait in waitForSlot; a new connection is counted by inc,
// a closed one by dec.
type connQuotas struct {
	lim       ConnectionLimits
	overrides map[string]int // resolved IP address → limit
	listeners int

	mu          sync.Mutex
	cond        *sync.Cond
	perIP       map[string]int
	perListener map[string]int
	total       int
	closed      bool
}

func newConnQuotas(lim ConnectionLimits, listeners int, log logrus.FieldLogger) *connQuotas {
	q := &connQuotas{lim: lim, listeners: listeners, overrides: map[string]int{}, perIP: map[string]int{}, perListener: map[string]int{}}
	q.cond = sync.NewCond(&q.mu)
	for host, n := range lim.PerIPOverrides {
		if ip := net.ParseIP(host); ip != nil {
			q.overrides[ip.String()] = n
			continue
		}
		ips, err := net.LookupIP(host)
		if err != nil {
			log.WithError(err).WithField("addr", host).Warn("max.connections.per.ip.overrides: cannot resolve host; its override is ignored")
			continue
		}
		for _, ip := range ips {
			q.overrides[ip.String()] = n
		}
	}
	return q
}

// slotAvailableLocked is Kafka's connectionSlotAvailable without per-listener limits.
func (q *connQuotas) slotAvailableLocked(listener string) bool {
	if q.total < q.lim.MaxConnections {
		return true
	}
	return listener == q.lim.ProtectedListener && q.listeners > 1
}

// waitForSlot blocks while the broker holds max.connections connections; false once closed.
func (q *connQuotas) waitForSlot(listener string) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	for !q.closed && !q.slotAvailableLocked(listener) {
		q.cond.Wait()
	}
	return !q.closed
}

// inc counts a new connection from ip. When ip had its limit already it returns false and
// the limit; the connection is counted all the same (dec it when closing it, as Kafka does).
func (q *connQuotas) inc(listener, ip string) (int, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	n := q.perIP[ip]
	q.perIP[ip] = n + 1
	q.perListener[listener]++
	q.total++
	limit, ok := q.overrides[ip]
	if !ok {
		limit = q.lim.MaxConnectionsPerIP
	}
	return limit, n < limit
}

func (q *connQuotas) dec(listener, ip string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.perIP[ip]--; q.perIP[ip] <= 0 {
		delete(q.perIP, ip)
	}
	q.perListener[listener]--
	q.total--
	q.cond.Broadcast()
}

// close wakes the accept loops waiting for a slot.
func (q *connQuotas) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	q.cond.Broadcast()
}

// remoteIP is the address a connection's quota counts it under.
func remoteIP(nc net.Conn) string {
	if a, ok := nc.RemoteAddr().(*net.TCPAddr); ok {
		return a.IP.String()
	}
	host, _, err := net.SplitHostPort(nc.RemoteAddr().String())
	if err != nil {
		return nc.RemoteAddr().String()
	}
	return host
}

// idleTick is how often the idle reaper looks: a quarter of the timeout, between 10 ms
// and 10 s, so a connection is closed between the timeout and 1.25 times it.
func idleTick(idle time.Duration) time.Duration {
	return min(max(idle/4, 10*time.Millisecond), 10*time.Second)
}

// reapIdle closes the connections idle for longer than connections.max.idle.ms (Kafka's
// Selector.maybeCloseOldestConnection): nothing read or written since the previous looks,
// and no request in flight (a fetch waiting for data is not idle). It runs until Close.
func (s *Server) reapIdle(idle time.Duration) {
	t := time.NewTicker(idleTick(idle))
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case now := <-t.C:
			s.mu.Lock()
			conns := make([]*conn, 0, len(s.conns))
			for c := range s.conns {
				conns = append(conns, c)
			}
			s.mu.Unlock()
			for _, c := range conns {
				if a := c.activity.Load(); a != c.idleSeen || len(c.inflight) > 0 || c.idleSince.IsZero() {
					c.idleSeen, c.idleSince = a, now
					continue
				}
				if now.Sub(c.idleSince) >= idle {
					c.log.WithField("duration", now.Sub(c.idleSince).String()).Debug("closing idle connection (connections.max.idle.ms)")
					c.close()
				}
			}
		}
	}
}
