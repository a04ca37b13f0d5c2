package clientquota

import (
	"fmt"
	"strconv"
	"time"

	"github.com/rcrowley/go-metrics"
)

// Quotas are the broker's three managers (Kafka's QuotaManagers: produce, fetch, request).
type Quotas struct {
	Produce, Fetch, Request *Manager
}

// Settings are the broker's static quota configs.
type Settings struct {
	NumWindows      int           // quota.window.num
	WindowSize      time.Duration // quota.window.size.seconds
	ProducerDefault int64         // quota.producer.default (deprecated; math.MaxInt64: none)
	ConsumerDefault int64         // quota.consumer.default (deprecated)
}

// New returns the managers; reg may be nil, now nil for time.Now.
func New(st Settings, reg metrics.Registry, now func() time.Time) *Quotas {
	c := Config{NumWindows: st.NumWindows, WindowSize: st.WindowSize}
	p, f := c, c
	p.StaticDefault, f.StaticDefault = st.ProducerDefault, st.ConsumerDefault
	return &Quotas{
		Produce: NewManager(Produce, p, reg, now),
		Fetch:   NewManager(Fetch, f, reg, now),
		Request: NewManager(Request, c, reg, now),
	}
}

// Entity names a quota entity: User and ClientID are the desanitized names or DefaultEntity;
// an empty one is a level the entity does not have (users/<u> has no ClientID, clients/<c>
// no User).
type Entity struct {
	User, ClientID string
}

func (e Entity) path() string {
	return entityPath(e.User, e.ClientID, e.User != "", e.ClientID != "")
}

// Apply replaces the quotas of e with those of its config znode (cfg: the complete config,
// empty when the znode is gone), as Kafka's QuotaConfigHandler; other keys (SCRAM
// credentials) are ignored. A value that does not parse removes the quota and is reported.
func (q *Quotas) Apply(e Entity, cfg map[string]string) error {
	if e.User == "" && e.ClientID == "" {
		return nil
	}
	var bad error
	for _, m := range []*Manager{q.Produce, q.Fetch, q.Request} {
		v, ok := cfg[m.typ.key()]
		bound := 0.0
		if ok {
			var err error
			if m.typ == Request {
				bound, err = strconv.ParseFloat(v, 64)
			} else {
				var n int64
				n, err = strconv.ParseInt(v, 10, 64)
				bound = float64(n)
			}
			if err != nil || bound <= 0 {
				bound = 0
				bad = fmt.Errorf("clientquota: %s: %s=%q is not a positive number", e.path(), m.typ.key(), v)
			}
		}
		m.set(e.path(), bound)
	}
	return bad
}
