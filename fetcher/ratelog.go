package fetcher

import (
	"fmt"

	"github.com/isrbroker/isrbroker/broker/ratelog"
)

// backoffWarnings rate-limits a fetcher's warnings about a leader it cannot reach: with the
// leader down, every replica.fetch.backoff.ms (S17) would write one line until the controller
// moves the leadership. Once per 10 s per fetcher, then a line with suppressed=<n>
// (docs/logging.md, "Rate-limited warnings").
var backoffWarnings = ratelog.New(ratelog.DefaultInterval, nil)

// warnKey names this fetcher for the rate limit: the broker and Kafka's thread name.
func (t *fetcherThread) warnKey() string { return fmt.Sprint(t.cfg.BrokerID, "/", t.name) }
